"""Running a plan: journaled steps, resume, roll back, and flush progress while a step runs.

Every step is written to the journal (advisor.apply.journal) before and after it runs, and
every command with its exit code to the audit log. A step whose postconditions already hold
is skipped, and so is every step before one in effect, so running an interrupted plan again
resumes it; rolling back runs the undo commands of the steps that took effect, newest first.
Preflight (advisor.apply.preflight) comes before any of this.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from advisor import tunables
from advisor.apply.journal import Journal, JournalError, audit
from advisor.apply.state import LiveState, RoleMissing, in_effect, last_in_effect
from advisor.backends import BCACHE, by_progress
from advisor.errors import CachewiseError, codes, next_step
from advisor.plan import language
from advisor.plan.checks import NotMounted
from advisor.plan.language import TUNABLES_FILE
from advisor.plan.model import Plan, Step
from advisor.readers import bcache
from advisor.runner import CommandRunner
from advisor.watch.figures import FlushMeter

WRITE_PATIENCE = 30.0  # s for bcache's asynchronous sysfs writes to show
FAILURE_PATIENCE = 10.0  # s for a failed step's goal to show anyway (udev got there first)
# s for what a command did to show: a device's new superblock or its wiped signature is seen once
# udev has probed it again, on the change event the command's writes cause, a moment after the
# command exits (the lab's bcache-create once looked before udev had: "did not take effect").
SETTLE_PATIENCE = 10.0
POLL = 0.5  # s between looks at progress and at postconditions


codes(
    {
        "apply-role-missing": "{why}; nothing more was changed",
        "apply-journal-unwritable": "{why}; no step ran",
        "apply-journal-failed": "{why}; the plan stopped there (steps done: {done})",
        "apply-stopped": "stopped at '{step}': {why}. The plan is half applied ({state}); later steps did not run",
        "rollback-journal-failed": "{why}; the roll back stopped",
        "rollback-interrupted": "cachewise received {signal} and stopped rolling back before '{step}'",
        "rollback-stopped": "rolling back stopped at '{step}': {why}. The steps before it are still in effect",
        "rollback-failed": "rolling back '{step}' failed: `{command}` exit {code}: {output}. The steps before it "
        "are still in effect",
    }
)


class ApplyError(CachewiseError):
    """The plan did not run (or stopped): where the system stands, and what can be done."""


@dataclass(frozen=True)
class Flush:
    """What is left to write back while a step flushes a cache."""

    dirty: int
    unit: Literal["blocks", "bytes"]
    kernel_text: str = ""  # bcache's own rendering of the amount ("6.7M")
    state: str = ""  # bcache's state file
    rate: float | None = None  # units written back per second
    eta_seconds: float | None = None
    stalled_seconds: float | None = None  # no progress for this long (advisor.watch.figures)


@dataclass(frozen=True)
class Event:
    kind: str  # "skip", "run", "ok", "fail", "progress", "undo"
    step: Step
    message: str = ""  # the command, for "run" and "undo"
    flush: Flush | None = None  # for "progress"


Reporter = Callable[[Event], None]
StateReader = Callable[[], LiveState]


def _run_step(
    step: Step, runner: CommandRunner, state_dir: Path, report: Reporter, plan: Plan, read: StateReader | None = None
) -> tuple[int, str]:
    start = time.monotonic()
    shown = step.command
    if step.write is not None and step.write[0] == TUNABLES_FILE:
        code, message = _tunables_step(step, read() if read is not None else LiveState(runner, plan=plan))
        if code == 0:
            shown = shown.replace(TUNABLES_FILE, message)  # the file by its real name
    elif step.write is not None or step.wait is not None:
        code, message = _sysfs_step(step, runner, report, plan)
    elif (backend := by_progress(step.progress)) is not None and backend.dirty is not None:
        # lvconvert or lvchange flushing an LV's cache: its dirty blocks, read from the kernel meanwhile
        vg, _, lv = step.argv[-1].partition("/")
        proc = runner.start(list(step.argv), timeout=None)
        meter = _FlushReporter(step, report)
        while proc.running():
            dirty = backend.dirty(runner, vg, lv)
            if dirty is not None:
                meter.add(dirty, "blocks")
            time.sleep(POLL)
        result = proc.wait(check=False)
        code, message = result.returncode, (result.stderr or result.stdout).strip()
    else:
        result = runner.run(list(step.argv), timeout=3600, check=False)
        code, message = result.returncode, (result.stderr or result.stdout).strip()
    audit(state_dir, step.id, shown, code, time.monotonic() - start)
    return code, message


def _tunables_step(step: Step, state: LiveState) -> tuple[int, str]:
    """Write (or, with no value, remove) cachewise's tunables file of the plan's backing device:
    (0, its path) or (1, why not)."""
    assert step.write is not None
    try:
        uuid = state.backing_uuid()
    except RoleMissing:
        return 1, "the backing device's bcache UUID cannot be read (it is not present, or not registered with bcache)"
    try:
        if step.write[1]:
            path = tunables.write(uuid, tunables.parse_settings(step.write[1]))
        else:
            path = tunables.path_of(uuid)
            tunables.remove(uuid)
    except tunables.TunablesError as exc:
        return 1, exc.what
    except ValueError as exc:  # the plan's value (the plan language admits only what parses)
        return 1, str(exc)
    return 0, str(path)


def _forgets_tunables(step: Step) -> bool:
    return step.write == (TUNABLES_FILE, "")


def _keeps(step: Step, state: LiveState) -> dict[str, str]:
    """What a step that removes the tunables file finds in it, for the journal: a rollback writes
    it back (the plan cannot say it: it was made without reading the file)."""
    kept = state.read_config(TUNABLES_FILE) if _forgets_tunables(step) else None
    return {"kept": kept} if kept else {}


def _said(step: Step, code: int, output: str) -> dict[str, str]:
    """What the journal keeps of a step's outcome besides its exit code: the tunables file it
    wrote or removed, by its real name."""
    if code == 0 and step.write is not None and step.write[0] == TUNABLES_FILE:
        return {"file": output}
    return {}


class _FlushReporter:
    """Reports a flush's progress when what is left changes, and every REPEAT seconds while it
    does not (so a stall is seen), with the rate, the time left and how long it has stalled."""

    REPEAT = 5.0

    def __init__(self, step: Step, report: Reporter) -> None:
        self.step, self.report = step, report
        self.meter = FlushMeter()
        self.last: tuple[int, str] | None = None
        self.last_time = 0.0

    def add(self, dirty: int, unit: Literal["blocks", "bytes"], kernel_text: str = "", state: str = "") -> None:
        now = time.monotonic()
        progress = self.meter.add(now, dirty)
        if (dirty, state) != self.last or now - self.last_time >= self.REPEAT:
            self.last, self.last_time = (dirty, state), now
            self.report(
                Event(
                    "progress",
                    self.step,
                    flush=Flush(
                        dirty, unit, kernel_text, state, progress.rate, progress.eta_seconds, progress.stalled_seconds
                    ),
                )
            )


def _sysfs_step(step: Step, runner: CommandRunner, report: Reporter, plan: Plan) -> tuple[int, str]:
    state = LiveState(runner, plan=plan)
    try:
        if step.write is not None:
            shape = language.match_write(step.write)
            if shape is not None and shape.shape in language.STOPS:
                return _stop(step, state)
            path = state.resolve(step.write[0])
            try:
                with open(path, "w") as fh:
                    fh.write(step.write[1])
            except OSError as exc:
                return 1, f"writing {step.write[1]!r} to {path} failed: {exc.strerror or exc}"
            return 0, ""
        assert step.wait is not None
        path = state.resolve(step.wait[0])
    except RoleMissing as exc:
        raise ApplyError("apply-role-missing", changed=True, why=exc, next=exc.next) from None
    directory = Path(path).parent
    wanted = step.wait[1].split("|")
    deadline = time.monotonic() + step.timeout
    meter = _FlushReporter(step, report)
    while time.monotonic() < deadline:
        current = bcache.read_files(directory, (Path(path).name, "dirty_data"))
        value = current.get(Path(path).name)
        if value is not None and value.strip() in wanted:  # the whole state, never a part of it
            return 0, ""
        if step.progress == BCACHE.progress and "dirty_data" in current:
            meter.add(bcache.hprint_bytes(current["dirty_data"]) or 0, "bytes", current["dirty_data"], value or "")
        time.sleep(POLL)
    return (
        1,
        f"{path} still reads {bcache.read_files(directory, (Path(path).name,)).get(Path(path).name)!r} "
        f"after {step.timeout:.0f} s",
    )


STOP_SECONDS = 60.0  # the longest a bcache stop may take to release its devices
NOT_REGISTERED = "not registered: nothing to stop"


def _stop(step: Step, state: LiveState) -> tuple[int, str]:
    """Stop a bcache device or cache set: nothing to do when it is not registered (its device is
    not there, or its sysfs directory is not); refused while a bcache device it would stop is
    mounted or held (a file system made on it since, in a rollback); then wait for the kernel to
    release it."""
    assert step.write is not None
    try:
        path = Path(state.resolve(step.write[0]))
    except RoleMissing:
        return 0, NOT_REGISTERED
    if not path.exists():
        return 0, NOT_REGISTERED
    busy = [dev for dev in _bcache_devices(path.parent) if _in_use(dev, state)]
    if busy:
        return 1, (
            f"/dev/{busy[0]} is mounted or held by another device: unmount it (or stop what holds it) first; "
            "it was not stopped"
        )
    try:
        with open(path, "w") as fh:
            fh.write(step.write[1])
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENODEV):
            return 0, NOT_REGISTERED  # it went meanwhile
        return 1, f"writing {step.write[1]!r} to {path} failed: {exc.strerror or exc}"
    return _gone(path.parent, min(step.timeout, STOP_SECONDS))


def _bcache_devices(directory: Path) -> list[str]:
    """The bcacheN devices a stop in this sysfs directory would stop: a backing device's own
    (``dev``), or those of a cache set's attached backing devices (``bdevN/dev``)."""
    links = [directory / "dev", *(d / "dev" for d in sorted(directory.glob("bdev*")))]
    return [os.path.basename(os.path.realpath(link)) for link in links if link.exists()]


def _in_use(name: str, state: LiveState) -> bool:
    """Whether a block device is mounted, swapped on or held (by dm, md), as a plan's NotMounted
    check judges it."""
    dev = state.device(f"/dev/{name}")
    return dev is not None and not NotMounted(device=dev.devnode).of(dev, state)


def _gone(directory: Path, timeout: float) -> tuple[int, str]:
    """Wait until a stopped bcache device's or cache set's sysfs directory has gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not directory.exists():
            return 0, ""
        time.sleep(POLL)
    return 1, f"{directory} is still there {timeout:.0f} s after the stop"


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[list[str]]:
    """While a plan runs, SIGINT, SIGTERM and SIGHUP do not kill a step half way (an lvconvert
    killed mid-flight is worse than one that finished): they are noted, and the run stops after
    the step in progress, journaled. Only the main thread can install handlers; elsewhere (the
    TUI's worker) nothing changes."""
    seen: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def note(signum: int, _frame: object) -> None:
        seen.append(signal.Signals(signum).name)

    previous = {s: signal.signal(s, note) for s in STOP_SIGNALS}
    try:
        yield seen
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def apply(
    plan: Plan,
    runner: CommandRunner,
    state_dir: Path,
    report: Reporter,
    journal: Journal | None = None,
    read_state: StateReader | None = None,
) -> Journal:
    """Run the plan's steps in order, skipping those already in effect. Raises ApplyError when a
    step fails or does not take effect, saying where the system stands."""
    read = _bound_reader(plan, runner, read_state)
    try:
        if journal is None:
            journal = Journal.create(state_dir, plan)
        else:
            journal.write("resume")
    except JournalError as exc:
        raise ApplyError("apply-journal-unwritable", why=exc, next=[next_step("fix-state-dir")]) from None
    done: list[str] = []
    try:
        with _signals_deferred() as stop:
            return _run_steps(plan, runner, state_dir, report, journal, read, done, stop)
    except JournalError as exc:
        raise ApplyError(
            "apply-journal-failed",
            changed=True,
            why=exc,
            done=", ".join(done) or "none",
            next=[next_step("free-space-and-resume"), next_step("rollback")],
        ) from None


def _run_steps(
    plan: Plan,
    runner: CommandRunner,
    state_dir: Path,
    report: Reporter,
    journal: Journal,
    read: StateReader,
    done: list[str],
    stop: list[str],
) -> Journal:
    state = read()
    last_done = last_in_effect(plan, state)
    for index, step in enumerate(plan.steps):
        try:
            if stop:
                journal.write("interrupted", signal=stop[0], step=step.id)
                raise _stopped(plan, step, done, f"cachewise received {stop[0]} and stopped between steps")
            if index <= last_done or in_effect(step, state):
                journal.write("step-skip", step=step.id)
                report(Event("skip", step, "already in effect"))
                done.append(step.id)
                continue
            unmet = [c.describe() for c in step.pre if not c.holds(state)]
            if unmet:
                journal.write("step-blocked", step=step.id, unmet=unmet)
                raise _stopped(plan, step, done, f"its precondition does not hold: {'; '.join(unmet)}")
            journal.write("step-begin", step=step.id, argv=list(step.argv), **_keeps(step, state))
            report(Event("run", step, step.command))
            code, output = _run_step(step, runner, state_dir, report, plan, read)
            journal.write("step-end", step=step.id, returncode=code, **_said(step, code, output))
            # The kernel applies bcache's sysfs writes asynchronously, udev probes what a command
            # wrote after it exits, and a failed command may have lost a race to udev doing the same
            # thing (registering a new bcache device): look again for a while before concluding.
            if code:
                patience = FAILURE_PATIENCE
            else:
                patience = WRITE_PATIENCE if step.write is not None else SETTLE_PATIENCE
            state, missing = _settled(step, read, patience)
            if code != 0 and (missing or not step.post):
                raise _stopped(plan, step, done, f"`{step.command}` failed with exit code {code}: {output}")
            if code != 0:  # failed, yet what it was for is in effect (udev registered the device first, say)
                journal.write("step-effective", step=step.id)
            if missing:
                raise _stopped(plan, step, done, f"it ran but did not take effect: {'; '.join(missing)}")
            done.append(step.id)
            report(Event("ok", step))
        except (ApplyError, JournalError):
            raise
        except CachewiseError as exc:  # a tool failed to run, or the state could not be read: stopped here
            raise _stopped(plan, step, done, exc.what) from None
    journal.write("done")
    return journal


def _bound_reader(plan: Plan, runner: CommandRunner, read_state: StateReader | None) -> StateReader:
    """A reader of the live state whose ``{role}`` paths resolve against ``plan``."""
    if read_state is None:
        return lambda: LiveState.read(runner, plan)
    return lambda: dataclasses.replace(read_state(), plan=plan)


def _settled(step: Step, read: StateReader, patience: float) -> tuple[LiveState, list[str]]:
    """The state after a step, and the postconditions that do not hold in it, looking again for
    up to ``patience`` seconds while some are missing. The state is read once per look: it also
    serves the next step's checks."""
    deadline = time.monotonic() + patience
    while True:
        state = read()
        missing = [c.describe() for c in step.post if not c.holds(state)]
        if not missing or time.monotonic() >= deadline:
            return state, missing
        time.sleep(POLL)


def _stopped(plan: Plan, step: Step, done: list[str], why: str) -> ApplyError:
    state = f"steps done: {', '.join(done)}" if done else "no step had taken effect"
    return ApplyError(
        "apply-stopped",
        changed=True,
        step=step.description,
        why=why,
        state=state,
        next=[next_step("fix-and-resume"), next_step("rollback")],
    )


def rollback(
    journal: Journal, runner: CommandRunner, state_dir: Path, report: Reporter, read_state: StateReader | None = None
) -> None:
    """Undo, newest first, every step of the journal's plan that is in effect now."""
    plan = journal.plan
    read = _bound_reader(plan, runner, read_state)
    try:
        with _signals_deferred() as stop:
            _undo_steps(plan, journal, runner, state_dir, report, read, stop)
    except JournalError as exc:
        raise ApplyError(
            "rollback-journal-failed",
            changed=True,
            why=exc,
            next=[next_step("free-space-and-rollback")],
        ) from None


def _undo_steps(
    plan: Plan,
    journal: Journal,
    runner: CommandRunner,
    state_dir: Path,
    report: Reporter,
    read: StateReader,
    stop: list[str],
) -> None:
    journal.write("rollback")
    for step in reversed(plan.steps):
        if stop:
            raise ApplyError(
                "rollback-interrupted",
                changed=True,
                signal=stop[0],
                step=step.description,
                next=[next_step("rollback-again")],
            )
        try:
            if not in_effect(step, read()):
                continue
            undos = [Step(f"undo-{step.id}", (), write=target) for target in step.undo_writes]
            kept = journal.kept(step.id) if _forgets_tunables(step) else None
            if kept is not None:  # the tunables file the step removed, written back as it was
                undos.insert(0, Step(f"undo-{step.id}", (), write=(TUNABLES_FILE, kept)))
            undos += [Step(f"undo-{step.id}", argv) for argv in step.undo]
            for undo in undos:
                report(Event("undo", undo, undo.command))
                code, output = _run_step(undo, runner, state_dir, report, plan, read)
                done = {"argv": list(undo.argv)} if undo.argv else {"write": list(undo.write or ())}
                journal.write("undo-end", step=step.id, **done, returncode=code, **_said(undo, code, output))
                if code != 0:
                    raise ApplyError(
                        "rollback-failed",
                        changed=True,
                        step=step.description,
                        command=undo.command,
                        code=code,
                        output=output,
                        next=[next_step("fix-and-rollback")],
                    )
        except (ApplyError, JournalError):
            raise
        except CachewiseError as exc:  # an undo command could not run: the rest stays in effect
            raise ApplyError(
                "rollback-stopped", changed=True, step=step.description, why=exc, next=[next_step("fix-and-rollback")]
            ) from None
    journal.write("rolled-back")
