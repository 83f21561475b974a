"""Child process for the crash test: curate until the queue is empty, narrating each step.

Run as `python crash_worker.py HOME`. Prints one line per step (leased / planned / applied) so
the parent can SIGKILL it at a random step; exits 0 when nothing is left to do.
"""

import sys

from keepmind.engine import open_engine
from keepmind.engine.writepath import curation


def main(home: str) -> int:
    engine = open_engine(home, start_workers=False)
    worker = engine.writepath.curation
    real_plan, real_apply = curation.plan, curation.apply

    def plan(*args, **kwargs):
        print("leased", flush=True)
        result = real_plan(*args, **kwargs)
        print("planned", flush=True)
        return result

    def apply(*args, **kwargs):
        result = real_apply(*args, **kwargs)
        print("applying", flush=True)  # still inside the write transaction
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
