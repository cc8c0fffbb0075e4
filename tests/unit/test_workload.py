"""Workload analysis of a real fio iolog: footprint, mix, curve and hot data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.workload.analysis import analyze, to_blocks
from advisor.workload.traces import REQUEST, load_trace
from tests.conftest import FIXTURES


def test_requests_split_into_cache_blocks() -> None:
    req = np.array([(0.0, 0, 4096, 0), (0.0, 4096 * 3 + 100, 8192, 1), (0.0, 65536, 1, 0)], dtype=REQUEST)
    assert to_blocks(req, 4096).tolist() == [0, 3, 4, 5, 16]
    assert to_blocks(req, 32768).tolist() == [0, 0, 2]


def test_analysis_of_a_fio_zipf_run() -> None:
    result = analyze(load_trace(FIXTURES / "traces" / "fio-v3.iolog"))
    assert (result.requests, result.read_requests, result.write_requests) == (4000, 2764, 1236)
    assert result.read_bytes == 2764 * 4096 and result.size_histogram == {"<= 4 KiB": 4000}
    assert result.footprint_blocks == len(np.unique(load_trace(FIXTURES / "traces" / "fio-v3.iolog").requests["offset"]))
    assert result.curve_mode == "exact" and len(result.curve_sizes_blocks) >= 40
    hits = np.asarray(result.curve_hit_ratio)
    assert np.all(np.diff(hits) >= 0), "LRU hit ratio never falls as the cache grows"
    # All of the footprint cached: every access but the first touch of each block hits.
    assert hits[-1] == pytest.approx(1 - result.footprint_blocks / 4000)
    # Zipf 1.2 is skewed: a small part of the footprint serves most accesses.
    assert result.hot_footprint_fraction[0] < 0.5 and result.hot_footprint_fraction == sorted(result.hot_footprint_fraction)
    assert result.sequential_share < 0.05


def test_block_size_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        analyze(load_trace(FIXTURES / "traces" / "fio-v3.iolog"), block_size=3000)


def test_streamed_analysis_agrees_with_the_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from advisor.workload.analysis import analyze_stream
    from advisor.workload.traces import ImportStats, iter_cachewise, write_trace

    trace = load_trace(FIXTURES / "traces" / "fio-v3.iolog")
    path = tmp_path / "t.cwtrace"
    write_trace(path, trace.requests, {})
    whole = analyze(trace)
    streamed = analyze_stream(iter_cachewise(path, chunk=333), 4000, 4096, str(path), "cachewise", ImportStats())
    for key in ("requests", "read_requests", "write_bytes", "footprint_blocks", "sequential_share",
                "size_histogram", "hot_blocks", "zipf_alpha"):
        assert getattr(streamed, key) == getattr(whole, key), key
    assert streamed.curve_mode == "shards" and streamed.curve_sizes_blocks == whole.curve_sizes_blocks
    # 4,000 requests: every block is sampled (rate 1), so SHARDS equals the exact curve here.
    assert np.allclose(streamed.curve_hit_ratio, whole.curve_hit_ratio, atol=1e-6)


def test_request_figures_made_while_reading_are_those_of_the_whole_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.workload import analysis, fastparse
    from advisor.workload.analysis import analyze_path

    rng = np.random.default_rng(8)
    lines = ["fio version 3 iolog", "0 /dev/sdb add"]
    for i in range(6000):
        if 2000 <= i < 3000:  # a long sequential read, bypassed
            offset, length = (1 << 30) + (i - 2000) * 65536, 65536
        else:
            offset, length = int(rng.zipf(1.3) % 3000) * 4096, int(rng.choice([4096, 8192]))
        lines.append(f"{i * 1000} /dev/sdb {'write' if rng.random() < 0.3 else 'read'} {offset} {length}")
    path = tmp_path / "t.iolog"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(analysis, "FEED_CHUNK", 500)  # the follower feeds twelve slices
    monkeypatch.setattr(fastparse, "BLOCK", 4096)  # and is offered requests after each block
    monkeypatch.setattr("advisor.workload.traces.COMPILED_FROM", 0)
    offered: list[int] = []
    real = analysis._Follower.offer
    monkeypatch.setattr(analysis._Follower, "offer", lambda self, r: (offered.append(len(r)), real(self, r))[1])
    followed, _ = analyze_path(path)
    whole = analyze(load_trace(path))
    assert len(offered) > 20 and whole.bypassed_requests > 0
    assert followed.to_json() == whole.to_json()


def test_the_compiled_tally_gives_numpys_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.workload import analysis

    rng = np.random.default_rng(9)
    req = np.zeros(50_000, REQUEST)
    req["t"] = np.cumsum(rng.exponential(1e-3, len(req)))
    req["offset"] = rng.integers(0, 1 << 30, len(req)) * 512
    req["length"] = rng.choice([512, 4096, 8192, 65536, 1 << 20, 3 << 20], len(req))
    req["write"] = rng.random(len(req)) < 0.4
    figures = []
    for tallied_from in (0, len(req)):
        monkeypatch.setattr(analysis, "TALLIED_FROM", tallied_from)
        summary = analysis._Summary()
        summary.feed_requests(req)
        figures.append((summary.requests, summary.reads, summary.writes, summary.read_bytes, summary.write_bytes,
                        summary.sizes.tolist(), summary.t_min, summary.t_max, summary.backlog.tolist()))
    assert figures[0] == figures[1]


def mixed_requests(n: int, seed: int) -> np.ndarray:
    """Zipf-like 4 and 8 KiB requests, some unaligned, 30% writes, with a long sequential read
    (bypassed) in the middle."""
    rng = np.random.default_rng(seed)
    req = np.zeros(n, REQUEST)
    req["t"] = np.arange(n) * 1e-3
    req["offset"] = (rng.zipf(1.2, n) % 20_000) * 4096 + rng.choice([0, 0, 512], n)
    req["length"] = rng.choice([4096, 8192], n)
    req["write"] = rng.random(n) < 0.3
    scan = slice(n // 3, n // 3 + 1500)
    req["offset"][scan] = (1 << 32) + np.arange(1500) * 65536
    req["length"][scan] = 65536
    req["write"][scan] = 0
    return req


@pytest.mark.parametrize("pieces", [False, True])
@pytest.mark.parametrize("markers_give_up", [False, True])
def test_an_exact_analysis_streamed_in_chunks_is_the_whole_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, markers_give_up: bool, pieces: bool) -> None:
    """A long cachewise trace analysed exactly is read twice in chunks (bounded memory), and
    gives the in-memory exact analysis's figures and curves to the number; the smq and bcache
    replays and the coarser chunks are the in-memory analysis's alone, as the SHARDS stream's."""
    from advisor.workload import analysis, exact
    from advisor.workload.analysis import analyze_path
    from advisor.workload.traces import write_trace

    path = tmp_path / "t.cwtrace"
    n = 200_000 if markers_give_up else 40_000  # the markers first look at their cost 262,144 accesses in
    write_trace(path, mixed_requests(n, 11), {"device": "/dev/sdb"})
    whole, _ = analyze_path(path, 4096, "exact")
    monkeypatch.setattr(analysis, "STREAM_REQUESTS", 1000)
    monkeypatch.setattr(analysis, "STREAM_CHUNK", 3000)
    if pieces:  # each chunk classed in pieces of at most 500 accesses, cut at requests
        monkeypatch.setattr(analysis, "STREAM_ACCESSES", 500)
    if markers_give_up:
        monkeypatch.setattr(exact, "MARKER_STEPS", 0)
    heard: list[tuple[str, float]] = []
    streamed, meta = analyze_path(path, 4096, "exact", progress=lambda what, share: heard.append((what, share)))
    assert meta["device"] == "/dev/sdb" and streamed.curve_mode == "exact"
    def compared(result: analysis.Analysis) -> dict[str, object]:
        return {k: v for k, v in result.to_json().items() if not k.startswith(("smq_", "bcache_", "replay_", "coarse"))}

    assert compared(streamed) == compared(whole)
    assert streamed.smq_sizes_blocks == [] and streamed.replay_window_requests == [] and streamed.coarse_chunk_curves == []
    assert whole.requests == n and whole.bypassed_requests > 0 and whole.chunk_curve_sizes_blocks
    stages = [what for what, _ in heard]
    assert stages[0] == "numbering the blocks" and heard[-1][1] == 1.0
    assert ("counting the curve again, by stack distances" in stages) == markers_give_up
    assert all(0 < share <= 1 for _, share in heard)


def test_an_exact_stream_past_the_blocks_it_holds_is_refused_in_a_sentence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The footprint is checked as the blocks are numbered, chunk by chunk: the hash table never
    grows past what the limit allows, and the refusal names the ways out."""
    from advisor.workload import analysis
    from advisor.workload.analysis import analyze_path
    from advisor.workload.traces import TraceError, write_trace

    path = tmp_path / "t.cwtrace"
    write_trace(path, mixed_requests(40_000, 12), {})
    monkeypatch.setattr(analysis, "STREAM_REQUESTS", 1000)
    monkeypatch.setattr(analysis, "STREAM_CHUNK", 3000)
    monkeypatch.setattr(analysis, "EXACT_STREAM_BLOCKS", 2000)
    heard: list[float] = []
    with pytest.raises(TraceError, match="more than 2,000 distinct blocks of 4096 bytes") as refused:
        analyze_path(path, 4096, "exact", progress=lambda what, share: heard.append(share))
    assert refused.value.code == "footprint-too-large"
    from cachewise.cli.phrases import word

    said = word(refused.value)
    assert said.count(". ") <= 2 and "nothing was analysed" in said and "--mode shards" in said, said
    assert len(heard) < 3  # refused in the first chunks of 14, not after reading them all


@pytest.mark.parametrize("change", ["rewritten", "truncated"])
def test_a_trace_that_changes_between_the_two_readings_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """The second reading must find every block the first one numbered, in chunks of the same
    lengths: a trace rewritten or cut in place between them is refused in a sentence, never
    classed with numbers past the tables' ends."""
    from advisor.workload import analysis
    from advisor.workload.analysis import analyze_path
    from advisor.workload.traces import TraceError, write_trace

    path = tmp_path / "t.cwtrace"
    req = mixed_requests(20_000, 14)
    write_trace(path, req, {})
    monkeypatch.setattr(analysis, "STREAM_REQUESTS", 1000)
    monkeypatch.setattr(analysis, "STREAM_CHUNK", 3000)

    def meddle(what: str, share: float) -> None:
        if what == "numbering the blocks" and share == 1.0:
            if change == "rewritten":
                other = req.copy()
                other["offset"] += np.uint64(1 << 40)
                write_trace(path, other, {})
            else:
                write_trace(path, req[:10_000], {})

    with pytest.raises(TraceError, match="it changed while it was being read"):
        analyze_path(path, 4096, "exact", progress=meddle)


def test_a_failing_pass_stops_the_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (here an exception from the progress callback) in the main pass's second reading
    stops the 64 KiB pass on the other thread within a chunk or two, not at its reading's end."""
    import time

    from advisor.workload import analysis, exact
    from advisor.workload.analysis import analyze_path
    from advisor.workload.traces import write_trace

    path = tmp_path / "t.cwtrace"
    write_trace(path, mixed_requests(40_000, 15), {})
    monkeypatch.setattr(analysis, "STREAM_REQUESTS", 1000)
    monkeypatch.setattr(analysis, "STREAM_CHUNK", 1000)  # 40 chunks
    fed: list[bool] = []
    real = exact.Classing.feed

    def slow(self: exact.Classing, dense: np.ndarray, per: np.ndarray, reads: np.ndarray) -> bool:
        fed.append(self.by_request)
        if not self.by_request:
            time.sleep(0.02)  # the 64 KiB pass: 0.8 s for its reading
        return real(self, dense, per, reads)

    monkeypatch.setattr(exact.Classing, "feed", slow)

    def interrupt(what: str, share: float) -> None:
        if what.startswith("counting") and fed.count(True) >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        analyze_path(path, 4096, "exact", progress=interrupt)
    assert fed.count(False) < 15  # of 40
