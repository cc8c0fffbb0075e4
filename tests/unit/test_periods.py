"""A capture across time (advisor/workload/periods.py): windows, days and named phases, from
captures written by the capture's own recorder and read back as `cachewise analyze` reads them."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.workload import capfile, periods
from advisor.workload.traces import REQUEST
from tests.unit.test_capfile import Clock, roomy

MIDNIGHT = 1_790_000_000.0 - 1_790_000_000.0 % 86400  # a Monday, 00:00 UTC
HOT_BLOCKS = (256 << 20) // 4096


def zipf_blocks(rng: np.random.Generator, n: int, base: int) -> np.ndarray[Any, Any]:
    """A Zipf(1.2) hot set of 256 MiB whose hot blocks are spread (as files are), at ``base``."""
    ranks = rng.zipf(1.2, n) % HOT_BLOCKS
    return base + (ranks * 2654435761) % HOT_BLOCKS


def hot(rng: np.random.Generator, start: float, seconds: float, iops: float, base: int = 0) -> np.ndarray[Any, Any]:
    n = int(iops * seconds)
    out = np.empty(n, REQUEST)
    out["t"] = start + np.sort(rng.random(n)) * seconds
    out["offset"] = zipf_blocks(rng, n, base).astype(np.uint64) * np.uint64(4096)
    out["length"] = 4096
    out["write"] = rng.random(n) < 0.2
    return out


def scan(start: float, seconds: float, mib: int, at: int = 8 << 30) -> np.ndarray[Any, Any]:
    """A sequential read of ``mib`` MiB in 1 MiB requests."""
    out = np.empty(mib, REQUEST)
    out["t"] = start + np.linspace(0, seconds * 0.999, mib)
    out["offset"] = np.uint64(at) + np.arange(mib, dtype=np.uint64) * np.uint64(1 << 20)
    out["length"] = 1 << 20
    out["write"] = 0
    return out


def captured(
    tmp_path: Path, runs: list[np.ndarray[Any, Any]], rate: float, name: str = "cap"
) -> capfile.Capture:
    """Each run's requests through its own recorder (a run ends as a reboot ends it), read back."""
    folder = tmp_path / name
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY)
    try:
        for reqs in runs:
            reqs = np.sort(reqs, order="t")
            start = float(reqs["t"][0])
            clock = Clock(start)
            until = float(reqs["t"][-1]) + 3600  # (a far end would halve the rate, to keep the sample small)
            rec = capfile.Recorder(folder, fd, {"device": "/dev/sdb", "until": until}, rate,
                                   capfile.Limits(until, 1 << 32), clock, roomy)
            for lo in np.arange(start, float(reqs["t"][-1]) + 600, 600.0):  # ten minutes a batch
                clock.now = lo + 600
                rec.add(reqs[(reqs["t"] >= lo) & (reqs["t"] < lo + 600)])
                rec.tick()
            rec.close("interrupt")
    finally:
        os.close(fd)
    return capfile.read_capture(capfile.capture_files(folder))


UTC: Callable[[float], time.struct_time] = time.gmtime


@pytest.fixture(scope="module")
def three_days(tmp_path_factory: pytest.TempPathFactory) -> periods.Periods:
    """Three days of a home server: a hot set all day at 4 IOPS, a scan of 3.5 GiB every night
    from 02:00 to 03:00; on the third day the hot set moves to other data."""
    rng = np.random.default_rng(7)
    parts = []
    for day in range(3):
        midnight = MIDNIGHT + day * 86400
        base = 0 if day < 2 else 1 << 20  # blocks: the third day's set is 4 GiB further on
        parts += [hot(rng, midnight, 2 * 3600, 4, base), scan(midnight + 2 * 3600, 3600, 3500),
                  hot(rng, midnight + 3 * 3600, 21 * 3600, 4, base)]
    c = captured(tmp_path_factory.mktemp("days"), [np.concatenate(parts)], 1 / 8)
    p = periods.periods(c.requests, c.rate, c.summaries, UTC)
    assert p is not None
    return p


def test_a_capture_of_days_is_cut_in_hours_and_its_days(three_days: periods.Periods) -> None:
    p = three_days
    assert p.window_seconds == 3600 and len(p.windows) == 72
    assert [d.start for d in p.days] == [MIDNIGHT, MIDNIGHT + 86400, MIDNIGHT + 2 * 86400]
    assert 71.9 < p.hours <= 72
    night = p.windows[26]  # Tuesday 02:00
    assert night.kind == periods.SCAN and night.sequential_share > 0.95 and night.read_share == 1.0
    day = p.windows[30]
    assert day.kind == periods.HOT and day.reuse > 0.5 and day.read_share == pytest.approx(0.8, abs=0.05)
    assert day.iops == pytest.approx(4, rel=0.25)  # every request, estimated from the 1/8 sample
    assert len(day.read_hit_ratio) == len(p.sizes_bytes) and day.read_hit_ratio == sorted(day.read_hit_ratio)


def test_the_nightly_scan_is_named_daily_and_the_moved_hot_set_new(three_days: periods.Periods) -> None:
    names = [ph.name for ph in three_days.phases]
    print("\n".join(names))
    scans = [ph for ph in three_days.phases if ph.kind == periods.SCAN]
    assert len(scans) == 3
    assert all(ph.daily == "02:00-03:00 (3 of 3 days)" for ph in scans)
    assert scans[1].name == "scan Tue 02:00-03:00, daily 02:00-03:00 (3 of 3 days)"
    wednesday = [ph for ph in three_days.phases if ph.start == MIDNIGHT + 2 * 86400]
    assert [ph.kind for ph in wednesday] == [periods.NEW_HOT], "the third day's hot set is new data"
    before = [ph for ph in three_days.phases if ph.start < MIDNIGHT + 2 * 86400 and ph.kind != periods.SCAN]
    assert {ph.kind for ph in before} == {periods.HOT}
    assert all(ph.daily is None for ph in three_days.phases if ph.kind != periods.SCAN), "a day-long set is not 'daily'"


def test_the_cycle_says_how_much_of_a_days_hot_data_the_next_day_touches(three_days: periods.Periods) -> None:
    monday, tuesday, wednesday = three_days.days
    assert monday.hot_carried is None and monday.reread is None
    assert tuesday.hot_carried is not None and tuesday.hot_carried > 0.75  # the same set: most of it again
    assert tuesday.reread is not None and tuesday.reread > 0.9
    assert wednesday.hot_carried is not None and wednesday.hot_carried < 0.05
    assert wednesday.requests == pytest.approx(4 * 23 * 3600 + 3500, rel=0.02)  # the hours counted every request
    # The same hot set's shape, elsewhere on the disk: its hot units fall in or out of the 1/8
    # sample differently, which the hours' read counts correct (SHARDS_adj), day by day.
    mid = len(three_days.sizes_bytes) // 2
    assert wednesday.read_hit_ratio[mid] == pytest.approx(monday.read_hit_ratio[mid], abs=0.05)


def test_a_short_capture_has_phases_of_seconds_and_its_reboot_is_a_gap(tmp_path: Path) -> None:
    """Minutes, as in the lab: a hot set, a power cut, then after the reboot a scan and the same
    hot set again. The windows are round seconds; the time the machine was off is no phase."""
    rng = np.random.default_rng(3)
    t0 = MIDNIGHT + 10 * 3600
    first = hot(rng, t0, 240, 200)
    second = np.concatenate([scan(t0 + 360, 60, 2000), hot(rng, t0 + 420, 180, 200)])
    c = captured(tmp_path, [first, second], 1 / 4)
    p = periods.periods(c.requests, c.rate, c.summaries, UTC)
    assert p is not None and p.window_seconds == 30 and not p.days
    print([(w.kind, w.captured_seconds) for w in p.windows])
    gap = [w for w in p.windows if w.start >= t0 + 270 and w.start + w.seconds <= t0 + 360]
    assert gap and all(w.kind == "" and w.captured_seconds == 0 for w in gap)
    assert [ph.kind for ph in p.phases] == [periods.HOT, periods.SCAN, periods.HOT]
    assert [ph.name for ph in p.phases][1] == "scan 10:06:00-10:07:00"
    assert p.hours == pytest.approx(480 / 3600, abs=0.005)  # two runs of 240 s; the gap is not counted


def test_a_hot_set_that_begins_within_a_scans_last_window_is_still_new(tmp_path: Path) -> None:
    """As in the lab: after the reboot a scan, then a hot set on other data, which starts inside
    the scan's last window (mostly the scan's bytes, so a scan window). The hot windows after it
    touch data that window touched, yet none that the capture had before the scan: new."""
    rng = np.random.default_rng(4)
    t0 = MIDNIGHT + 10 * 3600
    first = hot(rng, t0, 240, 200)
    second = np.concatenate([scan(t0 + 360, 45, 1500), hot(rng, t0 + 405, 195, 200, base=1 << 20)])
    c = captured(tmp_path, [first, second], 1 / 4)
    p = periods.periods(c.requests, c.rate, c.summaries, UTC)
    assert p is not None and p.window_seconds == 30
    mixed = next(w for w in p.windows if w.start == t0 + 390)
    assert mixed.kind == periods.SCAN
    after = next(w for w in p.windows if w.start == t0 + 420)
    assert after.kind == periods.HOT and after.seen_before > 0.3  # its data was in the scan's window
    assert [ph.kind for ph in p.phases] == [periods.HOT, periods.SCAN, periods.NEW_HOT]


def test_quiet_hours_and_writes_are_their_own_phases(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    t0 = MIDNIGHT
    idle = hot(rng, t0, 1800, 0.2)  # less than a request a second
    writes = hot(rng, t0 + 1800, 1800, 100)
    writes["write"] = rng.random(len(writes)) < 0.9
    c = captured(tmp_path, [np.concatenate([idle, writes])], 1.0)
    p = periods.periods(c.requests, c.rate, c.summaries, UTC)
    assert p is not None
    assert [ph.kind for ph in p.phases] == [periods.QUIET, periods.WRITES]


@pytest.mark.parametrize(
    ("span", "seconds"),
    [(600, 30), (3600, 300), (6 * 3600, 900), (86400, 3600), (2 * 86400, 3600), (30, 10), (7 * 86400, 3600)],
)
def test_windows_are_hours_from_two_days_and_round_seconds_below(span: float, seconds: float) -> None:
    assert periods.window_seconds(span) == seconds
    assert periods.window_seconds(span, 10**6) == seconds


def test_a_sparse_samples_windows_are_long_enough_to_hold_some_of_it() -> None:
    assert periods.window_seconds(600, 400) == 120  # 50 sampled requests a window on average: 75 s, rounded up
    assert periods.window_seconds(6 * 3600, 20) == 3600


def test_an_empty_sample_has_no_periods() -> None:
    assert periods.periods(np.empty(0, capfile.CAPTURED), 1.0, [], UTC) is None


def test_a_recommendation_from_a_capture_says_the_hours_and_phases_it_was_drawn_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from cachewise.cli import main
    from tests.unit.test_bad_inputs import RAW

    rng = np.random.default_rng(11)
    t0 = MIDNIGHT + 9 * 3600
    captured(tmp_path, [np.concatenate([hot(rng, t0, 600, 100), scan(t0 + 600, 120, 500)])], 1 / 2)
    argv = ["recommend", "--from-raw", RAW, "--slow", "sda", "--fast", "nvme0n1", "--trace", str(tmp_path / "cap")]
    assert main([*argv, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    measured = next(r["text"] for r in rec["reasons"] if r["text"].startswith("Measured from the trace"))
    print(measured)
    assert "(a capture of 0.20 hours: the sizes are drawn from all of it; its phases: hot set, scan)" in measured


def test_days_begin_at_local_midnight_across_a_change_of_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Berlin moves its clocks forward on 2026-03-29: that Sunday has 23 hours, and each day of
    the capture still begins at its own local midnight."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        start = time.mktime((2026, 3, 27, 12, 0, 0, 0, 0, -1))
        n = 4 * 24 * 60  # a request a minute for four days
        reqs = np.zeros(n, capfile.CAPTURED)
        reqs["t"] = start + np.arange(n) * 60.0
        reqs["offset"] = (np.arange(n) % 500).astype(np.uint64) * np.uint64(4096)
        reqs["length"] = 4096
        p = periods.periods(reqs, 1.0, [], time.localtime)
        assert p is not None
        starts = [time.localtime(d.start) for d in p.days]
        assert [(tm.tm_mday, tm.tm_hour, tm.tm_min) for tm in starts] == [(27, 0, 0), (28, 0, 0), (29, 0, 0),
                                                                         (30, 0, 0), (31, 0, 0)]
        assert p.days[2].requests == 23 * 60  # the short Sunday
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_a_capture_of_one_request_or_of_an_instant_has_no_burst() -> None:
    one = np.zeros(1, capfile.CAPTURED)
    one["t"], one["length"] = MIDNIGHT + 5, 4096
    p = periods.periods(one, 1.0, [], UTC)
    assert p is not None and p.phases == [] and p.hours == 0
    # a run that began a moment before a window's end: that moment is no phase of its own
    rng = np.random.default_rng(2)
    reqs = np.zeros(3000, capfile.CAPTURED)
    reqs["t"] = MIDNIGHT + 30 + np.sort(rng.random(3000)) * 600
    reqs["t"][0] = MIDNIGHT + 29.9995
    reqs["offset"] = (rng.zipf(1.2, 3000) % 5000).astype(np.uint64) * np.uint64(4096)
    reqs["length"] = 4096
    p = periods.periods(reqs, 1.0, [], UTC)
    assert p is not None and p.windows[0].captured_seconds < 1 and p.windows[0].kind == ""
    assert [ph.kind for ph in p.phases] == [periods.HOT]


def test_days_in_a_time_zone_half_an_hour_off_count_every_hour(tmp_path: Path) -> None:
    """India's clock is UTC+5:30: its midnight cuts a capture's hours in two. Each whole day
    counts all of its requests (the two cut hours by the share of their sample inside), where
    counting whole hours alone lost one of 24; the days' read hit ratios come from the same."""
    kolkata: Callable[[float], time.struct_time] = lambda t: time.gmtime(t + 5.5 * 3600)  # noqa: E731
    rng = np.random.default_rng(11)
    reqs = hot(rng, MIDNIGHT, 3 * 86400, 2)
    c = captured(tmp_path, [reqs], 1 / 8)
    p = periods.periods(c.requests, c.rate, c.summaries, kolkata)
    assert p is not None and len(p.days) == 4
    for day in p.days[1:3]:  # the whole local days
        assert time.gmtime(day.start)[3:5] == (18, 30)
        true = int(np.count_nonzero((reqs["t"] >= day.start) & (reqs["t"] < day.start + 86400)))
        assert abs(day.requests - true) / true < 0.005, (day.requests, true)
        assert day.read_hit_ratio and all(0 <= h <= 1 for h in day.read_hit_ratio)
