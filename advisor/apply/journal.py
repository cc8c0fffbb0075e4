"""The apply journal and the audit log, both in the state directory.

The journal is append-only JSON lines, one file per plan run, fsynced after every record: the
plan itself first, then each step's begin, end or skip, and how the run ended (``done``,
``rolled-back``, ``abandoned``). A journal without an end is an interrupted plan, which
``cachewise apply --resume`` or ``--rollback`` finishes. The audit log has one line per
command run: time, step, exit code, duration, command.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.plan.model import Plan

ENDINGS = ("done", "rolled-back", "abandoned")


def journal_dir(state_dir: Path) -> Path:
    return state_dir / "journal"


@dataclass
class Journal:
    path: Path

    @classmethod
    def create(cls, state_dir: Path, plan: Plan) -> Journal:
        journal_dir(state_dir).mkdir(parents=True, exist_ok=True)
        name = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + f"-{plan.kind}-{os.getpid()}.jsonl"
        journal = cls(journal_dir(state_dir) / name)
        journal.write("plan", plan=plan.to_json())
        return journal

    def write(self, event: str, **fields: Any) -> None:
        record = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
        with self.path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a record cut short by a crash
        return out

    @property
    def plan(self) -> Plan:
        first = self.records()[0]
        return Plan.from_json(first["plan"])

    @property
    def finished(self) -> bool:
        return any(r["event"] in ENDINGS for r in self.records())

    def steps_run(self) -> list[str]:
        """The steps that ran or were found in effect, in order."""
        return [r["step"] for r in self.records() if r["event"] in ("step-end", "step-skip")]


def unfinished_journals(state_dir: Path) -> list[Journal]:
    d = journal_dir(state_dir)
    if not d.is_dir():
        return []
    journals = [Journal(p) for p in sorted(d.glob("*.jsonl"))]
    return [j for j in journals if j.records() and not j.finished]


def audit(state_dir: Path, step_id: str, command: str, returncode: int | str, seconds: float) -> None:
    line = f"{datetime.now(UTC).isoformat(timespec='seconds')}\t{step_id}\t{returncode}\t{seconds:.1f}s\t{command}\n"
    with (state_dir / "audit.log").open("a") as fh:
        fh.write(line)
