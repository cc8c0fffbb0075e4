"""Trace importers on real fio iologs, the compact format, and damaged input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.workload.traces import (
    MSR,
    CsvLayout,
    TraceError,
    detect_format,
    load_trace,
    write_trace,
)
from tests.conftest import FIXTURES, raises_worded

TRACES = FIXTURES / "traces"


def test_fio_v3_iolog() -> None:
    trace = load_trace(TRACES / "fio-v3.iolog")
    assert trace.source_format == "fio"
    assert trace.stats.requests == 4000 and trace.stats.skipped == 3 and trace.stats.bad == 0
    req = trace.requests
    assert int(req["write"].sum()) == 1236 and int((req["write"] == 0).sum()) == 2764
    assert set(np.unique(req["length"])) == {4096}
    assert np.all(np.diff(req["t"]) >= 0) and req["t"][-1] > 0  # v3 timestamps, in seconds
    assert int(req["offset"].max()) < 64 << 20


def test_fio_v2_matches_v3_but_for_time() -> None:
    v2, v3 = load_trace(TRACES / "fio-v2.iolog"), load_trace(TRACES / "fio-v3.iolog")
    assert np.array_equal(v2.requests["offset"], v3.requests["offset"])
    assert np.array_equal(v2.requests["write"], v3.requests["write"])
    assert np.all(v2.requests["t"] == 0)


def test_truncated_and_garbled_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    text = (TRACES / "fio-v3.iolog").read_text().splitlines()
    damaged = [*text[:100], "12 /tmp/iolog-target read 123", "garbage line", *text[100:], text[-1][:9]]
    path = tmp_path / "damaged.iolog"
    path.write_text("\n".join(damaged) + "\n")
    trace = load_trace(path)
    assert trace.stats.requests == 4000
    assert trace.stats.bad == 3
    assert trace.stats.examples[0] == "line 101: 12 /tmp/iolog-target read 123"


def test_csv_with_msr_layout_and_custom_columns(tmp_path: Path) -> None:
    fio = load_trace(TRACES / "fio-v3.iolog").requests
    # The fio trace written out in the MSR Cambridge layout (Windows filetime, Read/Write).
    rows = [f"{int(t * 1e7) + 128166372003061629},src1,0,{'Write' if w else 'Read'},{o},{n},1331"
            for t, o, n, w in fio.tolist()]
    msr = tmp_path / "msr.csv"
    msr.write_text("\n".join(rows) + "\n")
    trace = load_trace(msr)
    assert trace.source_format == "csv" and trace.stats.requests == 4000
    assert np.array_equal(trace.requests["offset"], fio["offset"])
    assert abs((trace.requests["t"][-1] - trace.requests["t"][0]) - (fio["t"][-1] - fio["t"][0])) < 1e-6
    custom = tmp_path / "custom.csv"
    custom.write_text("op,offset,bytes,ts\n" + "\n".join(f"{'W' if w else 'R'},{o},{n},{t}" for t, o, n, w in fio.tolist()))
    layout = CsvLayout.parse("time=3,op=0,offset=1,size=2", time_unit="s", header=True)
    trace2 = load_trace(custom, "csv", layout)
    assert trace2.stats.requests == 4000 and trace2.stats.skipped == 1
    assert int(trace2.requests["write"].sum()) == 1236
    assert MSR.time_unit == "filetime"


def test_bad_csv_columns_spec() -> None:
    with raises_worded(TraceError, "bad --csv-columns"):
        CsvLayout.parse("time=0,op=x")


def test_compact_format_round_trip_and_truncation(tmp_path: Path) -> None:
    fio = load_trace(TRACES / "fio-v3.iolog")
    path = tmp_path / "t.cwtrace"
    write_trace(path, fio.requests, {"device": "/dev/sdb", "tracer": "block_rq_issue"})
    assert detect_format(path) == "cachewise"
    back = load_trace(path)
    assert np.array_equal(back.requests, fio.requests) and back.meta["device"] == "/dev/sdb"
    with path.open("ab") as fh:
        fh.write(b"\x01\x02\x03")  # a record cut short by a crash mid-capture
    cut = load_trace(path)
    assert cut.stats.requests == 4000 and cut.stats.bad == 1 and "truncated record" in cut.stats.examples[0]


def test_unreadable_and_unknown_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="is not a readable file; nothing was analysed"):
        load_trace(tmp_path / "missing.iolog")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01binary junk without commas")
    with pytest.raises(TraceError, match="not a trace cachewise knows"):
        load_trace(junk)
    empty = tmp_path / "empty.iolog"
    empty.write_text("fio version 3 iolog\n1 /dev/sdb add\n")
    with pytest.raises(TraceError, match="holds no read or write requests"):
        load_trace(empty)


def test_blkparse_default_output_from_the_lab() -> None:
    trace = load_trace(TRACES / "blkparse-default.txt")
    assert trace.source_format == "blkparse" and trace.stats.bad == 0
    req = trace.requests
    # Issued (D) requests with data: dd's 64 reads of 4 KiB from block 1000, dd's 4 synchronous
    # 64 KiB writes at 64 KiB block 7000 (issued by a kworker), and the reads udev's workers
    # made when they probed the disk again after it was written.
    lines = (TRACES / "blkparse-default.txt").read_text().splitlines()
    issued = [line.split() for line in lines if " D " in line and " + " in line]
    assert len(req) == len(issued) == 116
    dd_sectors = sorted(int(f[7]) for f in issued if f[-1] == "[dd]")
    assert dd_sectors == [8000 + 8 * i for i in range(64)]
    writes = req[req["write"] == 1]
    assert list(writes["offset"]) == [7000 * 65536 + i * 65536 for i in range(4)] and set(writes["length"]) == {65536}
    assert set(dd_sectors) <= {int(o) // 512 for o in req["offset"][req["write"] == 0]}
    # The per-CPU and total summaries at the end are not I/O, and not errors.
    assert trace.stats.skipped > 0
