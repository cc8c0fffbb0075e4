"""Workload: block traces recorded, analysed (the miss-ratio curve, hot data, the mix) and
replayed onto a device."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from advisor.disks.discovery import find_device
from advisor.errors import CachewiseError, codes, next_step
from advisor.inputs import BadJson, MiB, Unreadable, load_json
from advisor.units import BCACHE_SEQUENTIAL_CUTOFF
from advisor.workload import capfile, sampled
from advisor.workload import replay as replaying
from advisor.workload.analysis import Analysis, Progress, analyze_path
from advisor.workload.capture import (
    Capture,
    CaptureError,
    CaptureProgress,
    capture_with_blktrace,
    plan_capture,
    tracefs,
)
from advisor.workload.replay import ReplayResult
from advisor.workload.traces import MSR, CsvLayout, Format, file_sha256, sha256_beside
from cachewise.core import capture as capturing
from cachewise.core.context import Core, Refused, is_root
from cachewise.core.discover import scan
from cachewise.core.files import check_output

codes(
    {
        "bad-analysis-input": "{why}",
        "trace-needs-root": "tracing block I/O needs root (tracefs); nothing was traced",
        "replay-needs-root": "replaying onto {target} needs root (fio reads the device directly); nothing was replayed",
        "replay-result-unreadable": "cannot read the replay result {path}: {why}",
        "not-a-replay-result": "{path} is not a replay result ({why})",
    }
)


@dataclass(frozen=True)
class AnalyzeRequest:
    """A trace to analyse, and how (the defaults are the ones recommendations use)."""

    path: Path
    block_size: int = 4096
    mode: Literal["auto", "exact", "shards"] = "auto"
    fmt: Format = "auto"
    layout: CsvLayout = MSR
    sequential_cutoff: int = BCACHE_SEQUENTIAL_CUTOFF
    replay_sizes: tuple[int, ...] = ()  # cache sizes (bytes) the kernels' replays also run at


def analyze(
    core: Core, request: AnalyzeRequest | Path, progress: Progress | None = None
) -> tuple[Analysis, dict[str, Any]]:
    """Analyse a trace file: (analysis, the trace's own metadata). TraceError when the file
    cannot be read as a trace; Refused for a bad block size. ``progress`` hears how far a long
    trace's analysis is (what is being done, the share of it done), from the analysing thread."""
    r = request if isinstance(request, AnalyzeRequest) else AnalyzeRequest(request)
    if is_capture(r.path):
        return _analyze_capture(r)
    try:
        return analyze_path(
            r.path, r.block_size, r.mode, r.fmt, r.layout, r.sequential_cutoff, progress, r.replay_sizes
        )
    except CachewiseError:
        raise
    except ValueError as exc:
        raise Refused("bad-analysis-input", why=exc) from None


def is_capture(path: Path) -> bool:
    """Whether ``path`` is a capture: a folder (of capture files), or one capture file."""
    return path.is_dir() or path.name.endswith(capfile.SUFFIX)


def _analyze_capture(r: AnalyzeRequest) -> tuple[Analysis, dict[str, Any]]:
    if r.sequential_cutoff != capfile.CUTOFF:
        raise Refused(
            "bad-analysis-input",
            why=f"a capture's streams were told apart at capture time, at the {capfile.CUTOFF >> 20} MiB "
            "sequential cutoff; leave --sequential-cutoff out",
        )
    captured = capturing.read(r.path, "analysed")
    try:
        result = sampled.analyze_capture(captured, str(r.path), r.block_size, r.mode, r.replay_sizes)
    except ValueError as exc:
        raise Refused("bad-analysis-input", why=exc) from None
    meta = {**captured.meta, "sample_rate": captured.rate, "files": [str(p) for p in captured.files]}
    return result, meta


def _digest(path: Path) -> str:
    if not path.is_dir():
        return file_sha256(path)
    digest = hashlib.sha256()
    for p in capfile.capture_files(path):
        digest.update(file_sha256(p).encode())
    return digest.hexdigest()


def record_analysis(
    core: Core, analysis: Analysis, path: Path, meta: dict[str, Any], checksum: Callable[[], str] | None = None
) -> CachewiseError | None:
    """Record the analysis with the trace's sha256 (a capture's: of its files' sums): ``checksum``'s,
    when start_checksum began it."""
    return core.record(lambda h: h.record_analysis(analysis, checksum() if checksum else _digest(path), meta))


def start_checksum(core: Core, path: Path) -> Callable[[], str] | None:
    """The trace's sha256 for record_analysis, begun now to be made while the trace is analysed
    (None: nothing to record into, or not a regular file)."""
    return sha256_beside(path) if core.state_dir is not None and path.is_file() else None


@dataclass(frozen=True)
class TraceSummary:
    """What a trace recorded (schema cachewise.trace/1)."""

    path: Path
    device: str
    event: str
    events: int
    seconds: float
    lost: int
    bad_lines: int
    stopped_by: str

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "cachewise.trace/1",
            "path": str(self.path),
            "device": self.device,
            "event": self.event,
            "events": self.events,
            "seconds": self.seconds,
            "lost": self.lost,
            "bad_lines": self.bad_lines,
            "stopped_by": self.stopped_by,
        }


def trace(
    core: Core,
    device: str,
    output: Path,
    seconds: float,
    tracer: str = "auto",
    on_progress: Callable[[CaptureProgress], None] | None = None,
    on_blktrace: Callable[[str], None] | None = None,
    on_started: Callable[[str], None] | None = None,
) -> TraceSummary:
    """Record ``device``'s block I/O to ``output`` for ``seconds`` through tracefs (or
    blktrace); ``on_started`` hears the device node once tracing is on. Refused before anything
    is traced, or when the capture fails (an empty output is removed)."""
    if not is_root():
        raise Refused("trace-needs-root", next=[next_step("become-root")])
    check_output(output, "nothing was traced")
    try:
        plan = plan_capture(scan(core), device)
        if tracer == "auto":
            try:
                tracefs(core.runner)
                tracer = "tracefs"
            except CaptureError:
                if core.runner.which("blktrace") is None:
                    raise
                tracer = "blktrace"
        if tracer == "tracefs":
            with Capture(plan, core.runner) as cap, output.open("xb") as out:
                if on_started is not None:
                    on_started(plan.devnode)  # the event is enabled: requests from now on are traced
                result = cap.run(out, seconds, on_progress)
        else:
            if on_blktrace is not None:
                on_blktrace(plan.devnode)
            with output.open("xb") as out:
                result = capture_with_blktrace(plan, core.runner, out, seconds)
    except BaseException:  # failed, or interrupted before the capture began: no empty file left behind
        _remove_if_empty(output)
        raise
    return TraceSummary(
        output,
        plan.devnode,
        plan.event if tracer == "tracefs" else "blktrace",
        result.events,
        result.seconds,
        result.lost,
        result.bad_lines,
        result.stopped_by,
    )


def _remove_if_empty(path: Path) -> None:
    if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
        path.unlink()


@dataclass(frozen=True)
class ReplayRequest:
    """A trace to replay onto a device: read-only unless writes are allowed and the target is
    named disposable (and holds nothing)."""

    trace: Path
    target: str
    speed: float = 1.0
    duration: float | None = None
    fmt: Format = "auto"
    layout: CsvLayout | None = None
    label: str | None = None
    allow_writes: bool = False
    disposable: str | None = None
    allow_file: bool = False


def replay_trace(
    core: Core, r: ReplayRequest, on_progress: Callable[[float, float | None], None] | None = None
) -> ReplayResult:
    """Replay a trace with fio and return what it measured. Refused before anything runs (or
    when fio fails); TraceError when the trace cannot be read."""
    replaying.check_speed(r.speed)
    found = replaying.check_target(r.target, r.allow_file)
    if found.block and not is_root():
        raise Refused("replay-needs-root", target=r.target, next=[next_step("become-root")])
    device = None
    if r.allow_writes:
        replaying.check_disposable(found, r.disposable)  # before the scan, which takes a while
        device = find_device(scan(core), r.target) if found.block else None
    label = r.label or f"{os.path.basename(found.real)} {time.strftime('%H:%M')}"
    return replaying.replay(
        r.trace,
        r.target,
        core.runner,
        label=label,
        fmt=r.fmt,
        layout=r.layout,
        speed=r.speed,
        duration=r.duration,
        allow_writes=r.allow_writes,
        disposable=r.disposable,
        device=device,
        allow_file=r.allow_file,
        on_progress=on_progress,
    )


def load_replay_result(path: Path) -> ReplayResult:
    """An earlier replay's JSON output, to compare with."""
    try:
        return ReplayResult.from_json(load_json(path, 16 * MiB))
    except Unreadable as exc:
        raise Refused("replay-result-unreadable", path=path, why=exc.why) from None
    except BadJson as exc:
        raise Refused("not-a-replay-result", path=path, why=exc.why) from None
    except ValueError as exc:
        raise Refused("not-a-replay-result", path=path, why=exc) from None
