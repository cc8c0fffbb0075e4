"""What a plan may say: the closed language of the commands cachewise's recipes emit.

A plan file is data a user can edit, copy between hosts or be handed. Before anything runs,
every step must be one that a recipe could have written: a program from the allow-list (by
name; the executor finds it on PATH, never at a path from the file) whose arguments match one
of that program's shapes, on devices the plan is bound to; sysfs writes only to bcache's own
files with values of their kind; undo commands under the same rules. Devices need an identity,
a size and a stable path, so that applying later can tell them from others.
"""

from __future__ import annotations

import re

from advisor.plan.model import Plan, PlanError, Step

KINDS = (
    "lvmcache-attach",
    "lvmcache-uncache",
    "lvmcache-mode",
    "lvmcache-new",
    "bcache-create",
    "bcache-detach",
    "writecache-attach",
    "writecache-detach",
)
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
# Every command shape the recipes emit; DEV is a device the plan is bound to, [x] is optional.
SHAPES: dict[str, tuple[str, ...]] = {
    "pvcreate": ("--yes [--force] DEV",),
    "pvremove": ("--yes DEV",),
    "vgcreate": ("VG DEV",),
    "vgextend": ("VG DEV",),
    "vgreduce": ("VG DEV",),
    "vgremove": ("--yes VG",),
    "lvcreate": (
        "--yes --wipesignatures y -n NAME -L SIZEK VG DEV",
        "--yes --wipesignatures y -n NAME -l 100%PVS VG DEV",
        "--yes --wipesignatures y --type raid1 -m 1 -n NAME -L SIZEK VG DEV DEV",
    ),
    "lvremove": ("--yes VGLV",),
    "lvconvert": (
        "--yes --type cache-pool --poolmetadata VGLV --chunksize SIZEK --cachemode MODE --cachepolicy POLICY VGLV",
        "--yes --type cache --cachepool VGLV VGLV",
        "--yes --uncache VGLV",
        "--yes --splitcache VGLV",
        "--yes --type writecache --cachevol VGLV --cachesettings WCSETTINGS VGLV",
    ),
    "lvchange": ("--yes --cachemode MODE VGLV", "--yes -an VGLV"),
    "make-bcache": ("--cset-uuid UUID [--writeback] -B DEV -C DEV",),
    "wipefs": ("--all DEV",),
}
# sysfs files a plan may write, with the values each takes (DEV: a plan device's path).
WRITES: tuple[tuple[re.Pattern[str], re.Pattern[str] | str], ...] = (
    (re.compile(r"/sys/fs/bcache/register_quiet"), "DEV"),
    (re.compile(f"/sys/fs/bcache/{UUID}/stop"), re.compile("1")),
    (re.compile(r"\{backing\}/bcache/attach"), re.compile(UUID)),
    (re.compile(r"\{backing\}/bcache/(detach|stop)"), re.compile("1")),
    (re.compile(r"\{backing\}/bcache/cache_mode"), re.compile("writethrough|writeback|writearound|none")),
    # The kernel keeps sequential_cutoff in an unsigned int: under 4 GiB.
    (re.compile(r"\{backing\}/bcache/sequential_cutoff"), re.compile(r"0|[1-9][0-9]{0,9}")),
    (re.compile(r"\{backing\}/bcache/writeback_percent"), re.compile(r"[0-9]|[1-3][0-9]|40")),
)
WAITS = re.compile(r"\{backing\}/bcache/state")
PROGRESS = ("", "cache_dirty", "bcache_dirty", "writecache_dirty")
STEP_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def _matches(argv: tuple[str, ...], shape: list[str], devices: set[str]) -> bool:
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
    if token == "DEV":
        ok = argv[0] in devices
    elif token in PLACEHOLDERS:
        ok = PLACEHOLDERS[token].fullmatch(argv[0]) is not None
    else:
        ok = argv[0] == token
    return ok and _matches(argv[1:], shape[1:], devices)


def command_problem(argv: tuple[str, ...], devices: set[str]) -> str | None:
    """Why ``argv`` is not a command a recipe writes (None: it is one)."""
    if not argv:
        return "it has no command"
    program = argv[0]
    if "/" in program:
        return f"it names a program by path ({program}); plans name programs, found on PATH"
    if program not in SHAPES:
        return f"{program} is not a program cachewise plans run ({', '.join(sorted(SHAPES))})"
    if not any(_matches(argv[1:], shape.split(), devices) for shape in SHAPES[program]):
        return (
            f"`{' '.join(argv)}` is not a {program} command a cachewise recipe writes, or names a device "
            "the plan is not bound to"
        )
    return None


def _write_problem(target: tuple[str, str], devices: set[str]) -> str | None:
    path, value = target
    for pattern, allowed in WRITES:
        if pattern.fullmatch(path):
            ok = value in devices if allowed == "DEV" else bool(allowed.fullmatch(value))  # type: ignore[union-attr]
            return None if ok else f"it writes {value!r} to {path}, which takes no such value"
    return f"it writes to {path}, which is not one of the bcache files plans write"


def step_problem(step: Step, devices: set[str]) -> str | None:
    """Why this step is not one a recipe writes (None: it is one)."""
    if not STEP_ID.fullmatch(step.id):
        return f"its id {step.id!r} is not a step name"
    kinds = [step.argv != (), step.write is not None, step.wait is not None]
    if sum(kinds) != 1:
        return "it must run exactly one of a command, a sysfs write or a wait"
    if step.argv:
        why = command_problem(step.argv, devices)
    elif step.write is not None:
        why = _write_problem(step.write, devices)
    else:
        assert step.wait is not None
        why = None if WAITS.fullmatch(step.wait[0]) else f"it waits on {step.wait[0]}, which plans do not watch"
    if why:
        return why
    for argv in step.undo:
        why = command_problem(argv, devices)
        if why:
            return f"its undo command is refused: {why}"
    if step.progress not in PROGRESS:
        return f"its progress {step.progress!r} is not one cachewise shows"
    if step.seconds < 0 or step.timeout <= 0:
        return "its expected time or timeout is not a positive number"
    return None


def check(plan: Plan) -> None:
    """PlanError naming what is wrong when the plan says anything a recipe would not."""
    if plan.kind not in KINDS:
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
    devices = {d.path for d in plan.devices}
    for number, step in enumerate(plan.steps, 1):
        why = step_problem(step, devices)
        if why:
            raise PlanError(f"step {number} ({step.id}) is refused: {why}")
