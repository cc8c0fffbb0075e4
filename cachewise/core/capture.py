"""The capture service: a device's block I/O recorded for days, sampled, into a folder of
capture files (advisor/workload/capfile.py); read back, summarised and exported."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from advisor import statedir
from advisor.errors import codes, next_step
from advisor.units import MAX_DURATION
from advisor.workload import capfile
from advisor.workload.bpfcapture import BpfCapture, target_of
from advisor.workload.capture import Capture, CapturePlan, CaptureProgress, plan_capture
from advisor.workload.ebpf import BpfUnavailable
from cachewise.core.context import Core, Refused, is_root
from cachewise.core.discover import scan

codes(
    {
        "capture-needs-root": "capturing block I/O needs root (tracefs); nothing was captured",
        "capture-folder-unsafe": "cannot keep a capture in {folder}: {why}; nothing was captured",
        "capture-finished": "{folder} holds a finished capture of {device} ({how}); nothing was captured",
        "capture-other-device": "{folder} holds a capture of {other}, not of {device}; nothing was captured",
        "capture-bad-budget": "a budget of {budget} bytes is too small to hold a capture (at least 1 MiB); "
        "nothing was captured",
        "capture-unreadable": "{why}; nothing was {done}",
        "capture-write-failed": "the capture stopped: it cannot write in {folder} ({why}); what it wrote before is "
        "kept, and starting it again resumes it once that is fixed",
        "capture-missing": "{path} is neither a capture file nor a folder of them; nothing was {done}",
        "capture-folder-empty": "{path} is a folder with no capture files in it (give a trace file, or a capture's "
        "folder); nothing was {done}",
    }
)

DEFAULT_SECONDS = 7 * 86400
DEFAULT_BUDGET = 200 << 20


@dataclass(frozen=True)
class CaptureRun:
    """What one run of the capture service recorded (schema cachewise.capture-run/1)."""

    folder: Path
    device: str
    files: list[str]
    events: int
    sampled: int
    sample_rate: float
    seconds: float
    stopped_by: str
    resumed: bool
    until: float

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "cachewise.capture-run/1",
            "folder": str(self.folder),
            "device": self.device,
            "files": self.files,
            "events": self.events,
            "sampled": self.sampled,
            "sample_rate": self.sample_rate,
            "seconds": self.seconds,
            "stopped_by": self.stopped_by,
            "resumed": self.resumed,
            "until": self.until,
        }


def default_folder(core: Core, name: str) -> Path:
    base = core.state_dir or Path("/var/lib/cachewise")
    return base / "captures" / capfile.safe_name(name)


def _open_folder(folder: Path) -> int:
    try:
        return statedir.open_dir(folder)
    except statedir.StateDirError as exc:
        raise Refused("capture-folder-unsafe", folder=folder, why=exc.facts.get("why", exc), next=[]) from None
    except OSError as exc:
        raise Refused("capture-folder-unsafe", folder=folder, why=exc.strerror or exc) from None


def capture(
    core: Core,
    device: str,
    folder: Path | None = None,
    seconds: float = DEFAULT_SECONDS,
    budget: int = DEFAULT_BUDGET,
    on_progress: Callable[[CaptureProgress], None] | None = None,
    flush_seconds: float = 60.0,
    on_started: Callable[[str], None] | None = None,
) -> CaptureRun:
    """Record ``device`` into ``folder`` (default: the state directory's captures/NAME) until
    ``seconds`` from now, or, when the folder holds this device's unfinished capture (a reboot,
    a restarted service), until that capture's end, at its sampling rate. Refused before
    anything is traced; the capture ends cleanly on SIGTERM, SIGHUP or Ctrl-C."""
    if not is_root():
        raise Refused("capture-needs-root", next=[next_step("become-root")])
    if budget < 1 << 20:
        raise Refused("capture-bad-budget", budget=budget)
    plan = plan_capture(scan(core), device)
    folder = folder or default_folder(core, plan.stable)
    dfd = _open_folder(folder)
    try:
        until, rate, resumed = resume_point(folder, plan.stable, time.time(), seconds, plan.size_bytes)
        meta = {
            "device": plan.stable,
            "devnode": plan.devnode,
            "name": plan.device,
            "event": plan.event,
            "size_bytes": plan.size_bytes,
        }
        meta["until"] = until
        # read before tracing starts: a week's files take seconds, which the kernel's ring would not hold
        threshold = capfile.threshold_for(rate)
        seen = capfile.units_seen(capfile.capture_files(folder), threshold) if resumed else None
        tracer, refused = _kernel_tracer(plan, threshold)
        meta["tracer"] = "bpf" if tracer is not None else "tracefs"
        if refused:
            meta["bpf_refused"] = refused
        try:
            recorder = capfile.Recorder(
                folder, dfd, meta, rate, capfile.Limits(until, budget, flush_seconds=flush_seconds), seen=seen
            )
        except BaseException:
            if tracer is not None:
                tracer.__exit__()
            raise
        try:
            if tracer is not None:
                events, seconds, why = _record_bpf(tracer, recorder, until, on_progress, on_started)
            else:
                events, seconds, why = _record_tracefs(core, plan, recorder, until, on_progress, on_started)
        except (OSError, capfile.CaptureFileError) as exc:
            what = exc.why if isinstance(exc, capfile.CaptureFileError) else exc.strerror or exc
            raise Refused("capture-write-failed", folder=folder, why=what) from None
    finally:
        os.close(dfd)
    return CaptureRun(
        folder,
        plan.stable,
        recorder.files,
        events,
        recorder.sampled,
        recorder.rate,
        seconds,
        why,
        resumed,
        until,
    )


def _kernel_tracer(plan: CapturePlan, threshold: int) -> tuple[BpfCapture | None, str]:
    """The BPF tracer, loaded and attached, when the kernel takes it; else None and why not
    (tracefs is used then). CACHEWISE_CAPTURE_TRACER=tracefs in the environment asks for
    tracefs."""
    if os.environ.get("CACHEWISE_CAPTURE_TRACER") == "tracefs":
        return None, ""
    try:
        return BpfCapture(target_of(plan), threshold).__enter__(), ""
    except BpfUnavailable as exc:
        return None, str(exc)


def _record_bpf(
    tracer: BpfCapture,
    recorder: capfile.Recorder,
    until: float,
    on_progress: Callable[[CaptureProgress], None] | None,
    on_started: Callable[[str], None] | None,
) -> tuple[int, float, str]:
    """Record through the kernel's own counting and sampling (bpfcapture.py); detaches it."""
    with tracer:  # entered by _kernel_tracer
        if on_started is not None:
            on_started(str(recorder.meta.get("devnode", "")))

        def on_batch(records: np.ndarray[Any, Any], counts: dict[str, int], now: float) -> None:
            recorder.lower(tracer.threshold, now)  # the program keeps to a pace this process can read
            recorder.add_counted(records, counts, now)
            tracer.set_threshold(recorder.threshold)  # and the budget's rate, lowered here

        events, seconds, stopped_by = tracer.stream(
            max(0.0, until - time.time()), on_batch, on_progress, lambda: bool(recorder.tick())
        )
        why = recorder.stopped or stopped_by
        recorder.close(why)
    return events, seconds, why


def _record_tracefs(
    core: Core,
    plan: CapturePlan,
    recorder: capfile.Recorder,
    until: float,
    on_progress: Callable[[CaptureProgress], None] | None,
    on_started: Callable[[str], None] | None,
) -> tuple[int, float, str]:
    """Record every request through a tracefs instance, classed and counted here."""
    with Capture(plan, core.runner, clock="mono") as cap:
        # The trace clock is CLOCK_MONOTONIC (or, on kernels without it, the local clock,
        # which runs alike); the records carry wall-clock time from this one offset.
        offset = time.time() - time.monotonic()
        if on_started is not None:
            on_started(plan.devnode)

        def on_records(records: np.ndarray[Any, Any]) -> None:
            records["t"] += offset
            recorder.add(records, cap.lost())

        result = cap.stream(max(0.0, until - time.time()), on_records, on_progress, lambda: bool(recorder.tick()))
        why = recorder.stopped or result.stopped_by
        recorder.close(why)
    return result.events, result.seconds, why


def resume_point(folder: Path, device: str, now: float, seconds: float, size: int) -> tuple[float, float, bool]:
    """(until, sampling rate, resumed): a new capture's, or the unfinished one's in ``folder``
    (its end and its lowest rate). Refused when the folder holds a finished capture, or
    another device's."""
    earlier = capfile.capture_files(folder)
    if not earlier:
        return now + seconds, capfile.initial_rate(size), False
    last = _last_readable(earlier)
    if last.meta.get("device") != device:
        raise Refused("capture-other-device", folder=folder, other=last.meta.get("device"), device=device)
    # its planned end, never past the longest capture a user can ask for from now
    ended = min(last.number("until", 0.0), now + MAX_DURATION)
    done = [e.get("why") for e in last.ends if e.get("why") in ("duration", "budget")]
    if ended <= now or done:
        how = "its budget was spent" if done == ["budget"] else "its time was up"
        raise Refused("capture-finished", folder=folder, device=device, how=how, next=[next_step("capture-elsewhere")])
    thresholds = [t for t, _ in last.chunks] + [int(last.number("threshold", capfile.threshold_for(1.0)))]
    return ended, capfile.rate_of(min(thresholds)), True


def _last_readable(paths: list[Path]) -> capfile.FileContents:
    """The newest capture file that can be read (one left empty by a power cut is passed over)."""
    why = ""
    for path in reversed(paths):
        try:
            return capfile.read_file(path)
        except capfile.CaptureFileError as exc:
            why = why or exc.why
    raise Refused("capture-unreadable", why=why, done="captured")


def capture_paths(path: Path, done: str = "read") -> list[Path]:
    """The capture files a path names: a folder's (oldest first), or one file. ``done``: what
    the refusal says was not done."""
    if path.is_dir():
        try:
            files = capfile.capture_files(path)
        except OSError as exc:
            raise Refused("capture-unreadable", why=f"cannot read {path}: {exc.strerror or exc}", done=done) from None
        if not files:
            raise Refused("capture-folder-empty", path=path, done=done)
        return files
    if path.is_file() and path.name.endswith(capfile.SUFFIX):
        return [path]
    raise Refused("capture-missing", path=path, done=done)


def read(path: Path, done: str = "read") -> capfile.Capture:
    try:
        return capfile.read_capture(capture_paths(path, done))
    except capfile.CaptureFileError as exc:
        raise Refused("capture-unreadable", why=exc.why, done=done) from None


@dataclass(frozen=True)
class CaptureReport:
    """A capture summarised (schema cachewise.capture/1): its span, sampling, hours, damage."""

    capture: capfile.Capture

    def to_json(self) -> dict[str, Any]:
        c = self.capture
        reqs = c.requests
        hours = c.summaries
        return {
            "schema": "cachewise.capture/1",
            "device": c.meta.get("device"),
            "files": [str(p) for p in c.files],
            "sample_rate": c.rate,
            "sampled_requests": int(len(reqs)),
            "first": float(reqs["t"][0]) if len(reqs) else None,
            "last": float(reqs["t"][-1]) if len(reqs) else None,
            "requests": sum(int(h.get("requests", 0)) for h in hours),
            "lost": sum(int(h.get("lost", 0)) for h in hours),
            "hours": hours,
            "runs": c.ends,
            "damaged": c.damaged,
        }


def report(path: Path) -> CaptureReport:
    return CaptureReport(read(path))
