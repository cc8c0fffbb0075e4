"""What a plan may say: the closed language of the commands cachewise's recipes emit.

A plan file is data a user can edit, copy between hosts or be handed. Before anything runs,
every step must be one that the plan's own recipe could have written: a step shape from the
allow-list below (a program by name, never a path from the file, with arguments of that shape;
a write to one of bcache's own sysfs files with a value of its kind, or to cachewise's own tunables
file under /etc; a wait on bcache's state),
one the recipe declares it uses, naming only devices the plan is bound to in the roles the
recipe declares for that shape; undo commands under the same rules. Devices need an identity,
a size and a stable path, so that applying later can tell them from others.

The allow-list of shapes is written out here on purpose: it is the wall between a plan file and
root, and a recipe can only name shapes from it, never add one. The kinds of plan (which
shapes, which roles, which kernel modules) come from the recipes' registry
(recipes/registry.py), which registers each recipe's :class:`Kind` here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from advisor.backends import PROGRESS
from advisor.errors import CachewiseError, codes

ROLES = ("origin", "ssd", "ssd2", "backing", "cache", "old-ssd", "old-ssd2")
NAME = r"[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PLACEHOLDERS = {
    "VG": re.compile(NAME),
    "NAME": re.compile(NAME),
    "VGLV": re.compile(f"{NAME}/{NAME}"),
    "SUBLV": re.compile(f"{NAME}/{NAME}"),  # a hidden LV under the origin (its cache pool's data, metadata)
    "SIZEK": re.compile(r"[1-9][0-9]{0,15}k"),
    "MODE": re.compile("writethrough|writeback"),
    "POLICY": re.compile("smq|mq|cleaner"),
    "UUID": re.compile(UUID),
    # dm-writecache settings lvm2 passes on (lvmcache(7)), as recipes/writecache.py writes them.
    "WCSETTINGS": re.compile(
        r"block_size=(512|4096)( high_watermark=[0-9]{1,3})?( low_watermark=[0-9]{1,3})?"
        r"( writeback_jobs=[0-9]{1,7})?"
    ),
}
STEP_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")

# The endings lvm2 gives the hidden LVs of a cache that a repair may name (a cache pool's data and
# metadata, a writecache's cache volume).
HIDDEN_CACHE_LVS = ("_cdata", "_cmeta", "_cvol")

# cachewise's file of the bcache tunables the kernel forgets at every boot (advisor/tunables.py),
# as plans name it: {backing-uuid} is the backing device's bcache UUID, read when the step runs
# (make-bcache chooses it, so a plan that makes the device cannot know it).
TUNABLES_FILE = "/etc/cachewise/bcache/{backing-uuid}.conf"
# What the file records, in the order the recipes write it (the same values as the sysfs writes).
TUNABLES = r"sequential_cutoff=(0|[1-9][0-9]{0,9}) writeback_percent=([0-9]|[1-3][0-9]|40)"


codes({"plan-unusable": "{why}"})


class PlanError(CachewiseError, ValueError):
    """A plan file cannot be used; the message says why and that nothing was changed."""

    def __init__(self, message: str) -> None:
        super().__init__("plan-unusable", why=message)


@dataclass(frozen=True)
class Shape:
    """One step a recipe may write: a command (``argv``: the program, then its arguments, where
    DEV is a device of the plan and [x] is optional), a sysfs write (``write``: the file and its
    value's pattern, or DEV) or a wait (``wait``: the file). ``says``: what a step of this shape
    does, filled from its arguments (a second DEV or VGLV is DEV2 or VGLV2; SIZE is SIZEK for
    people; VALUE is a write's or a wait's value; an optional flag given adds ``flags[flag]``;
    an argument with a value named in ``notes`` adds its note).
    ``destroys``: the arguments whose contents a step of this shape destroys. The description,
    the destructive mark and what a plan destroys are computed from these, never read from a
    plan file. ``modules``: kernel modules a step of this shape needs besides its backend's.
    ``repeats``: a step of this shape runs whenever a run reaches it, and never counts as done
    beforehand (its checks verify it after it ran): making the initramfs again."""

    argv: str = ""
    write: tuple[str, str] = ("", "")
    wait: str = ""
    says: str = ""
    destroys: tuple[str, ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    notes: tuple[tuple[str, str, str], ...] = ()
    modules: tuple[str, ...] = ()
    repeats: bool = False

    @property
    def program(self) -> str:
        return self.argv.split(" ", 1)[0]


# Every step shape the recipes emit, by name. {backing} is the backing device's sysfs
# directory, resolved when the step runs (kernel names change).
SHAPES: dict[str, Shape] = {
    "pvcreate": Shape(
        "pvcreate --yes [--force] DEV",
        says="make {DEV} an LVM physical volume{--force}",
        destroys=("DEV",),
        flags=(("--force", ", over what it holds"),),
    ),
    "pvremove": Shape("pvremove --yes DEV", says="remove the LVM label from {DEV}"),
    "vgcreate": Shape("vgcreate VG DEV", says="create the VG {VG} on {DEV}"),
    "vgextend": Shape("vgextend VG DEV", says="add {DEV} to the VG {VG}"),
    "vgreduce": Shape("vgreduce VG DEV", says="take {DEV} out of the VG {VG}"),
    "vgremove": Shape("vgremove --yes VG", says="remove the VG {VG}", destroys=("VG",)),
    "lvcreate": Shape(
        "lvcreate --yes --wipesignatures y -n NAME -L SIZEK VG DEV", says="create the LV {VG}/{NAME} ({SIZE}) on {DEV}"
    ),
    "lvcreate-whole": Shape(
        "lvcreate --yes --wipesignatures y -n NAME -l 100%PVS VG DEV", says="create the LV {VG}/{NAME} on all of {DEV}"
    ),
    "lvcreate-raid1": Shape(
        "lvcreate --yes --wipesignatures y --type raid1 -m 1 -n NAME -L SIZEK VG DEV DEV",
        says="create the LV {VG}/{NAME} ({SIZE}) mirrored (raid1) on {DEV} and {DEV2}",
        modules=("dm_raid",),
    ),
    "lvremove": Shape("lvremove --yes VGLV", says="remove the LV {VGLV}", destroys=("VGLV",)),
    # lvm2 erases what it turns into a cache pool, its metadata or a cache volume: those LVs
    # are destroyed, and so may only be ones the plan creates; the origin keeps its data.
    "cache-pool": Shape(
        "lvconvert --yes --type cache-pool --poolmetadata VGLV --chunksize SIZEK --cachemode MODE "
        "--cachepolicy POLICY VGLV",
        says="combine {VGLV2} and the metadata LV {VGLV} into a cache pool (chunk {SIZE}, {MODE}, {POLICY})",
        destroys=("VGLV", "VGLV2"),
    ),
    "cache-attach": Shape(
        "lvconvert --yes --type cache --cachepool VGLV VGLV",
        says="attach the cache pool {VGLV} to {VGLV2} (in place; the data stays where it is)",
        destroys=("VGLV",),
    ),
    "writecache-attach": Shape(
        "lvconvert --yes --type writecache --cachevol VGLV --cachesettings WCSETTINGS VGLV",
        says="attach {VGLV} to {VGLV2} as its writecache ({WCSETTINGS}; in place, the data stays where it is)",
        destroys=("VGLV",),
    ),
    "uncache": Shape(
        "lvconvert --yes --uncache VGLV",
        says="write the dirty blocks of {VGLV} back to the slow device (a writethrough cache has none), then remove "
        "its cache",
    ),
    "splitcache": Shape(
        "lvconvert --yes --splitcache VGLV",
        says="write the dirty blocks of {VGLV} back to the slow device, then split its cache off (kept as an LV)",
    ),
    # A cache whose SSD is gone (docs/dead-ssd.md): lvm2 cannot flush it, and takes a writeback
    # cache (or any writecache) off only when forced, leaving out what only the SSD held.
    "uncache-force": Shape(
        "lvconvert --yes --force --uncache VGLV",
        says="take the cache off {VGLV} without writing anything back, as its SSD is gone: the blocks only the "
        "SSD held are lost",
    ),
    "vgreduce-missing": Shape(
        "vgreduce --removemissing VG",
        says="drop the physical volumes lvm2 cannot find from the VG {VG} (it refuses while an LV still uses one)",
    ),
    "repair-leg": Shape(
        "lvconvert --yes --repair SUBLV DEV",
        says="rebuild the missing leg of the mirrored {SUBLV} onto {DEV}",
        modules=("dm_raid",),
    ),
    "activate": Shape("lvchange --yes -ay VGLV", says="activate {VGLV}"),
    "cachemode": Shape(
        "lvchange --yes --cachemode MODE VGLV",
        says="switch the cache of {VGLV} to {MODE}",
        notes=(("MODE", "writethrough", " (dirty blocks are written back first)"),),
    ),
    "deactivate": Shape("lvchange --yes -an VGLV", says="deactivate {VGLV}"),
    "make-bcache": Shape(
        "make-bcache --cset-uuid UUID [--writeback] -B DEV -C DEV",
        says="format {DEV} as a bcache backing device and {DEV2} as its cache (cache set {UUID}){--writeback}",
        destroys=("DEV", "DEV2"),
        flags=(("--writeback", ", in writeback mode"),),
    ),
    # A backing device joining a cache set that runs already (one SSD caching several disks).
    "make-bcache-backing": Shape(
        "make-bcache [--writeback] -B DEV",
        says="format {DEV} as a bcache backing device{--writeback}",
        destroys=("DEV",),
        flags=(("--writeback", ", in writeback mode"),),
    ),
    "wipefs": Shape("wipefs --all DEV", says="erase every signature on {DEV}", destroys=("DEV",)),
    # The last step of a plan whose device the boot needs (recipes/boot.py), Debian's way or
    # dracut's; it changes no device, and a roll back leaves the image as it is.
    "update-initramfs": Shape(
        "update-initramfs -u -k all",
        says="make the initramfs of every installed kernel again, for the devices as they now are",
        repeats=True,
    ),
    "dracut-regenerate": Shape(
        "dracut --regenerate-all --force",
        says="make the initramfs of every installed kernel again (dracut), for the devices as they now are",
        repeats=True,
    ),
    "bcache-register": Shape(
        write=("/sys/fs/bcache/register_quiet", "DEV"), says="register {VALUE} with the kernel's bcache"
    ),
    "bcache-stop-set": Shape(write=(f"/sys/fs/bcache/{UUID}/stop", "1"), says="stop the bcache cache set {SET}"),
    "bcache-attach": Shape(
        write=(r"\{backing\}/bcache/attach", UUID), says="attach the backing device to the cache set {VALUE}"
    ),
    "bcache-detach": Shape(
        write=(r"\{backing\}/bcache/detach", "1"),
        says="detach the backing device from its cache (the kernel writes the dirty data back first)",
    ),
    "bcache-cache-mode": Shape(
        write=(r"\{backing\}/bcache/cache_mode", "writethrough|writeback|writearound|none"),
        says="set the bcache cache mode to {VALUE}",
    ),
    # The kernel keeps sequential_cutoff in an unsigned int: under 4 GiB.
    "bcache-sequential-cutoff": Shape(
        write=(r"\{backing\}/bcache/sequential_cutoff", r"0|[1-9][0-9]{0,9}"),
        says="set bcache's sequential cutoff to {VALUE} bytes (longer sequential I/O bypasses the cache)",
    ),
    "bcache-writeback-percent": Shape(
        write=(r"\{backing\}/bcache/writeback_percent", r"[0-9]|[1-3][0-9]|40"),
        says="set bcache's writeback_percent to {VALUE}",
    ),
    "bcache-state": Shape(wait=r"\{backing\}/bcache/state", says="wait until the backing device's state is {VALUE}"),
    # A bcache whose cache set is gone (docs/dead-ssd.md): stopped, registered again, and started
    # without the set, which marks its superblock so that it starts at every boot.
    "bcache-stop-device": Shape(
        write=(r"\{backing\}/bcache/stop", "1"),
        says="stop the bcache device of the backing device (its file system unmounted first)",
    ),
    "bcache-run": Shape(
        write=(r"\{backing\}/bcache/running", "1"),
        says="start the bcache device without its cache set, for good: bcache marks the backing device stale "
        "(state inconsistent) and starts it so at every boot; what only the set held is left out",
    ),
    # Written whole and atomically by cachewise itself, never through a shell; a rollback removes
    # it again (undo_writes). The empty value is the removal.
    "bcache-tunables-file": Shape(
        write=(re.escape(TUNABLES_FILE), TUNABLES),
        says="record {VALUE} in {FILE}, which cachewise's udev rule sets again whenever the device "
        "appears (the kernel forgets both at every boot)",
    ),
    "bcache-tunables-forget": Shape(
        write=(re.escape(TUNABLES_FILE), ""),
        says="remove {FILE}, so that nothing sets bcache's tunables again at boot",
    ),
}


def _bind(argv: Sequence[str], tokens: Sequence[str]) -> list[tuple[str, str]] | None:
    """The placeholders of ``tokens`` (and the optional flags) with the arguments they take, if
    ``argv`` has that shape; None if it has not."""
    if not tokens:
        return [] if not argv else None
    token = tokens[0]
    if token.startswith("[") and token.endswith("]"):
        inner = token[1:-1]
        if argv and argv[0] == inner:
            rest = _bind(argv[1:], tokens[1:])
            if rest is not None:
                return [(inner, inner), *rest]
        return _bind(argv, tokens[1:])
    if not argv:
        return None
    if token == "DEV" or token in PLACEHOLDERS:
        if token != "DEV" and PLACEHOLDERS[token].fullmatch(argv[0]) is None:
            return None
        rest = _bind(argv[1:], tokens[1:])
        return None if rest is None else [(token, argv[0]), *rest]
    return _bind(argv[1:], tokens[1:]) if argv[0] == token else None


def _numbered(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Bound arguments by name: the second DEV is DEV2, the second VGLV VGLV2."""
    out: dict[str, str] = {}
    for token, value in pairs:
        n = 1
        while (token if n == 1 else f"{token}{n}") in out:
            n += 1
        out[token if n == 1 else f"{token}{n}"] = value
    return out


@dataclass(frozen=True)
class Match:
    """A step matched to its shape: the shape's name and each argument by name."""

    shape: str
    args: dict[str, str]


def match_argv(argv: Sequence[str]) -> Match | None:
    """The shape a command has (None: no shape of the language)."""
    if not argv:
        return None
    for name, shape in SHAPES.items():
        if shape.argv and shape.program == argv[0]:
            pairs = _bind(argv[1:], shape.argv.split()[1:])
            if pairs is not None:
                return Match(name, _numbered(pairs))
    return None


def match_write(target: tuple[str, str]) -> Match | None:
    """The shape a sysfs write has (None: none)."""
    path, value = target
    for name, shape in SHAPES.items():
        pattern, allowed = shape.write
        if pattern and re.fullmatch(pattern, path) and (allowed == "DEV" or re.fullmatch(allowed, value)):
            args = {"VALUE": value, "FILE": path}
            if allowed == "DEV":
                args["DEV"] = value
            if name == "bcache-stop-set":
                args["SET"] = path.split("/")[-2]
            return Match(name, args)
    return None


def match_wait(target: tuple[str, str]) -> Match | None:
    path, value = target
    for name, shape in SHAPES.items():
        if shape.wait and re.fullmatch(shape.wait, path):
            return Match(name, {"VALUE": value, "FILE": path})
    return None


class _Runs(Protocol):
    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def write(self) -> tuple[str, str] | None: ...
    @property
    def wait(self) -> tuple[str, str] | None: ...


def match(step: _Runs) -> Match | None:
    """The shape of a step (its command, write or wait), or None."""
    if step.argv:
        return match_argv(step.argv)
    if step.write is not None:
        return match_write(step.write)
    if step.wait is not None:
        return match_wait(step.wait)
    return None


def write_command(target: tuple[str, str]) -> str:
    """A write as a shell command, for people: the tunables file's content or its removal, or
    the value echoed into a sysfs file."""
    path, value = target
    if path == TUNABLES_FILE:
        return f"printf '%s\\n' {value} > {path}" if value else f"rm -f {path}"
    return f"echo {shlex.quote(value)} > {path}"


def undo_writes(step: _Runs) -> tuple[tuple[str, str], ...]:
    """The writes that undo a step, before its undo commands, computed from its shape (a plan
    file cannot choose them): the tunables file a step wrote is removed again; the devices
    make-bcache formatted are stopped before they are wiped, since the plan's own register steps
    or udev's 69-bcache.rules (on the change event make-bcache causes) may have registered them,
    and wipefs cannot open a registered device (the soak's crash loop: "Device or resource busy").
    A stop of what is not registered does nothing (STOPS)."""
    m = match(step)
    if m is not None and m.shape == "bcache-tunables-file":
        return ((m.args["FILE"], ""),)
    if m is not None and m.shape == "make-bcache":
        return (("{backing}/bcache/stop", "1"), (f"/sys/fs/bcache/{m.args['UUID']}/stop", "1"))
    if m is not None and m.shape == "make-bcache-backing":  # the set it joined runs on: only the device stops
        return (("{backing}/bcache/stop", "1"),)
    return ()


# Writes that stop a bcache device or cache set: the executor skips one whose sysfs directory is
# not there (nothing registered, nothing to stop) and waits until the directory has gone, since
# the kernel releases the devices asynchronously.
STOPS = frozenset({"bcache-stop-device", "bcache-stop-set"})


def _size(sizek: str) -> str:
    n = int(sizek[:-1]) << 10
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n >> 10} KiB"


def says(m: Match) -> str:
    """What a step of this shape does, in words, from its own arguments."""
    shape = SHAPES[m.shape]
    values: dict[str, str] = {**m.args, **{flag: (text if flag in m.args else "") for flag, text in shape.flags}}
    if "SIZEK" in m.args:
        values["SIZE"] = _size(m.args["SIZEK"])
    notes = "".join(note for arg, value, note in shape.notes if m.args.get(arg) == value)
    return shape.says.format(**values) + notes


def destroyed_by(m: Match) -> tuple[str, ...]:
    """The devices (paths) and LVM names whose contents a step of this shape destroys."""
    return tuple(m.args[a] for a in SHAPES[m.shape].destroys if a in m.args)


def created_names(steps: Sequence[_Step]) -> tuple[str, ...]:
    """The VGs and LVs (VG/LV) the steps' commands create."""
    out: list[str] = []
    for step in steps:
        m = match_argv(step.argv) if step.argv else None
        if m is not None and m.shape == "vgcreate":
            out.append(m.args["VG"])
        elif m is not None and m.shape.startswith("lvcreate"):
            out.append(f"{m.args['VG']}/{m.args['NAME']}")
    return tuple(out)


def describe(step: _Step) -> str:
    """A step's description, computed from what it runs."""
    m = match(step)
    return says(m) if m is not None else f"run {' '.join(step.argv) or 'nothing'} (not a step cachewise writes)"


def destroys(step: _Step) -> tuple[str, ...]:
    m = match(step)
    return destroyed_by(m) if m is not None else ()


@dataclass(frozen=True)
class Use:
    """A shape a recipe's plans use, with the role of the device each DEV in it may name, in
    order ("ssd|ssd2": either)."""

    shape: str
    roles: tuple[str, ...] = ()

    def __init__(self, shape: str, *roles: str) -> None:
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "roles", roles)

    def role_sets(self) -> list[set[str]]:
        return [set(r.split("|")) for r in self.roles]


@dataclass(frozen=True)
class Kind:
    """A kind of plan, as its recipe registers it: the shapes its steps (and undo commands) may
    take, the kernel modules it needs, and the flush progress its steps may show."""

    name: str
    uses: tuple[Use, ...]
    modules: tuple[str, ...] = ()
    progress: str = ""
    segtype: str = ""  # lvm2's segment type of the cache a plan of this kind changes or removes
    makes: str = ""  # the backend (id) of the cache a plan of this kind makes
    backend: str = ""  # the backend (id) of the cache a plan of this kind makes, changes or removes
    effect: str = ""  # "makes", "changes" or "removes"
    remakes: str = ""  # the backend (id) of the cache a plan of this kind takes off and makes anew


# The shapes every kind that makes or removes a cache may end with (recipes/registry.py adds
# them): the initramfs made again for a device the boot needs.
INITRAMFS_SHAPES = ("update-initramfs", "dracut-regenerate")


def repeats(step: _Runs) -> bool:
    """Whether a step runs whenever a run reaches it, never counting as done beforehand."""
    m = match_argv(step.argv) if step.argv else None
    return m is not None and SHAPES[m.shape].repeats


_KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> None:
    """Add a kind of plan (recipes/registry.py does, for each recipe). A use of a shape that is
    not on the allow-list, or of an unknown role, is a programming error."""
    for use in kind.uses:
        if use.shape not in SHAPES:
            raise ValueError(f"{kind.name} uses the step shape {use.shape!r}, which the plan language does not have")
        shape = SHAPES[use.shape]
        devs = shape.argv.split().count("DEV") + (shape.write[1] == "DEV")
        if len(use.roles) != devs or not set().union(*use.role_sets()) <= set(ROLES):
            raise ValueError(f"{kind.name}: {use.shape} takes {devs} devices, of the roles {ROLES}; not {use.roles}")
    if kind.progress and kind.progress not in PROGRESS:
        raise ValueError(f"{kind.name} shows progress {kind.progress!r}, which the executor cannot read")
    _KINDS[kind.name] = kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def kinds() -> tuple[str, ...]:
    return tuple(_KINDS)


def kind_of(name: str) -> Kind | None:
    return _KINDS.get(name)


class _Step(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def undo(self) -> tuple[tuple[str, ...], ...]: ...
    @property
    def write(self) -> tuple[str, str] | None: ...
    @property
    def wait(self) -> tuple[str, str] | None: ...
    @property
    def progress(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def timeout(self) -> float: ...


class _Device(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def identity(self) -> str | None: ...
    @property
    def size_bytes(self) -> int: ...


class _Plan(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def devices(self) -> Sequence[_Device]: ...
    @property
    def steps(self) -> Sequence[_Step]: ...


def modules(kind: str, argvs: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """The kernel modules a plan of ``kind`` with these commands needs: its kind's, and those of
    the shapes its commands take (dm_raid for a raid1 LV)."""
    k = _KINDS.get(kind)
    if k is None:
        return ()
    used = {m.shape for m in map(match_argv, argvs) if m is not None}
    extra = [m for use in k.uses if use.shape in used for m in SHAPES[use.shape].modules]
    return k.modules + tuple(dict.fromkeys(m for m in extra if m not in k.modules))


# Directories under /dev that are not volume groups' (the kernel's, udev's and tmpfs's own), so
# that /dev/NAME/X is taken for an LV only where NAME can be a VG.
NOT_VGS = frozenset(
    "block bsg bus char cpu disk dma_heap dri fd hugepages input mapper mqueue net pts serial shm snd usb "
    "v4l vfio bcache md".split()
)


def lv_of_path(path: str) -> tuple[str, str] | None:
    """(VG, LV) of an LV's stable path, /dev/VG/LV or /dev/mapper/VG-LV (lvm2 doubles a dash
    inside a name there); None for other paths."""
    parts = path.split("/")
    if len(parts) != 4 or parts[:1] != [""] or parts[1] != "dev":
        return None
    if parts[2] == "mapper":
        m = re.fullmatch(r"((?:[^-]|--)+)-((?:[^-]|--)+)", parts[3])
        return (m[1].replace("--", "-"), m[2].replace("--", "-")) if m else None
    if parts[2] in NOT_VGS or not re.fullmatch(NAME, parts[2]) or not re.fullmatch(NAME, parts[3]):
        return None
    return parts[2], parts[3]


def stable_path_problem(path: str) -> str | None:
    """Why ``path`` is not a stable device path of a form udev or lvm2 makes (None: it is):
    /dev/disk/by-id/ID, /dev/mapper/NAME, /dev/bcache/by-uuid/UUID or /dev/VG/LV, with no . or
    .. and no other directory (/dev/shm, /dev/fd and /dev/block are not: anyone can make a link
    in the first, and the others are not stable names)."""
    parts = path.split("/")
    if len(parts) < 4 or parts[:2] != ["", "dev"] or any(p in ("", ".", "..") for p in parts[2:]):
        return "it is not a path under /dev"
    # udev's link names: it spells any other byte as \xNN
    link = r"[A-Za-z0-9:_.+@=#,~\\-]+"
    if parts[2:4] in (["disk", "by-id"], ["disk", "by-path"]) and len(parts) == 5 and re.fullmatch(link, parts[4]):
        return None
    if parts[2:4] == ["bcache", "by-uuid"] and len(parts) == 5 and re.fullmatch(UUID, parts[4]):
        return None
    if parts[2] == "mapper" and len(parts) == 4 and re.fullmatch(link, parts[3]):
        return None
    if len(parts) == 4 and lv_of_path(path) is not None:
        return None
    return (
        "it is not one of the stable forms udev and lvm2 make (/dev/disk/by-id/…, /dev/disk/by-path/…, "
        "/dev/mapper/…, /dev/VG/LV)"
    )


class _Binding:
    """The uses of one plan's kind, with the paths each may name, and the VGs and LVs its
    commands may name: the origin's, and those the plan's own steps create, once each and
    before any step (or undo command) names them."""

    def __init__(self, plan: _Plan, kind: Kind) -> None:
        self.kind = kind
        self.by_role: dict[str, set[str]] = {}
        for d in plan.devices:
            self.by_role.setdefault(d.role, set()).add(d.path)
        self.origin_vgs: set[str] = set()
        self.origin_lvs: set[str] = set()
        origin = next((lv_of_path(d.path) for d in plan.devices if d.role == "origin"), None)
        if origin is not None:
            self.origin_vgs.add(origin[0])
            self.origin_lvs.add("/".join(origin))
        self.new_vgs: set[str] = set()  # made by the steps so far (and the one being checked)
        self.new_lvs: set[str] = set()

    def made_by(self, step: _Step) -> str | None:
        """Take the names ``step`` creates into the plan's own (PlanError-worthy text when a
        name is created twice, or is the origin's)."""
        for name in created_names([step]):
            new = self.new_lvs if "/" in name else self.new_vgs
            if name in new or name in self.origin_lvs | self.origin_vgs:
                return f"it creates {name}, which the plan already has"
            new.add(name)
        return None

    def paths(self, use: Use) -> list[set[str]]:
        """The paths each DEV of the use may name, in order."""
        return [set().union(*(self.by_role.get(r, set()) for r in roles)) for roles in use.role_sets()]

    def _names_problem(self, command: str, m: Match) -> str | None:
        """Why the VG and LV names of a matched command are not ones the plan may name (so far)."""
        destroyed = set(destroyed_by(m))
        for arg, value in m.args.items():
            if arg == "SUBLV":
                # lvm2's hidden LVs under a cache: its pool's data and metadata, or the cache volume
                # (a name such as vg/data_other, another LV, is not one)
                if not any(value.startswith(f"{lv}_") for lv in self.origin_lvs) or not value.endswith(
                    HIDDEN_CACHE_LVS
                ):
                    return f"`{command}` names {value}, which is not an LV under the plan's origin"
                continue
            if arg.startswith("VGLV"):
                new, what = self.new_lvs, "the LV"
                known = new | self.origin_lvs
            elif arg.startswith("VG"):
                new, what = self.new_vgs, "the VG"
                known = new | self.origin_vgs
            else:
                continue
            if value not in known:
                return (
                    f"`{command}` names {what} {value}, which is neither the plan's origin nor one the plan "
                    "creates before it"
                )
            if value in destroyed and value not in new:
                return f"`{command}` would remove or overwrite {what} {value}, which the plan did not create"
        return None

    def command_problem(self, argv: tuple[str, ...]) -> str | None:
        if not argv:
            return "it has no command"
        program = argv[0]
        if "/" in program:
            return f"it names a program by path ({program}); plans name programs, found on PATH"
        programs = sorted({s.program for s in SHAPES.values() if s.argv})
        if program not in programs:
            return f"{program} is not a program cachewise plans run ({', '.join(programs)})"
        command = " ".join(argv)
        m = match_argv(argv)
        if m is not None:
            devices = [v for k, v in sorted(m.args.items()) if re.fullmatch(r"DEV[0-9]*", k)]
            for use in self.kind.uses:
                if use.shape == m.shape and all(d in ok for d, ok in zip(devices, self.paths(use), strict=True)):
                    return self._names_problem(command, m)
        return (
            f"`{command}` is not a {program} command a cachewise recipe writes in a {self.kind.name} plan, or "
            "names a device the plan is not bound to in that role"
        )

    def write_problem(self, target: tuple[str, str]) -> str | None:
        path, value = target
        for use in self.kind.uses:
            pattern, allowed = SHAPES[use.shape].write
            if pattern and re.fullmatch(pattern, path):
                ok = value in self.paths(use)[0] if allowed == "DEV" else re.fullmatch(allowed, value) is not None
                if ok:
                    return None
        if any(s.write[0] and re.fullmatch(s.write[0], path) for s in SHAPES.values()):
            # one of the files plans write, but not with this value in this kind of plan (a
            # plan that writes no file at all takes no value)
            return f"it writes {value!r} to {path}, which takes no such value in a {self.kind.name} plan"
        return f"it writes to {path}, which is not one of the bcache files plans write"

    def wait_problem(self, path: str) -> str | None:
        for use in self.kind.uses:
            pattern = SHAPES[use.shape].wait
            if pattern and re.fullmatch(pattern, path):
                return None
        return f"it waits on {path}, which a {self.kind.name} plan does not watch"

    def step_problem(self, step: _Step) -> str | None:
        if not STEP_ID.fullmatch(step.id):
            return f"its id {step.id!r} is not a step name"
        if sum([step.argv != (), step.write is not None, step.wait is not None]) != 1:
            return "it must run exactly one of a command, a sysfs write or a wait"
        if step.argv:
            why = self.command_problem(step.argv)
        elif step.write is not None:
            why = self.write_problem(step.write)
        else:
            assert step.wait is not None
            why = self.wait_problem(step.wait[0])
        if why:
            return why
        for argv in step.undo:
            why = self.command_problem(argv)
            if why:
                return f"its undo command is refused: {why}"
        if step.progress not in ("", self.kind.progress):
            return f"its progress {step.progress!r} is not one a {self.kind.name} plan shows"
        if step.seconds < 0 or step.timeout <= 0:
            return "its expected time or timeout is not a positive number"
        return None


def check(plan: _Plan) -> None:
    """PlanError naming what is wrong when the plan says anything its recipe would not."""
    kind = _KINDS.get(plan.kind)
    if kind is None:
        raise PlanError(f"the plan is of kind {plan.kind!r}, which is none of cachewise's recipes")
    if not plan.devices:
        raise PlanError("the plan names no device")
    roles = [d.role for d in plan.devices]
    if len(set(roles)) != len(roles) or not set(roles) <= set(ROLES):
        raise PlanError(f"the plan's device roles {roles} are not distinct roles of {', '.join(ROLES)}")
    for d in plan.devices:
        if not d.identity:
            raise PlanError(
                f"the plan's {d.role} device {d.path} has no identity, so applying it could not tell "
                "that device from another"
            )
        if d.size_bytes <= 0:
            raise PlanError(f"the plan's {d.role} device {d.path} has no size")
        why = stable_path_problem(d.path)
        if why:
            raise PlanError(f"the plan's {d.role} device path {d.path!r} is not a stable device path: {why}")
    if not plan.steps:
        raise PlanError("the plan has no steps")
    ids = [s.id for s in plan.steps]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise PlanError(f"the plan has the step {twice!r} twice")
    binding = _Binding(plan, kind)
    for number, step in enumerate(plan.steps, 1):
        why = binding.made_by(step) or binding.step_problem(step)
        if why:
            raise PlanError(f"step {number} ({step.id}) is refused: {why}")
