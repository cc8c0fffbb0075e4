"""What the kernel's read counters will weigh (issue 31's next day): a replay fed a day twice
settles when its day ends as the day before ended (a day in phases), and a stretch of the trace
that kept the disk busy (a closed loop) counts its reads as many more times as the cache speeds
it up (Q-LOOP-1). Outcomes worked out by hand."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.advice.profile import BOUND, closed_loop, trace_profile
from advisor.workload import analysis
from advisor.workload.analysis import REPLAY_WINDOWS, Analysis, analyze
from advisor.workload.traces import REQUEST, ImportStats, Trace


@dataclass
class Counters:
    read_hits: int
    read_misses: int


@dataclass
class FakeReplay:
    """A replay's ticks, one a second: (reads a second, their hit ratio) for each second."""

    counters: Counters
    times: np.ndarray
    read_hits: np.ndarray
    read_misses: np.ndarray

    @classmethod
    def of(cls, seconds: list[float], per_second: int = 100) -> FakeReplay:
        hits = np.cumsum([round(h * per_second) for h in seconds]).astype(np.int64)
        misses = np.cumsum([per_second - round(h * per_second) for h in seconds]).astype(np.int64)
        times = np.arange(1, len(seconds) + 1, dtype=np.float64)  # the tick after each second
        return cls(Counters(int(hits[-1]), int(misses[-1])), times, hits, misses)


DAY = 30  # a day of 30 s: three phases of 10 s, the day fed twice, the second pass from 30 s


def days(*each: list[float]) -> FakeReplay:
    """A replay of days of three 10-s phases, each phase at its read hit ratio."""
    return FakeReplay.of([day[s // 10] for day in each for s in range(DAY)])


def test_a_day_in_phases_that_reads_the_same_the_day_after_has_settled() -> None:
    # a hot set (0.2 while it fills), a scan (nothing hits), an evening hot set (0.8), each day alike
    r = days([0.1, 0.0, 0.6], [0.2, 0.0, 0.8])
    assert analysis._settled(r, 0.0, DAY - 1, DAY).read_hit_ratio is None, "its last third is 0.47 above the pass"
    again = days([0.1, 0.0, 0.6], [0.2, 0.0, 0.8], [0.22, 0.0, 0.8])
    settled = analysis._settled(again, 0.0, DAY - 1, DAY, passes=3)
    # the second pass's ratio, as the third pass read within 0.05 of it
    assert settled.read_hit_ratio == pytest.approx((0.2 + 0.0 + 0.8) / 3, abs=1e-6)
    assert settled.days == range(1, 2), "read over the second pass alone"
    moving = days([0.1, 0.0, 0.6], [0.2, 0.0, 0.8], [0.5, 0.0, 0.8])
    assert analysis._settled(moving, 0.0, DAY - 1, DAY, passes=3).read_hit_ratio is None, "the third read 0.1 more"


def test_a_day_whose_passes_move_up_and_down_settles_at_their_mean() -> None:
    # smq's once-a-minute redistribution meets each day at another moment: the evening's hot set
    # is kept one day (0.8) and lost the next (0.2); days 2 to 5 read 0.333, 0.133, 0.333, 0.133
    kept, lost = [0.2, 0.0, 0.8], [0.2, 0.0, 0.2]
    r = days([0.1, 0.0, 0.6], kept, lost, kept, lost)
    settled = analysis._settled(r, 0.0, DAY - 1, DAY, passes=5)
    assert settled.read_hit_ratio == pytest.approx((1.0 + 0.4 + 1.0 + 0.4) / 12, abs=1e-6)
    assert settled.days == range(1, 5)
    # fed only three times, the same replay has not settled: the third day read 0.2 less
    assert analysis._settled(days([0.1, 0.0, 0.6], kept, lost), 0.0, DAY - 1, DAY, passes=3).read_hit_ratio is None


def test_passes_that_barely_move_or_dip_a_little_have_settled() -> None:
    # days 2 to 5 read 0.30, 0.40, 0.38, 0.40: no dip past 0.025, the later two 0.04 above the earlier two
    r = days([0.1, 0.0, 0.3], [0.3, 0.0, 0.6], [0.4, 0.0, 0.8], [0.34, 0.0, 0.8], [0.4, 0.0, 0.8])
    assert analysis._settled(r, 0.0, DAY - 1, DAY, passes=5).read_hit_ratio == pytest.approx(4.44 / 12, abs=1e-6)
    # 0.30, 0.45, 0.42, 0.45: the later two 0.06 above, but a dip of 0.03 on the way
    r = days([0.1, 0.0, 0.3], [0.3, 0.0, 0.6], [0.45, 0.0, 0.9], [0.36, 0.0, 0.9], [0.45, 0.0, 0.9])
    assert analysis._settled(r, 0.0, DAY - 1, DAY, passes=5).read_hit_ratio == pytest.approx(4.86 / 12, abs=1e-6)
    # 0.30, 0.45, 0.43, 0.45: a dip of 0.02 only, the later two 0.065 above: still climbing
    r = days([0.1, 0.0, 0.3], [0.3, 0.0, 0.6], [0.45, 0.0, 0.9], [0.39, 0.0, 0.9], [0.45, 0.0, 0.9])
    assert analysis._settled(r, 0.0, DAY - 1, DAY, passes=5).read_hit_ratio is None


def test_passes_that_keep_climbing_have_not_settled() -> None:
    # days 2 to 5 read 0.2, 0.267, 0.367, 0.433: the later two 0.167 above the earlier two
    r = days([0.1, 0.0, 0.3], [0.2, 0.0, 0.4], [0.2, 0.0, 0.6], [0.3, 0.0, 0.8], [0.4, 0.0, 0.9])
    assert analysis._settled(r, 0.0, DAY - 1, DAY, passes=5).read_hit_ratio is None
    # read up and down, the same days have settled: 0.367, 0.267, 0.433, 0.2 (the later two 0.017 below)
    r = days([0.1, 0.0, 0.3], [0.3, 0.0, 0.8], [0.2, 0.0, 0.6], [0.4, 0.0, 0.9], [0.2, 0.0, 0.4])
    assert analysis._settled(r, 0.0, DAY - 1, DAY, passes=5).read_hit_ratio == pytest.approx(3.8 / 12, abs=1e-6)
    # and so have days whose later half reads 0.13 higher, but that fall on the way: 0.379, 0.172,
    # 0.462, 0.354 (smq replayed over the lab's day in phases, its minute at another moment)
    r = days([0.1, 0.0, 0.3], [0.3, 0.0, 0.837], [0.1, 0.0, 0.416], [0.4, 0.0, 0.986], [0.3, 0.0, 0.762])
    assert analysis._settled(r, 0.0, DAY - 1, DAY, passes=5).read_hit_ratio == pytest.approx(4.101 / 12, abs=1e-3)


def test_a_replay_still_climbing_on_the_second_day_has_not_settled() -> None:
    r = days([0.1, 0.2, 0.3], [0.4, 0.5, 0.6])
    assert analysis._settled(r, 0.0, DAY - 1, DAY).read_hit_ratio is None, "its last third is 0.1 over the pass"


def test_a_replay_flat_on_the_second_day_has_settled_as_before() -> None:
    r = days([0.1, 0.3, 0.5], [0.52, 0.5, 0.5])
    assert analysis._settled(r, 0.0, DAY - 1, DAY).read_hit_ratio == pytest.approx(0.5067, abs=1e-4)


def test_the_windows_of_a_pass_leave_out_the_passes_after_it() -> None:
    # windows of 10 s: the three phases; 100 reads a second
    kept, lost = [0.2, 0.0, 0.8], [0.2, 0.0, 0.2]
    r = days([0.1, 0.0, 0.6], kept, lost, kept, lost)
    w = analysis.Windows(0.0, 10.0, [1000] * 3, [1000] * 3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(analysis, "REPLAY_WINDOWS", 3)
        hits, misses = analysis._windowed(r, w, 0.0, DAY, range(1, 2), passes=5)
        assert hits == [200, 0, 800] and misses == [800, 1000, 200], "the second day alone"
        hits, misses = analysis._windowed(r, w, 0.0, DAY, range(1, 5), passes=5)
        assert hits == [800, 0, 2000] and misses == [3200, 4000, 2000], "days 2 to 5 summed"
        two = days([0.1, 0.0, 0.6], kept)
        assert analysis._windowed(two, w, 0.0, DAY) == ([200, 0, 800], [800, 1000, 200])
        # a replay whose requests end before the windows do (a capture's streams last, bcache's
        # replay without them): windows of 20 s over a 30-s pass; the second takes the pass's
        # last 10 s, never the next pass's first
        wide = analysis.Windows(0.0, 20.0, [1000] * 3, [1000] * 3)
        hits, misses = analysis._windowed(r, wide, 0.0, DAY, range(1, 2), passes=5)
        assert hits == [200, 800, 0] and misses == [1800, 200, 0]
        hits, misses = analysis._windowed(r, wide, 0.0, DAY, range(1, 5), passes=5)
        assert hits == [800, 2000, 0] and misses == [7200, 2000, 0]


# --- the closed loop ------------------------------------------------------------------------------


def windowed(requests: list[int], reads: list[int], seconds: float) -> Analysis:
    """An analysis holding only its windows (what closed_loop reads)."""
    a = analyze(trace_of(np.arange(10, dtype=np.float64), [0] * 10))
    return replace(a, replay_window_seconds=seconds, replay_window_requests=requests, replay_window_reads=reads)


def trace_of(t: np.ndarray, offsets: list[int], write: bool = False) -> Trace:
    req = np.zeros(len(t), dtype=REQUEST)
    req["t"], req["offset"], req["length"], req["write"] = t, offsets, 4096, write
    return Trace(req, "fio", "synthetic", ImportStats(lines=len(t), requests=len(t)), {})


def test_a_window_that_kept_the_disk_busy_weighs_by_its_speed_up() -> None:
    # two windows of 10 s, reads only: the first asked 2,000 requests (200 a second, x 6.7 ms: the
    # disk busy 1.34 s a second), 80% hits; the second 200 (0.13 s a second), no hit
    a = windowed([2000, 200], [2000, 200], 10.0)
    settled = np.asarray([(1600 + 0) / 2200])
    weighed, bound = closed_loop(a, settled, [[1600, 0]], [[400, 200]], 6.7, 0.1)
    assert bound == 1
    # through the cache the first window's requests take 0.8 x 0.1 + 0.2 x 6.7 = 1.42 ms, 6.7 / 1.42
    # = 4.718 times faster: 4.718 x 1,600 hits of 4.718 x 2,000 + 200 reads
    speed = 6.7 / (0.8 * 0.1 + 0.2 * 6.7)
    assert weighed[0] == pytest.approx(speed * 1600 / (speed * 2000 + 200), abs=1e-6)
    assert weighed[0] > settled[0]


def test_writes_in_a_busy_window_still_wait_for_the_disk() -> None:
    # half the first window's requests are writes (writethrough: at the disk's latency)
    a = windowed([2000, 200], [1000, 200], 10.0)
    weighed, _ = closed_loop(a, np.asarray([0.5]), [[800, 0]], [[200, 200]], 6.7, 0.1)
    cost = 0.5 * (0.8 * 0.1 + 0.2 * 6.7) + 0.5 * 6.7
    speed = 6.7 / cost
    assert weighed[0] == pytest.approx(speed * 800 / (speed * 1000 + 200), abs=1e-6)


def test_no_window_held_back_or_no_gain_leaves_the_replay_as_it_is() -> None:
    settled = np.asarray([0.4, np.nan])
    hits, misses = [[100, 0], [0, 0]], [[100, 50], [0, 0]]
    idle = windowed([100, 50], [100, 50], 10.0)  # 10 a second x 6.7 ms: the disk busy 7% of the time
    assert closed_loop(idle, settled, hits, misses, 6.7, 0.1)[1] == 0
    busy = windowed([2000, 2000], [2000, 2000], 10.0)
    out, bound = closed_loop(busy, settled, hits, misses, 6.7, 6.7)  # an SSD no faster than the disk
    assert bound == 0 and out[0] == 0.4
    out, bound = closed_loop(busy, settled, hits, misses, 6.7, 0.1)
    assert bound == 2 and np.isnan(out[1]), "a size that did not settle stays unsettled"
    # both windows busy, but at different hit ratios: the one hitting more weighs more
    assert out[0] > 0.4
    assert 200 / 10.0 * 6.7 / 1000 < BOUND <= 2000 / 10.0 * 6.7 / 1000
    # windows of a millisecond (a trace without times, all at one instant): the replay's once-a-second
    # counters cannot tell them apart
    instant = windowed([2000, 2000], [2000, 2000], 0.001)
    out, bound = closed_loop(instant, settled, hits, misses, 6.7, 0.1)
    assert bound == 0
    np.testing.assert_array_equal(out, settled)
    # nothing settled: nothing weighed, and no window is said to be
    assert closed_loop(busy, np.asarray([np.nan, np.nan]), hits, misses, 6.7, 0.1)[1] == 0


def test_a_trace_whose_busy_phase_hits_predicts_more_hits_through_the_cache() -> None:
    # 60 s over 256 KiB at 200 requests a second (a closed loop on the disk: 1.34 s busy a
    # second at 6.7 ms), then 60 s of reads over 200 MiB at 20 a second (rate-limited), a day
    rng = np.random.default_rng(7)
    hot_t = np.sort(rng.uniform(0, 60, 12000))
    cold_t = np.sort(rng.uniform(60, 120, 1200))
    offsets = list(rng.integers(0, 64, 12000) * 4096) + list(rng.integers(0, 51200, 1200) * 4096)
    a = analyze(trace_of(np.concatenate([hot_t, cold_t]), offsets))
    assert len(a.replay_window_requests) == REPLAY_WINDOWS and sum(a.replay_window_requests) == 13200
    for hits, misses in zip(a.smq_window_read_hits, a.smq_window_read_misses, strict=True):
        assert sum(hits) + sum(misses) == 13200, "every read of the second pass, in one window or another"
    plain = trace_profile(a)
    loop = trace_profile(a, latencies=(6.7, 0.1))
    assert plain.smq_read_hits is not None and loop.smq_read_hits is not None
    settled = ~np.isnan(plain.smq_read_hits)
    assert settled.any()
    assert (loop.smq_read_hits[settled] > plain.smq_read_hits[settled] + 0.05).all()
    assert any("Q-LOOP-1" in r.findings and "closed loop" in r.text for r in loop.reasons)
    assert not any("Q-LOOP-1" in r.findings for r in plain.reasons)


def test_a_captures_streams_count_in_dm_caches_replay_and_not_in_bcaches(tmp_path: Path) -> None:
    """A capture marks the requests of streams past bcache's cutoff and leaves them out of its
    curves; dm-cache bypasses no stream, so its replay reads them (as misses its counters count),
    and the windows count them as the disk's load. bcache's replay leaves them out as bcache does."""
    from advisor.workload import sampled
    from tests.unit.test_periods import MIDNIGHT, captured, hot, scan

    rng = np.random.default_rng(5)
    t0 = MIDNIGHT + 9 * 3600
    c = captured(tmp_path, [np.concatenate([hot(rng, t0, 600, 50), scan(t0 + 600, 600, 800, at=16 << 30)])], 1.0)
    a = sampled.analyze_capture(c, "cap")
    assert a.bypassed_requests >= 700 and a.smq_sizes_blocks and a.bcache_sizes_bytes
    late = slice(REPLAY_WINDOWS // 2 + 1, REPLAY_WINDOWS)  # the scan's half of the windows
    assert sum(a.replay_window_requests[late]) >= 700, "the scan's requests load the disk"
    for hits, misses in zip(a.smq_window_read_hits, a.smq_window_read_misses, strict=True):
        # each 1 MiB read is 16 of dm-cache's 64 KiB chunks, read once: a miss each
        assert sum(misses[late]) >= 16 * 700 and sum(hits[late]) < sum(misses[late]) / 10
    for hits, misses in zip(a.bcache_window_read_hits, a.bcache_window_read_misses, strict=True):
        assert sum(hits[late]) + sum(misses[late]) == 0, "bcache let the stream through"


# --- the sizes a recommendation asks about, replayed -------------------------------------------


def test_a_size_asked_about_is_replayed_itself_and_read_there(tmp_path: Path) -> None:
    """The replays run at the sizes given besides their own five, and a profile reads a size
    replayed itself there, even where the sizes around it did not settle."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 120, 8000))
    offsets = list(rng.zipf(1.2, 8000) % 20000 * 65536)
    trace = trace_of(t, offsets)
    plain = analyze(trace)
    asked = 3 << 20  # 48 chunks: not one of the grid's sizes
    a = analyze(trace, replay_sizes=[asked, 1 << 40])  # (a size past the footprint is not replayed)
    assert asked // analysis.CHUNK not in plain.smq_sizes_blocks
    assert sorted([*plain.smq_sizes_blocks, asked // analysis.CHUNK]) == a.smq_sizes_blocks
    at = a.smq_sizes_blocks.index(asked // analysis.CHUNK)
    assert len(a.smq_window_read_hits) == len(a.smq_sizes_blocks)
    # the neighbours unsettled: the size itself is still read where it was replayed
    hits = list(a.smq_read_hit_ratio)
    hits[at - 1] = hits[at + 1] = None
    assert hits[at] is not None
    prof = trace_profile(replace(a, smq_read_hit_ratio=hits))
    assert prof.replayed_read_hit("lvmcache", asked) == pytest.approx(hits[at])
    assert prof.replayed_read_hit("lvmcache", asked * 1.2) is None, "between an unsettled size and it: no reading"


def test_a_recommendation_replays_at_its_budget_and_at_each_ssds_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachewise.core import advise
    from cachewise.core.advise import AdviceRequest, Declared, prepare
    from cachewise.core.context import Core, load_snapshot
    from tests.unit.test_bad_inputs import RAW

    asked: list[tuple[int, ...]] = []
    analyse = advise.analyze

    def spy(core: Core, request: Any) -> Any:
        asked.append(request.replay_sizes)
        return analyse(core, request)

    monkeypatch.setattr(advise, "analyze", spy)
    path = tmp_path / "t.iolog"
    path.write_text("fio version 3 iolog\n" + "".join(f"{i * 1000} /dev/sda read {i % 500 * 4096} 4096\n"
                                                      for i in range(3000)))
    core = Core.for_snapshot(load_snapshot(Path(RAW)), tmp_path / "state")
    request = AdviceRequest("sda", ("nvme0n1",), trace=path, declared=Declared(cache_budget_bytes=48 << 20))
    prepared = prepare(core, request)
    nvme = next(d for d in prepared.inventory.devices if d.name == "nvme0n1")
    assert asked == [(48 << 20, nvme.size_bytes)]


def test_bcaches_windows_never_reach_into_its_first_pass_when_its_trace_begins_later(tmp_path: Path) -> None:
    """A capture begun during a backup: its first requests are a stream, left out of bcache's
    replay, which begins later than the windows do; its second pass's windows hold that pass's
    reads alone."""
    from advisor.workload import sampled
    from tests.unit.test_periods import MIDNIGHT, captured, hot, scan

    rng = np.random.default_rng(8)
    t0 = MIDNIGHT + 2 * 3600
    runs = [np.concatenate([scan(t0, 300, 2400, at=16 << 30), hot(rng, t0 + 310, 600, 80)])]
    c = captured(tmp_path, runs, 1 / 16)  # the stream's first 4 MiB, which it keeps, are not in the sample
    kept = c.requests[c.requests["stream"] != 2]
    assert kept["t"][0] > c.requests["t"][0] + 300, "the replay of the kept requests begins after the stream"
    a = sampled.analyze_capture(c, "cap")
    kept_reads = int(np.count_nonzero(~kept["write"].astype(bool)))
    assert a.bcache_sizes_bytes
    for hits, misses in zip(a.bcache_window_read_hits, a.bcache_window_read_misses, strict=True):
        # each pass read over holds the kept reads once: the second alone, or the second to the last
        assert sum(hits) + sum(misses) in (kept_reads, kept_reads * (analysis.AVERAGED_PASSES - 1)), "no other pass's"
        assert sum(hits[: REPLAY_WINDOWS // 3]) + sum(misses[: REPLAY_WINDOWS // 3]) == 0, "the stream's windows"


def test_a_size_replayed_a_little_below_the_one_asked_is_read_there() -> None:
    from advisor.advice.profile import EXACT_SIZE

    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 120, 8000))
    a = analyze(trace_of(t, list(rng.zipf(1.2, 8000) % 20000 * 65536)), replay_sizes=[3 << 20])
    at = a.smq_sizes_blocks.index(48)
    hits = list(a.smq_read_hit_ratio)
    hits[at - 1] = hits[at + 1] = None
    prof = trace_profile(replace(a, smq_read_hit_ratio=hits))
    # a capture's size rounded to its sample's chunks, down: 48 chunks stand for an asked 49
    asked = 49 * analysis.CHUNK
    assert 48 * analysis.CHUNK >= asked * (1 - EXACT_SIZE)
    assert prof.replayed_read_hit("lvmcache", asked) == pytest.approx(hits[at])


def test_streams_that_take_a_capture_past_smqs_budget_leave_it_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from advisor.workload import sampled
    from tests.unit.test_periods import MIDNIGHT, captured, hot, scan

    rng = np.random.default_rng(9)
    t0 = MIDNIGHT + 9 * 3600
    c = captured(tmp_path, [np.concatenate([hot(rng, t0, 600, 20), scan(t0 + 600, 600, 800, at=16 << 30)])], 1.0)
    kept = int(np.count_nonzero(c.requests["stream"] != 2))
    monkeypatch.setattr(analysis, "SMQ_PIECES", kept + 100)  # the kept requests fit; with the scan's, not
    a = sampled.analyze_capture(c, "cap")
    assert a.smq_sizes_blocks, "replayed without the streams rather than not at all"
    late = slice(REPLAY_WINDOWS // 2 + 1, REPLAY_WINDOWS)
    assert all(sum(m[late]) == 0 for m in a.smq_window_read_misses)
