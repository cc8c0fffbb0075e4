"""The live system as the plan checks see it: LVM's reports, the device inventory (discovered on
first use: most checks need only pvs and lvs, and a full discovery takes seconds) and bcache's
sysfs files, with ``{role}`` paths resolved to the plan's device."""

from __future__ import annotations

import os
import re
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
    """A :class:`~advisor.plan.checks.SystemView` of this machine, read once."""

    runner: CommandRunner | None = None
    pvs: dict[str, str] = field(default_factory=dict)  # real device path -> VG ('' when none)
    lvs: dict[str, Lv] = field(default_factory=dict)  # "vg/lv" -> row, hidden LVs included
    _inv: Inventory | None = None
    plan: Plan | None = None  # whose {role} paths are resolved
    _boot: dict[bool, BootFacts] = field(default_factory=dict)  # read on first use, without and with the images

    @classmethod
    def read(cls, runner: CommandRunner, plan: Plan | None = None) -> LiveState:
        state = cls(runner, plan=plan)
        if runner.which("lvs") is None:
            return state
        state.pvs = {os.path.realpath(r["pv_name"]): r.get("vg_name", "") for r in lvm.pvs(runner)}
        lvs = (Lv.from_row(r) for r in lvm.lvs(runner, lvm.CACHE_FIELDS))
        state.lvs = {lv.full_name: lv for lv in lvs}
        return state

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
        return self.pvs.get(os.path.realpath(device))

    def lv(self, name: str) -> Lv | None:
        return self.lvs.get(name)

    def resolve(self, path: str) -> str:
        """``{ROLE}/rest`` -> /sys/class/block/NAME/rest for the plan's device with that role."""
        if not path.startswith("{") or self.plan is None:
            return path
        role, _, rest = path[1:].partition("}")
        bound = next((d for d in self.plan.devices if d.role == role), None)
        dev = self.device(bound.path) if bound is not None else None
        if dev is None:
            raise RoleMissing(role)
        return f"/sys/class/block/{dev.name}{rest}"

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


def existing_names(state: LiveState) -> set[str]:
    """The VGs and LVs (VG/LV) lvm2 reports now."""
    return {vg for vg in state.pvs.values() if vg} | set(state.lvs) | {name.split("/")[0] for name in state.lvs}
