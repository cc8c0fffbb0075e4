"""The week-style recommendation against the next day (issue 31), in the soak run: one cell of the
out-of-sample loop (tests/vm/guest/outofsample.sh with OOS_CAPTURE=1) on a day in three phases (a
daytime hot set, a night scan of the whole region, an evening hot set elsewhere). Day 1 is recorded
by `cachewise capture` over the whole day and, beside it, by a `cachewise trace` of its first
phase only (a short trace taken in the daytime). `cachewise recommend` sizes the cache from the
capture, `cachewise apply` makes it, and days 2 and 3 run the same phases through it while the
kernel's counters are read. The issue asks that the capture's prediction fall within 0.10 of day
3's read hit ratio as dm-cache counted it, and the short window's not. Measured 2026-11-27 with
smq replayed at the cache's own size and weighed for the closed loop (docs/recommend.md): 0.641
predicted against 0.550 counted (the short window 0.882) in the run made after the code, and 0.543
against 0.539 (the short window 0.898) in one after the review's mend; the same model on the two
runs before it, recomputed from their captures, 0.418 against 0.543 (a miss: where smq's
once-a-minute redistribution falls in the 30-s phases decides much of the day) and 0.605 against
0.561. On 2026-12-07, the capture counted and sampled by its BPF program (all of day 1's 9,517
requests in it): 0.784 predicted against 0.545 counted, a miss, with the replay of day 3's own
trace at 0.824: both were the LRU curve's, the replay at 64 MiB not having settled (its passes
a day apart move up and down with the moment smq's once-a-minute redistribution meets the day).
With a replay read over its passes' mean where they move so (analysis._settled), that capture
predicts 0.508, and the next two runs, held out, predicted 0.502 against 0.563 counted and
0.619 against 0.546 (the short window 0.848 and 0.873). About 7 minutes: the soak run only (`CACHEWISE_SOAK=1`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from advisor.workload import periods
from advisor.workload.traces import load_trace
from tests.vm.lab import HDD, SATA_SSD, GuestRun, LabPool, Scenario, soak
from tests.vm.outofsample import STEADY_GOAL, Cell, evaluate, predicted

if not soak():
    pytest.skip("the soak run only (CACHEWISE_SOAK=1)", allow_module_level=True)

CELL = Cell("nextday", "lvmcache", "phases", 0)
SECONDS = 90
SCENARIO = Scenario(
    "nextday",
    "outofsample.sh",
    (HDD, SATA_SSD),
    timeout=2400,
    expected_s=720,
    paired=True,
    env=(("OOS_CELLS", CELL.spec), ("OOS_CAPTURE", "1"), ("OOS_SECONDS", str(SECONDS)), ("OOS_BUDGET", "64m")),
)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    print(run.read("timeline.txt") if (run.out / "timeline.txt").exists() else run.log_tail())
    return run


def cell_dir(run: GuestRun) -> Any:
    d = run.out / "cells" / CELL.name
    assert (d / "done").exists(), (d / "failed").read_text() if (d / "failed").exists() else run.log_tail()
    return d


def test_the_capture_of_the_whole_day_names_its_phases(guest: GuestRun) -> None:
    d = cell_dir(guest)
    span = json.loads((d / "analysis.json").read_text())["periods"]
    print([(ph["name"], ph["kind"], ph["start"], ph["end"]) for ph in span["phases"]])
    kinds = [ph["kind"] for ph in span["phases"] if ph["kind"] != periods.QUIET]  # before fio began
    assert kinds[0] == periods.HOT and periods.SCAN in kinds, kinds
    after_scan = kinds[kinds.index(periods.SCAN) + 1 :]
    assert after_scan and after_scan[0] in (periods.NEW_HOT, periods.MOVING), "the evening's hot set is new data"


def outcome(run: GuestRun) -> tuple[float, float, float, str]:
    """(the capture's prediction, day 3's read hit ratio as dm-cache counted it, the short
    window's prediction for the same cache, a line saying all of it)."""
    d = cell_dir(run)
    r = evaluate(CELL, d)
    rec = json.loads((d / "rec.json").read_text())
    short_own = (json.loads((d / "short-rec.json").read_text() or "{}") or {}).get("config") or {}
    assert r.choice == "recommended" and r.size_mib and r.observed is not None and r.predicted is not None, r
    short, basis = predicted(load_trace(d / "short.cwtrace"), CELL.backend, {"size_bytes": r.size_mib * (1 << 20)})
    line = (
        f"cache {r.size_mib} MiB ({rec['verdict']}); the capture predicted {r.predicted:.3f} ({r.basis}); day 3 "
        f"counted {r.observed:.3f} (oracle {r.oracle}); the short window predicted {short:.3f} for it ({basis}), "
        f"and recommended {short_own.get('size_bytes', 0) / (1 << 20):.0f} MiB at {short_own.get('predicted_hit_ratio')}"
    )
    return r.predicted, r.observed, short, line


def test_the_capture_of_the_day_predicts_the_next_day_better_than_a_short_window(guest: GuestRun) -> None:
    captured, observed, short, line = outcome(guest)
    print(line)
    assert 0.2 < observed < 0.95, "the cache served some reads and missed others"
    assert abs(captured - observed) < abs(short - observed), "the whole day's capture is nearer the next day"


def test_the_week_style_prediction_is_within_ten_points_of_the_next_day(guest: GuestRun) -> None:
    captured, observed, short, line = outcome(guest)
    print(line)
    assert abs(captured - observed) <= STEADY_GOAL
    assert abs(short - observed) > STEADY_GOAL
