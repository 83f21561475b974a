"""`keepmind bench recall`: ingest rate, RSS and recall latency (per stage and in total) over N memories."""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from keepmind.engine import open_engine
from keepmind.engine.errors import InvalidInput
from keepmind.engine.recall.metrics import percentile
from keepmind.engine.settings import defaults

from ..paths import home_option, models_dir_of

STAGES = ("plan_ms", "embed_ms", "candidates_ms", "rank_ms", "gate_ms", "total_ms")
BATCH = 2000
VARIATIONS = ("last year", "these days", "on weekends", "with friends", "since college", "at night",
              "in the summer", "after work", "with my family", "most mornings")


def register(bsub) -> None:
    p = bsub.add_parser("recall", help="recall latency p50/p95 per stage over a store of N memories")
    home_option(p)
    p.add_argument("--facts", required=True, help='JSON Lines of {"text": ...}, repeated with variation past its end')
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--boundaries", type=int, default=1,
                   help="spread the memories over this many boundaries (round robin) and recall in the "
                        "first: the vector search is narrowed to its share")
    p.add_argument("--json", dest="json_out", help="write the numbers as JSON to this file")
    p.set_defaults(func=run)


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
    with tempfile.TemporaryDirectory(prefix="keepmind-bench-") as tmp:
        settings = defaults().with_overrides(memory__embeddings__auto_download=False,
                                             memory__models_dir=str(models_dir_of(args)))
        engine = open_engine(Path(tmp), settings=settings, start_workers=False)
        try:
            engine.models.load(download=False, repair=False)
            model = engine.models.embedder()
            if args.boundaries < 1:
                raise InvalidInput("--boundaries must be at least 1")
            scopes = [engine.scope(engine.open_session("personal", _boundary(b))) for b in range(args.boundaries)]
            scope = scopes[0]
            start = time.perf_counter()
            for i in range(0, len(texts), BATCH):
                drafts = [engine.draft(scopes[(i + n) % len(scopes)], "", t, source="import")
                          for n, t in enumerate(texts[i:i + BATCH])]
                engine.insert_drafts(drafts)  # the models' listener embeds them (when a model is loaded)
            ingest_s = time.perf_counter() - start
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
            rss = proc.memory_info().rss
        finally:
            engine.close()
    result = {
        "memories": len(texts), "boundaries": args.boundaries, "queries": len(qs),
        "model": model.model_id if model else None,
        "modes": sorted(modes), "ingest_per_s": round(len(texts) / ingest_s, 1),
        "ingest_s": round(ingest_s, 1), "term_stats_build_s": round(warm_s, 2),
        "rss_mb": round(rss / 2**20, 1),
        "stages_ms": {k: {"p50": round(statistics.median(v), 2), "p95": round(percentile(v, 0.95), 2)}
                      for k, v in stages.items() if v},
        "recall_ms": {"p50": round(statistics.median(wall), 2), "p95": round(percentile(wall, 0.95), 2)},
    }
    spread = f" in {args.boundaries} boundaries" if args.boundaries > 1 else ""
    print(f"recall over {len(texts):,} memories{spread} ({result['model'] or 'no model: lexical'}): "
          f"Engine.recall p50 {result['recall_ms']['p50']:.1f} ms, p95 {result['recall_ms']['p95']:.1f} ms "
          f"({len(qs)} queries; numbers are noisy on a shared machine)")
    for k, v in result["stages_ms"].items():
        print(f"  {k[:-3]:<11} p50 {v['p50']:7.2f} ms   p95 {v['p95']:7.2f} ms")
    print(f"ingest {result['ingest_per_s']:,.0f} memories/s (with embedding), RSS {result['rss_mb']:.0f} MB, "
          f"term statistics built in {result['term_stats_build_s']:.2f} s")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
