"""What boot readiness adds to a plan made on this machine (advisor/health/boot.py).

A plan that makes or removes a cache on a device the boot needs (mounted at /, /usr, /var or
/boot, in /etc/fstab without ``nofail``, opened by /etc/crypttab, the resume device) ends by
making the initramfs of every installed kernel again, journaled as any step. When the
initramfs is what assembles the device (/, /usr, resume, crypttab's ``initramfs``), the step is
checked afterwards: every image must carry what assembling the device takes (dm-cache and
cache_check, dm-writecache, bcache and its udev rule). The step has no undo: the image made for
the cached device boots it without the cache as well, and a removal makes it again anyway.
What boot readiness finds of the plan's cache becomes the plan's notes: its warnings (lvm2 told
to skip the metadata check, an fstab line naming /dev/bcacheN), and what apply's preflight will
refuse until it is fixed (lvm2's cache_check missing, bcache's udev rule missing).
"""

from __future__ import annotations

from dataclasses import replace

from advisor.disks.devices import Inventory
from advisor.disks.discovery import find_device
from advisor.health.boot import (
    BootFacts,
    in_initramfs,
    items_for,
    needs_at_boot,
    plan_findings,
    sentence,
)
from advisor.plan import language
from advisor.plan.canon import initramfs_needs
from advisor.plan.checks import InitramfsCarries
from advisor.plan.model import Plan, Step
from recipes.registry import recipe

STEP_ID = "initramfs"
SECONDS_PER_KERNEL = 45.0  # update-initramfs of one Debian 12 kernel with MODULES=most and zstd


def mirrored(plan: Plan) -> bool:
    """Whether the plan puts its cache on a raid1 pair (the initramfs then needs dm-raid)."""
    return any(m is not None and m.shape == "lvcreate-raid1" for m in (language.match_argv(s.argv) for s in plan.steps))


def with_boot(plan: Plan, inv: Inventory, facts: BootFacts) -> Plan:
    """``plan`` with the initramfs step when its device is needed at boot, and boot
    readiness's warnings as notes (unchanged when ``facts`` were not read)."""
    r = recipe(plan.kind)
    if not facts.read or r is None or r.backend is None:
        return plan
    target = find_device(inv, plan.target)
    updates = r.effect in ("makes", "removes") and target is not None
    needs = needs_at_boot(inv, target, facts) if updates and target is not None else []
    steps, notes = plan.steps, list(plan.notes)
    if needs and STEP_ID not in {s.id for s in steps}:
        token = initramfs_needs(r.backend.id, r.effect, mirrored(plan))
        early = in_initramfs(needs)
        step = Step(
            STEP_ID,
            facts.update_argv,
            post=(InitramfsCarries(needs=token),) if early else (),
            seconds=SECONDS_PER_KERNEL * max(1, len(facts.kernels)),
            timeout=1800.0,
        )
        steps = (*steps, step)
        reasons = "; ".join(n.why for n in needs)
        carries = ", ".join(i.label for i in items_for(token, facts))
        notes.append(
            f"{plan.target} is needed at boot ({reasons}): the last step makes the initramfs of every installed "
            "kernel again"
            + (f", and checks that each one carries {carries}." if early else ".")
            + " It has no undo: that image boots the device without the cache as well."
        )
    findings = plan_findings(
        facts,
        inv,
        subject=plan.target,
        target=target,
        backend=r.backend.id,
        effect=r.effect,
        updates_initramfs=True,
        mirrored=mirrored(plan),
    )
    notes += [
        f"Boot{' (apply refuses the plan until this is fixed)' if f.severity == 'critical' else ''}: {sentence(f)}."
        for f in findings
    ]
    return replace(plan, steps=tuple(steps), notes=tuple(dict.fromkeys(notes)))
