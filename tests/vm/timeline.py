"""Where a lab scenario's time went: the slowest commands of a scenario.log written with
timestamps (tests/vm/guest/run.sh sets PS4 to bash's EPOCHREALTIME).

    python -m tests.vm.timeline OUT/scenario.log [N]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(r"^(\++) (\d+\.\d+) (.*)$")


def slowest(text: str, n: int = 25) -> list[tuple[float, str]]:
    """(seconds until the next traced line of the same or a lower depth, command), slowest first."""
    steps = [(len(m[1]), float(m[2]), m[3]) for m in map(LINE.match, text.splitlines()) if m]
    out = []
    for i, (depth, t, cmd) in enumerate(steps):
        nxt = next((t2 for d2, t2, _ in steps[i + 1:] if d2 <= depth), None)
        if nxt is not None:
            out.append((nxt - t, cmd[:160]))
    return sorted(out, reverse=True)[:n]


def main() -> int:
    text = Path(sys.argv[1]).read_text(errors="replace")
    for seconds, cmd in slowest(text, int(sys.argv[2]) if len(sys.argv) > 2 else 25):
        print(f"{seconds:8.1f} s  {cmd}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
