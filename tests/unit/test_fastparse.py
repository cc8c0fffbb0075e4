"""The compiled fio iolog reader reads what the Python reader reads (the same requests, counts
and examples), across its block boundaries; the fast relabelling is np.unique's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.workload import analysis, fastparse, mrc
from advisor.workload.traces import REQUEST, ImportStats, load_trace, parse_fio_iolog

TRICKY_V3 = (
    "fio version 3 iolog\n"
    "0 /dev/sdb add\n"
    "0 /dev/sdb open\n"
    "1500 /dev/sdb read 4096 4096\n"
    "2500\t/dev/sdb  write 8192 512\r\n"
    "\n"
    "   \n"
    "3000 /dev/sdb trim 0 4096\n"
    "3100 /dev/sdb sync 0 0\n"
    "3200 /dev/sdb datasync 0 0\n"
    "-5 /dev/sdb read 0 4096\n"  # negative time
    "4000 /dev/sdb read 1152921504606846976 4096\n"  # offset 2^60: out of range
    "4100 /dev/sdb read 0 0\n"  # empty request
    "4200 /dev/sdb read 0 67108865\n"  # over 64 MiB
    "4300 /dev/sdb read 0x10 4096\n"
    "4400 /dev/sdb read 12 4096 extra\n"
    "4500 /dev/sdb fly 0 4096\n"
    "4600 /dev/sdb read +4096 4096\n"
    "4700 /dev/sdb\n"
    "4800\n"
    "caf\xe9 /dev/sdb read 0 4096\n"
    "5000 /dev/sdb write 67108864 65536\n"
    "5010 /dev/s\x01db read 0 4096\n"  # a control byte in the file name: still one field
    "123456789012345678 /dev/sdb read 0 4096\n"  # 18 digits
    "5020 /dev/sdb read 4096 4096 \n"  # a blank after the last field
    "5030 /dev/sdb  read 4096 4096\n"  # two blanks between fields
    "5040 /dev/sdb read 999999999999999999 4096\n"  # the largest offset of 18 digits
    "5050 /dev/sdb read 4096 67108864\n"  # the largest request
    "5060 /dev/sdb readx 0 4096\n"
    "5070 /dev/sdb read 0 4096\r\n"
    "5080 /dev/sdb write\n"
    "5090 /dev/sdb write 4096\n"
    "5100 /dev/sdb close\n"
    "6000 /dev/sdb read 123 456"  # no newline at the end
)
TRICKY_V2 = TRICKY_V3.replace("fio version 3 iolog", "fio version 2 iolog").replace("\n0 /dev", "\n/dev")


def both(tmp_path: Path, text: str, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.iolog"
    path.write_bytes(text.encode("latin-1"))
    ref_stats = ImportStats()
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        ref = parse_fio_iolog(fh, ref_stats)
    monkeypatch.setattr(fastparse, "BLOCK", block)
    stats = ImportStats(lines=1)
    header = len(text.encode("latin-1").split(b"\n", 1)[0]) + 1
    got = fastparse.read_fio_iolog(path, text.startswith("fio version 3"), header, REQUEST, stats)
    assert got.tolist() == ref.tolist()
    assert (stats.lines, stats.requests, stats.skipped, stats.bad) == (
        ref_stats.lines, ref_stats.requests, ref_stats.skipped, ref_stats.bad)
    assert [e.split(":")[0] for e in stats.examples] == [e.split(":")[0] for e in ref_stats.examples]
    assert [e.replace("\ufffd", "?") for e in stats.examples] == [e.replace("\ufffd", "?") for e in ref_stats.examples]


@pytest.mark.parametrize("block", [16, 37, 100, 1 << 20])
@pytest.mark.parametrize("text", [TRICKY_V3, TRICKY_V2], ids=["v3", "v2"])
def test_the_compiled_reader_reads_what_the_python_reader_reads(tmp_path: Path, text: str, block: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    both(tmp_path, text, block, monkeypatch)


def test_a_random_log_reads_the_same_in_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    lines = ["fio version 3 iolog"]
    for i in range(20_000):
        kind = rng.choice(["read", "write", "trim", "junk"], p=[0.6, 0.3, 0.05, 0.05])
        lines.append(f"{i * 10} /dev/vdb {kind} {int(rng.integers(0, 1 << 40))} {int(rng.integers(0, 1 << 20))}")
    both(tmp_path, "\n".join(lines) + "\n", 4096, monkeypatch)


def test_long_logs_go_through_the_compiled_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.iolog"
    path.write_text("fio version 2 iolog\n" + "/dev/sda read 4096 4096\n" * 50 + "/dev/sda bogus\n")
    calls: list[Path] = []
    real = fastparse.read_fio_iolog

    def spy(p: Path, *args: object) -> object:
        calls.append(p)
        return real(p, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(fastparse, "read_fio_iolog", spy)
    monkeypatch.setattr("advisor.workload.traces.COMPILED_FROM", 0)
    trace = load_trace(path)
    assert calls == [path] and len(trace.requests) == 50
    assert trace.stats.bad == 1 and trace.stats.examples == ["line 52: /dev/sda bogus"]


@pytest.mark.parametrize("blocks", [
    np.array([5, 3, 5, 9, 3, 3], np.int64),
    np.array([7], np.int64),
    np.array([(1 << 39) + 1, 2, 2], np.int64),  # beyond the packed keys: np.unique's way
    np.random.default_rng(1).integers(0, 1 << 30, 50_000),
])
def test_relabel_is_np_unique(blocks: np.ndarray) -> None:
    ids, dense, counts = mrc.relabel(blocks)
    want_ids, want_dense, want_counts = np.unique(blocks, return_inverse=True, return_counts=True)
    assert ids.tolist() == want_ids.tolist() and dense.tolist() == want_dense.tolist()
    assert counts.tolist() == want_counts.tolist()


def test_single_block_requests_map_straight_to_blocks_and_spanning_ones_split() -> None:
    req = np.zeros(3, REQUEST)
    req["offset"], req["length"] = [0, 8192, 4096], [4096, 4096, 1]
    assert analysis.to_blocks(req, 4096).tolist() == [0, 2, 1]
    req["length"] = [4096, 12288, 1]
    assert analysis.to_blocks(req, 4096).tolist() == [0, 2, 3, 4, 1]
