"""`keepmind bench recall`: ingest rate, RSS, on-disk size, recall latency (per stage and in total)
over N memories, a ratio against the physical floor measured in the same run, and a cold start.

The ratio (recall p95 over query-embedding p95 plus exact-scan p95) holds on a noisy machine where
milliseconds do not: load slows the numerator and the denominator alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from keepmind.engine import open_engine
from keepmind.engine.errors import InvalidInput
from keepmind.engine.models import vectors
from keepmind.engine.recall.metrics import percentile
from keepmind.engine.settings import defaults

from ..commands.numbers import count, positive_int
from ..paths import home_option, models_dir_of

STAGES = ("plan_ms", "embed_ms", "vector_search_ms", "lexical_ms", "candidates_ms", "rank_ms", "gate_ms", "bearing_ms",
          "total_ms")
# Tasks that name food: recall also reads the store's diet statements for them (engine/bearing.py).
FOOD_TASKS = ("Suggest a family dinner I can cook tonight.", "Find a restaurant near the office for a team lunch.",
              "What are some must-try local dishes in Lisbon?", "Give me healthy snack ideas for a long hike.",
              "Plan a dinner party menu for eight on Saturday.", "Can you recommend a good breakfast before a run?")
BATCH = 2000
VARIATIONS = ("last year", "these days", "on weekends", "with friends", "since college", "at night",
              "in the summer", "after work", "with my family", "most mornings")


def register(bsub) -> None:
    p = bsub.add_parser("recall", help="recall latency p50/p95 per stage over a store of N memories")
    home_option(p)
    p.add_argument("--facts", required=True, help='JSON Lines of {"text": ...}, repeated with variation past its end')
    p.add_argument("--memories", type=positive_int, default=100_000)
    p.add_argument("--queries", type=positive_int, default=300)
    p.add_argument("--boundaries", type=positive_int, default=1,
                   help="spread the memories over this many boundaries (round robin) and recall in the "
                        "first: the vector search is narrowed to its share")
    p.add_argument("--distinct", type=count, default=0,
                   help="synthetic ingest: embed only this many distinct facts, once each, and give every "
                        "variation of a fact its vector (0, the default: every memory is embedded as a running "
                        "Keepmind embeds it)")
    p.add_argument("--cold-starts", type=count, default=0,
                   help="after the build, time this many fresh processes from start to their first healthy "
                        "recall (models loaded, vectors in memory)")
    p.add_argument("--store", help="build the store in this folder and keep it; a later run with the same "
                                   "--facts, --memories, --boundaries and --distinct times it again without "
                                   "building (a million memories take minutes to build)")
    p.add_argument("--json", dest="json_out", help="write the numbers as JSON to this file")
    p.set_defaults(func=run)


BUILD_MARK = "bench-build.json"


def _build_key(args) -> dict:
    facts = Path(args.facts)
    return {"facts": facts.name, "facts_bytes": facts.stat().st_size if facts.is_file() else None,
            "memories": args.memories, "boundaries": args.boundaries, "distinct": args.distinct}


def _kept_build(store: Path, args) -> dict | None:
    """What an earlier run recorded when it built this very store in `store`, else None (and a
    folder holding anything else is refused rather than built over)."""
    mark = store / BUILD_MARK
    if mark.is_file():
        found = json.loads(mark.read_text(encoding="utf-8"))
        if found.get("key") == _build_key(args):
            return found
        raise InvalidInput(f"{store} holds another bench build ({found.get('key')}); use another --store folder")
    if store.exists() and any(store.iterdir()):
        raise InvalidInput(f"{store} is not empty and holds no bench build; use an empty or new folder")
    return None


def fact_texts(path: str, n: int, rng: random.Random) -> list[str]:
    try:
        base = [json.loads(line)["text"] for line in Path(path).read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        raise InvalidInput(f"{path} must be JSON Lines of objects with a \"text\" field") from None
    if not base:
        raise InvalidInput(f"{path} holds no facts")
    out = []
    for i in range(n):
        text = base[i % len(base)]
        if i >= len(base):  # past the end: the same fact with a variation, so texts stay distinct
            text = f"{text.rstrip('.')} {rng.choice(VARIATIONS)} ({i // len(base)})."
        out.append(text)
    return out


def queries(texts: list[str], m: int, rng: random.Random) -> list[str]:
    """Half paraphrase-like questions about stored facts, half about nothing stored."""
    out = []
    for i in range(m):
        if i % 2 == 0:
            words = rng.choice(texts).rstrip(".").split()
            keep = words[max(0, len(words) // 3):]
            out.append("Do you remember what I said about " + " ".join(keep) + "?")
        else:
            out.append(rng.choice(("How do I reset the router firmware?", "What is the capital of Peru?",
                                   "Explain the second law of thermodynamics.",
                                   "Which index structure does SQLite use for FTS5?")))
    return out


def _boundary(n: int) -> str:
    return "bench" if n == 0 else f"bench-{n}"


def run(args) -> int:
    rng = random.Random(11)
    texts = fact_texts(args.facts, args.memories, rng)
    proc = psutil.Process()
    store = Path(args.store) if getattr(args, "store", None) else None
    kept = _kept_build(store, args) if store is not None else None
    with (contextlib.nullcontext(str(store)) if store is not None
          else tempfile.TemporaryDirectory(prefix="keepmind-bench-")) as tmp:
        settings = defaults().with_overrides(memory__embeddings__auto_download=False,
                                             memory__models_dir=str(models_dir_of(args)))
        engine = open_engine(Path(tmp), settings=settings, start_workers=False)
        try:
            engine.models.load(download=False, repair=False)
            model = engine.models.embedder()
            sessions = [engine.open_session("personal", _boundary(b)) for b in range(args.boundaries)]
            if kept is None:
                start = time.perf_counter()
                ingest(engine, [engine.scope(s) for s in sessions], texts, args.distinct, model)
                ingest_s = time.perf_counter() - start
                if store is not None:
                    (store / BUILD_MARK).write_text(json.dumps({"key": _build_key(args), "ingest_s": ingest_s}),
                                                    encoding="utf-8")
            else:
                ingest_s = float(kept["ingest_s"])  # the build's, when this store was built
            # Timed as a restarted Keepmind finds the store: the build's write-ahead log folded back.
            engine.close()
            engine = open_engine(Path(tmp), settings=settings, start_workers=False)
            engine.models.load(download=False, repair=False)
            scope = engine.scope(sessions[0])
            qs = queries(texts, args.queries, rng)
            t0 = time.perf_counter()
            engine.recaller.trace(scope, qs[0])  # builds the term statistics once
            warm_s = time.perf_counter() - t0
            for q in qs[:10]:
                engine.recaller.trace(scope, q)
            stages = {k: [] for k in STAGES}
            modes = set()
            for q in qs:
                t = engine.recaller.trace(scope, q)
                modes.add(t.mode)
                for k in STAGES:
                    if k in t.timings:
                        stages[k].append(t.timings[k])
            wall = []
            for n, q in enumerate(qs):
                if n % 25 == 0:
                    sid = engine.open_session("personal", _boundary(0))  # progressive exclusion is per session
                t1 = time.perf_counter()
                engine.recall(sid, q)
                wall.append((time.perf_counter() - t1) * 1000)
            food = []
            for n in range(max(1, args.queries // 4)):
                q = FOOD_TASKS[n % len(FOOD_TASKS)]
                if n % 25 == 0:
                    sid = engine.open_session("personal", _boundary(0))
                t1 = time.perf_counter()
                engine.recall(sid, q)
                food.append((time.perf_counter() - t1) * 1000)
            bearing_ms = [engine.recaller.trace(scope, q).timings.get("bearing_ms", 0.0) for q in FOOD_TASKS]
            rss = proc.memory_info().rss
            floor = physical_floor(engine, qs) if model is not None else None
            index = engine.models.vectors()
            matrix_mb = index.nbytes / 2**20 if index is not None else 0.0
            quantized = bool(index is not None and index.quantized)
        finally:
            engine.close()
        disk = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file() and f.name != BUILD_MARK)
        cold = cold_starts(Path(tmp), models_dir_of(args), args.cold_starts, qs[0]) if args.cold_starts else None
    result = {
        "memories": len(texts), "boundaries": args.boundaries, "queries": len(qs),
        "model": model.model_id if model else None,
        "modes": sorted(modes), "store_reused": kept is not None, "ingest_per_s": round(len(texts) / ingest_s, 1),
        "ingest_s": round(ingest_s, 1), "term_stats_build_s": round(warm_s, 2),
        "rss_mb": round(rss / 2**20, 1), "vector_matrix_mb": round(matrix_mb, 1), "vectors_quantized": quantized,
        "disk_mb": round(disk / 2**20, 1), "distinct_embedded": args.distinct or None,
        "stages_ms": {k: {"p50": round(statistics.median(v), 2), "p95": round(percentile(v, 0.95), 2)}
                      for k, v in stages.items() if v},
        "recall_ms": {"p50": round(statistics.median(wall), 2), "p95": round(percentile(wall, 0.95), 2)},
        "food_task_recall_ms": {"p50": round(statistics.median(food), 2), "p95": round(percentile(food, 0.95), 2),
                                "n": len(food), "bearing_read_ms_max": round(max(bearing_ms), 2)},
    }
    if floor is not None:
        result["floor_ms"] = floor
        result["ratio_p95"] = round(result["recall_ms"]["p95"] / (floor["embed"]["p95"] + floor["scan"]["p95"]), 2)
    if cold is not None:
        result["cold_start_s"] = cold
    spread = f" in {args.boundaries} boundaries" if args.boundaries > 1 else ""
    print(f"recall over {len(texts):,} memories{spread} ({result['model'] or 'no model: lexical'}): "
          f"Engine.recall p50 {result['recall_ms']['p50']:.1f} ms, p95 {result['recall_ms']['p95']:.1f} ms "
          f"({len(qs)} queries; numbers are noisy on a shared machine)")
    for k, v in result["stages_ms"].items():
        print(f"  {k[:-3]:<14} p50 {v['p50']:7.2f} ms   p95 {v['p95']:7.2f} ms")
    ft = result["food_task_recall_ms"]
    print(f"food tasks (recall also reads the diet statements): Engine.recall p50 {ft['p50']:.1f} ms, p95 "
          f"{ft['p95']:.1f} ms ({ft['n']} recalls of {len(FOOD_TASKS)} tasks; their read alone at most "
          f"{ft['bearing_read_ms_max']:.1f} ms)")
    how = (f"synthetic: {args.distinct:,} distinct facts embedded once" if args.distinct
           else "with embedding") + ("; recorded when the kept store was built" if kept is not None else "")
    built = "the build included" if kept is None else "no build: the store was kept"
    print(f"ingest {result['ingest_per_s']:,.0f} memories/s ({how}), RSS {result['rss_mb']:.0f} MB (this "
          f"process, {built}; vector matrix {result['vector_matrix_mb']:.0f} MB), on disk "
          f"{result['disk_mb']:.0f} MB, "
          f"term statistics ready in {result['term_stats_build_s']:.2f} s")
    if floor is not None:
        print(f"physical floor, same run: query embedding alone p50 {floor['embed']['p50']:.2f} / p95 "
              f"{floor['embed']['p95']:.2f} ms, exact top-50 scan p50 {floor['scan']['p50']:.2f} / p95 "
              f"{floor['scan']['p95']:.2f} ms; ratio recall p95 / (embed p95 + scan p95) = {result['ratio_p95']:.2f}")
        if "overlap_at_50" in floor:
            how, ov = "quantized, re-ranked" if quantized else "exact", floor["overlap_at_50"]
            print(f"the index's top 50 against the exact top 50 ({how} search): overlap mean {ov['mean']:.4f}, "
                  f"min {ov['min']:.4f}")
    if cold is not None:
        print(f"cold start to the first healthy recall: median {cold['median']:.2f} s, max {cold['max']:.2f} s "
              f"({len(cold['runs'])} fresh processes; the files are in the OS cache; recalls until healthy: "
              f"{cold['recalls_needed']}); RSS of a fresh process after it: {cold['rss_mb']:.0f} MB")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


def ingest(engine, scopes, texts: list[str], distinct: int, model) -> None:
    """Write the memories in batches. Without `distinct`, the models' listener embeds each as a running
    Keepmind does; with it, the first `distinct` texts are embedded once and every later text, a
    variation of text i % distinct, is kept with that text's vector."""
    base = None
    if distinct and model is not None:
        from keepmind.engine.models.service import passage_text

        base = model.embed_passages([passage_text("", t) for t in texts[:distinct]])
    for i in range(0, len(texts), BATCH):
        chunk = texts[i:i + BATCH]
        drafts = [engine.draft(scopes[(i + n) % len(scopes)], "", t, source="import") for n, t in enumerate(chunk)]
        ids = engine.insert_drafts(drafts, notify=base is None)
        if base is not None:
            engine.models.store_vectors(ids, base[[(i + n) % distinct for n in range(len(chunk))]])


def physical_floor(engine, qs: list[str]) -> dict:
    """What no recall can beat, measured now: embedding each query alone, and an exact float32 scan
    of every vector for its top 50. With it, how many of the index's own top 50 (a quantized index
    re-ranks its byte scan) are in the exact top 50, ties counted as in (`overlap_at_50`): each hit
    is judged by its stored vector's exact score, not by the score the index gives it."""
    model, index = engine.models.embedder(), engine.models.vectors()
    ids, matrix = engine.models.stored_matrix()
    row_of = {item_id: row for row, item_id in enumerate(ids)}
    embed, scan, overlap = [], [], []
    for q in qs:
        t = time.perf_counter()
        vector = model.embed_queries([q])[0]
        embed.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        exact = vectors.exact_search(matrix, vector, 50)
        scan.append((time.perf_counter() - t) * 1000)
        if len(exact):
            worst = float(matrix[exact[-1]] @ vector)
            hits = index.search(vector, 50)
            overlap.append(sum(float(matrix[row_of[i]] @ vector) >= worst - 1e-6 for i, _ in hits if i in row_of)
                           / len(exact))
    out = {k: {"p50": round(statistics.median(v), 2), "p95": round(percentile(v, 0.95), 2)}
           for k, v in (("embed", embed), ("scan", scan))}
    if overlap:
        out["overlap_at_50"] = {"mean": round(statistics.fmean(overlap), 4), "min": round(min(overlap), 4)}
    return out


COLD_START = """
import json, sys, time
t0 = float(sys.argv[1])
from pathlib import Path
import psutil
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults
settings = defaults().with_overrides(memory__embeddings__auto_download=False, memory__models_dir=sys.argv[3])
# As `keepmind serve` starts: models load and the term statistics are counted in the background.
engine = open_engine(Path(sys.argv[2]), settings=settings, start_workers=True)
sid = engine.open_session("personal", "bench")
# As a client that asks once the models say they are ready (a recall sent every few milliseconds
# while they load would take the cores the load needs; at a million memories each is a 50 ms
# lexical search).
engine.models.wait_ready(120)
tries, healthy = 0, False
while not healthy and time.time() - t0 < 120:
    tries += 1
    result = engine.recall(sid, sys.argv[4])
    healthy = engine.models.embedder() is not None and not result.degraded
    if not healthy:
        time.sleep(0.02)
print(json.dumps({"s": time.time() - t0, "healthy": healthy, "tries": tries,
                  "vectors": len(engine.models.vectors() or ()), "rss": psutil.Process().memory_info().rss}))
engine.close()
"""


def cold_starts(home: Path, models_dir: Path, n: int, query: str) -> dict:
    """Fresh Python processes on the built store, each timed from its start to its first recall
    with the embedder loaded and every vector in memory."""
    runs, tries, rss = [], [], []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", COLD_START, repr(time.time()), str(home), str(models_dir), query],
                             capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if out.returncode != 0:
            raise InvalidInput(f"a cold start failed: {out.stderr.strip().splitlines()[-1:]}")
        found = json.loads(out.stdout.strip().splitlines()[-1])
        if not found["healthy"]:
            raise InvalidInput("a cold start did not reach a healthy recall (embedder loaded, nothing "
                               "degraded) within 120 s")
        runs.append(round(found["s"], 3))
        tries.append(found["tries"])
        rss.append(found["rss"] / 2**20)
    return {"runs": runs, "median": round(statistics.median(runs), 3), "max": max(runs), "recalls_needed": tries,
            "rss_mb": round(max(rss), 1)}
