"""Doctor: what is wrong with this machine's caches (or a saved snapshot's), each finding with
its cause and its fix; the numbers behind them for the Prometheus export; and the plan a fix
names, built for a front end to preview.

Each run records the caches' samples in the history (unless asked not to), so that a doctor run
by a timer sees, next time, whether dirty data went down and how fast the SSDs are written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.disks.devices import Inventory
from advisor.errors import CachewiseError, codes, next_step
from advisor.health.doctor import Report, Settings, examine
from advisor.health.findings import Fix
from advisor.health.look import Look, from_snapshot, gather
from advisor.history import History
from advisor.plan.model import Plan
from advisor.watch.sampler import Sample
from cachewise.core import plans
from cachewise.core.context import Core, Refused, is_root

codes(
    {
        "not-a-cache-in-snapshot": "{target} is not a cache in this snapshot (caches: {caches})",
        "fix-has-no-plan": "this finding's fix is not a plan cachewise makes: {how}",
        "fix-plan-options": "the fix's plan {kind} does not take these options ({why})",
        "fix-needs-choice": "the fix's plan {kind} needs your choice of {needs}; nothing was planned",
    }
)


@dataclass(frozen=True)
class DoctorRequest:
    """``target``: one cache (VG/LV, bcacheN or its backing device) instead of every one;
    ``record``: keep this run's samples in the history (what the next run judges a flush by)."""

    target: str | None = None
    settings: Settings = field(default_factory=Settings)
    record: bool = True


@dataclass(frozen=True)
class Checkup:
    """One doctor run: the report, what it was made from, the samples read now (the export
    writes them too), the inventory (a fix's plan is made against it), and history warnings."""

    report: Report
    look: Look
    samples: tuple[Sample, ...]
    inventory: Inventory | None
    warnings: tuple[CachewiseError, ...] = ()


def doctor(core: Core, request: DoctorRequest | None = None) -> Checkup:
    request = request or DoctorRequest()
    now = time.time()
    inventory = core.discovery.scan()
    warnings: list[CachewiseError] = []
    if core.replay:
        look = _snapshot(from_snapshot(inventory, now), request.target)
        samples: tuple[Sample, ...] = ()
    else:
        found: dict[str, list[Sample]] = {}

        def past(name: str, since: float) -> list[Sample]:
            warning = core.record(lambda h: found.setdefault(name, h.samples(name, since)))
            if warning is not None:
                warnings.append(warning)
            return found.get(name, [])

        look = gather(core.runner, core.sampler(), inventory, past, now, is_root(), request.target)
        samples = tuple(c.sample for c in look.caches if c.sample is not None)
        if request.record and samples:

            def keep(h: History) -> None:  # and thin the old ones, as a watch does: a timer runs doctor forever
                h.record_samples(list(samples))
                h.thin_samples(now)

            warning = core.record(keep)
            if warning is not None:
                warnings.append(warning)
    return Checkup(examine(look, request.settings), look, samples, inventory, tuple(dict.fromkeys(warnings)))


def _snapshot(look: Look, target: str | None) -> Look:
    """The snapshot's look, narrowed to the cache ``target`` names."""
    if target is None:
        return look
    wanted = {target, target.removeprefix("/dev/")}
    kept = tuple(
        c
        for c in look.caches
        if c.name in wanted or (c.device is not None and ({c.device.name, c.device.devnode} & wanted))
    )
    if not kept:
        raise Refused(
            "not-a-cache-in-snapshot",
            target=target,
            caches=", ".join(c.name for c in look.caches) or "none",
            next=[next_step("name-cache")],
        )
    return Look(look.now, look.live, look.root, look.inventory, kept, (), look.memory_bytes, look.unread)


def fix_plan(core: Core, inventory: Inventory, fix: Fix, chosen: Mapping[str, Any] | None = None) -> Plan:
    """The plan a finding's fix names, made as `plan KIND` would make it (refusals as its own),
    with the admin's ``chosen`` values of what the fix ``needs`` (a new SSD's path)."""
    if not fix.plan:
        raise Refused("fix-has-no-plan", how=fix.how)
    chosen = dict(chosen or {})
    missing = [n for n in fix.needs if not chosen.get(n)]
    if missing:
        raise Refused("fix-needs-choice", kind=fix.plan, needs=", ".join(missing))
    recipe = plans.recipe_of(fix.plan)
    try:
        options = recipe.options(**fix.options, **chosen)
    except TypeError as exc:
        raise Refused("fix-plan-options", kind=fix.plan, why=exc) from None
    return plans.make(core, inventory, fix.plan, options)
