"""`keepmind bench api`: a bounded loopback load on a `keepmind serve` it starts (p50/p95 per route).

The server runs in its own process on port 0 over a throwaway data dir seeded with memories;
N client threads each open a session and loop over the agent routes (status, recall, the four
tools, a turn, checkpoints) until the time or request budget is spent. Prints errors (should be zero) and
the latency percentiles per route. Numbers are noisy on a shared machine: say so when quoting.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx

from keepmind.engine import open_engine
from keepmind.engine.settings import defaults

from ..commands.numbers import count, positive, positive_int
from ..paths import settings_path
from ..process.files import read_token_file
from .find import WORDS, percentile


def register(bsub) -> None:
    p = bsub.add_parser("api", help="loopback load on a server it starts: errors and p50/p95 per route")
    p.add_argument("--clients", type=positive_int, default=8)
    p.add_argument("--seconds", type=positive, default=60.0)
    p.add_argument("--requests", type=positive_int, default=None, help="stop each client after this many requests")
    p.add_argument("--memories", type=count, default=2000, help="memories seeded before the load")
    p.add_argument("--json", dest="json_out", help="write results as JSON to this file")
    p.set_defaults(func=run)


def seed(home: Path, n: int, rng: random.Random) -> None:
    settings = {"memory.embeddings.auto_download": False, "server.port": 0}
    settings_path(home).write_text(json.dumps(settings), encoding="utf-8")
    engine = open_engine(home, settings=defaults().with_overrides(memory__embeddings__auto_download=False),
                         start_workers=False)
    try:
        scope = engine.scope(engine.open_session("personal", "bench"))
        drafts = [engine.draft(scope, "", " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))),
                               source="import") for _ in range(n)]
        engine.insert_drafts(drafts, notify=False)
    finally:
        engine.close()


def start_server(home: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    if "serving on " not in line:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, line.split("serving on ", 1)[1].split()[0]


class Load:
    def __init__(self, url: str, token: str, deadline: float, max_requests: int | None):
        self.url, self.token = url, token
        self.deadline, self.max_requests = deadline, max_requests
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def client(self, seed_: int) -> None:
        rng = random.Random(seed_)
        with httpx.Client(base_url=self.url + "/api/v1", timeout=30,
                          headers={"Authorization": f"Bearer {self.token}"}) as http:
            sid = self.call(http, "sessions", "POST", "/sessions", {"audience": "personal", "boundary": "bench"})
            if sid is None:
                return
            sid = sid["session"]["id"]
            known: list[str] = []
            done = 0
            while time.monotonic() < self.deadline and (self.max_requests is None or done < self.max_requests):
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                step = done % 8
                if step == 0:
                    self.call(http, "status", "GET", "/status")
                elif step == 1:
                    found = self.call(http, "find_memories", "POST", f"/sessions/{sid}/tools/find_memories",
                                      {"query": words, "limit": 5})
                    if found:
                        known = [i["id"] for i in found["items"]] or known
                elif step == 2 and known:
                    self.call(http, "get_memories", "POST", f"/sessions/{sid}/tools/get_memories", {"ids": known[:3]})
                elif step == 3:
                    self.call(http, "recall", "POST", f"/sessions/{sid}/recall", {"message": f"what about {words}?"},
                              allow_503=True)
                elif step == 4:
                    self.call(http, "turns", "POST", f"/sessions/{sid}/turns",
                              {"user": f"tell me about {words}", "assistant": "noted"})
                elif step == 5:
                    self.call(http, "checkpoints", "GET", "/checkpoints")
                elif step == 6:
                    self.call(http, "store_memory", "POST", f"/sessions/{sid}/tools/store_memory",
                              {"title": words.title(),
                               "content": f"The user mentioned {words} (bench {seed_}-{done})."})
                elif known:
                    self.call(http, "update_memory", "POST", f"/sessions/{sid}/tools/update_memory",
                              {"id": known[0], "title": f"{words} (renamed)"})
                done += 1

    def call(self, http: httpx.Client, name: str, method: str, path: str, body=None, allow_503=False):
        t0 = time.perf_counter()
        try:
            response = http.request(method, path, json=body)
            elapsed = (time.perf_counter() - t0) * 1000
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            with self.lock:
                self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            return None
        if response.status_code == 503 and allow_503:
            with self.lock:
                self.latencies[name + " (503: not built yet)"].append(elapsed)
            return None
        with self.lock:
            if response.status_code != 200:
                self.errors.append(f"{name}: {response.status_code} {data.get('error')}")
                return None
            self.latencies[name].append(elapsed)
        return data


def run(args) -> int:
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        seed(home, args.memories, rng)
        process, url = start_server(home)
        try:
            token = read_token_file(home)
            load = Load(url, token, time.monotonic() + args.seconds, args.requests)
            threads = [threading.Thread(target=load.client, args=(i,)) for i in range(args.clients)]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - start
        finally:
            process.terminate()
            process.communicate(timeout=30)  # waits, and closes the pipe
    total = sum(len(v) for v in load.latencies.values())
    print(f"bench api: {args.clients} clients, {wall:.1f} s, {total} requests ({total / wall:.0f}/s), "
          f"{len(load.errors)} errors, {args.memories} memories seeded (server in its own process)")
    results = {"clients": args.clients, "seconds": round(wall, 2), "requests": total,
               "errors": len(load.errors), "routes": {}}
    for name in sorted(load.latencies):
        values = load.latencies[name]
        p50, p95 = statistics.median(values), percentile(values, 0.95)
        results["routes"][name] = {"n": len(values), "p50_ms": round(p50, 2), "p95_ms": round(p95, 2)}
        print(f"  {name:<34} n={len(values):>6}  p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
    for err in load.errors[:10]:
        print(f"  error: {err}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return 1 if load.errors else 0
