"""What a plan may say: the closed language of the commands cachewise's recipes emit.

A plan file is data a user can edit, copy between hosts or be handed. Before anything runs,
every step must be one that the plan's own recipe could have written: a step shape from the
allow-list below (a program by name, never a path from the file, with arguments of that shape;
a write to one of bcache's own sysfs files with a value of its kind; a wait on bcache's state),
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from advisor.backends import PROGRESS
from advisor.errors import CachewiseError, codes

ROLES = ("origin", "ssd", "ssd2", "backing", "cache")
STABLE_PATH = re.compile(r"/dev/(disk/by-id/|mapper/|bcache/by-uuid/|[A-Za-z0-9+_.][A-Za-z0-9+_.-]*/)[^/]+")
NAME = r"[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PLACEHOLDERS = {
    "VG": re.compile(NAME),
    "NAME": re.compile(NAME),
    "VGLV": re.compile(f"{NAME}/{NAME}"),
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


codes({"plan-unusable": "{why}"})


class PlanError(CachewiseError, ValueError):
    """A plan file cannot be used; the message says why and that nothing was changed."""

    def __init__(self, message: str) -> None:
        super().__init__("plan-unusable", why=message)


@dataclass(frozen=True)
class Shape:
    """One step a recipe may write: a command (``argv``: the program, then its arguments, where
    DEV is a device of the plan and [x] is optional), a sysfs write (``write``: the file and its
    value's pattern, or DEV) or a wait (``wait``: the file). ``modules``: kernel modules a step
    of this shape needs besides its backend's."""

    argv: str = ""
    write: tuple[str, str] = ("", "")
    wait: str = ""
    modules: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        return self.argv.split(" ", 1)[0]


# Every step shape the recipes emit, by name. {backing} is the backing device's sysfs
# directory, resolved when the step runs (kernel names change).
SHAPES: dict[str, Shape] = {
    "pvcreate": Shape("pvcreate --yes [--force] DEV"),
    "pvremove": Shape("pvremove --yes DEV"),
    "vgcreate": Shape("vgcreate VG DEV"),
    "vgextend": Shape("vgextend VG DEV"),
    "vgreduce": Shape("vgreduce VG DEV"),
    "vgremove": Shape("vgremove --yes VG"),
    "lvcreate": Shape("lvcreate --yes --wipesignatures y -n NAME -L SIZEK VG DEV"),
    "lvcreate-whole": Shape("lvcreate --yes --wipesignatures y -n NAME -l 100%PVS VG DEV"),
    "lvcreate-raid1": Shape(
        "lvcreate --yes --wipesignatures y --type raid1 -m 1 -n NAME -L SIZEK VG DEV DEV", modules=("dm_raid",)
    ),
    "lvremove": Shape("lvremove --yes VGLV"),
    "cache-pool": Shape(
        "lvconvert --yes --type cache-pool --poolmetadata VGLV --chunksize SIZEK --cachemode MODE "
        "--cachepolicy POLICY VGLV"
    ),
    "cache-attach": Shape("lvconvert --yes --type cache --cachepool VGLV VGLV"),
    "writecache-attach": Shape("lvconvert --yes --type writecache --cachevol VGLV --cachesettings WCSETTINGS VGLV"),
    "uncache": Shape("lvconvert --yes --uncache VGLV"),
    "splitcache": Shape("lvconvert --yes --splitcache VGLV"),
    "cachemode": Shape("lvchange --yes --cachemode MODE VGLV"),
    "deactivate": Shape("lvchange --yes -an VGLV"),
    "make-bcache": Shape("make-bcache --cset-uuid UUID [--writeback] -B DEV -C DEV"),
    "wipefs": Shape("wipefs --all DEV"),
    "bcache-register": Shape(write=("/sys/fs/bcache/register_quiet", "DEV")),
    "bcache-stop-set": Shape(write=(f"/sys/fs/bcache/{UUID}/stop", "1")),
    "bcache-attach": Shape(write=(r"\{backing\}/bcache/attach", UUID)),
    "bcache-detach": Shape(write=(r"\{backing\}/bcache/detach", "1")),
    "bcache-cache-mode": Shape(write=(r"\{backing\}/bcache/cache_mode", "writethrough|writeback|writearound|none")),
    # The kernel keeps sequential_cutoff in an unsigned int: under 4 GiB.
    "bcache-sequential-cutoff": Shape(write=(r"\{backing\}/bcache/sequential_cutoff", r"0|[1-9][0-9]{0,9}")),
    "bcache-writeback-percent": Shape(write=(r"\{backing\}/bcache/writeback_percent", r"[0-9]|[1-3][0-9]|40")),
    "bcache-state": Shape(wait=r"\{backing\}/bcache/state"),
}


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
    extra = [
        m
        for use in k.uses
        for m in SHAPES[use.shape].modules
        if any(_matches(argv, SHAPES[use.shape].argv.split(), None) for argv in argvs)
    ]
    return k.modules + tuple(dict.fromkeys(m for m in extra if m not in k.modules))


def _matches(argv: tuple[str, ...], shape: list[str], devices: list[set[str]] | None) -> bool:
    """Whether ``argv`` has the shape, its n-th DEV one of ``devices[n]`` (None: any DEV)."""
    if not shape:
        return not argv
    token = shape[0]
    if token.startswith("[") and token.endswith("]"):
        inner = token[1:-1]
        return (bool(argv) and argv[0] == inner and _matches(argv[1:], shape[1:], devices)) or _matches(
            argv, shape[1:], devices
        )
    if not argv:
        return False
    rest = devices
    if token == "DEV":
        ok = devices is None or (bool(devices) and argv[0] in devices[0])
        rest = None if devices is None else devices[1:]
    elif token in PLACEHOLDERS:
        ok = PLACEHOLDERS[token].fullmatch(argv[0]) is not None
    else:
        ok = argv[0] == token
    return ok and _matches(argv[1:], shape[1:], rest)


class _Binding:
    """The uses of one plan's kind, with the paths each may name."""

    def __init__(self, plan: _Plan, kind: Kind) -> None:
        self.kind = kind
        self.by_role: dict[str, set[str]] = {}
        for d in plan.devices:
            self.by_role.setdefault(d.role, set()).add(d.path)

    def paths(self, use: Use) -> list[set[str]]:
        """The paths each DEV of the use may name, in order."""
        return [set().union(*(self.by_role.get(r, set()) for r in roles)) for roles in use.role_sets()]

    def command_problem(self, argv: tuple[str, ...]) -> str | None:
        if not argv:
            return "it has no command"
        program = argv[0]
        if "/" in program:
            return f"it names a program by path ({program}); plans name programs, found on PATH"
        programs = sorted({s.program for s in SHAPES.values() if s.argv})
        if program not in programs:
            return f"{program} is not a program cachewise plans run ({', '.join(programs)})"
        for use in self.kind.uses:
            shape = SHAPES[use.shape]
            if shape.program == program and _matches(argv[1:], shape.argv.split()[1:], self.paths(use)):
                return None
        return (
            f"`{' '.join(argv)}` is not a {program} command a cachewise recipe writes in a {self.kind.name} plan, or "
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
        if not STABLE_PATH.fullmatch(d.path) or ".." in d.path:
            raise PlanError(f"the plan's {d.role} device path {d.path!r} is not a stable device path")
    if not plan.steps:
        raise PlanError("the plan has no steps")
    ids = [s.id for s in plan.steps]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise PlanError(f"the plan has the step {twice!r} twice")
    binding = _Binding(plan, kind)
    for number, step in enumerate(plan.steps, 1):
        why = binding.step_problem(step)
        if why:
            raise PlanError(f"step {number} ({step.id}) is refused: {why}")
