"""The apply journal and the audit log, both in the state directory.

The journal is append-only JSON lines, one file per plan run, fsynced after every record: the
plan itself first, then each step's begin, end or skip, and how the run ended (``done``,
``rolled-back``, ``abandoned``). A journal without an end is an interrupted plan, which
resuming or rolling back finishes. The audit log has one line per
command run: time, step, exit code, duration, command.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor import statedir, tunables
from advisor.errors import CachewiseError, codes, next_step, what_of
from advisor.inputs import BadJson, Unreadable, decode, parse_json, read_fd
from advisor.plan.model import Plan, PlanError

ENDINGS = ("done", "rolled-back", "abandoned")
JOURNAL_LIMIT = 64 << 20  # a journal holds one plan and a few records per step


# Held while any plan runs on this machine, whatever the state directory: two cachewise with
# different state directories must not change the same disks at once.
MACHINE_LOCK = Path("/run/lock/cachewise-apply.lock")

codes(
    {
        "journal-unusable": "{what} {path} {why}",
        "busy": "another cachewise is applying a plan with {dir} (it holds {lock})",
        "busy-machine": "another cachewise is applying a plan on this machine (it holds {lock})",
        "lock-unsafe": "the lock {lock} {why}",
    }
)


class JournalError(CachewiseError):
    """A journal cannot be read or written: which one, and why."""

    def __init__(self, path: Path, why: str, what: str = "the apply journal") -> None:
        self.path = path
        super().__init__("journal-unusable", path=path, why=why, what=what)


class Busy(CachewiseError):
    """Another cachewise is applying a plan with the same state directory, or on this machine."""

    def __init__(self, state_dir: Path | None) -> None:
        if state_dir is None:
            super().__init__("busy-machine", lock=MACHINE_LOCK, next=[next_step("wait-for-it")])
        else:
            super().__init__("busy", dir=state_dir, lock=state_dir / "apply.lock", next=[next_step("wait-for-it")])


def journal_dir(state_dir: Path) -> Path:
    return state_dir / "journal"


def _state(state_dir: Path) -> None:
    """The state directory, made and checked (statedir.ensure), or JournalError."""
    try:
        statedir.ensure(state_dir)
    except OSError as exc:
        raise JournalError(state_dir, f"cannot be used ({exc.strerror or exc})", "the state directory") from None


def _flock(fd: int, busy: Busy) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise busy from None
        raise


def _machine_lock() -> int | None:
    """The machine-wide lock's descriptor, held (None where there is no /run/lock). /run/lock is
    writable by everyone: a link there, or a file another user made (to hold the lock and so
    keep root from ever applying or rolling back), is removed as root may, and the lock made
    afresh; only a lock root's own cachewise holds makes this one wait."""
    if not MACHINE_LOCK.parent.is_dir():
        return None
    for _ in range(5):
        try:
            fd = os.open(MACHINE_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise CachewiseError(
                    "lock-unsafe", lock=MACHINE_LOCK, why=f"cannot be opened ({exc.strerror})"
                ) from None
            fd = -1
        st = os.fstat(fd) if fd >= 0 else None
        if st is not None and st.st_uid in (0, os.geteuid()) and stat.S_ISREG(st.st_mode):
            try:
                _flock(fd, Busy(None))
            except BaseException:
                os.close(fd)
                raise
            return fd
        if fd >= 0:
            os.close(fd)
        try:  # a link, or another user's file: not cachewise's lock
            os.unlink(MACHINE_LOCK)
        except OSError as exc:
            raise CachewiseError(
                "lock-unsafe", lock=MACHINE_LOCK, why=f"belongs to another user ({exc.strerror})"
            ) from None
    raise CachewiseError("lock-unsafe", lock=MACHINE_LOCK, why="is made again by another user as soon as it is removed")


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Held while a plan runs, rolls back or is abandoned: two cannot interleave, on this
    machine (flock on MACHINE_LOCK) or with this state directory (flock on STATE/apply.lock);
    the kernel releases both if the process dies."""
    _state(state_dir)
    machine = _machine_lock()
    try:
        try:
            fd = statedir.open_in(state_dir, "apply.lock", flags=os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise JournalError(
                state_dir / "apply.lock", f"cannot be opened ({exc.strerror or exc})", "the lock"
            ) from None
        try:
            _flock(fd, Busy(state_dir))
            yield
        finally:
            os.close(fd)
    finally:
        if machine is not None:
            os.close(machine)


@dataclass
class Journal:
    path: Path

    @classmethod
    def create(cls, state_dir: Path, plan: Plan) -> Journal:
        _state(state_dir)
        name = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + f"-{plan.kind}-{os.getpid()}.jsonl"
        journal = cls(journal_dir(state_dir) / name)
        journal.write("plan", plan=plan.to_json())
        return journal

    def _open(self, flags: int) -> int:
        """The journal, opened relative to the state directory, never through a link."""
        return statedir.open_in(self.path.parent.parent, self.path.parent.name, self.path.name, flags=flags)

    def write(self, event: str, **fields: Any) -> None:
        """Append a record and fsync it; JournalError (a full disk, say) when it cannot. A
        record cut short by a crash is left as it is, and the new one starts on a line of its
        own (glued to it, the decision would be lost with it). The journal is a regular file,
        never followed through a link."""
        record = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
        line = (json.dumps(record) + "\n").encode()
        try:
            fd = self._open(os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK)
        except OSError as exc:
            raise JournalError(self.path, f"cannot be written ({exc.strerror or exc})") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise JournalError(self.path, "cannot be written (it is not a regular file)")
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                line = b"\n" + line
            os.write(fd, line)
            os.fsync(fd)
        except OSError as exc:
            raise JournalError(self.path, f"cannot be written ({exc.strerror or exc})") from None
        finally:
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """Its records: every line that is one (a record cut short by a crash is left out, and
        those after it are kept); JournalError when it is not a journal cachewise can read (not
        a regular file, larger than JOURNAL_LIMIT, not text)."""
        try:
            text = decode(read_fd(self._open(os.O_RDONLY | os.O_NONBLOCK), JOURNAL_LIMIT))
        except OSError as exc:
            why = "it is a link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            raise JournalError(self.path, f"cannot be read ({why})") from None
        except Unreadable as exc:
            raise JournalError(self.path, f"cannot be read ({exc.why})") from None
        out = []
        for line in text.splitlines():
            try:
                record = parse_json(line)
            except BadJson:
                continue
            if isinstance(record, dict) and isinstance(record.get("event"), str):
                out.append(record)
        return out

    @property
    def plan(self) -> Plan:
        """The plan it ran, checked as any plan file is; JournalError when it is damaged."""
        records = self.records()
        if not records or records[0]["event"] != "plan" or "plan" not in records[0]:
            raise JournalError(self.path, "is damaged: its first record is not the plan it ran")
        try:
            return Plan.from_json(records[0]["plan"])
        except PlanError as exc:
            raise JournalError(self.path, f"holds a plan that is refused: {what_of(exc)}") from None

    @property
    def finished(self) -> bool:
        return any(r["event"] in ENDINGS for r in self.records())

    def problem(self) -> str | None:
        """Why this journal cannot be resumed or rolled back (None: it can)."""
        try:
            self.plan  # noqa: B018 - reading it is the check
        except JournalError as exc:
            return exc.what
        return None

    def kept(self, step_id: str) -> str | None:
        """What the step found in the file it removed, recorded as it began (the tunables a
        bcache detach takes away), so that a rollback writes it back; None when nothing was."""
        found = [r.get("kept") for r in self.records() if r["event"] == "step-begin" and r.get("step") == step_id]
        kept = next((k for k in reversed(found) if isinstance(k, str) and k), None)
        try:  # only settings the file may hold, in their own words (a damaged record is no value)
            return tunables.settings_text(tunables.parse_settings(kept)) if kept else None
        except ValueError:
            return None

    def steps_run(self) -> list[str]:
        """The steps that ran or were found in effect, in order."""
        return [r["step"] for r in self.records() if r["event"] in ("step-end", "step-skip")]


def unfinished_journals(state_dir: Path) -> list[Journal]:
    """Journals without an ending, oldest first: interrupted plans, and journals that cannot be
    read at all (see :meth:`Journal.problem`), which only abandoning clears."""
    d = journal_dir(state_dir)
    if not d.is_dir():
        return []
    try:
        statedir.check(state_dir)
    except OSError as exc:
        raise JournalError(state_dir, f"cannot be used ({exc.strerror or exc})", "the state directory") from None
    out = []
    for path in sorted(d.glob("*.jsonl")):
        journal = Journal(path)
        try:
            if journal.finished:
                continue
        except JournalError:
            pass
        out.append(journal)
    return out


def abandon(journal: Journal) -> None:
    """Record that the user decided not to resume or roll back this journal's plan. A journal
    that cannot be read or appended to (not text, a directory) is renamed aside instead."""
    try:
        journal.records()
        journal.write("abandoned")
    except JournalError:
        try:
            journal.path.rename(journal.path.with_name(journal.path.name + ".abandoned"))
        except OSError as exc:
            raise JournalError(
                journal.path,
                f"cannot be set aside ({exc.strerror or exc}); move it out of {journal.path.parent} by hand",
            ) from None


def audit(state_dir: Path, step_id: str, command: str, returncode: int | str, seconds: float) -> None:
    line = f"{datetime.now(UTC).isoformat(timespec='seconds')}\t{step_id}\t{returncode}\t{seconds:.1f}s\t{command}\n"
    path = state_dir / "audit.log"
    try:
        fd = statedir.open_in(state_dir, "audit.log", flags=os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise JournalError(path, f"cannot be written ({exc.strerror or exc})", "the audit log") from None
