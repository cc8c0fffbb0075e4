"""The capture service's tracer where the kernel allows it: a BPF program on the block
tracepoint that counts, classes and samples every request in the kernel, and hands over only
the sampled ones (issue 31: the capture may cost at most 2% of the I/O rate it watches).

Through tracefs every request became an event in a ring buffer and then a record this process
read, classed and counted: on this machine's tmpfs loop device at 280,000 IOPS that cost 22% of
fio's rate (docs/capture.md). Here the program runs on the BTF-typed *raw* tracepoint (no event
record is built; the request's fields are plain loads the verifier checks against the running
kernel's types), and for each request of the traced device:

- counts it (requests, reads, writes and their bytes) in per-CPU counters;
- classes it in its stream as bcache would (streams.StreamDetector): a table of stream ends,
  64 slots (bcache's RECENT_IO) by the end's hash, each with the stream's bytes and last time
  (this process's clock, written into the state four times a second); a request that starts
  where a stream ended within 5 s continues it, and one whose stream has reached the
  sequential cutoff (4 MiB) is bypassed. A stream is forgotten when another's end takes its
  slot, and two CPUs may race on a slot (a request then starts a stream it continued): both
  are rare, and only the sequential counts move;
- keeps it when its 64 KiB unit's hash falls under the capture's threshold (capfile.py, the
  same hash and salt): those go to a BPF ring buffer with their own time, sector, length,
  write flag and class; past KEPT_PER_WINDOW kept in a quarter of a second, the program
  halves the threshold itself.

This process reads the ring buffer and the counters four times a second. Bio-based devices
(device-mapper, md, bcache) are traced at block_bio_queue, disks and partitions at
block_rq_issue, as through tracefs.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.workload import ebpf
from advisor.workload.capfile import CAPTURED, COUNTS, SALT, UNIT
from advisor.workload.capture import CapturePlan, CaptureProgress
from advisor.workload.mrc import HASH_MULTIPLIER, HASH_SHIFT
from advisor.workload.streams import EXPIRE_S, SEQUENTIAL_CUTOFF

STREAM_BITS = 6  # 64 slots: bcache's RECENT_IO
STREAM_SLOTS = 1 << STREAM_BITS
RING_BYTES = 1 << 22  # 131,072 records of 32 bytes: a second and more of a fast device, all kept
POLL_S = 0.25
# the kernel's record: the ring buffer's header (length, page offset), then what the program writes
RECORD = np.dtype(
    [("len", "<u4"), ("pgoff", "<u4"), ("ns", "<u8"), ("sector", "<u8"), ("sectors", "<u4"), ("flags", "<u4")]
)
# the kernel's counters, in order: capfile's hour counts but the footprint (found from the sample)
COUNTED = tuple(name for name in COUNTS if name != "new_footprint_bytes")
# The state (one array entry, mapped into this process): the program writes KNOWN, this
# process the rest (THRESHOLD and NOW as it goes, the device's once).
KNOWN, THRESHOLD, MAJOR, MINOR, FIRST, END_SECTOR, DEVT, NOW, KEPT, WINDOW = 0, 8, 16, 20, 24, 32, 40, 48, 56, 64
STATE_BYTES = 72
# Kept requests in a quarter-second window (the kernel's clock) past which the program halves
# the rate itself: at most 10,000 a second reach this process (about 0.4 us each here),
# however fast and small the device; a disk at a few thousand IOPS, sampled for its size,
# never comes near it. A stall of this process does not count: the window is the kernel's.
KEPT_PER_WINDOW = 2_500
WINDOW_NS = 250_000_000
OP_MASK = 0xFF  # REQ_OP_MASK: 0 read, 1 write; other operations move no data to cache

# Stack layout (offsets from the frame pointer)
KEY, T, TOTAL, CLASS, END, COUNTERS, REC = -4, -24, -32, -40, -48, -56, -80
STRUCTS = {"request", "request_queue", "gendisk", "bio", "bvec_iter", "block_device"}
EVENTS = {False: "block_rq_issue", True: "block_bio_queue"}


@dataclass(frozen=True)
class Fields:
    """Where the program reads, on the running kernel."""

    target: int  # the pointer that names the device (rq->q, bio->bi_bdev)
    flags: int
    length: int
    sector: int
    disk: int  # request_queue.disk
    major: int
    minor: int
    bd_dev: int


def fields(bio: bool, layout: dict[str, dict[str, ebpf.Member]]) -> Fields:
    try:
        if bio:
            b, it = layout["bio"], layout["bvec_iter"]
            at = b["bi_iter"].offset
            f = Fields(
                b["bi_bdev"].offset,
                b["bi_opf"].offset,
                at + it["bi_size"].offset,
                at + it["bi_sector"].offset,
                0,
                0,
                0,
                layout["block_device"]["bd_dev"].offset,
            )
        else:
            r, g = layout["request"], layout["gendisk"]
            f = Fields(
                r["q"].offset,
                r["cmd_flags"].offset,
                r["__data_len"].offset,
                r["__sector"].offset,
                layout["request_queue"]["disk"].offset,
                g["major"].offset,
                g["first_minor"].offset,
                0,
            )
    except KeyError as exc:
        raise ebpf.BpfUnavailable(f"this kernel's block structures lack {exc.args[0]}") from None
    return f


def program(
    bio: bool, f: Fields, state: int, streams: int, counts: int, ring: int, kept_per_window: int = KEPT_PER_WINDOW
) -> ebpf.Asm:
    """The program for block_bio_queue (``bio``) or block_rq_issue: see the module's doc."""
    a = ebpf.Asm()
    a.load(6, 1, 0, 8)  # the tracepoint's first argument: the request or bio (typed: loads need no helper)
    a.store_imm(ebpf.FP, KEY, 0, 4)
    _lookup(a, state)
    a.mov(8, 0, reg=True)  # r8: the state
    a.load(7, 6, f.target, 8)  # r7: the queue or block device
    a.load(1, 8, KNOWN, 8)
    a.jump("==", 1, 7, "ours", reg=True)
    a.jump("!=", 1, 0, "out")  # another device's
    # the first request of any device until the traced one is met: is it the traced device?
    if bio:
        checks = [(7, f.bd_dev, DEVT)]
    else:
        a.load(9, 7, f.disk, 8)
        a.jump("==", 9, 0, "out")
        checks = [(9, f.major, MAJOR), (9, f.minor, MINOR)]
    for base, field, at in checks:  # a u32 of the kernel's against the state's
        a.load(1, base, field, 4)
        a.load(2, 8, at, 4)
        a.jump("!=", 1, 2, "out", reg=True)
    a.store(8, KNOWN, 7, 8)  # met: from now on one comparison tells
    a.label("ours")
    a.load(7, 6, f.sector, 8)  # r7: the first sector
    a.load(9, 6, f.length, 4)  # r9: the bytes
    a.load(6, 6, f.flags, 4)
    a.jump("==", 9, 0, "out")
    a.alu(6, "&", OP_MASK)
    a.jump(">", 6, 1, "out")  # r6: 1 for a write, 0 for a read
    a.load(1, 8, FIRST, 8)
    a.jump("<", 7, 1, "out", reg=True)  # before the partition
    a.load(1, 8, END_SECTOR, 8)
    a.jump("==", 1, 0, "within")
    a.jump(">=", 7, 1, "out", reg=True)  # past it
    a.label("within")
    a.load(1, 8, NOW, 8)  # this process's clock, written four times a second: streams expire by it
    a.store(ebpf.FP, T, 1, 8)
    a.store(ebpf.FP, TOTAL, 9, 8)
    a.store_imm(ebpf.FP, CLASS, 0, 8)
    # the stream this request continues, if one ended where it starts
    _slot(a, 7, streams)
    a.load(1, 0, 0, 8)
    a.jump("!=", 1, 7, "classed", reg=True)
    a.load(1, ebpf.FP, T, 8)
    a.load(2, 0, 16, 8)
    a.alu(1, "-", 2, reg=True)
    a.imm64(2, int(EXPIRE_S * 1e9))
    a.jump(">=s", 1, 2, "classed", reg=True)  # signed: another CPU may have written a later time
    a.load(1, 0, 8, 8)
    a.alu(1, "+", 9, reg=True)
    a.store(ebpf.FP, TOTAL, 1, 8)
    a.store_imm(ebpf.FP, CLASS, 1, 8)
    a.store_imm(0, 0, -1, 8)  # the stream moves to its new end: this slot is free (no request starts at 2**64 - 1)
    a.label("classed")
    a.load(1, ebpf.FP, TOTAL, 8)
    a.jump("<", 1, SEQUENTIAL_CUTOFF, "end")
    a.store_imm(ebpf.FP, CLASS, 2, 8)
    a.label("end")
    a.mov(1, 9, reg=True)
    a.alu(1, ">>", 9)
    a.alu(1, "+", 7, reg=True)
    a.store(ebpf.FP, END, 1, 8)
    _slot(a, 1, streams)
    for src, at in ((END, 0), (TOTAL, 8), (T, 16)):
        a.load(1, ebpf.FP, src, 8)
        a.store(0, at, 1, 8)
    # counts
    a.store_imm(ebpf.FP, KEY, 0, 4)
    _lookup(a, counts)
    a.store(ebpf.FP, COUNTERS, 0, 8)
    _add(a, "requests")
    a.jump("!=", 6, 0, "write")
    _add(a, "reads")
    _add(a, "read_bytes", by_bytes=True)
    a.jump("ja", 0, 0, "rw")
    a.label("write")
    _add(a, "writes")
    _add(a, "write_bytes", by_bytes=True)
    a.label("rw")
    a.load(1, ebpf.FP, CLASS, 8)
    a.jump("==", 1, 0, "sample")
    _add(a, "sequential")
    a.jump("!=", 1, 2, "sample")
    _add(a, "bypassed")
    _add(a, "bypassed_bytes", by_bytes=True)
    a.jump("!=", 6, 0, "sample")
    _add(a, "bypassed_reads")
    # sampled? the hash of the request's 64 KiB unit on the traced device (capfile.unit_hash)
    a.label("sample")
    a.mov(1, 7, reg=True)
    a.load(2, 8, FIRST, 8)
    a.alu(1, "-", 2, reg=True)
    a.alu(1, ">>", (UNIT // 512).bit_length() - 1)
    a.imm64(2, SALT)
    a.alu(1, "^", 2, reg=True)
    a.imm64(2, int(HASH_MULTIPLIER))
    a.alu(1, "*", 2, reg=True)
    a.alu(1, ">>", int(HASH_SHIFT))
    a.load(2, 8, THRESHOLD, 8)
    a.jump(">=", 1, 2, "out", reg=True)
    # kept: more than kept_per_window in this window? then sample half as much from now on
    a.call(ebpf.KTIME_GET_NS)  # a kept request's own time
    a.store(ebpf.FP, REC, 0, 8)
    a.load(1, 8, WINDOW, 8)
    a.mov(2, 0, reg=True)
    a.alu(2, "-", 1, reg=True)
    a.jump("<", 2, WINDOW_NS, "counted")
    a.store(8, WINDOW, 0, 8)  # a new window from now
    a.store_imm(8, KEPT, 0, 8)
    a.label("counted")
    a.load(1, 8, KEPT, 8)
    a.alu(1, "+", 1)
    a.store(8, KEPT, 1, 8)
    a.jump("<=", 1, kept_per_window, "keep")
    a.store_imm(8, KEPT, 0, 8)
    a.load(1, 8, THRESHOLD, 8)
    a.alu(1, ">>", 1)
    a.jump("!=", 1, 0, "halved")
    a.mov(1, 1)
    a.label("halved")
    a.store(8, THRESHOLD, 1, 8)
    a.label("keep")
    a.store(ebpf.FP, REC + 8, 7, 8)
    a.mov(1, 9, reg=True)
    a.alu(1, ">>", 9)
    a.store(ebpf.FP, REC + 16, 1, 4)
    a.load(1, ebpf.FP, CLASS, 8)
    a.alu(1, "<<", 1)
    a.alu(1, "|", 6, reg=True)
    a.store(ebpf.FP, REC + 20, 1, 4)
    a.imm64(1, ring, map_fd=True)
    a.mov(2, ebpf.FP, reg=True)
    a.alu(2, "+", REC)
    a.mov(3, 24)
    a.mov(4, ebpf.RB_NO_WAKEUP)  # this process reads on its own clock: no wake-up to queue
    a.call(ebpf.RINGBUF_OUTPUT)
    a.jump("==", 0, 0, "out")
    a.load(0, ebpf.FP, COUNTERS, 8)
    _add(a, "lost")
    a.label("out")
    a.mov(0, 0)
    a.exit()
    return a


def _slot(a: ebpf.Asm, reg: int, streams: int) -> None:
    """r0: the stream table's slot for the sector in ``reg`` (its hash's top bits); leaves
    the program when the lookup fails (it cannot, for an index in range)."""
    a.mov(1, reg, reg=True)
    a.imm64(2, int(HASH_MULTIPLIER))
    a.alu(1, "*", 2, reg=True)
    a.alu(1, ">>", 64 - STREAM_BITS)
    a.store(ebpf.FP, KEY, 1, 4)
    _lookup(a, streams)


def _lookup(a: ebpf.Asm, map_fd: int) -> None:
    """r0: the entry of the array ``map_fd`` whose index is on the stack at KEY; leaves the
    program when there is none (never, for an index in range)."""
    a.imm64(1, map_fd, map_fd=True)
    a.mov(2, ebpf.FP, reg=True)
    a.alu(2, "+", KEY)
    a.call(ebpf.MAP_LOOKUP_ELEM)
    a.jump("==", 0, 0, "out")


def _add(a: ebpf.Asm, name: str, by_bytes: bool = False) -> None:
    """The counter ``name`` += 1, or += r9 (the request's bytes); r0 holds the counters."""
    at = 8 * COUNTED.index(name)
    a.load(2, 0, at, 8)
    if by_bytes:
        a.alu(2, "+", 9, reg=True)
    else:
        a.alu(2, "+", 1)
    a.store(0, at, 2, 8)


@dataclass(frozen=True)
class Target:
    """The traced device as the tracepoint names it."""

    bio: bool  # block_bio_queue (a stacked device) or block_rq_issue
    major: int
    minor: int
    sector_start: int = 0
    sector_count: int = 0  # 0: every sector


def target_of(plan: CapturePlan) -> Target:
    """The tracepoint's view of a capture plan's device (its dev field is major << 20 | minor)."""
    return Target(
        plan.event == "block_bio_queue",
        plan.kernel_dev >> 20,
        plan.kernel_dev & ((1 << 20) - 1),
        plan.sector_start,
        plan.sector_count,
    )


Batch = Callable[[npt.NDArray[Any], dict[str, int], float], None]


class BpfCapture:
    """The loaded program, attached; a context manager that always detaches and frees it."""

    def __init__(self, target: Target, threshold: int, kept_per_window: int = KEPT_PER_WINDOW) -> None:
        self.target = target
        self.kept_per_window = kept_per_window
        self.fds: list[int] = []
        self.last = np.zeros(len(COUNTED), np.uint64)
        self.ring: ebpf.RingBuffer | None = None
        self.threshold = threshold
        self.event = EVENTS[target.bio]
        layout = ebpf.kernel_layout(STRUCTS, frozenset({f"btf_trace_{self.event}"}))
        self.fields = fields(target.bio, layout.structs)
        self.btf_id = layout.typedefs.get(f"btf_trace_{self.event}", 0)
        if not self.btf_id:
            raise ebpf.BpfUnavailable(f"this kernel's type information does not name the {self.event} tracepoint")
        self.shared: mmap.mmap | None = None
        self.link: int | None = None
        self.prog = -1
        self.cpus = 1

    def __enter__(self) -> BpfCapture:
        if self.ring is not None:  # entered already (loading it twice would trace twice)
            return self
        try:
            self.cpus = ebpf.possible_cpus()
            self.state = self._keep(ebpf.create_map(ebpf.MAP_ARRAY, 4, STATE_BYTES, 1, ebpf.MAPPABLE))
            self.shared = mmap.mmap(self.state, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self.streams = self._keep(ebpf.create_map(ebpf.MAP_ARRAY, 4, 24, STREAM_SLOTS))
            self.counts_fd = self._keep(ebpf.create_map(ebpf.MAP_PERCPU_ARRAY, 4, 8 * len(COUNTED), 1))
            ring = self._keep(ebpf.create_map(ebpf.MAP_RINGBUF, 0, 0, RING_BYTES))
            self._write_state()
            code = program(
                self.target.bio, self.fields, self.state, self.streams, self.counts_fd, ring, self.kept_per_window
            )
            self.prog = self._keep(ebpf.load_program(code, self.btf_id))
            self.ring = ebpf.RingBuffer(ring, RING_BYTES)
            self.link = ebpf.attach_raw_tracepoint(self.prog, self.event, typed=True)
        except OSError as exc:  # the mappings: the kernel refused what it had just made
            self.__exit__()
            raise ebpf.BpfUnavailable(f"the kernel refused to map the capture's BPF maps ({exc.strerror})") from None
        except BaseException:
            self.__exit__()
            raise
        return self

    def _keep(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def _write_state(self) -> None:
        assert self.shared is not None
        t = self.target
        end = t.sector_start + t.sector_count if t.sector_count else 0
        for at, fmt, value in (
            (THRESHOLD, "<Q", self.threshold),
            (MAJOR, "<I", t.major),
            (MINOR, "<I", t.minor),
            (FIRST, "<Q", t.sector_start),
            (END_SECTOR, "<Q", end),
            (DEVT, "<I", t.major << 20 | t.minor),
            (NOW, "<Q", time.monotonic_ns()),
        ):
            struct.pack_into(fmt, self.shared, at, value)

    def set_threshold(self, threshold: int) -> None:
        """Sample less from now on (never more: the program may have lowered it meanwhile)."""
        assert self.shared is not None
        self.threshold = min(threshold, struct.unpack_from("<Q", self.shared, THRESHOLD)[0])
        struct.pack_into("<Q", self.shared, THRESHOLD, self.threshold)

    def detach(self) -> None:
        """Stop tracing, the program and its counts kept (bench_capture_overhead: with and
        without, within one fio run)."""
        if self.link is not None:
            os.close(self.link)
            self.link = None

    def attach(self) -> None:
        if self.link is None:
            self.link = ebpf.attach_raw_tracepoint(self.prog, self.event, typed=True)

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.detach()
        self.link = None
        if self.ring is not None:
            self.ring.close()
            self.ring = None
        if self.shared is not None:
            self.shared.close()
            self.shared = None
        for fd in reversed(self.fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []

    def totals(self) -> npt.NDArray[np.uint64]:
        """The counts since the program was attached (COUNTED, in order)."""
        return ebpf.lookup_percpu(self.counts_fd, 0, 8 * len(COUNTED), self.cpus)

    def records(self, offset: float = 0.0) -> npt.NDArray[Any]:
        """The sampled requests the program kept since the last call, as CAPTURED (times in
        epoch seconds: the kernel's CLOCK_MONOTONIC plus ``offset``)."""
        assert self.ring is not None
        raw = self.ring.read(RECORD)
        out = np.empty(len(raw), CAPTURED)
        out["t"] = raw["ns"] / 1e9 + offset
        out["offset"] = (raw["sector"] - np.uint64(self.target.sector_start)) * np.uint64(512)
        out["length"] = raw["sectors"] * np.uint32(512)
        out["write"] = raw["flags"] & 1
        out["stream"] = raw["flags"] >> 1
        return out[np.argsort(out["t"], kind="stable")]

    def _hand_over(self, on_batch: Batch) -> int:
        offset = time.time() - time.monotonic()  # the program's clock is CLOCK_MONOTONIC; the wall clock may step
        if self.shared is not None:
            struct.pack_into("<Q", self.shared, NOW, time.monotonic_ns())  # the program's clock for the streams' 5 s
            # the device is met again at its next request: a device made anew (an LV activated
            # again, a disk plugged again) has new structures, and another's may take the old place
            struct.pack_into("<Q", self.shared, KNOWN, 0)
            self.threshold = struct.unpack_from("<Q", self.shared, THRESHOLD)[0]  # lowered by the program?
        totals = self.totals()
        delta = totals - self.last
        self.last = totals
        on_batch(self.records(offset), dict(zip(COUNTED, (int(x) for x in delta), strict=True)), time.time())
        return int(delta[0])

    def stream(
        self,
        duration: float,
        on_batch: Batch,
        on_progress: Callable[[CaptureProgress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> tuple[int, float, str]:
        """Hand the sampled requests and the counts over every POLL_S for ``duration`` seconds
        (or until ``should_stop`` says so, or Ctrl-C), and once more at the end: (requests
        counted, seconds, what ended it)."""
        start = last_report = time.monotonic()
        events, stopped_by = 0, "duration"
        try:
            while True:
                now = time.monotonic()
                if now - start >= duration:
                    break
                if should_stop is not None and should_stop():
                    stopped_by = "request"
                    break
                time.sleep(min(POLL_S, max(0.0, duration - (now - start))))
                events += self._hand_over(on_batch)
                if on_progress is not None and now - last_report >= 0.5:
                    last_report = now
                    elapsed = now - start
                    on_progress(
                        CaptureProgress(events, elapsed, events / elapsed if elapsed else 0.0, int(self.last[-1]))
                    )
        except KeyboardInterrupt:
            stopped_by = "interrupt"
        finally:
            with contextlib.suppress(OSError):
                self.detach()  # what the ring and the counters hold now is the last
            events += self._hand_over(on_batch)
        return events, round(time.monotonic() - start, 3), stopped_by
