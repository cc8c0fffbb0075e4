"""The kernel's binary trace pages (advisor/workload/rawtrace.py): read as the kernel's own text
pipe reads them, from pages the real kernel wrote, and from pages built by hand for the event
types a short run rarely shows (time extends, absolute stamps, discarded events, lost events)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from advisor.workload import rawtrace

FIXTURE = Path(__file__).parents[1] / "fixtures" / "host-trace-raw"
LINE = re.compile(r"\s(\d+\.\d+): block_rq_issue: \d+,\d+ (\S+) (?:\d+ \([^)]*\) )?(\d+) \+ (\d+)")
LAYOUT = rawtrace.parse_format((FIXTURE / "format").read_text())
PAGE = 4096


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_the_kernels_pages_hold_what_its_text_pipe_printed(compiled: bool) -> None:
    """3,000 reads and writes of a loop device, traced by two instances at once (one read as text,
    one as pages, tests/vm/capture_raw_fixture.py): the same requests, in the same order, at the
    same times (to the text's microseconds; one event in 3,000 was stamped 18 us apart by the
    two instances' own writes)."""
    page = rawtrace.check_page_header((FIXTURE / "header_page").read_text())
    assert page == PAGE
    events, counts = rawtrace.parse_pages((FIXTURE / "pages.bin").read_bytes(), LAYOUT, page, compiled)
    assert counts == rawtrace.PageCounts(0, 0, 0)
    events = events[np.argsort(events["ns"], kind="stable")]
    lines = [(float(m[1]), m[2], int(m[3]), int(m[4])) for m in LINE.finditer((FIXTURE / "trace_pipe.txt").read_text())]
    assert len(lines) == len(events) == 3000
    dev = int((FIXTURE / "dev").read_text())
    assert set(events["dev"].tolist()) == {dev}
    assert [(s, c, "W" in rwbs) for _, rwbs, s, c in lines] == [
        (int(e["sector"]), int(e["sectors"]), e["rwbs"] == rawtrace.WRITE) for e in events
    ]
    assert set(events["rwbs"].tolist()) == {rawtrace.READ, rawtrace.WRITE}
    apart = np.abs(np.array([t for t, *_ in lines]) - events["ns"] / 1e9)
    assert np.count_nonzero(apart > 2e-6) <= 1 and apart.max() < 1e-4


def test_the_lab_guests_older_kernel_is_read_from_its_own_format() -> None:
    """The lab guest's Debian 6.1 kernel puts rwbs (8 bytes) where 6.18 puts ioprio; its pages of
    the trace boot's sample (reads, synced writes, flushes, driver requests, beside block_bio_queue
    events) give the block_rq_issue requests its text shows."""
    lab = FIXTURE.parent / "lab-trace"
    layout = rawtrace.parse_format((lab / "format-block_rq_issue.txt").read_text())
    assert layout.rwbs == (32, 8) and layout != LAYOUT
    rawtrace.parse_format((lab / "format-block_bio_queue.txt").read_text())
    page = rawtrace.check_page_header((lab / "header_page.txt").read_text())
    events, counts = rawtrace.parse_pages((lab / "tracefs-sample-pages.bin").read_bytes(), layout, page)
    text = re.findall(r"block_rq_issue: \d+,\d+ (\S+) (?:\d+ \([^)]*\) )?(\d+) \+ (\d+)", (lab / "tracefs-sample.txt").read_text())
    assert counts.damaged == 0 and counts.other > 0 and len(events) == len(text) > 25
    assert sorted((int(s), int(c), "W" in rwbs) for rwbs, s, c in text) == sorted(
        (int(e["sector"]), int(e["sectors"]), e["rwbs"] == rawtrace.WRITE) for e in events
    )
    assert {rawtrace.READ, rawtrace.WRITE, rawtrace.OTHER} == set(events["rwbs"].tolist())


def test_the_fields_are_found_where_each_kernel_puts_them() -> None:
    assert (LAYOUT.dev, LAYOUT.sector, LAYOUT.sectors, LAYOUT.rwbs) == ((8, 4), (16, 8), (24, 4), (34, 10))
    older = """name: block_rq_issue
ID: 1234
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;
\tfield:char rwbs[8];\toffset:32;\tsize:8;\tsigned:1;
\tfield:char comm[16];\toffset:40;\tsize:16;\tsigned:1;
"""
    layout = rawtrace.parse_format(older)
    assert layout.event_id == 1234 and layout.rwbs == (32, 8)
    for broken in (older.replace("ID: 1234\n", ""), older.replace("nr_sector", "nr_sectors"),
                   older.replace("sector_t sector;\toffset:16;\tsize:8", "sector_t sector;\toffset:16;\tsize:4")):
        with pytest.raises(rawtrace.FormatError):
            rawtrace.parse_format(broken)
    with pytest.raises(rawtrace.FormatError):
        rawtrace.check_page_header("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n")


def event(delta: int, sector: int, sectors: int, rwbs: bytes, long: bool = False) -> bytes:
    """A block_rq_issue data event as the ring buffer holds it (type_len 0 when ``long``)."""
    data = bytearray(64)
    struct.pack_into("<H", data, 0, LAYOUT.event_id)
    struct.pack_into("<I", data, LAYOUT.dev[0], 7 << 20 | 3)
    struct.pack_into("<Q", data, LAYOUT.sector[0], sector)
    struct.pack_into("<I", data, LAYOUT.sectors[0], sectors)
    data[LAYOUT.rwbs[0] : LAYOUT.rwbs[0] + len(rwbs)] = rwbs
    if long:
        return struct.pack("<II", delta << 5, len(data) + 4) + bytes(data)
    return struct.pack("<I", (delta << 5) | (len(data) // 4)) + bytes(data)


def page(stamp: int, body: bytes, missed: bool = False) -> bytes:
    commit = len(body) | (rawtrace.MISSED_EVENTS if missed else 0)
    return (struct.pack("<QQ", stamp, commit) + body).ljust(PAGE, b"\0")


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_time_extends_stamps_discarded_events_and_lost_events_are_read_as_the_kernel_reads_them(compiled: bool) -> None:
    extend = struct.pack("<II", (5 << 5) | 30, 3)  # + (3 << 27) + 5 ns
    stamp = struct.pack("<II", ((1_000_000 & ((1 << 27) - 1)) << 5) | 31, 1_000_000 >> 27)  # absolute 1,000,000 ns
    discarded = struct.pack("<II", (9 << 5) | 29, 20) + bytes(16)  # 4 + 20 bytes; its delta is no time
    flush = event(1, 0, 0, b"FF")
    body = (
        event(0, 100, 8, b"R")
        + extend
        + event(10, 200, 16, b"WS", long=True)
        + discarded
        + event(7, 300, 8, b"RA")
        + flush
        + stamp
        + event(2, 400, 8, b"N")
        + struct.pack("<I", 29)  # padding with no delta: the page's data ends
        + event(1, 999, 8, b"R")
    )
    events, counts = rawtrace.parse_pages(page(1 << 40, body, missed=True) + page(2 << 40, event(3, 500, 8, b"W")),
                                          LAYOUT, PAGE, compiled)
    t0 = 1 << 40
    t1 = t0 + (3 << 27) + 5 + 10
    assert events["ns"].tolist() == [t0, t1, t1 + 7, t1 + 8, 1_000_002, (2 << 40) + 3]
    assert events["sector"].tolist() == [100, 200, 300, 0, 400, 500]
    assert events["rwbs"].tolist() == [rawtrace.READ, rawtrace.WRITE, rawtrace.READ, rawtrace.OTHER, rawtrace.OTHER,
                                       rawtrace.WRITE]
    assert set(events["dev"].tolist()) == {7 << 20 | 3}
    assert counts == rawtrace.PageCounts(missed=1, other=0, damaged=0)


def test_damaged_and_hostile_pages_are_counted_never_read_past() -> None:
    too_long = struct.pack("<QQ", 1, PAGE)  # says more data than a page holds
    cut = page(5, struct.pack("<II", 0, 4000))  # a long event running past the data
    other = page(5, struct.pack("<I", 16 // 4) + struct.pack("<H", LAYOUT.event_id + 1) + bytes(14))
    for compiled in (True, False):
        events, counts = rawtrace.parse_pages(too_long.ljust(PAGE, b"\0") + cut + other + b"\1\2\3", LAYOUT, PAGE,
                                              compiled)
        assert len(events) == 0 and counts == rawtrace.PageCounts(missed=0, other=1, damaged=2)
    rng = np.random.default_rng(5)
    for _ in range(20):  # random bytes: whatever they say, bounded and never a crash
        junk = rng.integers(0, 256, 4 * PAGE, dtype=np.uint8)
        events, _ = rawtrace.parse_pages(junk, LAYOUT, PAGE)
        assert len(events) <= 4 * PAGE // 12


def test_a_capture_streams_each_cpus_pages_in_time_order(tmp_path: Path) -> None:
    """Capture's raw reading (advisor/workload/capture.py) over an instance whose CPUs' pipes hold
    the kernel's pages (files here, read to their end as a pipe is read till it is empty): every
    request once, in time order; a partition's at its byte offset within the partition."""
    from types import SimpleNamespace

    from advisor.workload.capture import Capture

    pages = (FIXTURE / "pages.bin").read_bytes()
    half = len(pages) // PAGE // 2 * PAGE
    for cpu, part in enumerate((pages[:half], pages[half:])):
        (tmp_path / "per_cpu" / f"cpu{cpu}").mkdir(parents=True)
        (tmp_path / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw").write_bytes(part)
    event_dir = tmp_path / "events" / "block" / "block_rq_issue"
    event_dir.mkdir(parents=True)
    lines = [(int(m[3]), int(m[4]), "W" in m[2]) for m in LINE.finditer((FIXTURE / "trace_pipe.txt").read_text())]
    for start in (0, 2048):
        cap = Capture.__new__(Capture)  # no root, no tracefs: only what the stream reads
        cap.plan = SimpleNamespace(sector_start=start)  # type: ignore[assignment]
        cap.instance, cap.event_dir = tmp_path, event_dir
        batches: list[np.ndarray] = []
        result = cap._stream_raw(LAYOUT, PAGE, 0.3, batches.append, None, None)
        got = np.concatenate(batches)
        within = [line for line in lines if line[0] >= start]
        assert result.events == len(got) == len(within) and result.bad_lines == 0 and result.stopped_by == "duration"
        assert (np.diff(got["t"]) >= 0).all()
        assert [(int(o) // 512 + start, int(n) // 512, bool(w)) for o, n, w in got[["offset", "length", "write"]]] == within
        assert (event_dir / "enable").read_text() == "0"  # tracing is off before the last pages are read
        for cpu, part in enumerate((pages[:half], pages[half:])):  # the pipes again, for the next round
            (tmp_path / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw").write_bytes(part)
    assert len(lines) == 3000 and len(within) < 3000


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_a_long_event_too_short_for_its_type_at_the_buffers_end_is_damage(compiled: bool) -> None:
    """A type_len 0 event whose length word says 5 bytes (1 of data) as the last thing of the
    last page: counted as damage, never a read past the buffer."""
    body = event(0, 100, 8, b"R")
    tail = struct.pack("<II", 0, 5) + b"\x07"
    room = PAGE - 16 - len(body) - len(tail)
    pad = struct.pack("<II", (1 << 5) | 29, room - 4) + bytes(room - 8)  # a discarded event to fill the page
    data = struct.pack("<QQ", 1, len(body) + room + len(tail)) + body + pad + tail
    assert len(data) == PAGE
    events, counts = rawtrace.parse_pages(data, LAYOUT, PAGE, compiled)
    assert events["sector"].tolist() == [100] and counts.damaged == 1


def test_an_absolute_stamp_below_the_time_so_far_wraps_its_59_bits_as_the_kernel_does() -> None:
    top = 1 << 59  # the page's time has its upper bits set
    stamp = struct.pack("<II", (5 << 5) | 31, 0)  # lower 59 bits: 5, below the time so far
    data = page(top + 1000, stamp + event(2, 100, 8, b"R"))
    events, _ = rawtrace.parse_pages(data, LAYOUT, PAGE)
    assert events["ns"].tolist() == [top + (1 << 59) + 5 + 2]


def test_a_cpu_with_more_to_give_holds_back_later_requests_so_none_comes_out_of_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two rounds' worth of pages on one CPU, a few on the other: whatever the round size, the
    requests are handed over in time order, each once."""
    from types import SimpleNamespace

    from advisor.workload import capture
    from advisor.workload.capture import Capture

    monkeypatch.setattr(capture, "RAW_PAGES_A_ROUND", 3)
    pages = (FIXTURE / "pages.bin").read_bytes()
    stamps = [struct.unpack_from("<Q", pages, at)[0] for at in range(0, len(pages), PAGE)]
    # one CPU's pages (the requests ran on one), then any other's: split where the time goes
    # back, or give the first 40 pages to one CPU and the rest, all later, to the other
    split = next((i for i in range(1, len(stamps)) if stamps[i] < stamps[i - 1]), 40) * PAGE
    assert split > 6 * PAGE  # that CPU gives more than two rounds of 3 pages
    for cpu, part in enumerate((pages[:split], pages[split:])):
        (tmp_path / "per_cpu" / f"cpu{cpu}").mkdir(parents=True)
        (tmp_path / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw").write_bytes(part)
    (tmp_path / "events" / "block" / "block_rq_issue").mkdir(parents=True)
    cap = Capture.__new__(Capture)
    cap.plan = SimpleNamespace(sector_start=0)  # type: ignore[assignment]
    cap.instance, cap.event_dir = tmp_path, tmp_path / "events" / "block" / "block_rq_issue"
    batches: list[np.ndarray] = []
    result = cap._stream_raw(LAYOUT, PAGE, 0.2, batches.append, None, None)
    got = np.concatenate(batches)
    assert len(batches) > 3 and result.events == len(got) == 3000
    assert (np.diff(got["t"]) >= 0).all()
