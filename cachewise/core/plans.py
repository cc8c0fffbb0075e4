"""Plan: a recipe's plan from its typed options, the plan for a recommendation, and plan files
(saved as JSON or an Ansible playbook, loaded and checked against the plan language)."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from advisor.backends import backend
from advisor.disks.devices import Inventory
from advisor.disks.discovery import find_device
from advisor.disks.fsblock import with_fs_block_size
from advisor.errors import codes, next_step
from advisor.inputs import MiB, Unreadable, Untrusted, read_text
from advisor.plan.feasible import barriers
from advisor.plan.model import Plan, PlanError
from advisor.prediction import Prediction
from cachewise.core.context import Core, Refused
from cachewise.core.files import write_new
from recipes.ansible import render
from recipes.boot import with_boot
from recipes.registry import Recipe, maker, recipe, recipes

if TYPE_CHECKING:  # the recommendation's model loads numpy, which planning from the command line does not need
    from advisor.advice.model import Recommendation

codes(
    {
        "no-such-recipe": "there is no recipe {kind!r} (the recipes: {kinds})",
        "not-to-cache": "the recommendation is not to cache, so there is nothing to set up",
        "cant-judge-yet": "the recommendation cannot judge the workload yet, so there is nothing to set up; record "
        "{record}, and ask again",
        "no-recipe-for": "cachewise has no recipe for {backend}",
        "writeback-not-accepted": "{label} keeps written data only on the SSD until the disk has it, and the fast "
        "side is neither redundant nor mirrored by the plan: that needs your acceptance of the risk in so many words",
        "plan-unreadable": "cannot read the plan {path}: {why}",
        "plan-file-unusable": "{path}: {why}",
        "plan-untrusted": "{path} is not safe for root to apply: {why}",
    }
)


def recipe_of(kind: str) -> Recipe[Any]:
    found = recipe(kind)
    if found is None:
        raise Refused("no-such-recipe", kind=kind, kinds=", ".join(r.kind for r in recipes()))
    return found


def make(core: Core, inv: Inventory, kind: str, options: Any) -> Plan:
    """The plan of recipe ``kind`` for these options (an instance of its options dataclass)."""
    r = recipe_of(kind)
    if not isinstance(options, r.options):
        raise TypeError(f"{kind} takes {r.options.__name__}, not {type(options).__name__}")
    if r.reads_fs_block_size and core.live:
        dev = find_device(inv, getattr(options, r.slow))
        if dev is not None:
            inv = with_fs_block_size(inv, dev, core.runner)
    # A plan says where it was made: the machine's own name, or the snapshot's (which apply
    # refuses unless the user accepts it in so many words).
    plan = replace(r.build(inv, options), host=inv.hostname, from_snapshot=core.replay)
    if core.boot is not None:  # this machine: the initramfs step for a device the boot needs, and boot's notes
        plan = with_boot(plan, inv, core.boot())
    plan.check()  # what apply will hold it to, now rather than when it is applied
    refused = barriers(plan, inv)  # and the safety gate, which apply asks again on the live machine
    if refused:
        raise refused[0]
    return plan


def recommended(
    core: Core, inv: Inventory, rec: Recommendation, slow: str, fast: list[str], wipe: bool = False
) -> Plan:
    """The plan for a recommendation's cache, on the devices it was made for, carrying what it
    predicts (for the watch). ``wipe``: the user lets the plan destroy what the devices hold."""
    cfg = rec.config
    if cfg is None and rec.uncertain is not None:
        raise Refused("cant-judge-yet", record=rec.uncertain.record, next=[next_step("record-trace")])
    if cfg is None:
        raise Refused("not-to-cache")
    accepted = any(rec.inputs.get(k) for k in ("accept_writeback_risk", "fast_mirrored", "fast_redundant"))
    if cfg.mode == "writeback" and not cfg.mirrored_pool and not accepted:
        # An alternative chosen instead of the recommendation can be writeback on one SSD: the
        # recommendation itself never is without this acceptance.
        raise Refused("writeback-not-accepted", label=cfg.label, next=[next_step("accept-writeback-risk")])
    r = maker(backend(cfg.backend))
    if r is None or r.adopt is None:
        raise Refused("no-recipe-for", backend=cfg.label)
    used = fast[:2] if cfg.mirrored_pool else fast[:1]
    options = r.adopt(r.for_devices(slow, used), cfg)
    if wipe:
        options = replace(options, wipe=True)  # every recipe that makes a cache takes it (test_registry)
    plan = make(core, inv, r.kind, options)
    # An SSD named and left out is said, never dropped silently (issue 30).
    unused = [
        f"{path} is not used: the cache goes on {' and '.join(used)} (a plan puts a cache on two SSDs only to "
        "mirror an lvm cache in writeback, where the second copy keeps written data safe)"
        for path in fast[len(used) :]
    ]
    return replace(plan, prediction=Prediction.from_config(asdict(cfg)), notes=(*plan.notes, *unused))


@dataclass(frozen=True)
class SavedPlan:
    path: Path
    format: Literal["json", "ansible"]


def save(plan: Plan, path: Path, fmt: Literal["json", "ansible"] = "json") -> SavedPlan:
    """Write the plan to a new file, whole or not at all, as JSON (to apply) or as an Ansible
    playbook. Refused, with nothing written, when the file cannot be a new one or the plan has
    no playbook form (AnsibleError)."""
    text = render(plan) if fmt == "ansible" else plan.dumps()
    write_new(path, text, "no plan was saved")
    return SavedPlan(path, fmt)


PLAN_LIMIT = 16 * MiB  # a plan is a few KiB; a file this large is not one


def load(path: Path, owners: Collection[int] | None = None) -> Plan:
    """A plan file, checked against the plan language (its recipe's steps only). Only a
    regular file of at most PLAN_LIMIT bytes is read. ``owners``: when root applies it, the
    users whose plan it may be (root and the one who asked, under sudo); a file anyone else
    owns or can write is refused, since root would run what they wrote."""
    try:
        text = read_text(path, PLAN_LIMIT, owners=owners)
    except Untrusted as exc:
        secure = next_step("secure-plan-file", path=path)
        raise Refused("plan-untrusted", path=path, why=exc.why, next=[secure]) from None
    except Unreadable as exc:
        raise Refused("plan-unreadable", path=path, why=exc.why) from None
    try:
        return Plan.loads(text)
    except PlanError as exc:
        raise Refused("plan-file-unusable", path=path, why=exc.facts["why"]) from None


def apply_owners() -> frozenset[int]:
    """Who may own a plan file root applies: root, and the user who ran sudo."""
    uids = {0, os.getuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if sudo.isdigit():
        uids.add(int(sudo))
    return frozenset(uids)
