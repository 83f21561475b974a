"""Child process for the crash test: curate until the queue is empty, narrating each step.

Run as `python crash_worker.py HOME`. Prints one line per step (leased / planned / applying) and
waits for a line on stdin before it goes on, so a SIGKILL the parent sends on reading a step lands
in that step, not after the worker raced on to commit (at end of input it goes on at once); exits
0 when nothing is left to do.
"""

import sys

from keepmind.engine import open_engine
from keepmind.engine.writepath import curation


def main(home: str) -> int:
    engine = open_engine(home, start_workers=False)
    worker = engine.writepath.curation
    real_plan, real_apply = curation.plan, curation.apply

    def step(name):
        print(name, flush=True)
        sys.stdin.readline()  # the parent's go-ahead (or the SIGKILL, while this waits)

    def plan(*args, **kwargs):
        step("leased")
        result = real_plan(*args, **kwargs)
        step("planned")
        return result

    def apply(*args, **kwargs):
        result = real_apply(*args, **kwargs)
        step("applying")  # still inside the write transaction
        return result

    curation.plan, curation.apply = plan, apply
    print("ready", flush=True)
    while worker.run_once().status != "idle":
        print("done", flush=True)
    engine.close()
    print("idle", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
