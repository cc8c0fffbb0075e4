"""The smq simulator (advisor/workload/smq.py) on small traces whose outcome follows from the
kernel's code by hand (drivers/md/dm-cache-policy-smq.c, Linux 6.1), and on the runs captured in
the lab (tests/fixtures/lab-accuracy/): the kernel's own counters against the replay of fio's
iolog of the same run. The simulator was written from the kernel's code and not tuned on these
runs; a change that moves it away from what the kernel did fails here without a lab boot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.readers.dmstatus import CacheStatus
from advisor.workload.smq import NR_LEVELS, Smq, hotspot_geometry, piece_count, pieces, random_level, replay
from advisor.workload.traces import REQUEST, load_trace
from tests.vm.accuracy import observed, t63

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lab-accuracy"
CHUNK_SECTORS = 128  # 64 KiB
BIG_ORIGIN = 1 << 30  # sectors: hotspot blocks of 16 chunks
SMALL_ORIGIN = 1024 * CHUNK_SECTORS  # 1,024 chunks: hotspot blocks of one chunk


def test_hotspot_blocks_are_16_chunks_halved_until_they_fit_the_origin() -> None:
    assert hotspot_geometry(1024, CHUNK_SECTORS, BIG_ORIGIN) == (16, 1024)
    assert hotspot_geometry(8192, CHUNK_SECTORS, BIG_ORIGIN) == (16, 2048)  # cache blocks / 4
    # 1,024 hotspot blocks of 16 chunks (2,048 sectors) would cover 2M sectors, twice the origin
    assert hotspot_geometry(1024, CHUNK_SECTORS, 1 << 20) == (8, 1024)
    assert hotspot_geometry(4, CHUNK_SECTORS, SMALL_ORIGIN) == (1, 1024)


def test_a_mapping_loaded_without_a_hint_takes_hash_32_of_its_cblock() -> None:
    # hash_32(v, 9) = (v * 0x61C88647 mod 2^32) >> 23, then & 63
    assert [random_level(c) for c in range(4)] == [0, 3, 7, 10]


def test_nothing_is_promoted_before_the_first_tick() -> None:
    p = Smq(64, CHUNK_SECTORS, BIG_ORIGIN)
    for i in range(10):
        assert not p.lookup(5, False, False, 0.05 * i)  # promote level 64: no hotspot level reaches it
    assert p.counters.promotions == 0 and p.counters.read_misses == 10


def test_a_lone_hotspot_block_is_lifted_to_the_top_levels_and_its_chunks_promoted() -> None:
    # cache 64 chunks, hotspot blocks of 16: the top 8 hotspot levels hold min(1024/64, 64/16) = 4
    p = Smq(64, CHUNK_SECTORS, BIG_ORIGIN)
    assert not p.lookup(0, False, False, 0.5)  # a new hotspot entry, level 0
    # tick at 1 s: one hotspot miss -> "poor": promote level 48, level jump 4; redistribution
    # leaves no room below level 56 for one entry, so it is pushed up to level 56
    assert not p.lookup(1, False, False, 1.5)  # same hotspot block: level 56 + 4 = 60 >= 48, promoted
    assert p.read_promote_level == 48 and p.level_jump == 4
    assert p.lookup(1, False, False, 1.6)
    assert not p.lookup(0, False, False, 1.7)  # level 60 (no second jump within the tick): promoted
    assert p.lookup(0, False, False, 1.8)
    c = p.counters
    assert (c.read_hits, c.read_misses, c.promotions, c.demotions) == (2, 3, 2, 0)


def test_a_full_cache_demotes_its_oldest_lowest_chunk_before_it_promotes() -> None:
    p = Smq(4, CHUNK_SECTORS, SMALL_ORIGIN)  # hotspot block = chunk
    p.load([100, 101, 102, 103])  # cblocks 0-3 at levels 0, 3, 7, 10
    assert p.resident == 4
    assert not p.lookup(4, False, False, 0.5)
    # tick at 1 s: chunk 4's hotspot entry pushed up to level 56 (the top levels hold 4)
    assert not p.lookup(4, False, False, 1.5)  # worth promoting, but nothing is free: chunk 100 demoted
    assert (p.counters.demotions, p.counters.promotions) == (1, 0)
    assert not p.lookup(4, False, False, 1.6)  # now promoted into the freed chunk
    assert (p.counters.demotions, p.counters.promotions) == (1, 1)
    assert p.lookup(4, False, False, 1.7)
    assert not p.lookup(100, False, False, 1.8), "the demoted chunk is gone"
    assert p.lookup(101, False, False, 1.9) and p.resident == 4


def test_chunks_promoted_in_the_last_minute_are_not_demoted_until_the_queue_is_redistributed() -> None:
    p = Smq(4, CHUNK_SECTORS, SMALL_ORIGIN)
    for chunk in range(4):
        p.lookup(chunk, False, False, 0.5)
    for chunk in range(4):  # tick at 1 s lifted their hotspot entries to levels 56-59
        assert not p.lookup(chunk, False, False, 1.5)
    assert p.counters.promotions == 4 and p.resident == 4  # all at the clean queue's top level
    # tick at 2 s: the last second's four hotspot accesses were all at level 48 or above -> "well":
    # promote level 0
    assert not p.lookup(9, False, False, 2.5)
    assert p.read_promote_level == 0
    # worth promoting, but no clean chunk sits in the bottom 32 levels: nothing is demoted
    assert (p.counters.promotions, p.counters.demotions) == (4, 0)
    p.advance(61.0)  # the cache period ends: the four chunks spread to levels 0-3
    levels = sorted(p.s.level[e] for e in p.table.values())
    assert levels == [0, 1, 2, 3]


def test_a_whole_chunk_write_to_a_writeback_cache_is_promoted_dirty_at_once() -> None:
    p = Smq(64, CHUNK_SECTORS, BIG_ORIGIN, mode="writeback")
    assert not p.lookup(7, True, True, 0.1)  # before any tick: fast promotion needs no level
    assert p.counters.promotions == 1 and p.dirty_blocks == 1
    assert p.lookup(7, False, False, 0.2)
    assert not p.lookup(8, True, False, 0.3)  # a partial write is not
    assert p.counters.promotions == 1
    wt = Smq(64, CHUNK_SECTORS, BIG_ORIGIN, mode="writethrough")
    assert not wt.lookup(7, True, True, 0.1) and wt.counters.promotions == 0


def test_dirty_chunks_are_cleaned_after_a_second_without_io_unless_the_threshold_forbids() -> None:
    p = Smq(64, CHUNK_SECTORS, BIG_ORIGIN, mode="writeback")
    p.lookup(7, True, True, 0.1)
    p.advance(1.5)  # the tick at 1 s came 0.9 s after the write: busy
    assert p.dirty_blocks == 1
    p.advance(2.0)  # 1.9 s idle: smq cleans everything
    assert p.dirty_blocks == 0 and p.counters.writebacks == 1
    held = Smq(64, CHUNK_SECTORS, BIG_ORIGIN, mode="writeback", migration_threshold=0)
    held.lookup(7, True, True, 0.1)
    held.advance(30.0)  # migration_threshold below a chunk: never idle enough to clean
    assert held.dirty_blocks == 1


def test_a_hit_in_a_writeback_cache_dirties_the_chunk() -> None:
    p = Smq(64, CHUNK_SECTORS, BIG_ORIGIN, mode="writeback")
    p.load([3])
    assert p.dirty_blocks == 0
    assert p.lookup(3, True, False, 0.1)
    assert p.dirty_blocks == 1 and p.counters.write_hits == 1


def test_requests_are_split_at_chunk_edges_as_dm_cache_splits_bios() -> None:
    req = np.zeros(2, REQUEST)
    req["t"] = [0.0, 1.0]
    req["offset"] = [32 << 10, 64 << 10]
    req["length"] = [128 << 10, 4096]
    req["write"] = [1, 0]
    t, block, write, whole = pieces(req, 64 << 10)
    assert block.tolist() == [0, 1, 2, 1]
    assert whole.tolist() == [False, True, False, False]
    assert write.tolist() == [True, True, True, False] and t.tolist() == [0.0, 0.0, 0.0, 1.0]


def test_idle_hours_are_skipped_without_changing_the_outcome() -> None:
    rng = np.random.default_rng(3)
    req = np.zeros(4000, REQUEST)
    req["t"] = np.sort(np.concatenate([rng.uniform(0, 100, 2000), rng.uniform(36_000, 36_100, 2000)]))
    req["offset"] = (rng.zipf(1.3, 4000) % 512).astype(np.uint64) * (64 << 10)
    req["length"] = 4096
    r = replay(req, 8 << 20, 64 << 10, 1 << 40)
    assert r.counters.read_hits + r.counters.read_misses == 4000
    assert r.counters.promotions > 0 and r.read_hit_ratio is not None and r.read_hit_ratio > 0.3
    assert len(r.times) < 2000, "ten idle hours are not a tick each"


def _kernel(run: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The kernel's read counters from the run's start (less the probes' reads before fio), and
    the origin's size in sectors (the dm table's length)."""
    t, hits, misses = [], [], []
    lines = [line for line in (FIXTURES / f"{run}.samples").read_text().splitlines() if line.strip()]
    for line in lines:
        stamp, _, rest = line.partition(" ")
        s = CacheStatus.parse(rest)
        t.append(float(stamp))
        hits.append(s.read_hits)
        misses.append(s.read_misses)
    h, m = np.asarray(hits, float), np.asarray(misses, float)
    return np.asarray(t) - t[0], h - h[0], m - m[0], int(lines[0].split()[2])


@pytest.mark.parametrize("run", ["dmcache-wt-zipf08", "dmcache-wt-backup", "dmcache-wt-writes"])
def test_the_replay_of_a_captured_run_matches_the_kernels_counters(run: str) -> None:
    requests = load_trace(FIXTURES / f"{run}.iolog").requests
    backup = FIXTURES / f"{run}.backup.iolog"
    if backup.exists():  # the backup's 1 MiB reads went through the same cache
        both = np.concatenate([requests, load_trace(backup).requests])
        requests = both[np.argsort(both["t"], kind="stable")]
    times, hits, misses, origin_sectors = _kernel(run)
    r = replay(requests, 64 << 20, 64 << 10, origin_sectors * 512)  # lvm2's 64 KiB chunks, 64 MiB
    kernel = observed(times, hits, misses)
    sim_t = r.times - float(requests["t"][0])
    simulated = observed(sim_t, r.read_hits.astype(float), r.read_misses.astype(float))
    print(run, f"kernel {kernel:.3f} simulated {simulated:.3f}", r.as_dict())
    assert abs(simulated - kernel) <= 0.05, f"steady read hit ratio: simulated {simulated:.3f}, kernel {kernel:.3f}"
    k63 = t63(times, hits, misses, kernel)
    s63 = t63(sim_t, r.read_hits.astype(float), r.read_misses.astype(float), simulated)
    assert k63 is not None and s63 is not None
    assert 0.5 <= s63 / k63 <= 2, f"time to 63%: simulated {s63} s, kernel {k63:.1f} s"
    assert r.cache_blocks == 1024 and NR_LEVELS == 64


# --- the replay in the analysis and the advice ---------------------------------------------------


def test_the_analysis_carries_the_smq_replay_and_skips_it_past_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.workload import analysis
    from advisor.workload.smq import TICK_S
    from advisor.workload.timeline import read_hit_ratio_since

    trace = load_trace(FIXTURES / "dmcache-wt-zipf08.iolog")
    requests = trace.requests.copy()
    a = analysis.analyze(trace)
    assert a.smq_sizes_blocks[0] == analysis.SMQ_SMALLEST and a.smq_sizes_blocks == sorted(a.smq_sizes_blocks)
    assert len(a.smq_sizes_blocks) == len(a.smq_read_hit_ratio) == len(a.smq_seconds_63) == analysis.SMQ_SIZES
    settled = [h for h in a.smq_read_hit_ratio if h is not None]
    assert settled == sorted(settled) and all(0 <= h <= 1 for h in settled)
    # each size: the trace fed twice, the second pass's read hit ratio (the origin: the highest chunk)
    day = float(requests["t"][-1] - requests["t"][0]) + TICK_S
    again = requests.copy()
    again["t"] += day
    n = a.smq_sizes_blocks[2]
    top = int(((requests["offset"] + requests["length"] - 1) // analysis.CHUNK).max())
    r = replay(np.concatenate([requests, again]), n * analysis.CHUNK, analysis.CHUNK, (top + 1) * analysis.CHUNK)
    second = read_hit_ratio_since(r, float(requests["t"][0]) + day)
    assert a.smq_read_hit_ratio[2] is not None and second is not None
    assert a.smq_read_hit_ratio[2] == pytest.approx(second, abs=1e-6)
    monkeypatch.setattr(analysis, "SMQ_PIECES", 1000)
    assert analysis.analyze(load_trace(FIXTURES / "dmcache-wt-zipf08.iolog")).smq_sizes_blocks == []


def test_an_lvmcache_prediction_is_the_smq_replay_where_it_settled() -> None:
    from advisor.advice.model import Inputs
    from advisor.advice.profile import profile
    from advisor.advice.recommend import recommend
    from advisor.prediction import Prediction
    from tests.unit import test_home_scenarios as home

    s = next(x for x in home.SCENARIOS if x.name == "vm-host")
    inp = Inputs(
        slow=s.slow(), fast=s.fast, analysis=s.analysis(), versions=home.KERNEL, memory_bytes=16 << 30, **s.declared
    )
    prof = profile(inp, inp.slow.size_bytes)
    r = recommend(inp)
    lvm = [c for c in (r.config, *(o.config for o in r.runner_ups)) if c is not None and c.backend == "lvmcache"]
    assert lvm
    for cfg in lvm:
        replayed = prof.replayed_read_hit("lvmcache", cfg.effective_bytes)
        assert replayed is not None and cfg.predicted_hit_ratio == round(replayed, 4)
        assert prof.curves_for("lvmcache", cfg.effective_bytes).hit(cfg.effective_bytes, False, True) != pytest.approx(
            replayed, abs=0.005
        ), "the replay, not the LRU curve"
        assert cfg.warmup is not None and cfg.warmup.simulated_seconds_63 is not None
        from dataclasses import asdict

        assert Prediction.from_config(asdict(cfg)).seconds_63 == cfg.warmup.simulated_seconds_63  # type: ignore[union-attr]
    cited = [x for x in r.reasons if "K-SMQ-1" in x.findings]
    assert cited and any("smq" in x.text for x in cited)
    bcache = [c for c in (r.config, *(o.config for o in r.runner_ups)) if c is not None and c.backend == "bcache"]
    for cfg in bcache:  # bcache's prediction and warm-up come from its own replay, never smq's
        own = prof.replayed_read_hit("bcache", cfg.effective_bytes)
        assert own is None or cfg.predicted_hit_ratio == round(own, 4)
        seconds = prof.replayed_seconds_63("bcache", cfg.effective_bytes)
        assert cfg.warmup is None or cfg.warmup.simulated_seconds_63 == seconds


def test_a_size_the_replay_did_not_settle_at_keeps_the_curve() -> None:
    import dataclasses

    from advisor.advice.model import Inputs
    from advisor.advice.profile import profile
    from tests.unit import test_home_scenarios as home

    s = next(x for x in home.SCENARIOS if x.name == "vm-host")
    inp = Inputs(slow=s.slow(), fast=s.fast, analysis=s.analysis(), versions=home.KERNEL, **s.declared)
    prof = profile(inp, inp.slow.size_bytes)
    assert prof.smq_sizes_bytes is not None and prof.smq_read_hits is not None
    size = float(prof.smq_sizes_bytes[2])
    assert prof.hit_of("lvmcache", size, reads=True) == pytest.approx(prof.smq_read_hits[2])
    unsettled = prof.smq_read_hits.copy()
    unsettled[2] = np.nan
    p2 = dataclasses.replace(prof, smq_read_hits=unsettled)
    assert p2.replayed_read_hit("lvmcache", size) is None
    assert p2.hit_of("lvmcache", size, reads=True) == prof.curves_for("lvmcache", size).hit(size, False, True)
    assert prof.replayed_read_hit("lvmcache-writecache", size) is None  # caches no reads
    assert prof.replayed_read_hit("lvmcache", 100 << 30) is None  # 128 KiB chunks


def test_a_few_huge_requests_are_counted_before_they_are_split() -> None:
    from advisor.workload import analysis

    req = np.zeros(300, REQUEST)
    req["t"] = np.arange(300.0)
    req["offset"] = np.arange(300, dtype=np.uint64) * (64 << 20)
    req["length"] = 64 << 20  # 1,024 chunks each: 307,200 pieces, past the budget
    assert piece_count(req, analysis.CHUNK) == 300 * 1024
    assert analysis.smq_curve(req) is None


def test_analyze_shows_the_replay_as_a_row_and_in_its_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from cachewise.cli import main

    trace = FIXTURES / "dmcache-wt-zipf08.iolog"
    assert main(["--state-dir", str(tmp_path), "analyze", "--json", str(trace)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["smq_chunk_size"] == 65536 and len(data["smq_sizes_blocks"]) == 5
    assert main(["--state-dir", str(tmp_path), "analyze", str(trace)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "dm-cache (smq)" in out and "read hit ratio replayed" in out and "1.0 MiB:" in out


def test_a_prediction_read_over_days_that_moved_says_how_far_they_moved() -> None:
    """Where the replay's passes moved up and down (analysis._settled), the reason says so: how
    many times the trace was fed, what the days read, and why they differ; an interpolated size
    has no days of its own."""
    from dataclasses import replace

    from advisor.advice.model import Inputs
    from advisor.advice.profile import profile
    from advisor.advice.recommend import recommend
    from tests.unit import test_home_scenarios as home

    s = next(x for x in home.SCENARIOS if x.name == "vm-host")
    a = s.analysis()
    moved = replace(a, smq_read_hit_days=[[0.3, 0.45, 0.32, 0.41] for _ in a.smq_sizes_blocks])
    inp = Inputs(slow=s.slow(), fast=s.fast, analysis=moved, versions=home.KERNEL, memory_bytes=16 << 30, **s.declared)
    prof = profile(inp, inp.slow.size_bytes)
    assert prof.smq_sizes_bytes is not None
    at, above = float(prof.smq_sizes_bytes[1]), float(prof.smq_sizes_bytes[2])
    assert prof.replayed_days("lvmcache", at) == ((0.3, 0.45, 0.32, 0.41),)
    assert len(prof.replayed_days("lvmcache", (at + above) / 2)) == 2, "between two sizes: both"
    assert prof.replayed_days("lvmcache", float(prof.smq_sizes_bytes[0]) / 2) == (), "below the smallest: no replay"
    r = recommend(inp)
    assert r.config is not None and r.config.backend == "lvmcache"
    texts = [x.text for x in r.reasons if "K-SMQ-1" in x.findings]
    said = [t for t in texts if "replayed 5 times through" in t]
    assert said and "read 30% to 45% (at the trace's own pace)" in said[0] and "once a minute" in said[0], texts
    plain = recommend(replace(inp, analysis=a))
    assert not any("5 times" in x.text for x in plain.reasons), "a size read over its second pass alone: twice"
