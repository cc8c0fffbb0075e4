"""The out-of-sample suite's reading of a lab run (tests/vm/outofsample.py), on a run captured in
the guest (tests/fixtures/lab-outofsample/: a calibration run of the `scan` workload through an
lvmcache, 40 s days): which samples are day 3, the warm-up, the speed-up from fio's IOPS logs
with the stream left out, and how the report counts, explains and resumes."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.vm import outofsample as oos
from tests.vm.accuracy import counters, t63

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lab-outofsample"
CELL = oos.Cell("calibrate", "lvmcache", "scan", 0)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The captured run as the suite keeps it (WORKDIR/cells/NAME), its iologs unzipped."""
    cell = tmp_path / "cells" / CELL.name
    shutil.copytree(FIXTURES / CELL.name, cell)
    for gz in cell.glob("*.gz"):
        gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
        gz.unlink()
    for name in ("kernel.txt", "lvm-version.txt", "fio-version.txt"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path


def test_a_run_is_read_as_the_kernel_counted_it(workdir: Path) -> None:
    d = workdir / "cells" / CELL.name
    r = oos.evaluate(CELL, d)
    # Day 3 by hand: from the first sample taken at or after day 3's step to the last one.
    stamps = [float(line.split(" ", 1)[0]) for line in (d / "after.samples").read_text().splitlines()]
    day3 = next(float(line.split()[0]) for line in (d / "steps.txt").read_text().splitlines() if line.endswith(" day3"))
    first = next(i for i, s in enumerate(stamps) if s >= day3)
    times, hits, misses = counters(d / "after.samples", "dmcache")
    dh, dm = hits[-1] - hits[first], misses[-1] - misses[first]
    assert dh + dm > 1000
    assert r.observed == pytest.approx(dh / (dh + dm), abs=1e-4)
    # The warm-up is read on day 2's samples alone, against day 3's ratio.
    assert r.observed_t63 is not None and r.observed_t63 <= stamps[first] - stamps[0]
    assert r.observed_t63 == pytest.approx(t63(times[: first + 1], hits[: first + 1], misses[: first + 1],
                                                dh / (dh + dm)), abs=0.05)
    # The speed-up: the hot job's requests (job 1) over each day's length; the rate-limited scan
    # (job 2) left out.
    def rate(day: str) -> float:
        rows = np.loadtxt(d / f"{day}_iops.1.log", delimiter=",", usecols=(0, 1), ndmin=2)
        return float(rows[:, 1].sum() * 2.0 / (rows[-1, 0] / 1000.0))

    assert r.observed_speedup == pytest.approx(rate("day3") / rate("day1"), abs=0.01)
    assert 1.5 < r.observed_speedup < 10  # type: ignore[operator]
    # What recommend said, as it said it
    chosen = json.loads((d / "chosen.json").read_text())["config"]
    assert (r.choice, r.predicted, r.size_mib) == ("recommended", chosen["predicted_hit_ratio"], 256.0)
    assert r.predicted_speedup == chosen["expected_speedup"] and r.verdict == "cache"
    assert r.oracle is not None and 0 < r.oracle <= 1


def test_the_report_counts_explains_and_says_what_is_missing(workdir: Path) -> None:
    r = oos.evaluate(CELL, workdir / "cells" / CELL.name)
    assert r.observed is not None and r.observed_t63 is not None
    on_time = {"predicted_t63": r.observed_t63}  # so that only what each case is about can miss
    drift = dataclasses.replace(r, cell="drift", predicted=r.observed + 0.2, oracle=r.observed + 0.02, **on_time)
    wrong = dataclasses.replace(r, cell="wrong", predicted=r.observed - 0.15, oracle=r.observed + 0.3, **on_time)
    slow = dataclasses.replace(r, cell="slow", predicted=r.observed, predicted_t63=r.observed_t63 * 3, basis="replay")
    unsure = dataclasses.replace(r, cell="unsure", choice="range", predicted=None, band=(0.1, 0.2))
    nothing = dataclasses.replace(r, cell="nothing", choice="none", predicted=None, observed=None, oracle=None,
                                  predicted_t63=None, observed_t63=None, observed_speedup=None, verdict="dont-cache")
    good = dataclasses.replace(r, cell="good", predicted=r.observed + 0.05, oracle=r.observed, **on_time)
    text = oos.report([good, drift, wrong, slow, unsure, nothing], {"kernel": "6.1"}, 3, 12)
    assert "**Partial**: 6 of the 12 runs planned" in text
    assert "Read hit ratio within 0.10: **2 of 4 runs**" in text
    diffs = [0.05, 0.2, -0.15, 0.0]
    assert f"- lvmcache: bias {np.mean(diffs):+.3f}" in text
    assert "Time to 63% within 2x: **3 of 4 runs**" in text
    assert '"Can\'t judge yet": day 3 fell within the range given in 0 of 1 runs' in text
    misses = {line.split(":", 1)[0][2:]: line for line in text.split("### Every miss")[1].splitlines() if line[:2] == "- "}
    assert set(misses) == {"drift", "wrong", "slow", "unsure", "nothing"}, "good is no miss"
    assert "read hit ratio off by +0.200" in misses["drift"] and "nearer the kernel, so day 3 differed" in misses["drift"]
    assert "read hit ratio off by -0.150" in misses["wrong"] and "no nearer the kernel" in misses["wrong"]
    assert "warm-up 3.00x" in misses["slow"] and "the replay's, at day 1's request rate" in misses["slow"]
    assert "read hit ratio" not in misses["slow"] and "day 3's own requests" not in misses["slow"]
    assert "outside the range given" in misses["unsure"] and "range of 0.100-0.200" in misses["unsure"]
    assert "not scored" in misses["nothing"] and "offered no lvmcache" in misses["nothing"]
    assert text.index("## Method") < text.index("## Results")


def test_jobs_that_start_later_are_placed_in_their_third_of_the_day(workdir: Path) -> None:
    """fio's iolog counts each job's time from its own start: the nightly scan (fio's
    --startdelay, a third of the day) is placed in the day's middle third."""
    d = workdir / "cells" / CELL.name
    for day in ("day1", "day2", "day3"):
        length = oos.day_seconds(d)
        assert length == 40
        requests = oos.day_trace(d, day, "scan").requests
        scan = requests[requests["length"] == 1 << 20]
        hot = requests[requests["length"] == 4096]
        assert len(scan) > 50 and len(hot) > 1000
        assert length // 3 <= scan["t"].min() and scan["t"].max() <= 2 * (length // 3) + 1.5, day
        assert hot["t"].min() < 1 and hot["t"].max() > length - 2


def test_the_suite_resumes_from_the_runs_it_kept(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell kept under WORKDIR/cells is not run again: only the others are booted; the report
    covers what is kept and is written whole (a temporary file, then renamed)."""
    booted: list[list[str]] = []
    monkeypatch.setattr(oos, "run_pending", lambda todo, *_a: booted.append([c.name for c in todo]))
    out = workdir / "accuracy.md"
    rc = oos.main(["--workdir", str(workdir), "--set", "calibrate", "--runs", "1", "--backends", "lvmcache",
                   "--workloads", "scan,zipf", "--out", str(out)])
    assert rc == 0 and booted == [["calibrate-lvmcache-zipf-0"]]
    text = out.read_text()
    assert "**Partial**: 1 of the 2 runs planned" in text and CELL.name in text
    assert "`bash packaging/accuracy.sh --set calibrate --runs 1` goes on with the others" in text
    assert "kernel 6.1.0-56-amd64" in text and not list(workdir.glob("*.tmp"))
    assert "**The runs below are calibration runs**" in text and "runs below are the report set" not in text
    saved = json.loads((workdir / "results.json").read_text())
    assert [s["cell"] for s in saved] == [CELL.name]
    assert [c.name for c in oos.cells(["report"], ["lvmcache", "bcache"], ["zipf"], 2)] == [
        "report-lvmcache-zipf-0", "report-bcache-zipf-0", "report-lvmcache-zipf-1", "report-bcache-zipf-1"]
