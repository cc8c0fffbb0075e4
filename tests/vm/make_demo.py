"""Make `cachewise demo`'s scenes (cachewise/core/data/demo-*.json) from a lab run.

    python -m tests.vm.make_demo WATCH_DIR TUI_FLOW_DIR

WATCH_DIR is the directory a run of tests/lab/test_watch_lab.py left (lab-watch0: its out/
holds bc-stall.jsonl, bc-flush.jsonl and raw-bcache.json, written by tests/vm/guest/watch.sh);
TUI_FLOW_DIR the one of tests/lab/test_tui_flow_lab.py (lab-tui-flow0: out/raw-lvmcache.json,
and the samples and the prediction the Warm-up screen recorded in state/history.sqlite3, as
tests/vm/guest/tui_flow.sh drove it). Nothing is made up: the scenes are those files, cut to
the stretch the scene is about and thinned to a sample a second where sampled faster.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEST = ROOT / "cachewise" / "core" / "data"
VERSIONS = ROOT / "tests" / "fixtures" / "lab-readers" / "versions.txt"


def thinned(samples: list[dict[str, Any]], step: float = 0.9) -> list[dict[str, Any]]:
    """A sample about every second: the Warm-up screen plays one a tick."""
    out: list[dict[str, Any]] = []
    for s in samples:
        if not out or s["t"] - out[-1]["t"] >= step:
            out.append(s)
    return out


def longest_run(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The longest stretch sampled without a gap (a screen left open), in time order."""
    samples = sorted(samples, key=lambda s: s["t"])
    gaps = [b["t"] - a["t"] for a, b in zip(samples, samples[1:], strict=False)]
    limit = 3 * statistics.median(gaps) if gaps else 0
    runs: list[list[dict[str, Any]]] = [[]]
    for s in samples:
        if runs[-1] and s["t"] - runs[-1][-1]["t"] > limit:
            runs.append([])
        runs[-1].append(s)
    return max(runs, key=len)


def until_clean(samples: list[dict[str, Any]], after: int = 3) -> list[dict[str, Any]]:
    """The samples up to a few after the flush ended (no dirty data, bcache's state no longer
    dirty): the watch that recorded them went on a while longer."""
    for i, s in enumerate(samples):
        if i and not s["dirty_bytes"] and s["state"] != "dirty":
            return samples[: i + after]
    return samples


def json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["sample"] for line in path.read_text().splitlines() if line.strip()]


def scene(
    name: str, title: str, about: str, watch: str, raw: Path, recordings: list[dict[str, Any]], stall_after: float | None
) -> None:
    data = {
        "schema": "cachewise.demo/1",
        "scene": name,
        "title": title,
        "about": about,
        "captured": {"versions": VERSIONS.read_text().split("\n")[0:5], "by": "python -m tests.vm.make_demo"},
        "watch": watch,
        "stall_after": stall_after,
        "until_clean": name == "flush",  # printed at once, the scene ends when the flush does
        "raw": json.loads(raw.read_text()),
        "recordings": recordings,
    }
    out = DEST / f"demo-{name}.json"
    out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{out}: {sum(len(r['samples']) for r in recordings)} samples")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    watch_dir, flow_dir = (Path(a) for a in argv)
    db = sqlite3.connect(flow_dir / "state" / "history.sqlite3")
    rows = db.execute("SELECT sample_json FROM samples WHERE target = 'labvg/data' ORDER BY t").fetchall()
    warm = thinned(longest_run([json.loads(r[0]) for r in rows]))
    made_at, predicted = db.execute(
        "SELECT made_at, prediction_json FROM caches WHERE target LIKE '%labvg/data' ORDER BY made_at DESC"
    ).fetchone()
    prediction = json.loads(predicted)
    prediction["applied_at"] = prediction.get("applied_at") or made_at
    scene(
        "warmup",
        "An lvmcache warming up against its prediction",
        "labvg/data, a 512 MiB ext4 LV on a 150-IOPS hard disk, cached by a writeback lvmcache on a SATA SSD that "
        "cachewise recommended from a trace and made through the Add flow; then 20 s of Zipf reads of a file on it.",
        "labvg/data",
        flow_dir / "out" / "raw-lvmcache.json",
        [{"prediction": prediction, "samples": warm}],
        None,
    )
    out = watch_dir / "out"
    flush = until_clean(thinned(json_lines(out / "bc-stall.jsonl") + json_lines(out / "bc-flush.jsonl")))
    scene(
        "flush",
        "A writeback bcache: a stalled flush, explained, then counting down",
        "bcache0, a 384 MiB disk at 300 IOPS cached by a 320 MiB SSD in writeback; a writer keeps dirtying it, so "
        "dirty data does not fall (a stall, with its causes), then the writer stops, writeback_percent goes to 0 "
        "and the flush counts down to clean.",
        "bcache0",
        out / "raw-bcache.json",
        [{"prediction": None, "samples": flush}],
        8.0,  # as watch.sh recorded it: `cachewise watch --stall-after 8`
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
