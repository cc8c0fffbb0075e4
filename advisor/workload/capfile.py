"""The capture service's files: block I/O recorded for days, spatially sampled, in frames that
a power cut cannot corrupt.

A capture is a folder of files, one per hour (``capture-YYYYmmddTHHMMSSZ.cwcap``), written only
by appending; the folder holds one device's capture, named by its stable identity (its kernel
name may differ after a reboot). Each file is a header (a magic line and a JSON line: the device, the sampling
unit, the format version) and then frames. A frame is a fixed head (tag, kind, the kind again
three times, payload length, CRC-32 of the payload) and its payload. The CRC does not cover the
head: the kind's three copies do (a kind damaged into another, or into one this version does
not know, would otherwise be read as the other or skipped as a later version's, unseen); files
written before 2026-12-07 have zeros there, and are read as before.

- ``R`` records: the time base (seconds since the epoch), the sampling threshold in force,
  and zlib-compressed packed records of 16 bytes (microseconds after the base, the sector,
  the sector count with the write flag in its top bit). One frame is written and flushed
  to disk at least every minute, so a power cut loses at most that minute.
- ``S`` a summary of one hour (JSON), counted from every request, sampled or not: requests,
  reads and writes with their bytes, the sequential share, the new footprint (sampled units
  seen for the first time, scaled by the sampling rate), events the kernel lost.
- ``E`` the end of a run, and why (JSON): duration reached, stopped, the budget or the file
  system nearly full.

A reader takes every frame that reads whole. Past one that is short or fails its CRC (a torn
tail after a power cut, or damage) it looks for the next frame tag whose frame passes its CRC
and goes on from there, so damage in the middle of an hour costs that frame alone; it says how
many bytes it skipped and why. Nothing in a frame is trusted: lengths are bounded before
anything is allocated, and the search past damage checks a bounded number of bytes.

Sampling (SHARDS, Waldspurger et al., FAST '15): a request is kept when the hash of the
64 KiB unit it starts in falls under a threshold, so every block of a sampled unit is kept
whole (the 4 KiB curve and dm-cache's 64 KiB chunk curve both stay valid) and the sample's
stack distances scale by 1/rate. The threshold only ever goes down (when the budget says the
files would grow too large): a reader keeps only the records under the lowest threshold of
the capture, which is exactly the sample a capture at that rate from the start would hold.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.errors import shown
from advisor.inputs import BadJson, Unreadable, parse_json, read_bytes
from advisor.workload.mrc import HASH_MULTIPLIER, HASH_RANGE, HASH_SHIFT
from advisor.workload.streams import SEQUENTIAL_CUTOFF, StreamDetector

MAGIC = b"CACHEWISE-CAPTURE 1\n"
MAGIC_PREFIX = b"CACHEWISE-CAPTURE "
SUFFIX = ".cwcap"
CUTOFF = SEQUENTIAL_CUTOFF  # streams are classed at capture time at bcache's default cutoff
UNIT = 64 << 10  # the sampling unit: dm-cache's default chunk; a request goes with its first byte's unit
SALT = 0x9E3779B97F4A7C15  # the capture's own hash salt, apart from the analysis's samples
FRAME = struct.Struct("<4sB3sII")  # tag, kind, the kind thrice (zeros before 2026-12-07), length, CRC-32 of the payload
UNGUARDED = bytes(3)
FRAME_TAG = b"CWFR"
RECORDS = struct.Struct("<dQI")  # time base (epoch s), threshold, records in the frame
PACKED = np.dtype([("us", "<u4"), ("sector", "<u8"), ("sectors", "<u4")])
WRITE_BIT = np.uint32(1 << 31)
STREAM_SHIFT = 29  # bits 29-30: the request's class in the full stream (streams.StreamDetector)
SECTORS_MASK = np.uint32((1 << STREAM_SHIFT) - 1)
MAX_PAYLOAD = 64 << 20  # a frame larger than this is damage, never a frame cachewise wrote
MAX_FRAME_RECORDS = 1 << 21
MAX_HEADER = 1 << 16
MAX_FILE = 1 << 30  # one hour's file; cachewise writes a few MB at most
RESYNC_BYTES = 64 << 20  # beyond the file's own size, what the search past damage may check
MAX_JSON = 1 << 16  # an hour's counts or a run's end
MAX_TOTAL_RECORDS = 64_000_000  # kept requests in a whole capture (8 million is what a run aims at)
# Plausible times: 2001 to 2128, as epoch seconds (a frame's base and an hour's times)
EARLIEST, LATEST = 1e9, 5e9
COUNTS = (
    "requests",
    "reads",
    "writes",
    "read_bytes",
    "write_bytes",
    "sequential",
    "bypassed",
    "bypassed_bytes",
    "bypassed_reads",
    "new_footprint_bytes",
    "lost",
)
PREFIX = "capture"
NAME = re.compile(r"^capture-(?P<stamp>\d{8}T\d{6}Z)(?:-(?P<n>\d+))?\.cwcap$")

REQUEST = np.dtype([("t", "<f8"), ("offset", "<u8"), ("length", "<u4"), ("write", "u1")])
# A captured request: with its class in the whole stream, found at capture time from every
# request (sampling breaks streams apart): 0 random or a stream's start, 1 continues a
# stream, 2 continues one past the sequential cutoff (bcache bypasses it).
CAPTURED = np.dtype([("t", "<f8"), ("offset", "<u8"), ("length", "<u4"), ("write", "u1"), ("stream", "u1")])


class CaptureFileError(ValueError):
    """A capture file or folder that cannot be read: ``why``."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def unit_hash(offsets: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The sampling hash (0 to HASH_RANGE - 1) of the 64 KiB units these byte offsets are in."""
    units = offsets // np.uint64(UNIT)
    with np.errstate(over="ignore"):
        hashed: npt.NDArray[np.uint64] = ((units ^ np.uint64(SALT)) * HASH_MULTIPLIER) >> HASH_SHIFT
    return hashed


def threshold_for(rate: float) -> int:
    return max(1, min(HASH_RANGE, round(rate * HASH_RANGE)))


def rate_of(threshold: int) -> float:
    return threshold / HASH_RANGE


def initial_rate(device_bytes: int, sampled_bytes: int = 16 << 30) -> float:
    """The starting rate: all of a device up to ``sampled_bytes`` (16 GiB: the analysis holds its
    blocks in memory), that much of a larger one (a 4 TB disk: 0.4%). A power of two, so each
    cut by the budget halves it exactly."""
    if device_bytes <= sampled_bytes:
        return 1.0
    rate = 1.0
    while device_bytes * rate > sampled_bytes:
        rate /= 2
    return rate


def pack(requests: npt.NDArray[Any], base: float) -> bytes:
    """Requests (CAPTURED, or REQUEST as class 0; times in epoch seconds at or after ``base``)
    as a compressed payload."""
    out = np.empty(len(requests), PACKED)
    out["us"] = np.clip(np.round((requests["t"] - base) * 1e6), 0, 0xFFFFFFFF).astype(np.uint32)
    out["sector"] = requests["offset"] // np.uint64(512)
    sectors = np.minimum((requests["length"].astype(np.uint64) + 511) // 512, np.uint64(SECTORS_MASK))
    classes = requests["stream"] if "stream" in (requests.dtype.names or ()) else np.zeros(len(requests), np.uint8)
    stream = np.minimum(classes, 3).astype(np.uint32) << np.uint32(STREAM_SHIFT)
    out["sectors"] = sectors.astype(np.uint32) | stream | np.where(requests["write"] != 0, WRITE_BIT, np.uint32(0))
    # level 1: 7% larger than level 6 on Zipf-like records, at 154 ns a record against 367 (the
    # capture's own CPU at a fast device's rate)
    return zlib.compress(out.tobytes(), 1)


def unpack(payload: bytes, base: float, count: int) -> npt.NDArray[Any]:
    raw = zlib.decompressobj()
    data = raw.decompress(payload, count * PACKED.itemsize + 1)
    if len(data) != count * PACKED.itemsize or raw.unconsumed_tail:
        raise CaptureFileError(f"a records frame holds {len(data)} bytes, not the {count} records it says")
    packed = np.frombuffer(data, PACKED)
    out = np.empty(count, CAPTURED)
    out["t"] = base + packed["us"] / 1e6
    out["offset"] = packed["sector"].astype(np.uint64) * np.uint64(512)
    out["length"] = (packed["sectors"] & SECTORS_MASK) * np.uint32(512)
    out["write"] = (packed["sectors"] & WRITE_BIT) != 0
    out["stream"] = (packed["sectors"] >> np.uint32(STREAM_SHIFT)) & np.uint32(3)
    return out


def frame(kind: bytes, payload: bytes) -> bytes:
    return FRAME.pack(FRAME_TAG, kind[0], kind[:1] * 3, len(payload), zlib.crc32(payload)) + payload


def records_frame(requests: npt.NDArray[Any], base: float, threshold: int) -> bytes:
    return frame(b"R", RECORDS.pack(base, threshold, len(requests)) + pack(requests, base))


def json_frame(kind: bytes, value: dict[str, Any]) -> bytes:
    return frame(kind, json.dumps(value, sort_keys=True).encode())


def header(meta: dict[str, Any]) -> bytes:
    return MAGIC + json.dumps(meta, sort_keys=True).encode() + b"\n"


@dataclass
class FileContents:
    """What one capture file held: every frame that reads whole."""

    path: Path
    meta: dict[str, Any]
    chunks: list[tuple[int, npt.NDArray[Any]]] = field(default_factory=list)  # (threshold, records)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    torn_bytes: int = 0  # bytes skipped: a power cut's torn tail, or damaged frames
    torn_why: str = ""  # why the first of them could not be read

    def number(self, key: str, default: float) -> float:
        """A number from the header, or ``default`` when it is missing or not a finite number."""
        value = self.meta.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return default
        return float(value)


def read_file(path: Path) -> FileContents:
    """One capture file: CaptureFileError when it is not one at all; a damaged tail is counted."""
    try:
        data = read_bytes(path, MAX_FILE, follow=False)
    except Unreadable as exc:
        raise CaptureFileError(f"cannot read {path}: {exc.why}") from None
    if not data.startswith(MAGIC):
        if data.startswith(MAGIC_PREFIX):
            version = data[len(MAGIC_PREFIX) : data.find(b"\n", 0, 64)].decode("ascii", "replace")
            raise CaptureFileError(f"{path} is a capture of format version {version!r}; this cachewise reads version 1")
        raise CaptureFileError(f"{path} is not a cachewise capture file (bad header)")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER)
    try:
        meta = parse_json(data[len(MAGIC) : end].decode("utf-8")) if end > 0 else None
    except (BadJson, UnicodeDecodeError):
        meta = None
    if not isinstance(meta, dict):
        raise CaptureFileError(f"{path} has a corrupt header")
    contents = FileContents(path, meta)
    at = end + 1
    budget = [len(data) + RESYNC_BYTES]  # payload bytes the search for a good frame may check
    while at < len(data):
        why = _frame_at(data, at, contents)
        if not why:
            at += FRAME.size + FRAME.unpack_from(data, at)[3]
            continue
        good = _next_frame(data, at + 1, contents, budget)
        contents.torn_bytes += (good if good >= 0 else len(data)) - at
        contents.torn_why = contents.torn_why or why
        if good < 0:
            break
        at = good + FRAME.size + FRAME.unpack_from(data, good)[3]
    return contents


def _next_frame(data: bytes, at: int, contents: FileContents, budget: list[int]) -> int:
    """After a damaged frame: where the next frame that reads whole starts (it is read into
    ``contents`` already, so the caller steps past it), or -1. Each candidate is a frame tag;
    the CRC of its payload makes a false one as unlikely as damage passing the check. A file of
    tags that each claim a long payload could make the search quadratic: ``budget`` bounds
    the payload bytes it checks, and when spent the rest of the file is left unread."""
    while True:
        at = data.find(FRAME_TAG, at)
        if at < 0 or len(data) - at < FRAME.size:
            return -1
        length = FRAME.unpack_from(data, at)[3]
        if length <= MAX_PAYLOAD and at + FRAME.size + length <= len(data):
            budget[0] -= length
            if budget[0] < 0:
                return -1
            if not _frame_at(data, at, contents):
                return at
        at += 1


def _frame_at(data: bytes, at: int, contents: FileContents) -> str:
    """Read the frame at ``at`` into ``contents``; why it cannot be read ("" when it was)."""
    if len(data) - at < FRAME.size:
        return "a frame's head is cut short"
    tag, kind, guard, length, crc = FRAME.unpack_from(data, at)
    if tag != FRAME_TAG or length > MAX_PAYLOAD or guard not in (UNGUARDED, bytes([kind]) * 3):
        return "a frame's head is damaged"
    payload = data[at + FRAME.size : at + FRAME.size + length]
    if len(payload) != length:
        return "the last frame is cut short"
    if zlib.crc32(payload) != crc:
        return "a frame fails its checksum"
    try:
        if kind == ord("R"):
            if length < RECORDS.size:
                return "a records frame is too short"
            base, threshold, count = RECORDS.unpack_from(payload)
            if count > MAX_FRAME_RECORDS or not 1 <= threshold <= HASH_RANGE or not np.isfinite(base):
                return "a records frame's head is out of range"
            if not EARLIEST <= base <= LATEST:
                return "a records frame's time is out of range"
            records = unpack(payload[RECORDS.size :], base, count)
            if count and not ((records["length"] > 0).all() and (records["offset"] < np.uint64(1 << 60)).all()):
                return "a records frame holds a request out of range"
            contents.chunks.append((threshold, records))
        elif kind in (ord("S"), ord("E")):
            if length > MAX_JSON:
                return "a summary frame is too long"
            value = parse_json(payload.decode("utf-8"))
            if not isinstance(value, dict):
                return "a summary frame is not a JSON object"
            if kind == ord("S") and not _sound_hour(value):
                return "an hour's counts are out of range"
            (contents.summaries if kind == ord("S") else contents.ends).append(value)
        # other kinds: a later version's, skipped whole (the CRC held)
    except (CaptureFileError, zlib.error, BadJson, UnicodeDecodeError) as exc:
        return f"a frame cannot be decoded ({exc})"
    return ""


def capture_files(folder: Path) -> list[Path]:
    """The capture files in ``folder``, oldest first (links and other names are not)."""
    found = []
    for entry in folder.iterdir():
        m = NAME.match(entry.name)
        if m and entry.is_file() and not entry.is_symlink():
            found.append((m["stamp"], int(m["n"] or 0), entry))
    return [p for _, _, p in sorted(found)]


@dataclass
class Capture:
    """A whole capture, read from its files: the sampled requests at the lowest threshold, in
    time order, the hours' summaries, and what was damaged."""

    files: list[Path]
    meta: dict[str, Any]
    requests: npt.NDArray[Any]
    threshold: int
    summaries: list[dict[str, Any]]
    ends: list[dict[str, Any]]
    damaged: list[str]

    @property
    def rate(self) -> float:
        return rate_of(self.threshold)


def read_capture(paths: list[Path]) -> Capture:
    """The capture in these files (a folder's, from capture_files, or a single file)."""
    if not paths:
        raise CaptureFileError("there are no capture files")
    contents, unreadable = [], []
    for p in paths:
        try:
            contents.append(read_file(p))
        except CaptureFileError as exc:
            if len(paths) == 1:
                raise
            unreadable.append(f"{p.name}: {exc.why}")
    if not contents:
        raise CaptureFileError(f"none of the {len(paths)} capture files can be read ({unreadable[0]})")
    total = sum(len(r) for c in contents for _, r in c.chunks)
    if total > MAX_TOTAL_RECORDS:
        raise CaptureFileError(
            f"the capture holds {total:,} kept requests, more than the {MAX_TOTAL_RECORDS:,} cachewise analyses"
        )
    devices = {str(c.meta.get("device")) for c in contents}
    if len(devices) > 1:
        named = ", ".join(shown(d) for d in sorted(devices))
        raise CaptureFileError(f"these capture files are of {len(devices)} devices ({named})")
    thresholds = [t for c in contents for t, _ in c.chunks]
    lowest = min(thresholds, default=HASH_RANGE)
    kept = []
    for c in contents:
        for threshold, records in c.chunks:
            if threshold > lowest and len(records):
                records = records[unit_hash(records["offset"]) < np.uint64(lowest)]
            kept.append(records)
    requests = np.concatenate(kept) if kept else np.empty(0, CAPTURED)
    requests = requests[np.argsort(requests["t"], kind="stable")]
    damaged = unreadable + [
        f"{c.path.name}: {c.torn_why}, {c.torn_bytes} bytes left unread" for c in contents if c.torn_bytes
    ]
    return Capture(
        [c.path for c in contents],
        contents[0].meta,
        requests,
        lowest,
        _latest([s for c in contents for s in c.summaries]),
        [e for c in contents for e in c.ends],
        damaged,
    )


def _sound_hour(value: dict[str, Any]) -> bool:
    """Whether an hour's counts are what cachewise writes: whole non-negative counts, times in range."""
    for key in COUNTS:
        v = value.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << 62:
            return False
    for key in ("start", "first", "last", "run"):
        v = value.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not EARLIEST <= v <= LATEST):
            return False
    return True


def _latest(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run's last word on each hour (an hour is summarised so far at every flush, and again
    when it ends), in order; two runs in one hour (a reboot) stay apart, to be added up."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for s in summaries:
        last[(str(s.get("run")), str(s.get("start")))] = s
    return list(last.values())


ORACLE_GENERAL = np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])


def export_oracle_general(capture: Capture, out: Any, block_size: int = 4096, chunk: int = 1 << 22) -> int:
    """Write the capture as libCacheSim's oracleGeneral binary trace (24-byte records: clock
    time in seconds from the capture's start, object id = block number, object size, the
    index of the object's next request or -1) to the seekable binary file ``out``: one request
    per block touched. Returns the number of records.

    Written as it is made, in pieces of about ``chunk`` records from the last to the first (a
    block's next request is known once the requests after it are), each at its place in the
    file: memory is bounded by the piece and by the blocks seen (a sorted map of each block to
    its next request), not by the export, which a capture of large requests makes many times
    the size of the capture."""
    reqs = capture.requests
    if not len(reqs):
        return 0
    size = np.uint64(block_size)
    first = (reqs["offset"] // size).astype(np.int64)
    per = ((reqs["offset"] + reqs["length"].astype(np.uint64) - np.uint64(1)) // size).astype(np.int64) - first + 1
    ends = np.cumsum(per)
    total = int(ends[-1])
    t0 = reqs["t"][0]
    keys = np.empty(0, np.int64)  # blocks seen in the later pieces, sorted
    vals = np.empty(0, np.int64)  # each one's first request among them
    hi = len(reqs)
    while hi > 0:
        lo = max(0, min(hi - 1, int(np.searchsorted(ends, ends[hi - 1] - chunk, side="right"))))
        base = int(ends[lo] - per[lo])
        n = int(ends[hi - 1]) - base
        counts = per[lo:hi]
        blocks = np.repeat(first[lo:hi], counts) + (
            np.arange(n, dtype=np.int64) - np.repeat(ends[lo:hi] - counts - base, counts)
        )
        order = np.lexsort((np.arange(n), blocks))
        nxt = np.full(n, -1, np.int64)
        same = blocks[order[1:]] == blocks[order[:-1]]
        nxt[order[:-1][same]] = base + order[1:][same]
        last = order[np.append(~same, True)]  # each block's last request in the piece, by block
        firsts = order[np.insert(~same, 0, True)]  # and its first
        distinct = blocks[last]
        at = np.searchsorted(keys, distinct)
        found = at < len(keys)
        found[found] = keys[at[found]] == distinct[found]
        nxt[last[found]] = vals[at[found]]
        keep = np.ones(len(keys), bool)
        keep[at[found]] = False
        keys, vals = keys[keep], vals[keep]
        where = np.searchsorted(keys, distinct)
        keys = np.insert(keys, where, distinct)
        vals = np.insert(vals, where, base + firsts)
        rec = np.empty(n, ORACLE_GENERAL)
        rec["t"] = np.clip(np.repeat(reqs["t"][lo:hi] - t0, counts), 0, 0xFFFFFFFF).astype(np.uint32)
        rec["id"] = blocks.astype(np.uint64)
        rec["size"] = block_size
        rec["next"] = nxt
        out.seek(base * ORACLE_GENERAL.itemsize)
        out.write(rec.tobytes())
        hi = lo
    out.seek(total * ORACLE_GENERAL.itemsize)
    return total


def units_seen(paths: list[Path], threshold: int) -> set[int]:
    """The sampled 64 KiB units that the records in ``paths`` touch under ``threshold``: what a
    capture resumed in their folder (after a reboot, a restarted service) has seen already, so
    that its hours count as new footprint only the units that are new to the whole capture, as
    one unbroken run would. A file that cannot be read is passed over, as the reader does."""
    seen: set[int] = set()
    for path in paths:
        try:
            contents = read_file(path)
        except CaptureFileError:
            continue
        for _, records in contents.chunks:
            offsets = records["offset"]
            kept = offsets[unit_hash(offsets) < np.uint64(threshold)]
            seen.update(np.unique(kept // np.uint64(UNIT)).tolist())
    return seen


def file_name(when: float, n: int = 0) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))
    return f"{PREFIX}-{stamp}{f'-{n}' if n else ''}{SUFFIX}"


def safe_name(device_name: str) -> str:
    """A capture's name from a device's kernel name (dm-3, sdb1, nvme0n1p2): file-name safe."""
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", device_name) or "device"


def folder_bytes(folder: Path) -> int:
    total = 0
    for p in capture_files(folder):
        try:
            total += p.stat().st_size
        except OSError:
            continue
    return total


@dataclass
class Hour:
    """One clock hour's counts, from every request the capture saw (sampled or not)."""

    start: float
    requests: int = 0
    reads: int = 0
    writes: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    sequential: int = 0  # requests that continue one of the recent streams (as bcache tells them)
    bypassed: int = 0  # of those, the ones past the sequential cutoff, which bcache bypasses
    bypassed_bytes: int = 0
    bypassed_reads: int = 0
    first: float = math.inf  # the hour's first and last request
    last: float = -math.inf
    new_units: int = 0  # sampled 64 KiB units first seen this hour
    lost: int = 0

    def to_json(self, rate: float, run: float) -> dict[str, Any]:
        return {
            "run": run,
            "hour": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(self.start)),
            "start": self.start,
            "requests": self.requests,
            "reads": self.reads,
            "writes": self.writes,
            "read_bytes": self.read_bytes,
            "write_bytes": self.write_bytes,
            "sequential": self.sequential,
            "bypassed": self.bypassed,
            "bypassed_bytes": self.bypassed_bytes,
            "bypassed_reads": self.bypassed_reads,
            "first": self.first if self.requests else None,
            "last": self.last if self.requests else None,
            "new_footprint_bytes": round(self.new_units * UNIT / rate),
            "sample_rate": rate,
            "lost": self.lost,
        }


@dataclass(frozen=True)
class Limits:
    """How long a capture runs and how much it may hold."""

    until: float  # epoch seconds
    budget: int  # bytes for all of this capture's files
    flush_seconds: float = 60.0  # a power cut loses at most this much
    # Stop when the file system has less left (to users: root's reserve is not counted) than
    # the smaller of these: 256 MiB, or 5% of a small one.
    min_free: int = 256 << 20
    min_free_share: float = 0.05
    # Kept requests a run may project to its end: what the analysis reads in a few seconds (8
    # million: about 4 s here); past it the rate is halved, as for the budget.
    max_records: int = 8_000_000


class Recorder:
    """Writes one capture's files as requests come (the capture service's sink): samples them,
    counts the hours, writes a frame at least every ``flush_seconds`` (fsync'd), a new file
    every clock hour, lowers the sampling rate when the budget would be overrun by ``until``,
    and stops (with an ``E`` frame saying why) at the budget or a nearly full file system.
    ``folder`` must be trusted already (the caller opened it safely: ``dfd``)."""

    def __init__(
        self,
        folder: Path,
        dfd: int,
        meta: dict[str, Any],
        rate: float,
        limits: Limits,
        clock: Callable[[], float] = time.time,
        statvfs: Callable[[int], os.statvfs_result] = os.fstatvfs,
        seen: set[int] | None = None,
    ) -> None:
        self.folder, self.dfd, self.meta, self.limits = folder, dfd, meta, limits
        self.clock, self.statvfs = clock, statvfs
        self.threshold = threshold_for(rate)
        self.started = clock()
        self.used_before = folder_bytes(folder)
        self.written = 0
        self.fd = -1
        self.file_hour = -1.0
        self.pending: list[npt.NDArray[Any]] = []
        self.last_flush = self.started
        self.torn = False  # the open file ends in a frame cut short
        self.hours: dict[float, Hour] = {}  # this run's hours by their start
        self.dirty: set[float] = set()  # hours counted since the last flush
        self.seen: set[int] = set(seen or ())  # units_seen() when resumed
        self.streams = StreamDetector(SEQUENTIAL_CUTOFF)
        self.lost_total = 0
        self.sampled = 0
        self.files: list[str] = []
        self.stopped = ""
        self.at_rate = (0, 0, self.started)  # bytes written and records kept when the rate was set, and when

    @property
    def rate(self) -> float:
        return rate_of(self.threshold)

    def _open(self, now: float) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)
            os.close(self.fd)
        for n in range(100):
            name = file_name(now, n)
            try:
                self.fd = os.open(
                    name,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_APPEND,
                    0o600,
                    dir_fd=self.dfd,
                )
                break
            except FileExistsError:
                continue
        else:
            raise CaptureFileError(f"cannot find a free file name in {self.folder}")
        self.files.append(name)
        self.torn = False
        self.file_hour = now // 3600
        self._write(header({**self.meta, "format": 1, "unit": UNIT, "threshold": self.threshold, "opened": now}))
        os.fsync(self.dfd)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except BaseException:
            # a frame perhaps cut short (a signal, a full disk) ends what a reader takes of this
            # file: what follows goes to a new one
            self.torn = True
            raise
        self.written += len(data)

    def add(self, requests: npt.NDArray[Any], lost: int = 0) -> None:
        """Requests (REQUEST dtype, times in epoch seconds, in time order) as they came: every
        one is classed in the whole stream and counted in its hour; the sampled ones are kept."""
        if self.stopped or not len(requests):
            self._count_lost(lost)
            return
        captured = np.empty(len(requests), CAPTURED)
        for name in REQUEST.names or ():
            captured[name] = requests[name]
        captured["stream"] = self.streams.classify(requests)
        hours = captured["t"] // 3600
        for h in np.unique(hours):
            self._count(captured[hours == h], float(h) * 3600)
        self._count_lost(lost)
        keep = unit_hash(captured["offset"]) < np.uint64(self.threshold)
        if keep.any():
            self.pending.append(captured[keep])

    def add_counted(self, sampled: npt.NDArray[Any], counts: dict[str, int], now: float) -> None:
        """What a tracer that counts and classes in the kernel hands over (bpfcapture.py): the
        sampled requests (CAPTURED, classed already, epoch seconds) and the counts of every
        request since its last call (keys from COUNTS), which join the hour of ``now``."""
        if self.stopped:
            return
        start = now // 3600 * 3600
        h = self.hours.get(start)
        if h is None:
            h = self.hours[start] = Hour(start)
        self.dirty.add(start)
        for name in ("requests", "reads", "writes", "read_bytes", "write_bytes", "sequential", "bypassed"):
            setattr(h, name, getattr(h, name) + counts.get(name, 0))
        h.bypassed_bytes += counts.get("bypassed_bytes", 0)
        h.bypassed_reads += counts.get("bypassed_reads", 0)
        h.lost += counts.get("lost", 0)
        if len(sampled):
            h.first, h.last = min(h.first, float(sampled["t"][0])), max(h.last, float(sampled["t"][-1]))
        elif counts.get("requests", 0):
            h.first, h.last = min(h.first, now), max(h.last, now)
        keep = sampled[unit_hash(sampled["offset"]) < np.uint64(self.threshold)]
        before = len(self.seen)
        self.seen.update((keep["offset"] // np.uint64(UNIT)).tolist())
        h.new_units += len(self.seen) - before
        if len(keep):
            self.pending.append(keep)

    def lower(self, threshold: int, now: float) -> None:
        """Sample less from now on, as the tracer already does (bpfcapture.py halves its rate
        itself when it keeps requests faster than this process should read them)."""
        if threshold < self.threshold:
            self._lower(threshold, now)

    def _count_lost(self, lost: int) -> None:
        if lost > self.lost_total and self.hours:
            last = self.hours[max(self.hours)]
            last.lost += lost - self.lost_total
            self.dirty.add(last.start)
        self.lost_total = max(self.lost_total, lost)

    def _count(self, part: npt.NDArray[Any], hour_start: float) -> None:
        """Add ``part`` (requests of one clock hour, by their own times) to that hour's counts.
        An hour is never started again: a request read late, after its hour turned, joins it."""
        h = self.hours.get(hour_start)
        if h is None:
            h = self.hours[hour_start] = Hour(hour_start)
        self.dirty.add(hour_start)
        writes = part["write"] != 0
        length = part["length"].astype(np.int64)
        h.requests += len(part)
        h.first, h.last = min(h.first, float(part["t"][0])), max(h.last, float(part["t"][-1]))
        h.writes += int(writes.sum())
        h.reads += int((~writes).sum())
        h.write_bytes += int(length[writes].sum())
        h.read_bytes += int(length[~writes].sum())
        h.sequential += int(np.count_nonzero(part["stream"]))
        bypassed = part["stream"] == StreamDetector.BYPASSED
        h.bypassed += int(np.count_nonzero(bypassed))
        h.bypassed_bytes += int(length[bypassed].sum())
        h.bypassed_reads += int(np.count_nonzero(bypassed & ~writes))
        sampled = part["offset"][unit_hash(part["offset"]) < np.uint64(self.threshold)]
        before = len(self.seen)
        self.seen.update((sampled // np.uint64(UNIT)).tolist())
        h.new_units += len(self.seen) - before

    def _flush(self, now: float) -> None:
        """Write the pending records and the counts of every hour they changed (the hour so far:
        a reader keeps each run's last word on each hour), in this clock hour's file, and fsync."""
        if not self.pending and not self.dirty:
            return
        if self.fd < 0 or now // 3600 != self.file_hour or self.torn:
            self._open(now)
        if self.pending:
            records = np.concatenate(self.pending)
            for at in range(0, len(records), MAX_FRAME_RECORDS):
                part = records[at : at + MAX_FRAME_RECORDS]
                self._write(records_frame(part, float(part["t"].min()), self.threshold))
            self.pending = []  # written: a failed write above keeps them for the next try
            self.sampled += len(records)
        for start in sorted(self.dirty):
            self._write(json_frame(b"S", self.hours[start].to_json(self.rate, self.started)))
        self.dirty.clear()
        os.fsync(self.fd)

    def tick(self) -> str:
        """Called often (every quarter second): every ``flush_seconds`` by the clock, flush, and
        keep to the budget. Why the capture must stop ("" to go on)."""
        now = self.clock()
        if self.stopped:
            return self.stopped
        if now >= self.limits.until:
            self.stopped = "duration"
            return self.stopped
        if now - self.last_flush < self.limits.flush_seconds:
            return ""
        self.last_flush = now
        self._flush(now)
        return self._check_space(now)

    def _check_space(self, now: float) -> str:
        used = self.used_before + self.written
        if used >= self.limits.budget:
            self.stopped = "budget"
            return self.stopped
        # projected at the rate in force: from what was written since it was set
        since_bytes, since_records, since = self.at_rate
        elapsed = now - since
        if elapsed >= 600 and self.threshold > 1:  # ten minutes at least: a burst at boot is not the week
            ahead = max(0.0, self.limits.until - now) / elapsed
            more_bytes = (self.written - since_bytes) * ahead
            more_records = (self.sampled - since_records) * ahead
            lowered = self.threshold
            while lowered > 1 and (
                used + more_bytes > 0.9 * self.limits.budget or self.sampled + more_records > self.limits.max_records
            ):
                lowered = max(1, lowered // 2)
                more_bytes, more_records = more_bytes / 2, more_records / 2
            if lowered < self.threshold:
                self._lower(lowered, now)
        st = self.statvfs(self.dfd)
        free = st.f_bavail * st.f_frsize
        if free < min(self.limits.min_free, self.limits.min_free_share * st.f_blocks * st.f_frsize):
            self.stopped = "disk-full"
        return self.stopped

    def _lower(self, threshold: int, now: float) -> None:
        """Sample less from now on: an empty records frame says so at once (a reader keeps only
        the records under the lowest threshold it finds)."""
        self.threshold = threshold
        self.at_rate = (self.written, self.sampled, now)
        if self.seen:
            units = np.fromiter(self.seen, np.uint64, len(self.seen))
            self.seen = set(units[unit_hash(units * np.uint64(UNIT)) < np.uint64(threshold)].tolist())
        if self.fd >= 0:
            self._write(records_frame(np.empty(0, CAPTURED), now, threshold))

    def close(self, why: str) -> None:
        """Write what is pending, the hours so far and an ``E`` frame saying why it ended."""
        self._flush(self.clock())
        if self.fd < 0 or self.torn:
            self._open(self.clock())
        self._write(
            json_frame(
                b"E",
                {"why": why, "ended": self.clock(), "sample_rate": self.rate, "sampled": self.sampled},
            )
        )
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
