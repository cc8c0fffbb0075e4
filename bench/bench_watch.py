"""What watching costs: the sampler's CPU at 1 Hz, and `cachewise status` with 20 caches.

    python -m bench.bench_watch [--minutes 10]

Targets (issue 12): the sampler under 1% of one core at 1 Hz, measured over 10 minutes (the
default here is 1 minute so the bench suite stays short; pass --minutes 10 for the target's
own measure); `status` with 20 caches under 1 s.

The caches are the lab's, replayed (tests/unit/fakesys.py): a sysfs tree built from captured
bcache files, and dmsetup's table and status lines as captured. Each tick still starts the
real ``dmsetup`` (its output is replaced by the captured one), so the cost of a process per
tick is in the figure; the peer measured in the same run is one bare ``dmsetup status`` per
second, the floor any sampler that asks dmsetup pays.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from advisor.runner import CommandResult, CommandRunner
from advisor.watch.sampler import Sampler
from cachewise.core import Core, LiveDiscovery, watch
from tests.unit.fakesys import many


class ReplayingRunner(CommandRunner):
    """Runs the real dmsetup (for its cost) and answers with the lab's captured output."""

    def __init__(self, table: str, status: str) -> None:
        super().__init__()
        self.answers = {"table": table, "status": status}

    def which(self, tool: str) -> str | None:
        return tool

    def run(self, argv, *, timeout=None, check=True):  # type: ignore[no-untyped-def]
        subprocess.run(["dmsetup", argv[1]], capture_output=True, check=False)
        return CommandResult(tuple(argv), 0, self.answers[argv[1]], "", 0.0)


def cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def at_1hz(seconds: float, tick) -> float:  # type: ignore[no-untyped-def]
    """CPU seconds per wall second of calling ``tick`` once a second for ``seconds``."""
    start_cpu, start = cpu(), time.monotonic()
    n = 0
    while time.monotonic() - start < seconds:
        tick()
        n += 1
        time.sleep(max(0.0, n - (time.monotonic() - start)))
    return (cpu() - start_cpu) / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, table, status = many(Path(tmp), 1)
        runner = ReplayingRunner(table, status)
        core = Core(LiveDiscovery(runner), runner, state_dir=Path(tmp) / "state")
        core._sampler = Sampler(runner, sysfs)
        refs = [watch.target(core, "labvg/data")]
        session = watch.session(core, refs)
        seconds = args.minutes * 60
        share = at_1hz(seconds, session.step)
        session.flush()
        floor = at_1hz(
            min(seconds, 60), lambda: subprocess.run(["dmsetup", "status"], capture_output=True, check=False)
        )
        print(f"sampler at 1 Hz, one lvmcache, recorded in the history, over {seconds:.0f} s:")
        print(
            f"  {share * 100:.3f}% of one core (target < 1%); peer, a bare `dmsetup status` a second: "
            f"{floor * 100:.3f}% (ratio {share / floor if floor else float('nan'):.1f}x)"
        )

        sysfs, table, status = many(Path(tmp) / "twenty", 20)
        runner = ReplayingRunner(table, status)
        core = Core(LiveDiscovery(runner), runner, state_dir=None)
        core._sampler = Sampler(runner, sysfs)
        times = []
        for _ in range(5):
            core._sampler = Sampler(runner, sysfs)
            start = time.perf_counter()
            rows = watch.status(core)
            times.append(time.perf_counter() - start)
        print(f"status with {len(rows)} caches: median {sorted(times)[2] * 1000:.1f} ms (target < 1000 ms)")


if __name__ == "__main__":
    main()
