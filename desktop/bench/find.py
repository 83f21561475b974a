"""`keepmind bench find`: FTS5 `find` latency over a store of N memories (p50/p95)."""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from keepmind.engine import open_engine
from keepmind.engine.settings import defaults

from ..commands.numbers import positive_int

WORDS = ("garden coffee hiking piano python budget flight airport dentist marathon sister paris "
         "guitar kitchen laptop invoice recipe yoga camera novel bicycle tennis museum ocean train "
         "violin chess soccer pottery painting sushi pasta lecture deadline meeting project release").split()


def register(bsub) -> None:
    p = bsub.add_parser("find", help="find() latency over 10k and 100k memories")
    p.add_argument("--memories", type=positive_int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--queries", type=positive_int, default=300)
    p.add_argument("--facts", help="JSON Lines of {\"text\": ...} to build memories from (optional)")
    p.add_argument("--json", dest="json_out", help="write results as JSON to this file")
    p.set_defaults(func=run)


def texts(n: int, facts: str | None, rng: random.Random):
    base = []
    if facts:
        with open(facts, encoding="utf-8") as fh:
            base = [json.loads(line)["text"] for line in fh if line.strip()]
    for i in range(n):
        if base:
            t = base[i % len(base)]
            yield t if i < len(base) else f"{t} ({rng.choice(WORDS)} {i // len(base)})"
        else:
            yield " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))


def make_queries(m: int, facts: str | None, rng: random.Random) -> list[str]:
    """Questions made of 2-6 words of stored facts (so they match), or of the synthetic vocabulary."""
    if not facts:
        return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(m)]
    with open(facts, encoding="utf-8") as fh:
        lines = [json.loads(line)["text"] for line in fh if line.strip()]
    out = []
    for _ in range(m):
        words = rng.choice(lines).rstrip(".").split()
        k = min(len(words), rng.randint(2, 6))
        start = rng.randint(0, len(words) - k)
        out.append("what about " + " ".join(words[start:start + k]) + "?")
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def build(engine, scope, n: int, facts, rng) -> float:
    start = time.perf_counter()
    batch = []
    for text in texts(n, facts, rng):
        batch.append(engine.draft(scope, "", text, source="import"))
        if len(batch) == 2000:
            engine.insert_drafts(batch, notify=False)
            batch = []
    if batch:
        engine.insert_drafts(batch, notify=False)
    return time.perf_counter() - start


def run(args) -> int:
    rng = random.Random(7)
    results = {}
    for n in args.memories:
        with tempfile.TemporaryDirectory() as tmp:
            engine = open_engine(Path(tmp), settings=defaults(), start_workers=False)
            try:
                sid = engine.open_session("personal", "bench")
                scope = engine.scope(sid)
                seconds = build(engine, scope, n, args.facts, rng)
                queries = make_queries(args.queries, args.facts, rng)
                for q in queries[:20]:  # warm the page cache
                    engine.find(scope, q, limit=10)
                times = []
                for q in queries:
                    t0 = time.perf_counter()
                    engine.find(scope, q, limit=10)
                    times.append((time.perf_counter() - t0) * 1000)
            finally:
                engine.close()
        results[n] = {"ingest_per_s": round(n / seconds), "p50_ms": round(statistics.median(times), 2),
                      "p95_ms": round(percentile(times, 0.95), 2), "queries": len(times)}
        print(f"find over {n:>7,} memories: p50 {results[n]['p50_ms']:.2f} ms, "
              f"p95 {results[n]['p95_ms']:.2f} ms ({len(times)} queries; ingest {results[n]['ingest_per_s']:,}/s)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return 0
