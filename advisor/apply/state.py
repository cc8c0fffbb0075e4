"""The live system as the plan checks see it: LVM's reports, the device inventory (discovered on
first use: most checks need only pvs and lvs, and a full discovery takes seconds) and bcache's
sysfs files, with ``{role}`` paths resolved to the plan's device."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from advisor import tunables
from advisor.disks.collect import collect
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory, find_device
from advisor.errors import CachewiseError, codes
from advisor.health.boot import BootFacts, image_lacks, read_facts
from advisor.plan.language import TUNABLES_FILE, UUID, repeats
from advisor.plan.model import Plan, Step
from advisor.readers import lvm
from advisor.readers.lvm import Lv
from advisor.runner import CommandRunner

codes({"role-missing": "the plan's {role} device is not present"})


class RoleMissing(CachewiseError):
    """A ``{role}`` path names a plan device that is not present."""

    def __init__(self, role: str) -> None:
        self.role = role
        super().__init__("role-missing", role=role)


@dataclass
class LiveState:
    """A :class:`~advisor.plan.checks.SystemView` of this machine, read once: lvm2's two reports
    on their first use (a bcache plan's checks need neither, an lvcreate's only ``lvs``; each
    costs 0.3 s on one emulated CPU, and apply reads the state before its first step and after
    each one), the inventory likewise."""

    runner: CommandRunner | None = None
    pvs: dict[str, str] = field(default_factory=dict)  # real device path -> VG ('' when none)
    lvs: dict[str, Lv] = field(default_factory=dict)  # "vg/lv" -> row, hidden LVs included
    _inv: Inventory | None = None
    plan: Plan | None = None  # whose {role} paths are resolved
    _boot: dict[bool, BootFacts] = field(default_factory=dict)  # read on first use, without and with the images
    _unread: set[str] = field(default_factory=set)  # lvm2's reports ("pvs", "lvs") not run yet

    @classmethod
    def read(cls, runner: CommandRunner, plan: Plan | None = None) -> LiveState:
        return cls(runner, plan=plan, _unread={"pvs", "lvs"} if runner.which("lvs") is not None else set())

    def _report(self, name: str) -> None:
        """Run lvm2's ``name`` report now, if this state was read and it has not run yet."""
        if name not in self._unread or self.runner is None:
            return
        self._unread.discard(name)
        if name == "pvs":
            self.pvs = {os.path.realpath(r["pv_name"]): r.get("vg_name", "") for r in lvm.pvs(self.runner)}
        else:
            self.lvs = {lv.full_name: lv for lv in (Lv.from_row(r) for r in lvm.lvs(self.runner, lvm.CACHE_FIELDS))}

    @property
    def inventory(self) -> Inventory:
        if self._inv is None:
            self._inv = build_inventory(collect(self.runner or CommandRunner()))
        return self._inv

    def device(self, path: str) -> Device | None:
        return find_device(self.inventory, path)

    def partitions(self, dev: Device) -> list[Device]:
        return [p for p in (self.inventory.by_name(name) for name in dev.partitions) if p is not None]

    def boot(self, images: bool = False) -> BootFacts:
        """What decides whether caches come back after a reboot (advisor/health/boot.py), read
        on first use; ``images``: with every initramfs listed. Without a runner (a state made by
        hand) nothing is read, and nothing is judged."""
        if images not in self._boot:
            self._boot[images] = read_facts(self.runner, images=images) if self.runner else BootFacts()
        return self._boot[images]

    def initramfs_lacks(self, needs: str) -> list[str]:
        return [lack.words() for lack in image_lacks(needs, self.boot(images=True))]

    def pv_vg(self, device: str) -> str | None:
        self._report("pvs")
        return self.pvs.get(os.path.realpath(device))

    def lv(self, name: str) -> Lv | None:
        self._report("lvs")
        return self.lvs.get(name)

    def names(self) -> set[str]:
        """The VGs and LVs (VG/LV) lvm2 reports now."""
        self._report("pvs")
        self._report("lvs")
        return {vg for vg in self.pvs.values() if vg} | set(self.lvs) | {name.split("/")[0] for name in self.lvs}

    def resolve(self, path: str) -> str:
        """``{ROLE}/rest`` -> /sys/class/block/NAME/rest for the plan's device with that role."""
        if not path.startswith("{") or self.plan is None:
            return path
        role, _, rest = path[1:].partition("}")
        bound = next((d for d in self.plan.devices if d.role == role), None)
        if bound is None:
            raise RoleMissing(role)
        name = kernel_name(bound.path) if self._inv is None else None
        if name is None:  # no such node (no udev, no by-id links): the inventory knows it by identity
            dev = self.device(bound.path)
            if dev is None:
                raise RoleMissing(role)
            name = dev.name
        return f"/sys/class/block/{name}{rest}"

    def read_sysfs(self, path: str) -> str | None:
        try:
            return Path(self.resolve(path)).read_text().strip()
        except (OSError, RoleMissing):
            return None

    def sysfs_exists(self, path: str) -> bool:
        try:
            return os.path.exists(self.resolve(path))
        except RoleMissing:
            return False

    def backing_uuid(self) -> str:
        """The bcache UUID of the plan's backing device, as its sysfs directory shows it once the
        device is registered (RoleMissing: it cannot be read)."""
        uuid = self.read_sysfs("{backing}/bcache/backing_dev_uuid")
        if uuid is None or not re.fullmatch(UUID, uuid):
            raise RoleMissing("backing")
        return uuid

    def read_config(self, path: str) -> str | None:
        if path != TUNABLES_FILE:
            return None
        try:
            conf = tunables.read(self.backing_uuid())
        except RoleMissing:
            return None
        except tunables.TunablesError:
            return ""  # a file is there, but not one cachewise uses
        return None if conf is None else conf.settings


def kernel_name(path: str) -> str | None:
    """The kernel's name of the block device node ``path`` leads to (a link's target), or None
    when it leads to none. A bcache plan's checks find the device's sysfs folder this way at each
    look, where a full discovery (blkid, lvm2's reports, every disk) cost the 9 looks of a
    bcache-create 7 s on one emulated CPU."""
    real = os.path.realpath(path)
    name = os.path.basename(real)
    try:
        is_block = stat.S_ISBLK(os.stat(real).st_mode)
    except OSError:
        return None
    return name if is_block and real.startswith("/dev/") and os.path.exists(f"/sys/class/block/{name}") else None


def in_effect(step: Step, state: LiveState) -> bool:
    """Whether a step's postconditions hold (a step without any is never in effect, nor is one
    that runs whenever a run reaches it: its checks only verify it after it ran)."""
    return bool(step.post) and not repeats(step) and all(c.holds(state) for c in step.post)


def last_in_effect(plan: Plan, state: LiveState) -> int:
    """The index of the last step in effect (-1: none). Steps run in order, so every step before
    it has run, even when its own postcondition no longer shows (lvconvert absorbs the metadata
    LV into the pool): the run starts after it, and preflight checks that step's preconditions."""
    return max((i for i, s in enumerate(plan.steps) if in_effect(s, state)), default=-1)


def wholly_in_effect(plan: Plan, state: LiveState) -> bool:
    """Whether the plan has taken effect as a whole: its last step is in effect, or every step
    after the last one in effect only runs again (the initramfs made again), so that a run would
    change no device."""
    last = last_in_effect(plan, state)
    return last >= 0 and all(repeats(s) for s in plan.steps[last + 1 :])
