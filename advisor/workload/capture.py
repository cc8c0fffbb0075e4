"""Capture a device's block I/O through the kernel's block tracepoints in tracefs (or, where
tracefs cannot be used, blktrace and blkparse).

No extra package is needed (blktrace records almost nothing in some guests, see docs/lab.md).
Each capture uses its own tracefs instance, so it never disturbs the global trace buffer or
another tool's tracing, and removes it when done. Disks and partitions are traced at
``block_rq_issue`` (requests as issued to the device; a partition by its sector range on the
disk); bio-based stacked devices (LVM and other device-mapper devices, bcache, md) at
``block_bio_queue`` on the device itself. Records stream into the compact trace format in
chunks, so memory stays bounded however long the capture runs.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import select
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from advisor.disks.collect import devnum_of
from advisor.disks.devices import Device, Inventory
from advisor.errors import Described, codes, next_step, what_of
from advisor.runner import CommandError, CommandRunner
from advisor.workload import rawtrace
from advisor.workload.traces import REQUEST, ImportStats, parse_blkparse, write_header

TRACEFS_CANDIDATES = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
BUFFER_KB = 16384
FLUSH_RECORDS = 65536
RAW_PAGES_A_ROUND = 1024  # pages read from one CPU's raw pipe before the next CPU's (4 MiB)
RAW_PAUSE_S = 0.1  # between rounds that emptied the pipes (each CPU's buffer holds BUFFER_KB)

# "fio-268 [001] ..... 45.670199: block_rq_issue: 8,0 R 4096 () 1506848 + 8 [fio]"
# "fio-268 [001] ..... 45.670199: block_bio_queue: 254,0 R 1506848 + 8 [fio]"
LINE = re.compile(
    r"\s(?P<ts>\d+\.\d+): (?P<event>block_rq_issue|block_bio_queue): (?P<major>\d+),(?P<minor>\d+) "
    r"(?P<rwbs>\S+) (?:\d+ \([^)]*\) )?(?P<sector>\d+) \+ (?P<count>\d+)"
)


codes({"trace-refused": "{why}"})


class CaptureError(Described):
    """Tracing could not start; the message says why and that nothing was changed."""

    CODE = "trace-refused"


@dataclass(frozen=True)
class CapturePlan:
    """What to trace for one device, decided from discovery before anything is touched."""

    device: str
    devnode: str
    event: str
    kernel_dev: int  # the tracepoint's dev field: major << 20 | minor
    sector_start: int  # a partition's first sector on its disk (0 otherwise)
    sector_count: int  # sectors to keep (0: all)
    size_bytes: int
    identity: str | None = None  # discovery's stable identity (wwn:..., dm-uuid:...): the same after a reboot

    @property
    def stable(self) -> str:
        """What names the device across reboots (its kernel name may change): the identity, or
        else the device node."""
        return self.identity or self.devnode

    @property
    def filter(self) -> str:
        f = f"dev == {self.kernel_dev}"
        if self.sector_count:
            f += f" && sector >= {self.sector_start} && sector < {self.sector_start + self.sector_count}"
        return f


def plan_capture(inv: Inventory, path: str) -> CapturePlan:
    if not os.path.exists(path):
        raise CaptureError(f"{path} does not exist; nothing was traced", next=[next_step("see-devices")])
    devnum = devnum_of(path)
    dev = next((d for d in inv.devices if d.devnum == devnum), None) if devnum else None
    if dev is None:
        raise CaptureError(f"{path} is not a block device that discovery lists; nothing was traced.")
    return plan_for(dev, inv)


def plan_for(dev: Device, inv: Inventory) -> CapturePlan:
    if dev.kind in ("disk", "loop"):
        major, minor = (int(x) for x in dev.devnum.split(":"))
        return CapturePlan(
            dev.name, dev.devnode, "block_rq_issue", major << 20 | minor, 0, 0, dev.size_bytes, dev.identity
        )
    if dev.kind == "partition":
        disk = inv.by_name(dev.parent or "")
        start = _partition_start(dev.name)
        if disk is None or start is None:
            raise CaptureError(f"cannot tell where {dev.name} starts on its disk; nothing was traced.")
        major, minor = (int(x) for x in disk.devnum.split(":"))
        return CapturePlan(
            dev.name,
            dev.devnode,
            "block_rq_issue",
            major << 20 | minor,
            start,
            dev.size_bytes // 512,
            dev.size_bytes,
            dev.identity,
        )
    major, minor = (int(x) for x in dev.devnum.split(":"))
    return CapturePlan(
        dev.name, dev.devnode, "block_bio_queue", major << 20 | minor, 0, 0, dev.size_bytes, dev.identity
    )


def _partition_start(name: str) -> int | None:
    try:
        return int(Path(f"/sys/class/block/{name}/start").read_text())
    except (OSError, ValueError):
        return None


def tracefs(runner: CommandRunner) -> Path:
    for root in TRACEFS_CANDIDATES:
        if (root / "instances").is_dir():
            return root
    if os.geteuid() != 0:
        raise CaptureError(
            "tracing block I/O needs root (tracefs); nothing was traced", next=[next_step("become-root")]
        )
    try:
        runner.run(["mount", "-t", "tracefs", "tracefs", str(TRACEFS_CANDIDATES[0])], timeout=10)
    except CommandError as exc:
        raise CaptureError(
            f"tracefs is not available ({what_of(exc)}); nothing was traced. The kernel needs CONFIG_FTRACE."
        ) from exc
    return TRACEFS_CANDIDATES[0]


@dataclass(frozen=True)
class CaptureProgress:
    events: int
    elapsed: float
    rate: float
    lost: int


@dataclass(frozen=True)
class CaptureResult:
    path: str
    events: int
    seconds: float
    lost: int
    bad_lines: int
    stopped_by: str


def parse_line(line: str, plan: CapturePlan) -> tuple[float, int, int, bool] | None:
    """(time, byte offset within the traced device, bytes, write) for a read or write, else None."""
    m = LINE.search(line)
    if m is None:
        return None
    rwbs = m["rwbs"]
    count = int(m["count"])
    # Flushes (FF, or FWS with 0 + 0) and driver-internal requests (N) move no data to cache.
    if count == 0 or ("R" not in rwbs and "W" not in rwbs):
        return None
    sector = int(m["sector"]) - plan.sector_start
    return float(m["ts"]), sector * 512, count * 512, "W" in rwbs


class Capture:
    """One tracefs instance tracing one device; a context manager that always cleans up."""

    def __init__(self, plan: CapturePlan, runner: CommandRunner, clock: str | None = None) -> None:
        if os.geteuid() != 0:
            raise CaptureError(
                "tracing block I/O needs root (tracefs); nothing was traced", next=[next_step("become-root")]
            )
        self.plan = plan
        self.root = tracefs(runner)
        self.instance = self.root / "instances" / f"cachewise-{os.getpid()}"
        self.event_dir = self.instance / "events" / "block" / plan.event
        self.clock = clock  # the instance's trace clock to ask for ("mono": CLOCK_MONOTONIC)
        self.raw: tuple[rawtrace.EventLayout, int] | None = None  # the binary pages' layout, when read raw

    def remove_stale(self) -> list[str]:
        """Remove the instances earlier cachewise processes left when they were killed (SIGKILL
        leaves no chance to clean up): those whose process is gone. Returns their names."""
        removed = []
        for inst in (self.root / "instances").glob("cachewise-*"):
            pid = inst.name.removeprefix("cachewise-")
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                for event in inst.glob("events/block/*/enable"):
                    try:
                        event.write_text("0")
                    except OSError:
                        pass
                try:
                    inst.rmdir()
                    removed.append(inst.name)
                except OSError:
                    pass
        return removed

    def __enter__(self) -> Capture:
        self.remove_stale()
        try:
            self.instance.mkdir()
            (self.instance / "buffer_size_kb").write_text(str(BUFFER_KB))
            if self.clock:
                with contextlib.suppress(OSError):  # an older kernel's clocks: the default ("local") is kept
                    (self.instance / "trace_clock").write_text(self.clock)
            (self.event_dir / "filter").write_text(self.plan.filter)
            self.raw = self._raw_layout()
            (self.event_dir / "enable").write_text("1")
        except OSError as exc:
            self.__exit__()
            raise CaptureError(
                f"could not set up tracing in {self.instance} ({what_of(exc)}); nothing was traced"
            ) from exc
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            (self.event_dir / "enable").write_text("0")
        except OSError:
            pass
        try:
            self.instance.rmdir()
        except OSError:
            pass

    def _raw_layout(self) -> tuple[rawtrace.EventLayout, int] | None:
        """The event's layout and the page size, for reading the binary pages (rawtrace.py), or
        None (then the text pipe is read): a kernel whose pages or event this reader does not
        know, or CACHEWISE_TRACE_TEXT=1 in the environment."""
        if os.environ.get("CACHEWISE_TRACE_TEXT") == "1":
            return None
        try:
            layout = rawtrace.parse_format((self.event_dir / "format").read_text())
            # the instance's own pages (an instance may have its own sub-buffer size)
            header = self.instance / "events" / "header_page"
            page = rawtrace.check_page_header(
                (header if header.exists() else self.root / "events" / "header_page").read_text()
            )
        except (OSError, rawtrace.FormatError):
            return None
        if not any(self.instance.glob("per_cpu/cpu*/trace_pipe_raw")):
            return None
        return layout, page

    def _progress(self, events: int, elapsed: float) -> CaptureProgress:
        return CaptureProgress(events, elapsed, events / elapsed if elapsed else 0.0, self.lost())

    def lost(self) -> int:
        total = 0
        for stats in (self.instance / "per_cpu").glob("cpu*/stats"):
            m = re.search(r"overrun: (\d+)", stats.read_text())
            total += int(m[1]) if m else 0
        return total

    def run(
        self,
        out: IO[bytes],
        duration: float,
        on_progress: Callable[[CaptureProgress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> CaptureResult:
        """Trace into the compact trace file ``out`` for ``duration`` seconds (or until
        ``should_stop`` says so, or Ctrl-C): its header, then the records as they come."""
        write_header(
            out,
            {
                "device": self.plan.devnode,
                "name": self.plan.device,
                "event": self.plan.event,
                "filter": self.plan.filter,
                "size_bytes": self.plan.size_bytes,
                "tracer": "tracefs",
                "started": time.time(),
            },
        )
        try:
            stream = self.stream(duration, lambda records: records.tofile(out), on_progress, should_stop)
        finally:
            out.flush()
        return CaptureResult(
            out.name if hasattr(out, "name") else "",
            stream.events,
            stream.seconds,
            self.lost(),
            stream.bad_lines,
            stream.stopped_by,
        )

    def stream(
        self,
        duration: float,
        on_records: Callable[[npt.NDArray[Any]], None],
        on_progress: Callable[[CaptureProgress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> CaptureResult:
        """Read the instance's trace pipe for ``duration`` seconds (or until ``should_stop``
        says so, or Ctrl-C), handing the requests to ``on_records`` in batches (REQUEST dtype,
        times in the trace clock's seconds): at least every FLUSH_RECORDS requests, whenever
        ``should_stop`` or ``on_progress`` is consulted with requests pending, and at the end
        whatever ended it. The result's path and lost count are left empty."""
        if self.raw is not None:
            return self._stream_raw(*self.raw, duration, on_records, on_progress, should_stop)
        buf = np.empty(FLUSH_RECORDS, REQUEST)
        n = events = bad = 0
        start = time.monotonic()
        last_report = start
        stopped_by = "duration"
        pending = b""
        fd = os.open(self.instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                now = time.monotonic()
                if now - start >= duration:
                    break
                if should_stop is not None:
                    if n:
                        on_records(buf[:n].copy())
                        n = 0
                    if should_stop():
                        stopped_by = "request"
                        break
                ready, _, _ = select.select([fd], [], [], min(0.25, max(0.0, duration - (now - start))))
                chunk = b""
                if ready:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        chunk = b""
                if chunk:
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()
                    for raw in lines:
                        rec = parse_line(raw.decode("ascii", "replace"), self.plan)
                        if rec is None:
                            if b"block_" in raw:
                                bad += 1
                            continue
                        buf[n] = rec
                        n += 1
                        events += 1
                        if n == FLUSH_RECORDS:
                            on_records(buf.copy())
                            n = 0
                if on_progress is not None and now - last_report >= 0.5:
                    last_report = now
                    on_progress(self._progress(events, now - start))
        except KeyboardInterrupt:
            stopped_by = "interrupt"
        finally:
            os.close(fd)
            on_records(buf[:n].copy())
        return CaptureResult("", events, round(time.monotonic() - start, 3), 0, bad, stopped_by)

    def _stream_raw(
        self,
        layout: rawtrace.EventLayout,
        page: int,
        duration: float,
        on_records: Callable[[npt.NDArray[Any]], None],
        on_progress: Callable[[CaptureProgress], None] | None,
        should_stop: Callable[[], bool] | None,
    ) -> CaptureResult:
        """stream(), from each CPU's binary pages (per_cpu/cpuN/trace_pipe_raw): the kernel hands
        over its ring buffer's pages as they are instead of printing each event as text in this
        process, which cost half of fio's rate on a fast device (rawtrace.py). Each CPU's pipe is
        read until it is empty, then again RAW_PAUSE_S later; the requests of a round are handed
        over in time order."""
        events = bad = 0
        start = time.monotonic()
        last_report = start
        stopped_by = "duration"
        fds: list[int] = []
        try:
            for path in sorted(self.instance.glob("per_cpu/cpu*/trace_pipe_raw")):
                fds.append(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        held = np.empty(0, rawtrace.RAW_EVENT)  # read, but later than a CPU that had more to give

        def drain() -> int:
            """Read and hand over what the pipes hold, in time order; returns the most pages one
            CPU gave (RAW_PAGES_A_ROUND: it has more). Each CPU's pages are parsed apart (a disk's
            few pages stay under the compiler's threshold); the requests after the last one read
            from a CPU that has more wait for the next round, so that none is handed over after
            a later one."""
            nonlocal events, bad, held
            parts = [held]
            most = 0
            until = math.inf
            for fd in fds:
                chunks: list[bytes] = []
                for _ in range(RAW_PAGES_A_ROUND):
                    try:
                        chunk = os.read(fd, page)
                    except OSError:  # empty for now (EAGAIN), or a CPU gone offline
                        break
                    if len(chunk) < page:  # a short read: nothing more now
                        if chunk:
                            chunks.append(chunk + bytes(page - len(chunk)))
                        break
                    chunks.append(chunk)
                most = max(most, len(chunks))
                if not chunks:
                    continue
                raw, counts = rawtrace.parse_pages(b"".join(chunks), layout, page)
                bad += counts.damaged
                if len(chunks) == RAW_PAGES_A_ROUND and len(raw):
                    until = min(until, float(raw["ns"].max()))
                parts.append(raw)
            raw = np.concatenate(parts)
            raw = raw[np.argsort(raw["ns"], kind="stable")]
            cut = len(raw) if until == math.inf else int(np.searchsorted(raw["ns"], until, side="right"))
            raw, held = raw[:cut], raw[cut:]
            # requests with data, within the traced range (the filter's: a partition's sectors)
            raw = raw[
                (raw["rwbs"] != rawtrace.OTHER) & (raw["sectors"] > 0) & (raw["sector"] >= self.plan.sector_start)
            ]
            records = np.empty(len(raw), REQUEST)
            records["t"] = raw["ns"] / 1e9
            records["offset"] = (raw["sector"] - np.uint64(self.plan.sector_start)) * np.uint64(512)
            records["length"] = raw["sectors"] * np.uint32(512)
            records["write"] = raw["rwbs"] == rawtrace.WRITE
            events += len(records)
            if len(records):
                on_records(records)
            return most

        try:
            while True:
                now = time.monotonic()
                if now - start >= duration:
                    break
                if should_stop is not None and should_stop():
                    stopped_by = "request"
                    break
                # a partial page is handed over as soon as it is read: read again only after a
                # pause, unless a CPU's pipe held more than a round (a fast device)
                if drain() < RAW_PAGES_A_ROUND:
                    time.sleep(min(RAW_PAUSE_S, max(0.0, duration - (now - start))))
                if on_progress is not None and now - last_report >= 0.5:
                    last_report = now
                    on_progress(self._progress(events, now - start))
        except KeyboardInterrupt:
            stopped_by = "interrupt"
        finally:
            with contextlib.suppress(OSError):
                (self.event_dir / "enable").write_text("0")  # what is in the pages now is the last
            try:
                while drain() >= RAW_PAGES_A_ROUND:
                    pass
            finally:
                for fd in fds:
                    os.close(fd)
        return CaptureResult("", events, round(time.monotonic() - start, 3), 0, bad, stopped_by)


def capture_with_blktrace(plan: CapturePlan, runner: CommandRunner, out: IO[bytes], duration: float) -> CaptureResult:
    """The fallback: blktrace writes per-CPU files for the whole duration, blkparse turns them
    into text, the blkparse importer into the compact format. Needs debugfs and blktrace."""
    disk = plan.devnode if not plan.sector_count else _disk_node(plan)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cachewise-blktrace-") as tmp:
        try:
            runner.run(
                ["blktrace", "-d", disk, "-w", str(max(1, math.ceil(duration))), "-D", tmp, "-o", "trace"],
                timeout=duration + 60,
            )
            text = os.path.join(tmp, "trace.txt")
            runner.run(["blkparse", "-i", "trace", "-D", tmp, "-o", text], timeout=600)
        except CommandError as exc:
            raise CaptureError(f"blktrace could not trace {disk} ({what_of(exc)}); nothing was traced") from exc
        stats = ImportStats()
        with open(text, encoding="utf-8", errors="replace") as fh:
            requests = parse_blkparse(fh, stats)
    if plan.sector_count:
        offset = requests["offset"].astype(np.int64) - plan.sector_start * 512
        keep = (offset >= 0) & (offset < plan.sector_count * 512)
        requests = requests[keep]
        requests["offset"] = offset[keep]
    write_header(
        out, {"device": plan.devnode, "name": plan.device, "tracer": "blktrace", "size_bytes": plan.size_bytes}
    )
    requests.tofile(out)
    out.flush()
    return CaptureResult(
        getattr(out, "name", ""), len(requests), round(time.monotonic() - started, 3), 0, stats.bad, "duration"
    )


def _disk_node(plan: CapturePlan) -> str:
    major, minor = plan.kernel_dev >> 20, plan.kernel_dev & ((1 << 20) - 1)
    for entry in Path("/sys/class/block").iterdir():
        try:
            if (entry / "dev").read_text().strip() == f"{major}:{minor}":
                return f"/dev/{entry.name}"
        except OSError:
            continue
    raise CaptureError(f"cannot find the disk of {plan.devnode}; nothing was traced.")
