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
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.errors import CachewiseError, codes, next_step, what_of
from advisor.plan.model import Plan, PlanError

ENDINGS = ("done", "rolled-back", "abandoned")


codes(
    {
        "journal-unusable": "{what} {path} {why}",
        "busy": "another cachewise is applying a plan with {dir} (it holds {lock})",
    }
)


class JournalError(CachewiseError):
    """A journal cannot be read or written: which one, and why."""

    def __init__(self, path: Path, why: str, what: str = "the apply journal") -> None:
        self.path = path
        super().__init__("journal-unusable", path=path, why=why, what=what)


class Busy(CachewiseError):
    """Another cachewise is applying a plan with the same state directory."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__("busy", dir=state_dir, lock=state_dir / "apply.lock", next=[next_step("wait-for-it")])


def journal_dir(state_dir: Path) -> Path:
    return state_dir / "journal"


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Held while a plan runs, rolls back or is abandoned: two cannot interleave (flock on
    STATE/apply.lock, released by the kernel if the process dies)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "apply.lock", "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise Busy(state_dir) from None
            raise
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class Journal:
    path: Path

    @classmethod
    def create(cls, state_dir: Path, plan: Plan) -> Journal:
        directory = journal_dir(state_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(directory, f"cannot be made ({exc.strerror or exc})") from None
        name = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + f"-{plan.kind}-{os.getpid()}.jsonl"
        journal = cls(directory / name)
        journal.write("plan", plan=plan.to_json())
        return journal

    def write(self, event: str, **fields: Any) -> None:
        """Append a record and fsync it; JournalError (a full disk, say) when it cannot."""
        record = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
        try:
            with self.path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise JournalError(self.path, f"cannot be written ({exc.strerror or exc})") from None

    def records(self) -> list[dict[str, Any]]:
        """Its records (one cut short by a crash is left out); JournalError when it is not a
        journal cachewise can read."""
        try:
            text = self.path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "is not text"
            raise JournalError(self.path, f"cannot be read ({why})") from None
        out = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
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

    def steps_run(self) -> list[str]:
        """The steps that ran or were found in effect, in order."""
        return [r["step"] for r in self.records() if r["event"] in ("step-end", "step-skip")]


def unfinished_journals(state_dir: Path) -> list[Journal]:
    """Journals without an ending, oldest first: interrupted plans, and journals that cannot be
    read at all (see :meth:`Journal.problem`), which only abandoning clears."""
    d = journal_dir(state_dir)
    if not d.is_dir():
        return []
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
        with path.open("a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise JournalError(path, f"cannot be written ({exc.strerror or exc})", "the audit log") from None
