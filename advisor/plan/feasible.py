"""The safety gate (advisor.disks.gate) held to a plan: the devices a plan that makes a cache is
bound to must pass it for the plan's backend, on the inventory the plan is made from and again
on the live machine before it is applied, so an old or handed plan file cannot skip it."""

from __future__ import annotations

from advisor.backends import WRITECACHE, backend
from advisor.disks.devices import Inventory
from advisor.disks.discovery import find_device
from advisor.disks.gate import Barrier, destroy_barriers, fast_barriers, slow_barriers, writecache_barrier
from advisor.plan import language
from advisor.plan.model import Plan

SLOW_ROLES = ("origin", "backing")
FAST_ROLES = ("ssd", "ssd2", "cache")


def barriers(plan: Plan, inv: Inventory) -> list[Barrier]:
    """The gate's refusals of this plan: of any plan, a device it would destroy that another
    system owns or an md array's member; of a plan that makes a cache, its devices for that
    backend (of one that makes a cache anew on a cached LV, its SSDs). A migration is not among
    them: a plan that makes a cache on a device with data destroys it only with the user's
    leave, which the recipe and the preview hold it to."""
    out: list[Barrier] = []
    for step in plan.steps:
        undone = [m for m in map(language.match_argv, step.undo) if m is not None]  # a rollback runs these
        for name in (*language.destroys(step), *(n for m in undone for n in language.destroyed_by(m))):
            dev = find_device(inv, name if name.startswith("/") else f"/dev/{name}")
            found = destroy_barriers(inv, dev) if dev is not None else []
            out += [b for b in found if b.what not in [o.what for o in out]]
    kind = language.kind_of(plan.kind)
    if kind is None or not (kind.makes or kind.remakes):
        return out
    made = backend(kind.makes or kind.remakes)
    for bound in plan.devices:
        dev = find_device(inv, bound.path)
        if dev is None:
            continue  # a missing device is preflight's to report
        if bound.role in SLOW_ROLES and kind.makes:  # a cache made anew: its LV is cached already
            found = slow_barriers(inv, dev)
        elif bound.role in FAST_ROLES:
            found = fast_barriers(inv, dev)
        else:
            found = []
        out += [b for b in found if b.bars(made) and not b.migrate and b.what not in [o.what for o in out]]
    if made is WRITECACHE:
        size, block = _writecache_size(plan)
        memory = writecache_barrier(size, block, inv.memory_bytes) if size else None
        out += [memory] if memory is not None else []
    return out


def _writecache_size(plan: Plan) -> tuple[int, int]:
    """The cache volume's size and the writecache's block size, as the plan's commands say
    (0 when the plan attaches an LV it does not create)."""
    sizes: dict[str, int] = {}
    for step in plan.steps:
        m = language.match_argv(step.argv) if step.argv else None
        if m is None:
            continue
        if m.shape.startswith("lvcreate") and "SIZEK" in m.args:
            sizes[f"{m.args['VG']}/{m.args['NAME']}"] = int(m.args["SIZEK"][:-1]) * 1024
        if m.shape == "writecache-attach":
            block = int(m.args["WCSETTINGS"].split()[0].removeprefix("block_size="))
            return sizes.get(m.args["VGLV"], 0), block
    return 0, 4096
