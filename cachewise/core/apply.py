"""Apply: a plan checked against the live system (preflight), confirmed by the user, run step by
step with a journal; an interrupted plan resumed, rolled back or abandoned."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from advisor.apply.journal import Busy, Journal, JournalError, journal_dir, locked
from advisor.apply.journal import abandon as abandon_journal
from advisor.apply.preflight import Problem, refusal
from advisor.apply.run import Event
from advisor.disks.discovery import find_device
from advisor.errors import CachewiseError, codes, next_step
from advisor.plan.model import Plan
from advisor.readers.lvm import ReportError
from advisor.runner import CommandError
from cachewise.core.context import Core, Refused
from cachewise.core.discover import scan
from cachewise.core.plans import load
from recipes.registry import makes_cache

codes(
    {
        "no-journal-dir": "there is no state directory to find journals in",
        "not-a-journal": "{path} is not a journal in {dir}",
        "no-journal-here": "this session has no state directory for the apply journal",
        "state-unreadable": "cannot read the system's state: {why}",
        "preflight-refused": "{lead}:\n  - {problems}",
        "name-mismatch": "the name did not match",
        "journal-damaged": "{why}",
        "nothing-interrupted": "there is no interrupted plan to {verb}",
        "interrupted-first": "an earlier plan was interrupted ({journal})",
        "no-plan-named": "no plan was named to apply",
        "plan-and-journal": "a plan ({path}) was named, and to {verb} the interrupted one: these are two "
        "different runs",
        "plan-made-elsewhere": "the plan was made {where}, not on {here}",
    }
)


class PreflightRefused(Refused):
    """The plan cannot run as things stand; ``problems`` lists what stands in the way."""

    def __init__(self, problems: list[Problem]) -> None:
        lead, sentences = refusal(problems)
        nxt = [next_step("plan-again")] if any(p.device_changed for p in problems) else []
        super().__init__("preflight-refused", lead=lead, problems="\n  - ".join(sentences), next=nxt)
        self.problems = problems


@dataclass(frozen=True)
class Interrupted:
    """Journals of plans that were interrupted, oldest first, with those that cannot be read
    (``Journal.problem()`` says why; only :func:`abandon` clears them)."""

    journals: tuple[Journal, ...]

    @property
    def damaged(self) -> Journal | None:
        return next((j for j in self.journals if j.problem()), None)

    @property
    def latest(self) -> Journal | None:
        return self.journals[-1] if self.journals else None


def interrupted(core: Core) -> Interrupted:
    return Interrupted(tuple(core.executor.pending()) if core.executor is not None else ())


def damaged(journal: Journal) -> Refused:
    """The refusal for a journal that cannot be read."""
    return Refused("journal-damaged", why=journal.problem(), next=[next_step("abandon", journal=journal.path)])


def choose(
    core: Core,
    plan_path: Path | None,
    resume: bool,
    rollback: bool,
    owners: frozenset[int] | None = None,
    accept_elsewhere: bool = False,
) -> tuple[Plan, Journal | None]:
    """The plan to run and its journal: the interrupted plan to resume or roll back, or the
    plan file named (``owners``: who may own it, see plans.load; made on this machine unless
    ``accept_elsewhere``). Refused while a journal is damaged, when a plan is interrupted and
    another is named, and when a plan is named together with resuming or rolling back (which
    run the journal's plan, not the one named)."""
    if plan_path is not None and (resume or rollback):
        raise Refused("plan-and-journal", path=plan_path, verb="resume" if resume else "roll back")
    pending = interrupted(core)
    if pending.damaged is not None:
        raise damaged(pending.damaged)
    latest = pending.latest
    if resume or rollback:
        if latest is None:
            raise Refused("nothing-interrupted", verb="resume" if resume else "roll back")
        return latest.plan, latest
    if latest is not None:
        raise Refused(
            "interrupted-first",
            journal=latest.path.name,
            next=[next_step("resume"), next_step("rollback"), next_step("abandon", journal=latest.path)],
        )
    if plan_path is None:
        raise Refused("no-plan-named", next=[next_step("name-plan")])
    plan = load(plan_path, owners)
    check_made_here(plan, accept_elsewhere)
    return plan, None


def check_made_here(plan: Plan, accept_elsewhere: bool) -> None:
    """Refused when the plan was made on another host or from a saved snapshot, unless the user
    accepted that in so many words: its devices are checked here by identity, but the plan's
    view of what they hold and of the VG is another machine's or an older one."""
    here = socket.gethostname()
    if accept_elsewhere or (plan.host == here and not plan.from_snapshot):
        return
    where = f"from a saved snapshot of {plan.host}" if plan.from_snapshot else f"on another host ({plan.host})"
    raise Refused("plan-made-elsewhere", where=where, here=here, next=[next_step("accept-elsewhere")])


def abandon(core: Core, path: Path) -> Journal:
    """Record the decision not to resume or roll back the journal at ``path`` (its steps that
    ran stay as they are)."""
    if core.state_dir is None:
        raise Refused("no-journal-dir")
    journal = Journal(path)
    where = journal_dir(core.state_dir)
    if journal.path.parent.resolve() != where.resolve() or not path.name.endswith(".jsonl"):
        raise Refused("not-a-journal", path=path, dir=where)
    with locked(core.state_dir):
        abandon_journal(journal)
    return journal


def preflight(core: Core, plan: Plan, resuming: bool = False) -> None:
    """Refused, with every problem, when the plan cannot run as things stand."""
    if core.executor is None:
        raise Refused("snapshot-only" if core.replay else "no-journal-here", next=[next_step("apply-on-machine")])
    try:
        problems = core.executor.preflight(plan, resuming)
    except (CommandError, ReportError) as exc:
        raise Refused("state-unreadable", why=exc, next=exc.next) from None
    if problems:
        raise PreflightRefused(problems)


def run(
    core: Core,
    plan: Plan,
    confirm: Callable[[Plan], bool],
    report: Callable[[Event], None],
    journal: Journal | None = None,
    rollback: bool = False,
) -> str:
    """Preflight, then the user's confirmation, then the journaled run (or the roll back of
    ``journal``). Returns the outcome; Refused before anything ran, ApplyError (saying where
    the system stands) when a step failed."""
    preflight(core, plan, resuming=journal is not None)
    if not confirm(plan):
        raise Refused("name-mismatch")
    assert core.executor is not None
    if rollback:
        assert journal is not None
        return core.executor.rollback(journal, report)
    outcome = core.executor.apply(plan, report, journal)
    record_made(core, plan)
    return outcome


def record_made(core: Core, plan: Plan) -> CachewiseError | None:
    """Remember a cache this plan made, with its prediction, for the watch."""
    if not makes_cache(plan.kind):
        return None
    return core.record(lambda h: h.record_cache(plan.target, plan.kind, plan.prediction, time.time()))


def bcache_device(core: Core, plan: Plan) -> str | None:
    """The stable path of the bcache device a bcache-create plan made."""
    backing_path = next((d.path for d in plan.devices if d.role == "backing"), None)
    inv = scan(core)
    backing = find_device(inv, backing_path) if backing_path else None
    if backing is None:
        return None
    bcache = next((d for d in inv.devices if d.kind == "bcache" and backing.name in d.slaves), None)
    return (bcache.stable_path or bcache.devnode) if bcache is not None else None


__all__ = ["Busy", "Interrupted", "JournalError", "PreflightRefused", "abandon", "choose", "interrupted", "run"]
