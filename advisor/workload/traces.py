"""Block I/O traces: the compact on-disk format, and importers for other tools' traces.

A trace is a numpy array of requests (time in seconds, byte offset, length, write flag).
Importers read fio iologs (version 2 and 3), blkparse's default text output and CSV block
traces with configurable columns (the MSR Cambridge layout is a preset). Lines that are not
I/O (fio's add/open/close, blkparse's summaries) are skipped; malformed or truncated lines
are counted and a few quoted, never fatal. An unreadable file is a TraceError.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt

from advisor.errors import CachewiseError, codes, next_step
from advisor.inputs import BadJson, Unreadable, compressed, open_binary, parse_json
from advisor.workload import fastparse

REQUEST = np.dtype([("t", "<f8"), ("offset", "<u8"), ("length", "<u4"), ("write", "u1")])
MAGIC_PREFIX = b"CACHEWISE-TRACE "
MAGIC = MAGIC_PREFIX + b"1\n"
# What one request may be. Larger values are damage or typing, not I/O: a request is at most
# 64 MiB (the kernel splits far smaller ones; a cap also bounds the block expansion of a short
# file full of huge requests), offsets are below 2^60 bytes (1 EiB) and times finite, not negative.
MAX_LENGTH = 64 << 20
MAX_OFFSET = 1 << 60
Format = Literal["auto", "cachewise", "fio", "blkparse", "csv"]
CHUNK = 1 << 20

Requests = npt.NDArray[Any]


codes(
    {
        "trace-unreadable": "{why}; nothing was analysed",
        "unknown-format": "{why}; nothing was analysed",
        "too-many-accesses": "{why}; nothing was analysed",
        "footprint-too-large": "{why}; nothing was analysed",
        "bad-csv-columns": "the CSV column description {spec!r} is not time=N,op=N,offset=N,size=N (0-based column "
        "numbers); nothing was analysed",
    }
)


class TraceError(CachewiseError):
    """The trace cannot be read at all: why. The code "unknown-format" means its format could not
    be detected (the user may name it); "bad-csv-columns" that the CSV layout given is wrong."""

    def __init__(self, what: str = "", code: str = "trace-unreadable", **facts: Any) -> None:
        nxt = {
            "unknown-format": [next_step("trace-format")],
            "bad-csv-columns": [next_step("trace-columns")],
            "too-many-accesses": [next_step("larger-block-size")],
            "footprint-too-large": [next_step("sample-the-curve")],
        }
        super().__init__(code or "trace-unreadable", why=what, next=nxt.get(code, []), **facts)


@dataclass
class ImportStats:
    lines: int = 0
    requests: int = 0
    skipped: int = 0  # lines that are not I/O requests (headers, opens, summaries, flushes)
    bad: int = 0  # lines that should be requests but cannot be parsed
    examples: list[str] = field(default_factory=list)

    def bad_line(self, number: int, line: str) -> None:
        self.bad += 1
        if len(self.examples) < 5:
            self.examples.append(f"line {number}: {line.strip()[:120]}")


@dataclass
class Trace:
    requests: Requests
    source_format: str
    path: str
    stats: ImportStats
    meta: dict[str, Any] = field(default_factory=dict)


class _Builder:
    """Collects requests in fixed-size numpy chunks (memory grows with the trace, not 5x it)."""

    def __init__(self) -> None:
        self._chunks: list[Requests] = []
        self._buf = np.empty(CHUNK, REQUEST)
        self._n = 0

    def add(self, t: float, offset: int, length: int, write: bool) -> None:
        """Add one request; ValueError (the line is bad) when a field is out of range."""
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"time {t!r} is not a finite time")
        if not 0 <= offset < MAX_OFFSET:
            raise ValueError(f"offset {offset} is out of range")
        if not 0 < length <= MAX_LENGTH:
            raise ValueError(f"length {length} is not 1 byte to {MAX_LENGTH >> 20} MiB")
        self._buf[self._n] = (t, offset, length, write)
        self._n += 1
        if self._n == CHUNK:
            self._chunks.append(self._buf)
            self._buf = np.empty(CHUNK, REQUEST)
            self._n = 0

    def array(self) -> Requests:
        return np.concatenate([*self._chunks, self._buf[: self._n]])


def _open_text(path: Path) -> IO[str]:
    try:
        return path.open(encoding="utf-8", errors="replace", newline="")
    except OSError as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.strerror or exc}") from exc


def _head(path: Path) -> bytes:
    """The trace's first bytes: TraceError unless it is a regular file, and not compressed."""
    try:
        with open_binary(path) as fh:
            head = fh.read(4096)
    except Unreadable as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.why}") from None
    except OSError as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.strerror or exc}") from exc
    packed = compressed(head)
    if packed:
        raise TraceError(f"{path} is compressed with {packed}; decompress it first, then give the trace itself")
    return head


def detect_format(path: Path) -> Format:
    head = _head(path)
    if head.startswith(MAGIC_PREFIX):
        return "cachewise"
    text = head.decode("utf-8", "replace")
    if text.startswith("fio version 2 iolog") or text.startswith("fio version 3 iolog"):
        return "fio"
    if _BLKPARSE.match(text.splitlines()[0] if text else ""):
        return "blkparse"
    if "," in (text.splitlines()[0] if text else ""):
        return "csv"
    raise TraceError(
        f"{path} is not a trace cachewise knows (a cachewise trace, a fio iolog, blkparse output or CSV)",
        "unknown-format",
    )


def parse_fio_iolog(fh: IO[str], stats: ImportStats) -> Requests:
    """fio iolog version 2 (``file action offset length``) or 3 (a timestamp in microseconds first)."""
    builder = _Builder()
    header = fh.readline()
    stats.lines += 1
    if header.startswith("fio version 3 iolog"):
        timed = True
    elif header.startswith("fio version 2 iolog"):
        timed = False
    else:
        raise TraceError("not a fio iolog: the first line must be 'fio version 2 iolog' or 'fio version 3 iolog'")
    for number, line in enumerate(fh, start=2):
        stats.lines += 1
        parts = line.split()
        if timed and parts:
            t_us, parts = parts[0], parts[1:]
        else:
            t_us = "0"
        if len(parts) == 2 and parts[1] in ("add", "open", "close"):
            stats.skipped += 1
            continue
        if len(parts) == 4 and parts[1] in ("read", "write", "trim", "sync", "datasync"):
            if parts[1] not in ("read", "write"):
                stats.skipped += 1
                continue
            try:
                # fio writes v3 times in microseconds since the job started (utime_since_now)
                # and sleeps their differences as microseconds when it replays them.
                builder.add(int(t_us) / 1e6, int(parts[2]), int(parts[3]), parts[1] == "write")
            except ValueError:
                stats.bad_line(number, line)
                continue
            stats.requests += 1
            continue
        if line.strip():
            stats.bad_line(number, line)
    return builder.array()


# blkparse's default output: "%D %2c %8s %5T.%9t %5p %2a %3d " then, for block requests,
# "sector + nsectors [process]".
_BLKPARSE = re.compile(
    r"^\s*(?P<dev>\d+,\d+)\s+(?P<cpu>\d+)\s+(?P<seq>\d+)\s+(?P<time>\d+\.\d+)\s+(?P<pid>\d+)\s+"
    r"(?P<action>[A-Z]{1,2})\s+(?P<rwbs>[A-Z]+)\b(?P<rest>.*)$"
)
_SECTORS = re.compile(r"^\s*(?P<sector>\d+)\s+\+\s+(?P<count>\d+)\b")


def parse_blkparse(fh: IO[str], stats: ImportStats, action: str | None = None) -> Requests:
    """Requests from blkparse text: issued (D) events, or queued (Q) ones if none were issued."""
    by_action: dict[str, _Builder] = {"D": _Builder(), "Q": _Builder()}
    counts = {"D": 0, "Q": 0}
    for number, line in enumerate(fh, start=1):
        stats.lines += 1
        m = _BLKPARSE.match(line)
        if m is None:
            # The per-CPU and total summaries blkparse prints at the end, and blank lines.
            summary = line.startswith(("CPU", "Total", "Throughput", "Events", "Skips", "Input file")) or (
                line.startswith(" ") and not re.match(r"\s*\d+,\d+\s", line)
            )
            if line.strip() and not summary:
                stats.bad_line(number, line)
            else:
                stats.skipped += 1
            continue
        act = m["action"]
        rwbs = m["rwbs"]
        if act not in by_action or ("R" not in rwbs and "W" not in rwbs):
            stats.skipped += 1
            continue
        s = _SECTORS.match(m["rest"])
        if s is None:
            # A sector and no count, or no [process] after it: the line was cut off. (Requests
            # without sectors, such as SCSI commands, read "R 32 [systemd-udevd]".)
            if re.fullmatch(r"\s*\d+(\s*\+\s*\d*)?\s*", m["rest"]):
                stats.bad_line(number, line)
            else:
                stats.skipped += 1  # e.g. a flush with no sectors
            continue
        try:
            by_action[act].add(float(m["time"]), int(s["sector"]) * 512, int(s["count"]) * 512, "W" in rwbs)
        except ValueError:
            stats.bad_line(number, line)
            continue
        counts[act] += 1
    chosen = action or ("D" if counts["D"] else "Q")
    stats.requests = counts[chosen]
    stats.skipped += counts["D" if chosen == "Q" else "Q"]
    return by_action[chosen].array()


@dataclass(frozen=True)
class CsvLayout:
    """Which column holds what. Time units: s, ms, us, ns, or filetime (Windows 100 ns ticks)."""

    time: int
    op: int
    offset: int
    size: int
    time_unit: str = "s"
    header: bool = False

    @classmethod
    def parse(cls, spec: str, time_unit: str = "s", header: bool = False) -> CsvLayout:
        """'time=0,op=3,offset=4,size=5' -> CsvLayout."""
        try:
            cols = {k.strip(): int(v) for k, v in (item.split("=") for item in spec.split(","))}
            return cls(cols["time"], cols["op"], cols["offset"], cols["size"], time_unit, header)
        except (KeyError, ValueError) as exc:
            raise TraceError(code="bad-csv-columns", spec=spec) from exc


# MSR Cambridge traces: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime.
MSR = CsvLayout(time=0, op=3, offset=4, size=5, time_unit="filetime")
_TIME_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "filetime": 1e-7}


def parse_csv(fh: IO[str], stats: ImportStats, layout: CsvLayout = MSR) -> Requests:
    builder = _Builder()
    scale = _TIME_SCALE.get(layout.time_unit)
    if scale is None:
        raise TraceError(f"unknown CSV time unit {layout.time_unit!r}: use s, ms, us, ns or filetime")
    width = max(layout.time, layout.op, layout.offset, layout.size)
    for number, row in enumerate(_csv_rows(fh, stats), start=1):
        stats.lines += 1
        if number == 1 and layout.header:
            stats.skipped += 1
            continue
        if not row:
            stats.skipped += 1
            continue
        try:
            if len(row) <= width:
                raise ValueError("too few columns")
            op = row[layout.op].strip().lower()
            if op not in ("read", "write", "r", "w", "rs", "ws"):
                raise ValueError(f"operation {op!r}")
            builder.add(
                float(row[layout.time]) * scale, int(row[layout.offset]), int(row[layout.size]), op.startswith("w")
            )
        except ValueError:
            stats.bad_line(number, ",".join(row))
            continue
        stats.requests += 1
    return builder.array()


def _csv_rows(fh: IO[str], stats: ImportStats) -> Iterator[list[str]]:
    """The CSV's rows; a row the csv module cannot read (a NUL byte, an endless field) counts as
    a bad line and the reading goes on."""
    reader = csv.reader(fh)
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            stats.lines += 1
            stats.bad_line(reader.line_num, f"({exc})")


def file_sha256(path: Path) -> str:
    """The trace's checksum, recorded with its analysis as provenance."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_beside(path: Path) -> Callable[[], str]:
    """file_sha256 of ``path`` made by a thread started now, beside what the caller does next
    (hashlib and the reads let go of the GIL: 0.25 s for 400 MB, mostly on the other core while
    an analysis loads its compiled loops). The function returned waits for it, and raises the
    OSError it met; a thread still hashing when the program ends is not waited for."""
    done = threading.Event()
    result: list[str] = []
    failed: list[OSError] = []

    def run() -> None:
        try:
            result.append(file_sha256(path))
        except OSError as exc:
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="cachewise-sha256", daemon=True).start()

    def wait() -> str:
        done.wait()
        if failed:
            raise failed[0]
        return result[0]

    return wait


def write_trace(path: Path, requests: Requests, meta: dict[str, Any]) -> None:
    with path.open("wb") as fh:
        write_header(fh, meta)
        requests.astype(REQUEST, copy=False).tofile(fh)


def write_header(fh: IO[bytes], meta: dict[str, Any]) -> None:
    fh.write(MAGIC)
    fh.write(json.dumps(meta, sort_keys=True).encode() + b"\n")


def _cachewise_header(path: Path) -> tuple[dict[str, Any], int, int]:
    """(metadata, offset of the first record, whole records) of a cachewise trace."""
    with path.open("rb") as fh:
        first = fh.readline(64)
        if first != MAGIC:
            if first.startswith(MAGIC_PREFIX):
                version = first[len(MAGIC_PREFIX) :].strip().decode("ascii", "replace")
                raise TraceError(
                    f"{path} is a cachewise trace of format version {version!r}; this cachewise reads "
                    "version 1 (upgrade it)"
                )
            raise TraceError(f"{path} is not a cachewise trace (bad header)")
        try:
            meta = parse_json(fh.readline(1 << 20).decode("utf-8"))
        except (BadJson, UnicodeDecodeError):
            meta = None
        if not isinstance(meta, dict):
            raise TraceError(f"{path} has a corrupt header")
        start = fh.tell()
    return meta, start, (os.path.getsize(path) - start) // REQUEST.itemsize


def read_cachewise_meta(path: Path) -> dict[str, Any]:
    return _cachewise_header(path)[0]


def cachewise_records(path: Path) -> int:
    """How many requests a cachewise trace holds, from its size (without reading it)."""
    return _cachewise_header(path)[2]


def read_cachewise(path: Path, stats: ImportStats) -> tuple[Requests, dict[str, Any]]:
    meta, start, whole = _cachewise_header(path)
    _count_truncated(path, start, stats)
    requests = _valid_records(np.fromfile(path, dtype=REQUEST, count=whole, offset=start), stats)
    stats.lines = int(whole)
    stats.requests = len(requests)
    return requests, meta


def _valid_records(records: Requests, stats: ImportStats) -> Requests:
    """The records whose fields are in range (a damaged file's others are counted as bad)."""
    ok = (
        np.isfinite(records["t"])
        & (records["t"] >= 0)
        & (records["offset"] < MAX_OFFSET)
        & (records["length"] > 0)
        & (records["length"] <= MAX_LENGTH)
        & (records["write"] <= 1)
    )
    bad = int((~ok).sum())
    if bad:
        stats.bad += bad
        first = int(np.argmin(ok))
        stats.examples.append(f"record {first + 1}: {records[first]!r} has a field out of range")
        kept: Requests = records[ok]
        return kept
    return records


def _count_truncated(path: Path, start: int, stats: ImportStats) -> None:
    partial = (os.path.getsize(path) - start) % REQUEST.itemsize
    if partial:
        stats.bad += 1
        stats.examples.append(f"the last {partial} bytes are a truncated record (the capture was cut short)")


def iter_cachewise(
    path: Path, chunk: int = 4 * CHUNK, records: int | None = None, stats: ImportStats | None = None
) -> Iterator[Requests]:
    """A cachewise trace in chunks of ``chunk`` requests (a truncated last record is dropped);
    its first ``records`` alone when given (a trace still being written, read again).
    ``stats`` (when given) counts the records left out as bad, as read_cachewise does."""
    _, start, total = _cachewise_header(path)
    if stats is not None and (records is None or records >= total):
        _count_truncated(path, start, stats)
    if records is not None:
        total = min(total, records)
    for first in range(0, total, chunk):
        read = np.fromfile(
            path, dtype=REQUEST, count=min(chunk, total - first), offset=start + first * REQUEST.itemsize
        )
        yield _valid_records(read, ImportStats() if stats is None else stats)


# fio iologs from this size on are read by the compiled reader (advisor.workload.fastparse):
# below it, numba's compile (about 2 s, once per machine where it can cache) costs more than the
# Python reader's 2 microseconds a line.
COMPILED_FROM = 8 << 20


def _read_fio_compiled(path: Path, stats: ImportStats, on_requests: Callable[[Requests], None] | None) -> Requests:
    try:
        with path.open("rb") as fh:
            header = fh.readline()
    except OSError as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.strerror or exc}") from exc
    stats.lines += 1
    if header.startswith(b"fio version 3 iolog"):
        timed = True
    elif header.startswith(b"fio version 2 iolog"):
        timed = False
    else:
        raise TraceError("not a fio iolog: the first line must be 'fio version 2 iolog' or 'fio version 3 iolog'")
    try:
        return fastparse.read_fio_iolog(path, timed, len(header), REQUEST, stats, on_requests)
    except OSError as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.strerror or exc}") from exc


def load_trace(
    path: str | os.PathLike[str],
    fmt: Format = "auto",
    csv_layout: CsvLayout | None = None,
    on_requests: Callable[[Requests], None] | None = None,
) -> Trace:
    """The trace at ``path``; ``on_requests``, when given, may be handed the requests read so
    far as the reading goes on (the compiled fio reader does, after each block)."""
    p = Path(path)
    if not p.is_file():
        raise TraceError(f"{p} is not a readable file")
    chosen = detect_format(p) if fmt == "auto" else fmt
    if fmt != "auto":
        _head(p)  # a regular file, not compressed, whatever format is named
    stats = ImportStats()
    meta: dict[str, Any] = {}
    if chosen == "cachewise":
        requests, meta = read_cachewise(p, stats)
    elif chosen == "fio" and p.stat().st_size >= COMPILED_FROM:
        requests = _read_fio_compiled(p, stats, on_requests)
    else:
        with _open_text(p) as fh:
            if chosen == "fio":
                requests = parse_fio_iolog(fh, stats)
            elif chosen == "blkparse":
                requests = parse_blkparse(fh, stats)
            else:
                requests = parse_csv(fh, stats, csv_layout or MSR)
    if len(requests) == 0:
        raise TraceError(
            f"{p} holds no read or write requests ({stats.lines} lines, {stats.bad} malformed)"
            + (f"; the first problem: {stats.examples[0]}" if stats.examples else "")
        )
    return Trace(requests, chosen, str(p), stats, meta)
