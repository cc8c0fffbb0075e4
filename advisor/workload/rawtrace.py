"""The kernel's binary trace pages (tracefs per_cpu/cpuN/trace_pipe_raw), parsed without text.

Reading ``trace_pipe`` makes the kernel print every event as text in the reader's process:
measured on this machine's kernel (6.18) with fio's 4 KiB random reads of a loop device on
tmpfs (bench/bench_capture_overhead.py), a plain ``cat`` of ``trace_pipe`` alone cut fio's rate
from about 290,000 to 148,000 IOPS, while the event enabled but unread cost 5 to 9%. The raw
pipe hands over the ring buffer's pages as they are: this module reads them.

A page (events/header_page): a u64 timestamp, a u64 ``commit`` whose low 27 bits are the bytes
of data that follow and whose bit 31 says events were lost before it, then the data. Each event
starts with a u32: ``type_len`` (5 bits) and ``time_delta`` (27 bits), as events/header_event
says and libtraceevent's kbuffer reads them:

- 1 to 28: a data event of type_len x 4 bytes, right after the u32;
- 0: a data event whose length, plus 4, is the next u32, its data after that;
- 29: padding; with a zero delta the page's data ends here, otherwise a discarded event (one
  the event's filter refused after it was written) whose length, less the u32 itself, is the
  next u32, and whose delta is not time (the kernel's own reader, rb_update_read_stamp, adds
  none);
- 30: a time extend: the next u32 << 27, plus the delta, is added to the time;
- 31: an absolute time stamp: the next u32 << 27 | delta is the time's lower 59 bits.

A data event's time is the time so far plus its delta. Its fields are where the event's own
format file (events/block/EVENT/format) puts them: the kernel's versions move them (rwbs grew
from 8 to 10 bytes; ioprio came between).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.workload.jit import compile_loop

COMMIT_MASK = (1 << 27) - 1
MISSED_EVENTS = 1 << 31
TS_SHIFT = 27
PAGE_HEADER = 16
INTERPRETED_PAGES = 2  # at most this many pages at once are parsed without compiling (parse_pages)

# What each data event of the block event gives: its time (ns of the trace clock), its field
# values, and whether it reads or writes (from rwbs).
RAW_EVENT = np.dtype([("ns", "<u8"), ("dev", "<u4"), ("sector", "<u8"), ("sectors", "<u4"), ("rwbs", "<u1")])
READ, WRITE, OTHER = 1, 2, 0  # rwbs: a read, a write (W before any R), neither (a flush, a driver's)

FIELD = re.compile(r"field:(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);")


class FormatError(ValueError):
    """The kernel describes the pages or the event in a way this reader does not know."""


@dataclass(frozen=True)
class EventLayout:
    """Where the block event's fields are in its data (events/block/EVENT/format)."""

    event_id: int
    dev: tuple[int, int]  # (offset, size)
    sector: tuple[int, int]
    sectors: tuple[int, int]
    rwbs: tuple[int, int]

    @property
    def size(self) -> int:
        return max(o + s for o, s in (self.dev, self.sector, self.sectors, self.rwbs))


def parse_format(text: str) -> EventLayout:
    """The layout of a block event's data from its format file; FormatError when its ID or one of
    dev, sector, nr_sector and rwbs is missing or of a size not read here."""
    m = re.search(r"^ID:\s*(\d+)", text, re.M)
    if m is None:
        raise FormatError("the event's format has no ID")
    fields: dict[str, tuple[int, int]] = {}
    for f in FIELD.finditer(text):
        name = re.sub(r"\[.*\]$", "", f["decl"].split()[-1])
        fields[name] = (int(f["offset"]), int(f["size"]))
    want = {"dev": (4,), "sector": (8,), "nr_sector": (4,), "rwbs": tuple(range(4, 33))}
    for name, sizes in want.items():
        if name not in fields or fields[name][1] not in sizes:
            raise FormatError(f"the event's format has no {name} field of a size read here")
    return EventLayout(int(m[1]), fields["dev"], fields["sector"], fields["nr_sector"], fields["rwbs"])


def check_page_header(text: str) -> int:
    """The page's data offset from events/header_page, checked against what this reader knows
    (a u64 timestamp at 0, the u64 commit at 8, the data from 16); the page size is returned."""
    fields = {
        f["decl"].split()[-1]: (int(f["offset"]), int(f["size"]))
        for f in FIELD.finditer(text.replace("field: ", "field:"))
    }
    if fields.get("timestamp") != (0, 8) or fields.get("commit") != (8, 8) or fields.get("data", (0, 0))[0] != 16:
        raise FormatError(f"the trace pages are laid out as this reader does not know: {fields}")
    return PAGE_HEADER + fields["data"][1]


def _parse(
    pages: npt.NDArray[np.uint8],
    page_size: int,
    event_id: int,
    offsets: npt.NDArray[np.int64],
    rwbs_size: int,
    ns: npt.NDArray[np.uint64],
    devs: npt.NDArray[np.uint32],
    sectors_at: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.uint32],
    kinds: npt.NDArray[np.uint8],
    counts: npt.NDArray[np.int64],
) -> int:  # pragma: no cover - compiled
    """The block events in ``pages`` (whole pages, one after another, each as read from one CPU's
    raw pipe) into the output columns (as long as RAW_EVENT's); returns how many. ``offsets``: dev, sector, nr_sector,
    rwbs. ``counts``: [0] pages that said events were lost before them, [1] events of other
    types, [2] damage (a page stops at it; a block event too short for its format is skipped)."""
    n = 0
    npages = pages.shape[0] // page_size
    for p in range(npages):
        base = p * page_size
        ts = np.uint64(0)
        for k in range(8):
            ts |= np.uint64(pages[base + k]) << np.uint64(8 * k)
        commit = np.uint64(0)
        for k in range(8):
            commit |= np.uint64(pages[base + 8 + k]) << np.uint64(8 * k)
        if commit & np.uint64(MISSED_EVENTS):
            counts[0] += 1
        size = int(commit & np.uint64(COMMIT_MASK))
        if size > page_size - PAGE_HEADER:
            counts[2] += 1
            continue
        pos = base + PAGE_HEADER
        end = pos + size
        while pos + 4 <= end:
            hdr = (
                np.uint32(pages[pos])
                | (np.uint32(pages[pos + 1]) << np.uint32(8))
                | (np.uint32(pages[pos + 2]) << np.uint32(16))
                | (np.uint32(pages[pos + 3]) << np.uint32(24))
            )
            type_len = int(hdr & np.uint32(31))
            delta = np.uint64(hdr >> np.uint32(5))
            word = np.uint64(0)
            if pos + 8 <= end:
                word = (
                    np.uint64(pages[pos + 4])
                    | (np.uint64(pages[pos + 5]) << np.uint64(8))
                    | (np.uint64(pages[pos + 6]) << np.uint64(16))
                    | (np.uint64(pages[pos + 7]) << np.uint64(24))
                )
            if type_len == 29:  # padding
                if delta == 0:
                    break  # the rest of the page is empty
                length = int(word)  # a discarded event: its delta only marks it (the kernel adds none)
                if length < 4 or pos + 4 + length > end:
                    counts[2] += 1
                    break
                pos += 4 + length
                continue
            if type_len == 30:  # time extend
                ts += (word << np.uint64(TS_SHIFT)) + delta
                pos += 8
                continue
            if type_len == 31:  # absolute time stamp: its lower 59 bits, the upper ones kept
                low = (word << np.uint64(TS_SHIFT)) | delta
                top = ts & np.uint64(0xF800000000000000)
                stamp = top | low
                if top != np.uint64(0) and stamp < ts:  # the lower bits wrapped (rb_fix_abs_ts)
                    stamp += np.uint64(1) << np.uint64(59)
                ts = stamp
                pos += 8
                continue
            if type_len == 0:
                length = int(word) - 4
                data = pos + 8
            else:
                length = type_len * 4
                data = pos + 4
            if length < 2 or data + length > end:  # no room for even the event's type
                counts[2] += 1
                break
            pos = data + ((length + 3) & ~3)
            ts += delta
            etype = int(pages[data]) | (int(pages[data + 1]) << 8)
            if etype != event_id:
                counts[1] += 1
                continue
            if length < offsets[4]:  # the block event, shorter than its own format says
                counts[2] += 1
                continue
            d = data + offsets[0]
            dev = np.uint32(0)
            for k in range(4):
                dev |= np.uint32(pages[d + k]) << np.uint32(8 * k)
            s = data + offsets[1]
            sector = np.uint64(0)
            for k in range(8):
                sector |= np.uint64(pages[s + k]) << np.uint64(8 * k)
            c = data + offsets[2]
            sectors = np.uint32(0)
            for k in range(4):
                sectors |= np.uint32(pages[c + k]) << np.uint32(8 * k)
            kind = 0
            r = data + offsets[3]
            for k in range(rwbs_size):
                ch = pages[r + k]
                if ch == 0:
                    break
                if ch == 87:  # "W"
                    kind = 2
                    break
                if ch == 82:  # "R"
                    kind = 1
                    break
            if n < ns.shape[0]:
                ns[n] = ts
                devs[n] = dev
                sectors_at[n] = sector
                lengths[n] = sectors
                kinds[n] = kind
                n += 1
    return n


@functools.cache
def _compiled() -> Any:
    def warm(f: Any) -> None:
        one = [np.zeros(1, t) for t in (np.uint64, np.uint32, np.uint64, np.uint32, np.uint8)]
        f(np.zeros(64, np.uint8), 64, 1, np.zeros(5, np.int64), 8, *one, np.zeros(3, np.int64))

    return compile_loop(
        _parse,
        "int64(uint8[:], int64, int64, int64[:], int64, uint64[:], uint32[:], uint64[:], uint32[:], "
        "uint8[:], int64[:])",
        warm,
    )


@dataclass
class PageCounts:
    missed: int = 0  # pages that said events were lost before them (the buffer was full)
    other: int = 0  # events of another type (none when only the block event is enabled)
    damaged: int = 0


def parse_pages(
    data: bytes | npt.NDArray[np.uint8], layout: EventLayout, page_size: int, compiled: bool | None = None
) -> tuple[npt.NDArray[Any], PageCounts]:
    """The block events in ``data`` (whole pages), in the order the pages hold them. A few pages
    (INTERPRETED_PAGES at most: a disk's tenth of a second; 27 us an event) are read by the parser as Python
    runs it, more by its compiled form: a capture of a disk never loads the compiler, whose start
    costs a second here and half a minute in an emulated guest; ``compiled`` forces either."""
    pages = np.frombuffer(data, np.uint8) if isinstance(data, bytes | bytearray | memoryview) else data
    pages = pages[: len(pages) - len(pages) % page_size]
    if not pages.flags.writeable:  # numba's signature takes writable arrays (bytes read from a pipe are not)
        pages = pages.copy()
    # at most one event in every 12 bytes (the smallest data event is a header and 8 bytes)
    room = max(1, len(pages) // 12)
    columns = [np.empty(room, RAW_EVENT[name]) for name in RAW_EVENT.names or ()]
    counts = np.zeros(3, np.int64)
    offsets = np.array([layout.dev[0], layout.sector[0], layout.sectors[0], layout.rwbs[0], layout.size], np.int64)
    use = compiled if compiled is not None else len(pages) > INTERPRETED_PAGES * page_size
    parse: Callable[..., int] = _compiled() if use else _parse
    n = parse(pages, page_size, layout.event_id, offsets, layout.rwbs[1], *columns, counts)
    out = np.empty(n, RAW_EVENT)
    for name, column in zip(RAW_EVENT.names or (), columns, strict=True):
        out[name] = column[:n]
    return out, PageCounts(int(counts[0]), int(counts[1]), int(counts[2]))
