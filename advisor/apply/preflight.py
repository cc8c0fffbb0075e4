"""Everything that must be true before a plan's first command runs, as structured problems.

Root, the tools the steps run, the kernel modules the plan needs, the devices it was made
for (same identity and size), and the preconditions of the first step not yet in effect.
Problems carry a code and fields; :meth:`Problem.sentence` and :func:`refusal` make the
words the CLI and the TUI show.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from advisor.apply.state import LiveState, RoleMissing, last_in_effect, wholly_in_effect
from advisor.disks.devices import INACTIVE_IDENTITY
from advisor.disks.discovery import find_device
from advisor.health import boot
from advisor.plan import language
from advisor.plan.canon import cache_sets, context
from advisor.plan.feasible import barriers
from advisor.plan.language import created_names
from advisor.plan.model import BoundDevice, Plan
from advisor.readers.blkid import parse_export
from advisor.runner import TOOL_PACKAGES, CommandError, CommandRunner

Code = Literal[
    "not-root",
    "tool-missing",
    "module-missing",
    "device-missing",
    "device-replaced",
    "device-resized",
    "device-holds-data",
    "path-untrusted",
    "name-taken",
    "cache-set-unbound",
    "cache-set-shared",
    "gate",
    "precondition",
    "boot",
]
DEVICE_CHANGED: tuple[Code, ...] = ("device-missing", "device-replaced", "device-resized", "device-holds-data")


@dataclass(frozen=True)
class Problem:
    code: Code
    subject: str  # the tool, module, device path or step description
    detail: str = ""  # what was found: the package, modprobe's words, the identity or size now, the check
    planned: str = ""  # what the plan expected (identity, size)

    @property
    def device_changed(self) -> bool:
        return self.code in DEVICE_CHANGED

    def sentence(self) -> str:
        if self.code == "not-root":
            return "applying a plan changes disks and needs root; run it with sudo"
        if self.code == "tool-missing":
            return f"{self.subject} is not installed (apt-get install {self.detail})"
        if self.code == "module-missing":
            return f"the kernel module {self.subject} cannot be loaded ({self.detail}); this kernel lacks it"
        if self.code == "device-missing":
            return f"{self.subject} ({self.detail}) is not present any more"
        if self.code == "device-replaced":
            return f"{self.subject} is now a different device (identity {self.detail}, planned for {self.planned})"
        if self.code == "device-resized":
            return f"{self.subject} changed size ({self.detail} bytes, planned for {self.planned})"
        if self.code == "device-holds-data":
            return (
                f"{self.subject} now holds {self.detail}, which the plan would destroy but did not know of "
                f"(planned: {self.planned})"
            )
        if self.code == "path-untrusted":
            return f"{self.subject} is not a path root can trust: {self.detail}"
        if self.code == "name-taken":
            return f"{self.subject} exists already, and the plan would create it"
        if self.code in ("gate", "boot"):
            return self.subject
        if self.code == "cache-set-shared":
            return (
                f"the plan stops the cache set {self.subject}, which also caches {self.detail} now (a disk joined "
                "it since the plan was made); make the plan again"
            )
        if self.code == "cache-set-unbound":
            now = "is not attached to any" if self.detail == "none" else f"is attached to the cache set {self.detail}"
            return f"the plan stops the cache set {self.subject}, but its backing device {now}"
        return f"before '{self.subject}': expected that {self.detail}, but it is not so"


def refusal(problems: list[Problem]) -> tuple[str, list[str]]:
    """The refusal's lead (whether the devices changed, or the system does not allow the plan
    now) and one sentence per problem."""
    changed = any(p.device_changed for p in problems)
    lead = "the devices changed since the plan was made" if changed else "the plan cannot run as things stand"
    return lead, [p.sentence() for p in problems]


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def path_problem(path: str) -> str | None:
    """Why root should not act on a device path (None: it may): a directory on the way, or the
    link or node itself, that another user owns, or a directory others can write to, could be
    made to lead elsewhere between the check and the command; and it must end at a block
    device. A path that is not there is not judged here (the device is then missing)."""
    at = Path("/")
    for part in Path(path).parts[1:]:
        at = at / part
        try:
            st = os.lstat(at)
        except OSError:
            return None
        if st.st_uid != 0:
            return f"{at} belongs to {_owner(st.st_uid)}"
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022:
            return f"other users can write to {at}"
    try:
        if not stat.S_ISBLK(os.stat(path).st_mode):
            return "it does not lead to a block device"
    except OSError:
        return None
    return None


def verify_devices(plan: Plan, state: LiveState, resuming: bool = False) -> list[Problem]:
    """How the plan's devices differ from what is there now (empty: all match): each is the same
    device (identity and size) at a path root can trust, and each one the plan overwrites holds
    nothing the plan did not know of (unless resuming: the plan's own steps changed them)."""
    problems = []
    overwritten = set() if resuming else set(plan.destroyed_devices())
    for bound in plan.devices:
        why = path_problem(bound.path)
        if why:
            problems.append(Problem("path-untrusted", bound.path, why))
            continue
        if bound.identity and bound.identity.startswith(INACTIVE_IDENTITY):
            problems += _inactive_lv(bound, state, resuming)
            continue
        dev = state.device(bound.path)
        if dev is None:
            problems.append(Problem("device-missing", bound.path, bound.role))
            continue
        if bound.identity and dev.identity != bound.identity:
            problems.append(Problem("device-replaced", bound.path, str(dev.identity), bound.identity))
        if dev.size_bytes != bound.size_bytes:
            problems.append(Problem("device-resized", bound.path, f"{dev.size_bytes:,}", f"{bound.size_bytes:,}"))
        if bound.path not in overwritten:
            continue
        held = dev.signature or _probed(dev.devnode, state)
        if held and held != bound.signature:
            problems.append(Problem("device-holds-data", bound.path, held, bound.signature or "nothing"))
    return problems


# blkid -p's exit codes: 0 found something, 2 found nothing; 4 usage error, 8 ambivalent (more
# than one signature: it holds data for certain).
BLKID_FOUND, BLKID_NOTHING = 0, 2


def _probed(devnode: str, state: LiveState) -> str | None:
    """What blkid finds on a device the plan overwrites and udev says is blank: udev's database
    can miss a file system made a moment ago (in the lab it never saw mkfs on an LV), and root
    must not write over it on udev's word. Anything but blkid's "nothing found" counts as data:
    several signatures (exit 8), an error, no blkid. Without a runner (a state made by hand)
    discovery's word stands."""
    if state.runner is None or not devnode:
        return None
    if state.runner.which("blkid") is None:
        return "what blkid would find (blkid, from util-linux, is not installed to look)"
    try:
        res = state.runner.run(["blkid", "-p", "-o", "export", devnode], check=False, timeout=15)
    except CommandError as exc:
        return f"what blkid could not say ({exc.what})"
    if res.returncode == BLKID_NOTHING:
        return None
    if res.returncode != BLKID_FOUND:
        why = "several signatures" if res.returncode == 8 else (res.stderr.strip() or f"blkid exit {res.returncode}")
        return f"what blkid could not name ({why})"
    found = parse_export(res.stdout)
    if found.get("TYPE"):
        return found["TYPE"]
    if found.get("PTTYPE"):
        return f"{found['PTTYPE']} partition table"
    # On a partition blkid -p always reports its entry in the disk's table (PART_ENTRY_SCHEME,
    # _OFFSET, _SIZE...) and exits 0: that is where the partition is, not what it holds. A new,
    # empty partition has nothing else (seen in the lab: bcache planned on a fresh partition was
    # refused as holding "a signature").
    content = {k for k in found if k != "DEVNAME" and not k.startswith("PART_ENTRY_")}
    return "a signature blkid found" if content else None


def _inactive_lv(bound: BoundDevice, state: LiveState, resuming: bool) -> list[Problem]:
    """A plan's LV that was not active when it was made (a cached LV lvm2 would not activate): the
    same LV (lvm2's UUID) and size, still not active; active only on a resume (the plan's last step
    activates it): one activated otherwise (its SSD came back, or forced) is not what the plan was
    made for."""
    uuid = bound.identity.removeprefix(INACTIVE_IDENTITY) if bound.identity else ""
    vglv = bound.path.removeprefix("/dev/")
    dev = state.device(bound.path)
    row = state.lv(vglv)
    size: int | None
    if dev is not None and not resuming:
        return [Problem("device-replaced", bound.path, "an active LV", "an LV lvm2 would not activate")]
    if dev is not None and dev.lvm is not None:  # activated by the plan: the same LV if its UUID is
        now, size = dev.lvm.uuid or dev.identity or "another device", dev.size_bytes
    elif row is not None and not row.hidden:
        now, size = row.uuid, row.size_bytes
    else:
        return [Problem("device-missing", bound.path, bound.role)]
    if now != uuid:
        return [Problem("device-replaced", bound.path, f"LV UUID {now}", f"LV UUID {uuid}")]
    if size != bound.size_bytes:
        return [Problem("device-resized", bound.path, f"{size or 0:,}", f"{bound.size_bytes:,}")]
    return []


def _load_module(module: str, runner: CommandRunner) -> Problem | None:
    if Path(f"/sys/module/{module}").exists() or runner.which("modprobe") is None:
        return None
    try:
        result = runner.run(["modprobe", module], timeout=30, check=False)
    except CommandError as exc:
        return Problem("module-missing", module, exc.what)
    if result.returncode != 0:
        return Problem("module-missing", module, result.stderr.strip() or "modprobe failed")
    return None


def preflight(plan: Plan, runner: CommandRunner, state: LiveState, *, resuming: bool = False) -> list[Problem]:
    """What stands in the way of running ``plan`` now (empty: nothing)."""
    problems: list[Problem] = []
    if os.geteuid() != 0:
        problems.append(Problem("not-root", "root"))
    for tool in sorted({s.argv[0] for s in plan.steps if s.argv}):
        if runner.which(tool) is None:
            problems.append(Problem("tool-missing", tool, TOOL_PACKAGES.get(tool, tool)))
    problems += [p for p in (_load_module(m, runner) for m in plan.kernel_modules) if p is not None]
    problems += verify_devices(plan, state, resuming)
    if not resuming:
        problems += verify_names(plan, state) + verify_cache_set(plan, state) + verify_gate(plan, state)
        problems += verify_boot(plan, state)
    if not problems and not resuming:
        first = plan.steps[last_in_effect(plan, state) + 1 :][:1]  # the step the run starts with
        problems += [
            Problem("precondition", s.description, c.describe()) for s in first for c in s.pre if not c.holds(state)
        ]
    return problems


def verify_names(plan: Plan, state: LiveState) -> list[Problem]:
    """The VGs and LVs a fresh plan creates must not exist yet: a step that would create one is
    skipped when it is found in effect, and a later step (its undo, a conversion) would then act
    on what someone else made. A plan found wholly in effect runs nothing and is let be; one that
    ran in part before goes on from its journal (a resumed run)."""
    if wholly_in_effect(plan, state):
        return []
    there = state.names()
    return [Problem("name-taken", name) for name in created_names(plan.steps) if name in there]


def verify_gate(plan: Plan, state: LiveState) -> list[Problem]:
    """The safety gate on the machine as it is now: a plan made before the gate existed, on
    another machine or by hand is held to it as a plan made here today is. A plan found wholly
    in effect runs nothing and is let be."""
    if wholly_in_effect(plan, state):
        return []
    return [Problem("gate", b.what) for b in barriers(plan, state.inventory)]


def verify_boot(plan: Plan, state: LiveState) -> list[Problem]:
    """Boot readiness of the plan's cache on this machine (advisor/health/boot.py): refused when
    lvm2 could not check the cache's metadata at the next activation, bcache's udev rule or a
    kernel's module is missing, or the device is needed at boot and the plan does not make the
    initramfs again (or the initramfs would lack dm-writecache). A plan found wholly in effect
    runs nothing and is let be."""
    kind = language.kind_of(plan.kind)
    if kind is None or not kind.backend or wholly_in_effect(plan, state):
        return []
    found = boot.plan_findings(
        state.boot(),
        state.inventory,
        subject=plan.target,
        target=find_device(state.inventory, plan.target),
        backend=kind.backend,
        effect=kind.effect,
        updates_initramfs=any(language.repeats(s) for s in plan.steps),
        mirrored=context(plan).initramfs.endswith("+raid1"),
    )
    # lvm2's metadata check matters to a cache being made; a repair or a removal of one that exists
    # (a mirror on one leg, a dead SSD) must not wait for it: doctor names it apart
    urgent = kind.effect != "makes"
    return [
        Problem("boot", boot.sentence(f))
        for f in found
        if f.severity == "critical" and not (urgent and f.code.startswith("boot-check"))
    ]


def verify_cache_set(plan: Plan, state: LiveState) -> list[Problem]:
    """A plan that stops a cache set it does not make must name the set its backing device is
    attached to now (a plan file could name any set, or one that is already gone). A plan that
    stops none (a disk joining a set that runs, a detach that leaves a shared set running) is not
    held to it, nor a plan found wholly in effect, which runs nothing."""
    sets = cache_sets(plan)
    stops = any((m := language.match(s)) is not None and m.shape == "bcache-stop-set" for s in plan.steps)
    if not sets or not stops or context(plan).cache_set is not None or wholly_in_effect(plan, state):
        return []
    (wanted,) = sets
    try:
        link = state.resolve("{backing}/bcache/cache")
    except RoleMissing:
        return []  # reported as a missing device
    attached = os.path.basename(os.path.realpath(link)) if os.path.exists(link) else "none"
    if attached != wanted:
        return [Problem("cache-set-unbound", wanted, attached)]
    # Another disk may have joined the set since the plan was made: stopping the set would stop
    # its bcache device too (and a wipe would take its dirty data).
    own = os.path.realpath(state.resolve("{backing}/bcache"))
    folder = state.resolve(f"/sys/fs/bcache/{wanted}")
    try:
        members = [os.path.realpath(os.path.join(folder, n)) for n in os.listdir(folder) if n.startswith("bdev")]
    except OSError:
        members = []
    others = sorted(os.path.basename(os.path.dirname(m)) for m in members if m != own)
    return [Problem("cache-set-shared", wanted, ", ".join(others))] if others else []
