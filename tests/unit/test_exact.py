"""The compiled exact passes (advisor.workload.exact) give the curves mrc gives from stack
distances, and analyze gives what it gave before them: analyses of the fixtures made by the code
before the passes (tests/fixtures/analyses/README.md) are held to the number, through both paths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advisor.workload import analysis, exact, mrc
from advisor.workload.traces import REQUEST, Trace, load_trace

FIXTURES = Path(__file__).parents[1] / "fixtures"
CURVE_FIELDS = ("sizes", "hit_ratio", "steady", "read_hit_ratio", "read_steady")


def requests(n: int, seed: int, spanning: bool) -> np.ndarray:
    """Zipf-like requests over a few thousand blocks, some spanning blocks, 30% writes."""
    rng = np.random.default_rng(seed)
    req = np.zeros(n, REQUEST)
    req["t"] = np.arange(n) * 1e-4
    req["offset"] = (rng.zipf(1.2, n) % 5000) * 4096 + (rng.integers(0, 8, n) * 512 if spanning else 0)
    req["length"] = rng.choice([512, 4096, 8192, 65536], n) if spanning else 4096
    req["write"] = rng.random(n) < 0.3
    return req


def old_curve(req: np.ndarray, block_size: int, keep: np.ndarray | None, by_request: bool) -> mrc.Curve:
    cached = req if keep is None else req[keep]
    reads = ~cached["write"].astype(bool)
    blocks, per = analysis.blocks_per_request(cached, block_size)
    ids, dense, _ = mrc.relabel(blocks)
    sizes = mrc.default_sizes(len(ids))
    if by_request:
        return mrc.exact_curve_dense(dense, len(ids), sizes, per, reads)
    return mrc.exact_curve_dense(dense, len(ids), sizes, reads=reads if per is None else np.repeat(reads, per))


@pytest.mark.parametrize("spanning", [False, True])
@pytest.mark.parametrize("block_size", [512, 4096, 65536])
@pytest.mark.parametrize("by_request", [True, False])
def test_a_pass_gives_the_curve_of_the_stack_distances(spanning: bool, block_size: int, by_request: bool) -> None:
    req = requests(30_000, 4, spanning)
    for keep in (None, np.random.default_rng(5).random(len(req)) < 0.8):
        reads = req["write"] == 0 if keep is None else (req["write"] == 0)[keep]
        counted = exact.count(req, block_size, keep)
        got = exact.lru_pass(req, block_size, keep, reads, by_request, counted)
        want = old_curve(req, block_size, keep, by_request)
        for name in CURVE_FIELDS:
            assert np.array_equal(getattr(got.curve, name), getattr(want, name)), name
        blocks = analysis.to_blocks(req if keep is None else req[keep], block_size)
        assert counted.accesses == got.accesses == len(blocks)
        ids, counts = np.unique(blocks, return_counts=True)
        assert np.sort(got.ids).tolist() == ids.tolist() and np.sort(got.counts).tolist() == np.sort(counts).tolist()
        assert got.ids[np.argsort(got.ids)].tolist() == ids.tolist()
        assert got.counts[np.argsort(got.ids)].tolist() == counts.tolist()


@pytest.mark.parametrize("by_request", [True, False])
def test_a_pass_the_markers_give_up_on_is_made_by_the_fenwick_tree(by_request: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact, "MARKER_STEPS", 0)  # gives up at its first look, 262,144 accesses in
    req = requests(300_000, 6, spanning=True)
    reads = req["write"] == 0
    got = exact.lru_pass(req, 4096, None, reads, by_request, exact.count(req, 4096, None))
    want = old_curve(req, 4096, None, by_request)
    for name in CURVE_FIELDS:
        assert np.array_equal(getattr(got.curve, name), getattr(want, name)), name


def counted(classes_or_markers: object, dense: np.ndarray, distinct: int, sizes: np.ndarray, reads: np.ndarray,
            budget: int = 1 << 40) -> tuple[list[list[int]], list[list[int]], list[int]] | None:
    """The histograms of one unit an access, from the marker pass or from classes."""
    edges = np.linspace(0, len(dense), mrc.STEADY_SLICES + 1).astype(np.int64)
    hist = np.zeros((mrc.STEADY_SLICES, len(sizes) + 2), np.int64)
    read_hist, fill_at = np.zeros_like(hist), np.full(len(sizes), -1, np.int64)
    none = np.zeros(0, np.int32)
    state = exact._marker_state()
    if isinstance(classes_or_markers, np.ndarray):
        exact._histograms_compiled()(classes_or_markers, none, reads, False, sizes, edges, hist, read_hist, fill_at,
                                     state)
    else:
        node = exact._nodes(distinct)
        if not exact._markers_compiled()(dense, sizes, budget, none, reads, False, edges, hist, read_hist, fill_at,
                                         node, np.full(len(sizes), -1, np.int32), state):
            return None
        assert node[:, 3].tolist() == np.bincount(dense, minlength=distinct).tolist()
    return hist.tolist(), read_hist.tolist(), fill_at.tolist()


def fenwick_classes(dense: np.ndarray, distinct: int, sizes: np.ndarray, pieces: int = 1) -> np.ndarray:
    """The Fenwick tree's classes of ``dense``, fed in ``pieces`` calls; its counts checked."""
    room = 1
    while room < min(2 * distinct + 1024, len(dense) + 1):
        room *= 2
    last, owner = np.full(distinct, -1, np.int32), np.full(room, -1, np.int32)
    tree, counts, state = np.zeros(room + 1, np.int32), np.zeros(distinct, np.int64), np.zeros(2, np.int64)
    out = np.empty(len(dense), np.int16)
    for part in np.array_split(np.arange(len(dense)), pieces):
        piece = np.empty(len(part), np.int16)
        exact._fenwick_compiled()(dense[part], sizes, piece, last, owner, tree, counts, state)
        out[part] = piece
    assert counts.tolist() == np.bincount(dense, minlength=distinct).tolist()
    return out


@pytest.mark.parametrize("universe", [3, 50, 5000, 10**6])
def test_markers_and_fenwick_class_as_the_distances_do(universe: int) -> None:
    rng = np.random.default_rng(universe)
    blocks = (rng.zipf(1.1, 40_000) % universe).astype(np.int64)
    reads = (rng.random(len(blocks)) < 0.7).astype(np.uint8)
    ids, dense, _ = mrc.relabel(blocks)
    dense32 = dense.astype(np.int32)
    exact.load()
    for sizes in (mrc.default_sizes(len(ids)), np.array([1, 2, 3, 7], np.int64), np.array([1], np.int64)):
        want = mrc.size_classes(mrc.stack_distances(blocks), sizes).astype(np.int16)
        for pieces in (1, 7):
            assert fenwick_classes(dense32, len(ids), sizes, pieces).tolist() == want.tolist()
        assert counted(None, dense32, len(ids), sizes, reads) == counted(want, dense32, len(ids), sizes, reads)


def test_the_marker_pass_gives_up_on_a_trace_with_little_reuse() -> None:
    dense = np.arange(300_000, dtype=np.int32)  # every access a first touch, deep below the sizes
    sizes = mrc.default_sizes(len(dense))
    exact.load()
    assert counted(None, dense, len(dense), sizes, np.ones(len(dense), np.uint8), exact.MARKER_STEPS) is None


@pytest.mark.parametrize("fenwick", [False, True])
@pytest.mark.parametrize("by_request", [True, False])
def test_a_curve_counted_piece_by_piece_is_the_curve_of_the_whole(fenwick: bool, by_request: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The streaming analysis's way: the blocks numbered over pieces of the trace (the table
    growing between them), then looked up and classed piece by piece, give the one-pass curve."""
    monkeypatch.setattr(exact, "MARKER_STEPS", 1 << 20)  # the markers never give up here
    req = requests(100_000, 8, spanning=True)
    req["offset"] += np.random.default_rng(10).integers(0, 30, len(req)).astype(np.uint64) * (5000 * 4096)
    keep = np.random.default_rng(9).random(len(req)) < 0.9
    reads_all = req["write"] == 0
    want = exact.lru_pass(req, 4096, keep, reads_all[keep], by_request, exact.count(req, 4096, keep))
    numbering = exact.Numbering(4096, load=3)
    pieces = [slice(at, at + 3_333) for at in range(0, len(req), 3_333)]
    for piece in pieces:
        numbering.feed(req[piece], keep[piece])
    assert len(numbering.table) > 2 << 16  # it grew between pieces
    assert numbering.distinct == len(want.ids) and numbering.counted == exact.count(req, 4096, keep)
    assert np.array_equal(numbering.ids(), want.ids)  # numbered in the same order: first touch
    counted_ = numbering.counted
    units = counted_.requests if by_request else counted_.accesses
    classing = exact.Classing(numbering.distinct, units, counted_.accesses, by_request, fenwick)
    for piece in pieces:
        dense, per = numbering.lookup(req[piece], keep[piece], exact.count(req[piece], 4096, keep[piece]))
        assert classing.feed(dense, per, reads_all[piece][keep[piece]])
    got = classing.curve()
    for name in CURVE_FIELDS:
        assert np.array_equal(getattr(got, name), getattr(want.curve, name)), name
    assert np.array_equal(classing.block_counts(), want.counts)


def pinned(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((FIXTURES / "analyses" / name).read_text())
    return data


def analysed(trace: Trace, block_size: int = 4096) -> dict[str, object]:
    data: dict[str, object] = json.loads(json.dumps(analysis.analyze(trace, block_size).to_json()))
    data.pop("source")
    return data


@pytest.mark.parametrize("compiled", [False, True], ids=["short-trace path", "compiled passes"])
@pytest.mark.parametrize(("trace", "block_size", "golden"), [
    ("traces/fio-v3.iolog", 4096, "fio-v3.json"),
    ("replay/untimed-writes.iolog", 4096, "untimed-writes.json"),
    ("replay/untimed-writes.iolog", 16384, "untimed-writes-16k.json"),
    ("traces/blkparse-default.txt", 4096, "blkparse-default.json"),
])
def test_analyses_are_what_they_were_before_the_compiled_passes(trace: str, block_size: int, golden: str,
                                                                 compiled: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if compiled:
        monkeypatch.setattr(analysis, "COMPILED_PASSES_FROM", 0)
    assert analysed(load_trace(FIXTURES / trace), block_size) == pinned(golden)


def test_both_paths_agree_on_bypassed_streams_and_spanning_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    mixed = load_trace(FIXTURES / "replay" / "untimed-writes.iolog").requests
    scan = np.zeros(3000, REQUEST)  # a 192 MiB sequential read: past the 4 MiB cutoff, bypassed
    scan["offset"] = (1 << 34) + 65536 * np.arange(3000)
    scan["length"] = 65536
    req = np.concatenate([mixed[:1000], scan, mixed[1000:]])
    req["t"] = np.arange(len(req)) * 1e-3
    trace = Trace(req, "fio", "mixed", load_trace(FIXTURES / "replay" / "untimed-writes.iolog").stats)
    before = analysed(trace)
    assert before["bypassed_requests"] > 0
    monkeypatch.setattr(analysis, "COMPILED_PASSES_FROM", 0)
    assert analysed(trace) == before


def test_block_counts_over_pieces_are_each_blocks_accesses() -> None:
    """The SHARDS stream's footprint and hot data: each block's count kept by number as pieces
    come (its table and counts growing between them), the counts np.unique gives the whole."""
    req = requests(60_000, 12, spanning=True)
    req["offset"] += np.random.default_rng(13).integers(0, 40, len(req)).astype(np.uint64) * (5000 * 4096)
    counted = exact.BlockCounts(4096)
    for at in range(0, len(req), 7_000):
        piece = req[at : at + 7_000]
        counted.feed(piece, exact.count(piece, 4096, None).accesses)
    _, want = np.unique(analysis.to_blocks(req, 4096), return_counts=True)
    assert len(counted.counts()) > 1 << 16  # past the first room for counts
    assert sorted(counted.counts().tolist()) == sorted(want.tolist())
    ids = counted.numbering.ids()
    assert counted.counts()[np.argsort(ids)].tolist() == want.tolist()


def test_numbering_spreads_past_two_to_the_24_blocks() -> None:
    """The hash takes the top bits of an unsigned product: a signed shift by 40 left 2^24 home
    slots in a table of any size, and numbering past 16.8 million blocks ran for hours. Here 18
    million blocks are numbered in a separate process, given two minutes."""
    import subprocess
    import sys

    script = (
        "import numpy as np\n"
        "from advisor.workload import exact\n"
        "from advisor.workload.traces import REQUEST\n"
        "n = exact.Numbering(4096, load=3)\n"
        "for k in range(18):\n"
        "    r = np.zeros(1_000_000, REQUEST)\n"
        "    r['offset'] = (np.arange(1_000_000, dtype=np.uint64) + np.uint64(k * 1_000_000)) * np.uint64(4096)\n"
        "    r['length'] = 4096\n"
        "    n.feed(r, None)\n"
        "print(n.distinct, len(n.table) // 2)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["18000000", str(1 << 25)]
