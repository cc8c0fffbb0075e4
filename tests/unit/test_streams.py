"""Sequential streams told apart as bcache does (advisor.workload.streams), and what the
analysis makes of them: interleaved streams, a bypassed backup, first touches."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.workload import streams
from advisor.workload.analysis import analyze
from advisor.workload.streams import StreamDetector
from advisor.workload.traces import REQUEST, ImportStats, Requests, Trace

MiB = 1 << 20


def trace(req: Requests) -> Trace:
    return Trace(req, "test", "test", ImportStats(lines=len(req), requests=len(req)))


def interleaved(streams_n: int, per_stream: int, size: int = 64 * 1024, gap_s: float = 0.001) -> Requests:
    n = streams_n * per_stream
    r = np.zeros(n, REQUEST)
    r["offset"] = (np.arange(n) % streams_n) * (1 << 34) + (np.arange(n) // streams_n) * size
    r["length"] = size
    r["t"] = np.arange(n) * gap_s
    return r


def mixed(seed: int, n: int, n_streams: int) -> Requests:
    """Random 4 KiB requests, streams of mixed request sizes, and requests that end where a
    stream ends (the detector keeps one stream per end)."""
    rng = np.random.default_rng(seed)
    r = np.zeros(n, REQUEST)
    pos = np.arange(n_streams, dtype=np.int64) * (1 << 34)
    kind = rng.random(n)
    t = np.cumsum(rng.exponential(0.05, n))
    for i in range(n):
        k = int(rng.integers(n_streams))
        if kind[i] < 0.6:
            size = int(rng.choice([4096, 65536, 131072]))
            r[i] = (t[i], pos[k], size, 0)
            pos[k] += size
        elif kind[i] < 0.7:
            r[i] = (t[i], max(int(pos[k]) - 4096, 0), 4096, 0)
        else:
            r[i] = (t[i], int(rng.integers(0, 1000)) * 4096, 4096, 1)
    return r


def test_four_interleaved_streams_are_sequential_not_random() -> None:
    kinds = StreamDetector(cutoff=0).classify(interleaved(4, 1000))
    assert np.count_nonzero(kinds == StreamDetector.CONTINUES) == 4000 - 4  # each stream's first starts it
    a = analyze(trace(interleaved(4, 1000)), sequential_cutoff=0)
    assert a.sequential_share == pytest.approx(0.999)


def test_more_streams_than_bcache_remembers_are_not_seen() -> None:
    # 65 round-robin streams: each one's end is forgotten (least recently used) before it continues.
    kinds = StreamDetector(cutoff=0).classify(interleaved(65, 20))
    assert not np.any(kinds)
    kinds = StreamDetector(cutoff=0).classify(interleaved(64, 20))
    assert np.count_nonzero(kinds) == 64 * 19


def test_a_stream_is_forgotten_five_seconds_after_its_last_request() -> None:
    r = interleaved(1, 4, gap_s=6.0)
    assert not np.any(StreamDetector(cutoff=0).classify(r))
    r["t"] = np.arange(4) * 4.9
    assert np.count_nonzero(StreamDetector(cutoff=0).classify(r)) == 3


def test_a_stream_past_the_cutoff_is_bypassed_from_the_request_that_reaches_it() -> None:
    r = interleaved(1, 10, size=MiB)
    kinds = StreamDetector(cutoff=4 * MiB).classify(r)
    assert kinds.tolist() == [0, 1, 1, 2, 2, 2, 2, 2, 2, 2]


@pytest.mark.parametrize("seed,n_streams", [(1, 3), (2, 70), (3, 200)])
@pytest.mark.parametrize("cutoff", [0, 200_000, 4 * MiB])
def test_the_compiled_scan_agrees_with_the_interpreted_one(seed: int, n_streams: int, cutoff: int) -> None:
    r = mixed(seed, 6000, n_streams)
    interpreted = StreamDetector(cutoff).classify(r)
    compiled = StreamDetector(cutoff)
    compiled._arrays()  # from the first request on
    switched = StreamDetector(cutoff)  # interpreted for a while, then the state handed over
    first = switched.classify(r[:2500])
    switched._arrays()
    assert np.array_equal(interpreted, compiled.classify(r))
    assert np.array_equal(interpreted, np.concatenate([first, switched.classify(r[2500:])]))
    assert set(np.unique(interpreted)) <= {0, 1, 2}
    if cutoff == 200_000:
        assert np.any(interpreted == StreamDetector.BYPASSED)


def test_long_slices_go_through_the_compiled_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    r = mixed(4, 3000, 20)
    interpreted = StreamDetector(100_000).classify(r)
    monkeypatch.setattr(streams, "INTERPRETED_LIMIT", 100)
    detector = StreamDetector(100_000)
    assert np.array_equal(detector.classify(r), interpreted)
    assert detector._recent is None  # the state went to the compiled scan's arrays


def test_many_short_slices_go_compiled_once_enough_requests_were_classified(monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture hands its requests over in slices of a tenth of a second: once the slices
    together pass INTERPRETED_LIMIT they are scanned compiled (the same classes), so a long
    capture of a fast device is not classified in Python for ever."""
    r = mixed(4, 3000, 20)
    whole = StreamDetector(100_000).classify(r)
    monkeypatch.setattr(streams, "INTERPRETED_LIMIT", 1000)
    detector = StreamDetector(100_000)
    parts = [detector.classify(r[at : at + 300]) for at in range(0, 900, 300)]
    assert detector._recent is not None  # 900 requests: still interpreted
    parts += [detector.classify(r[at : at + 300]) for at in range(900, len(r), 300)]
    assert detector._recent is None
    assert np.array_equal(np.concatenate(parts), whole)


def test_a_backup_stream_is_counted_apart_from_the_curve() -> None:
    """A Zipf workload beside a nightly backup of 20 GiB-like streams: the backup's blocks are
    bypassed, so the curve and the footprint are the hot workload's (issue 13, point 4)."""
    rng = np.random.default_rng(5)
    items = rng.zipf(1.2, 300_000)
    items = items[items < 100_000][:100_000]
    backup = 4000
    r = np.zeros(len(items) + backup, REQUEST)
    r["offset"][: len(items)] = items * 4096
    r["length"][: len(items)] = 4096
    r["offset"][len(items):] = (1 << 40) + np.arange(backup) * MiB
    r["length"][len(items):] = MiB
    r["t"] = np.arange(len(r)) * 0.001
    with_cutoff = analyze(trace(r))
    without = analyze(trace(r.copy()), sequential_cutoff=0)
    assert with_cutoff.bypassed_requests == backup - 3  # a stream is bypassed once it reaches 4 MiB
    assert with_cutoff.bypassed_bytes == (backup - 3) * MiB
    assert without.bypassed_requests == 0
    # Without the cutoff the backup's requests count as misses (one per request, as the kernel
    # counts them) and its 1 GiB of blocks fill the footprint.
    assert max(with_cutoff.curve_hit_ratio) > 0.85
    assert max(without.curve_hit_ratio) < max(with_cutoff.curve_hit_ratio) - 0.02
    assert with_cutoff.footprint_blocks < 30_000 < without.footprint_blocks
    assert with_cutoff.cold_miss_share == pytest.approx(with_cutoff.footprint_blocks / with_cutoff.block_accesses,
                                                        abs=1e-6)
    assert not with_cutoff.too_short and without.too_short


def test_a_trace_of_first_touches_is_too_short_to_judge() -> None:
    r = np.zeros(5000, REQUEST)
    rng = np.random.default_rng(6)
    r["offset"] = rng.permutation(1_000_000)[:5000].astype(np.uint64) * 4096
    r["length"] = 4096
    a = analyze(trace(r))
    assert a.cold_miss_share == 1.0 and a.too_short
    assert a.chunk_cold_miss_share > 0.9


def test_the_curve_counts_requests_as_bcache_does_not_blocks() -> None:
    """A hot 4 KiB block read 100 times and ten 1 MiB reads of data read once (too few to pass
    the cutoff, as bcache sees them): the kernel counts 110 requests and 100 hits less the
    first, not 2,660 block accesses; a request hits only when all its blocks do."""
    r = np.zeros(110, REQUEST)
    r["offset"][:100], r["length"][:100] = 0, 4096
    r["offset"][100:] = (1 << 30) + np.arange(10) * (64 * MiB)  # ten separate 1 MiB reads
    r["length"][100:] = MiB
    a = analyze(trace(r))
    assert a.block_accesses == 100 + 10 * 256
    assert max(a.curve_hit_ratio) == pytest.approx(99 / 110, abs=1e-6)
    # A 1 MiB request read again hits only in a cache that holds all 256 of its blocks.
    again = np.concatenate([r[100:101], r[100:101]])
    b = analyze(trace(again))
    sizes, hits = np.asarray(b.curve_sizes_blocks), np.asarray(b.curve_hit_ratio)
    assert np.all(hits[sizes < 256] == 0) and hits[sizes >= 256].max() == pytest.approx(0.5)
    # One counting rule in both modes: the sampled curve counts the same requests.
    sampled = analyze(trace(r), mode="shards")
    assert sampled.curve_mode == "shards" and max(sampled.curve_hit_ratio) == pytest.approx(99 / 110, abs=1e-6)


def test_sampled_and_exact_curves_agree_on_requests_of_several_blocks() -> None:
    """Aligned 64 KiB requests (16 blocks each) over a skewed set: SHARDS keeps whole requests
    by where they start and gives the exact curve's hit ratios, reads apart too (issue 26)."""
    rng = np.random.default_rng(3)
    n = 300_000
    cdf = np.cumsum(np.arange(1, 50_001, dtype=float) ** -0.9)
    cdf /= cdf[-1]
    r = np.zeros(n, REQUEST)
    r["offset"] = rng.permutation(50_000)[np.searchsorted(cdf, rng.random(n))].astype(np.uint64) * 65536
    r["length"], r["write"] = 65536, rng.random(n) < 0.3
    exact, sampled = analyze(trace(r), mode="exact"), analyze(trace(r), mode="shards")
    assert sampled.curve_sample_rate < 0.1
    for size in (50_000, 200_000, 600_000):
        for field in ("curve_hit_ratio", "curve_read_hit_ratio"):
            e = np.interp(size, exact.curve_sizes_blocks, getattr(exact, field))
            s = np.interp(size, sampled.curve_sizes_blocks, getattr(sampled, field))
            assert abs(e - s) < 0.02, (size, field, e, s)
