"""The accuracy suite's comparison, replayed on runs captured in the lab guest
(tests/fixtures/lab-accuracy/): the kernel's own counters against the prediction cachewise
makes from fio's iolog of the same run. If a change to the model moves a prediction away from
what the real kernel did, this fails without a lab boot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.vm.accuracy import STEADY_GOAL, counters, evaluate, observed, t63, table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lab-accuracy"
MiB = 1 << 20


def test_counters_are_read_from_the_captured_dmsetup_lines() -> None:
    times, hits, misses = counters(FIXTURES / "dmcache-wt-zipf08.samples", "dmcache")
    assert times[0] == 0 and np.all(np.diff(times) > 1.5) and len(times) > 30
    assert np.all(np.diff(hits) >= 0) and np.all(np.diff(misses) >= 0), "cumulative counters"
    steady = observed(times, hits, misses)
    assert 0.15 < steady < 0.35
    when = t63(times, hits, misses, steady)
    assert when is not None and 2 <= when <= 40


@pytest.mark.parametrize("workload", ["zipf08=zipf:0.8", "backup=backup", "writes=writes"])
def test_prediction_from_the_trace_matches_the_real_kernel(workload: str) -> None:
    rows = evaluate(FIXTURES, ["dmcache-wt"], [workload], 64 * MiB)
    print(table(rows, {}))
    assert len(rows) == 1
    row = rows[0]
    assert row.requests > 5000
    assert abs(row.predicted - row.observed) <= STEADY_GOAL, f"predicted {row.predicted}, observed {row.observed}"
    assert row.t63_ok, f"time to 63%: simulated {row.predicted_t63} s, observed {row.observed_t63} s"
    if workload.startswith("backup"):
        # The backup's reads are dm-cache misses; the comparison takes them out.
        raw = counters(FIXTURES / "dmcache-wt-backup.samples", "dmcache")
        assert observed(*raw) < row.observed - 0.2
