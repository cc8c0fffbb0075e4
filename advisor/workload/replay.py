"""Replay a block trace against a device with fio: the workload measured before and after a cache.

The trace becomes a fio iolog (version 3) with every request mapped inside the target: lengths
rounded up to whole 4 KiB blocks and clamped to 1 MiB, offsets wrapped by the target's size and
aligned down to 4 KiB for O_DIRECT. Times are scaled by the speed; a trace without times replays
back to back. fio replays the log with libaio and O_DIRECT and reports IOPS and latency.

Read-only by default: write requests are dropped and counted, and fio runs with ``--readonly``
(it refuses to issue a write). Writes are replayed only when the caller allows them and names
the target a second time as disposable, and only onto a device that holds nothing discovery or a
fresh blkid probe can see.

fio facts this relies on (fio 3.33, iolog.c): version 3 timestamps are microseconds since the
start (fio writes them with ``utime_since_now`` and sleeps the differences as microseconds); a
line whose predecessor has timestamp 0 gets no delay, so timestamps here start at 1. Before fio
3.36 (commit b85c01f7) fio does not reap completions while it waits for the next timestamp, so
at a queue depth above 1 every request's latency includes that wait; timed replays on older fio
run at queue depth 1. ``read_iolog_chunked`` loses the delays, so only untimed logs use it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from advisor import strict
from advisor.disks.devices import Device
from advisor.disks.probe import fio_version
from advisor.errors import Described, codes, next_step
from advisor.readers.blkid import parse_export
from advisor.runner import CommandError, CommandRunner
from advisor.workload.traces import CsvLayout, Format, Requests, load_trace

SCHEMA = "cachewise.replay/1"
BLOCK = 4096  # offsets and lengths in whole 4 KiB blocks: O_DIRECT on 512e and 4Kn disks alike
MAX_LENGTH = 1 << 20  # longer requests are clamped, not split
MIN_TARGET = 2 * MAX_LENGTH
MAX_REQUESTS = 5_000_000  # fio holds a timed log in memory, about 100 bytes a request
MIN_SPEED, MAX_SPEED = 0.01, 1000.0
DEPTH = 16
REAPS_WHILE_WAITING = (3, 36)  # fio b85c01f7: completions are reaped during a replay's delays
FALL_BEHIND = 1.5  # a timed replay may run this much longer than the trace before fio stops it
UNTIMED_LIMIT = 3600.0  # seconds an untimed replay may run without --duration
CHUNK = 1 << 16
UNDO = (next_step("scratch-only"),)

ProgressFn = Callable[[float, float | None], None]  # (elapsed seconds, expected seconds or None)


codes(
    {
        "replay-refused": "{why}",
        "bad-speed": "the replay speed must be between {low:g} and {high:g} (got {speed:g}); nothing was replayed",
        "needs-disposable": "replaying writes would overwrite data on {target}, so it must be named disposable as "
        "well; nothing was written",
        "disposable-mismatch": "the device named disposable ({disposable}) does not repeat the target {target} "
        "exactly; nothing was written",
    }
)


class ReplayError(Described):
    """The replay did not run, or fio failed; the message says what happened, what was left
    unchanged, and what to do."""

    CODE = "replay-refused"


@dataclass(frozen=True)
class Target:
    path: str  # as given
    real: str  # links followed: what fio opens
    block: bool  # a block device (else a regular file, allowed only for tests)
    size: int


@dataclass(frozen=True)
class Iolog:
    """What :func:`write_iolog` wrote."""

    requests: int
    dropped_writes: int
    resized: int  # lengths rounded up to whole blocks or clamped to MAX_LENGTH
    capped: int  # requests beyond the cap, left out
    timed: bool
    seconds: float  # of replay time the log spans (0 when untimed)


@dataclass(frozen=True)
class Measured:
    """What fio measured (its JSON output, all jobs summed)."""

    requests: int
    read_iops: float
    write_iops: float
    read_p50_us: float | None
    read_p90_us: float | None
    read_p99_us: float | None
    read_p999_us: float | None
    bytes_read: int
    bytes_written: int
    seconds: float


@dataclass(frozen=True)
class ReplayResult:
    label: str
    trace: str
    target: str
    planned: int  # requests in the iolog
    dropped_writes: int
    speed: float
    timed: bool
    iodepth: int
    fio_version: str
    measured: Measured
    notes: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return self.measured.requests >= self.planned

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self), "notes": list(self.notes)}

    @classmethod
    def from_json(cls, data: Any) -> ReplayResult:
        """A result saved with ``replay --json``; ValueError when it is not one."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} result")
        # Every field typed as the dataclasses say (StrictError, a ValueError, says which is
        # not); what the output adds besides them is left aside.
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        if isinstance(values.get("measured"), dict):
            known = {f.name for f in fields(Measured)}
            values["measured"] = {k: v for k, v in values["measured"].items() if k in known}
        try:
            return strict.load(cls, values, "the result")
        except strict.StrictError as exc:
            raise ValueError(f"the result is incomplete or damaged ({exc.what})") from None


def check_target(path: str, allow_file: bool = False) -> Target:
    """The device to replay onto, or a ReplayError that says what is wrong with ``path``.
    ``allow_file`` (tests only) accepts a regular file."""
    nothing = "nothing was replayed"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ReplayError(f"{path} does not exist; {nothing}", next=[next_step("see-devices")]) from None
    except OSError as exc:
        raise ReplayError(f"cannot look at {path} ({exc.strerror}); {nothing}") from None
    hint = [next_step("name-disk"), next_step("see-devices")]
    if stat.S_ISDIR(mode):
        raise ReplayError(f"{path} is a directory, not a block device; {nothing}", next=hint)
    if stat.S_ISCHR(mode):
        raise ReplayError(f"{path} is a character device, not a block device; {nothing}", next=hint)
    if not (stat.S_ISBLK(mode) or (allow_file and stat.S_ISREG(mode))):
        raise ReplayError(f"{path} is not a block device; {nothing}", next=hint)
    real = os.path.realpath(path)
    if re.search(r"[\s:]", real) or len(real) > 255:
        raise ReplayError(f"fio cannot name {real} in an iolog (spaces, colons or too long); {nothing}")
    try:
        fd = os.open(real, os.O_RDONLY)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
    except OSError as exc:
        if isinstance(exc, PermissionError) and os.geteuid() != 0:
            raise ReplayError(f"reading {real} needs root; {nothing}", next=[next_step("become-root")]) from None
        raise ReplayError(f"cannot open {real} ({exc.strerror}); {nothing}") from None
    if size < MIN_TARGET:
        raise ReplayError(
            f"{path} holds only {size:,} bytes, too small to replay onto (at least {MIN_TARGET >> 20} MiB); {nothing}"
        )
    return Target(path, real, stat.S_ISBLK(mode), size)


def check_disposable(target: Target, disposable: str | None) -> None:
    """ReplayError unless the caller named the target a second time, exactly, as disposable."""
    if disposable is None:
        raise ReplayError(code="needs-disposable", target=target.path, next=UNDO)
    if disposable != target.path:
        raise ReplayError(code="disposable-mismatch", disposable=disposable, target=target.path, next=UNDO)


def check_writes(target: Target, disposable: str | None, device: Device | None, runner: CommandRunner) -> None:
    """ReplayError unless writes may be replayed onto ``target``: it is named disposable
    (:func:`check_disposable`) and holds nothing: not mounted or held, no file system, partition
    table, LVM, RAID or bcache signature in discovery (``device``) or in a fresh ``blkid -p``
    probe (udev's answer can be stale)."""
    check_disposable(target, disposable)
    if not target.block:
        return  # a regular file, which only tests may name (check_target's allow_file)
    if device is None:
        raise ReplayError(
            f"discovery does not list {target.path}, so what it holds is unknown; nothing was written", next=UNDO
        )
    if device.state != "free" or device.signature is not None:
        why = device.in_use_reason if device.state != "free" else f"it holds {device.signature}"
        raise ReplayError(f"{target.path} is not free ({why}); nothing was written", next=UNDO)
    if any(u.fact == "signature" for u in device.unreadable):
        raise ReplayError(
            f"the signature of {target.path} could not be read; nothing was written",
            next=(next_step("become-root"), *UNDO),
        )
    try:
        probe = runner.run(["blkid", "-p", "-o", "export", target.real], check=False, timeout=15)
    except CommandError as exc:
        raise ReplayError(f"could not check {target.path} for signatures: {exc.what}", next=exc.next) from None
    found = parse_export(probe.stdout)
    kind = found.get("TYPE") or found.get("PTTYPE")
    if kind or probe.returncode not in (0, 2):  # 2: blkid found no signature
        what = f"holds a {kind} signature (blkid)" if kind else f"could not be probed ({probe.stderr.strip()})"
        raise ReplayError(f"{target.path} {what}; nothing was written", next=UNDO)


def check_speed(speed: float) -> None:
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise ReplayError(code="bad-speed", low=MIN_SPEED, high=MAX_SPEED, speed=speed)


def map_requests(requests: Requests, target_size: int) -> tuple[Any, Any, int]:
    """(offsets, lengths, how many lengths changed): every request inside the target, in whole
    blocks, at most MAX_LENGTH; offsets wrapped modulo (size - length), aligned down."""
    raw = requests["length"].astype(np.uint64)
    lengths = np.minimum((raw + BLOCK - 1) // BLOCK * BLOCK, MAX_LENGTH).astype(np.uint64)
    span = np.uint64(target_size) - lengths
    offsets = requests["offset"].astype(np.uint64) % span // BLOCK * BLOCK
    return offsets, lengths, int((lengths != raw).sum())


def write_iolog(
    requests: Requests,
    out: Path,
    target: Target,
    *,
    speed: float = 1.0,
    duration: float | None = None,
    writes: bool = False,
    cap: int = MAX_REQUESTS,
) -> Iolog:
    """Write ``requests`` as a fio version 3 iolog for ``target``. ``duration`` keeps the first
    seconds of trace time (a trace without times keeps everything); writes are dropped unless
    ``writes``. ReplayError when nothing is left to replay."""
    check_speed(speed)
    reqs = requests[np.argsort(requests["t"], kind="stable")]
    t = reqs["t"] - reqs["t"][0] if len(reqs) else reqs["t"]
    timed = bool(len(t) and t[-1] > 0)
    if timed and duration is not None:
        keep = t < duration
        reqs, t = reqs[keep], t[keep]
    is_write = reqs["write"].astype(bool)
    dropped = 0 if writes else int(is_write.sum())
    if not writes:
        reqs, t = reqs[~is_write], t[~is_write]
    capped = max(0, len(reqs) - cap)
    reqs, t = reqs[:cap], t[:cap]
    if not len(reqs):
        raise ReplayError(
            f"the trace holds no reads to replay ({dropped:,} writes were dropped: replays are read-only); nothing "
            "was replayed",
            next=UNDO,
        )
    offsets, lengths, resized = map_requests(reqs, target.size)
    stamps = (np.rint(t / speed * 1e6).astype(np.uint64) + 1) if timed else np.ones(len(reqs), np.uint64)
    name = target.real
    with out.open("w") as fh:
        fh.write(f"fio version 3 iolog\n1 {name} add\n1 {name} open\n")
        for s in range(0, len(reqs), CHUNK):
            e = s + CHUNK
            fh.writelines(
                f"{ts} {name} {'write' if w else 'read'} {o} {n}\n"
                for ts, o, n, w in zip(
                    stamps[s:e].tolist(),
                    offsets[s:e].tolist(),
                    lengths[s:e].tolist(),
                    reqs["write"][s:e].tolist(),
                    strict=True,
                )
            )
        fh.write(f"{int(stamps[-1])} {name} close\n")
    seconds = float(stamps[-1] - 1) / 1e6
    return Iolog(len(reqs), dropped, resized, capped, timed, seconds)


def iodepth_for(version: str, timed: bool) -> int:
    """Queue depth: DEPTH, except for timed replays on a fio that cannot reap while it waits."""
    m = re.match(r"fio-(\d+)\.(\d+)", version)
    if timed and (m is None or (int(m[1]), int(m[2])) < REAPS_WHILE_WAITING):
        return 1
    return DEPTH


def fio_argv(
    target: str, iolog: str, output: str, *, iodepth: int, runtime: float, writes: bool, chunked: bool
) -> list[str]:
    """The fio command line of a replay (``--readonly`` unless writes were allowed)."""
    argv = [
        "fio",
        *([] if writes else ["--readonly"]),
        "--name=replay",
        f"--filename={target}",
        f"--read_iolog={iolog}",
        "--replay_no_stall=0",
        "--direct=1",
        "--ioengine=libaio",
        f"--iodepth={iodepth}",
        "--invalidate=0",
        f"--runtime={max(1, round(runtime * 1000))}ms",
        "--output-format=json",
        f"--output={output}",
    ]
    if chunked:
        argv.insert(-2, "--read_iolog_chunked=1")
    return argv


def _percentile_us(side: dict[str, Any], key: str) -> float | None:
    value = side.get("clat_ns", {}).get("percentile", {}).get(key)
    return round(value / 1e3, 1) if value is not None and side.get("total_ios") else None


def parse_fio_json(data: dict[str, Any]) -> Measured:
    """fio's JSON output (one replay job) as figures; latencies are completion latencies."""
    job = (data.get("jobs") or [{}])[0]
    read, write = job.get("read", {}), job.get("write", {})
    return Measured(
        requests=int(read.get("total_ios", 0)) + int(write.get("total_ios", 0)),
        read_iops=round(float(read.get("iops", 0.0)), 1),
        write_iops=round(float(write.get("iops", 0.0)), 1),
        read_p50_us=_percentile_us(read, "50.000000"),
        read_p90_us=_percentile_us(read, "90.000000"),
        read_p99_us=_percentile_us(read, "99.000000"),
        read_p999_us=_percentile_us(read, "99.900000"),
        bytes_read=int(read.get("io_bytes", 0)),
        bytes_written=int(write.get("io_bytes", 0)),
        seconds=round(int(job.get("job_runtime", 0)) / 1000, 3),
    )


def _notes(log: Iolog, measured: Measured, iodepth: int, runtime: float, version: str) -> tuple[str, ...]:
    notes = []
    if log.capped:
        notes.append(
            f"the trace has {log.requests + log.capped:,} requests; only the first {log.requests:,} were "
            "replayed (a shorter part of the trace can be chosen)."
        )
    if log.dropped_writes:
        notes.append(f"{log.dropped_writes:,} write requests were dropped: the replay is read-only.")
    if log.resized:
        notes.append(f"{log.resized:,} request lengths were rounded up to whole 4 KiB blocks or clamped to 1 MiB.")
    if log.timed and iodepth == 1:
        notes.append(
            f"{version} cannot collect completions while it waits for the next timestamp (fio 3.36 can), "
            "so the replay ran at queue depth 1: requests that overlapped in the trace were issued one "
            "after another."
        )
    if measured.requests < log.requests:
        why = "the device could not keep up with the trace" if log.timed else "the replay reached its time limit"
        notes.append(
            f"fio stopped after {runtime:,.0f} s with {measured.requests:,} of {log.requests:,} requests "
            f"issued ({why})."
        )
    return tuple(notes)


def replay(
    trace_path: str | os.PathLike[str],
    target_path: str,
    runner: CommandRunner,
    *,
    label: str,
    fmt: Format = "auto",
    layout: CsvLayout | None = None,
    speed: float = 1.0,
    duration: float | None = None,
    allow_writes: bool = False,
    disposable: str | None = None,
    device: Device | None = None,
    allow_file: bool = False,
    on_progress: ProgressFn | None = None,
) -> ReplayResult:
    """Replay the trace at ``trace_path`` onto ``target_path`` with fio. ReplayError before
    anything runs when the target, the write permission or the options do not allow it, or
    when fio fails; TraceError when the trace cannot be read. ``device`` is the target as
    discovery sees it (needed to allow writes to a block device)."""
    check_speed(speed)
    target = check_target(target_path, allow_file)
    if allow_writes:
        check_writes(target, disposable, device, runner)
    try:
        version = fio_version(runner)
    except CommandError as exc:
        raise ReplayError(f"{exc.what}; nothing was replayed", next=exc.next) from None
    trace = load_trace(trace_path, fmt, layout)
    with tempfile.TemporaryDirectory(prefix="cachewise-replay-") as tmp:
        iolog_path, output = os.path.join(tmp, "replay.iolog"), os.path.join(tmp, "fio.json")
        log = write_iolog(trace.requests, Path(iolog_path), target, speed=speed, duration=duration, writes=allow_writes)
        iodepth = iodepth_for(version, log.timed)
        runtime = log.seconds * FALL_BEHIND + 30 if log.timed else duration or UNTIMED_LIMIT
        argv = fio_argv(
            target.real,
            iolog_path,
            output,
            iodepth=iodepth,
            runtime=runtime,
            writes=allow_writes,
            chunked=not log.timed,
        )
        data = _run_fio(argv, runner, runtime, log.seconds if log.timed else duration, on_progress)
    measured = parse_fio_json(data)
    return ReplayResult(
        label=label,
        trace=str(trace_path),
        target=target.path,
        planned=log.requests,
        dropped_writes=log.dropped_writes,
        speed=speed,
        timed=log.timed,
        iodepth=iodepth,
        fio_version=version,
        measured=measured,
        notes=_notes(log, measured, iodepth, runtime, version),
    )


def _run_fio(
    argv: list[str], runner: CommandRunner, runtime: float, expected: float | None, on_progress: ProgressFn | None
) -> dict[str, Any]:
    """Run fio to its end (stopping it if interrupted) and return its JSON output."""
    output = next(a.split("=", 1)[1] for a in argv if a.startswith("--output="))
    try:
        proc = runner.start(argv, timeout=runtime + 60)
    except CommandError as exc:
        raise ReplayError(f"{exc.what}; nothing was replayed", next=exc.next) from None
    try:
        while proc.running():
            time.sleep(0.25)
            if on_progress is not None:
                on_progress(proc.elapsed, expected)
        proc.wait(check=True)
    except CommandError as exc:
        readonly = "--readonly" in argv
        raise ReplayError(
            f"the replay failed: {exc.what}" + ("; nothing was written (the replay was read-only)" if readonly else ""),
            changed=not readonly,
        ) from None
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): fio must not go on
        proc.kill()
        raise
    try:
        data: dict[str, Any] = json.loads(Path(output).read_text())
    except (OSError, ValueError) as exc:
        raise ReplayError(f"fio ran but its report could not be read ({exc}).") from None
    return data
