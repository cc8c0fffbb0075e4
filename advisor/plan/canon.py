"""What each step's checks must be, from what it runs: the plan language for pre- and
postconditions.

The executor skips a step whose postconditions hold, and every step before the last one whose
postconditions hold (advisor/apply/run.py: lvconvert absorbs the LVs that earlier steps made, so
their own checks no longer show). A plan file that could choose its checks could therefore make
the run skip the steps that make a removal safe (flush, detach) and go straight to a wipe. So a
step's postconditions must be exactly the ones its shape implies, named from its own arguments
and the plan's context (the cache set it makes, the mode of the pool it made, the segment type
its kind removes); its preconditions must include the ones its shape requires (more only make
a step harder to run). A wait must wait for one of the values the recipes wait for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from advisor.plan import language
from advisor.plan.checks import (
    BcacheSuperblock,
    CacheMode,
    CachePool,
    Check,
    InitramfsCarries,
    LvComplete,
    LvExists,
    LvPartial,
    NoLv,
    NoSignature,
    NoSysfs,
    NotMounted,
    NotPv,
    NotPvInVg,
    NotSegtype,
    NoTunablesFile,
    Pv,
    PvInVg,
    Segtype,
    Sysfs,
    SysfsExists,
    TunablesFile,
)
from advisor.plan.language import PlanError

B = "{backing}/bcache"
WAITS = ("clean|no cache", "no cache")  # the states a removal waits for


class _Step(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def write(self) -> tuple[str, str] | None: ...
    @property
    def wait(self) -> tuple[str, str] | None: ...
    @property
    def pre(self) -> tuple[Check, ...]: ...
    @property
    def post(self) -> tuple[Check, ...]: ...


class _Device(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def path(self) -> str: ...


class _Plan(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def devices(self) -> Sequence[_Device]: ...
    @property
    def steps(self) -> Sequence[_Step]: ...


@dataclass(frozen=True)
class Context:
    """What a step's checks may depend on besides its own arguments."""

    roles: dict[str, str]  # path -> role
    cache_set: str | None  # the cache set UUID the plan's make-bcache makes
    pool_modes: dict[str, str]  # VG/LV of each cache pool the plan makes -> its cache mode
    segtype: str  # what the plan's kind changes or removes ("cache", "writecache"; "" for none)
    initramfs: str = ""  # what the initramfs must carry for the device the plan leaves (InitramfsCarries)
    remakes: bool = False  # the plan takes a cache off and attaches another (a resize)


def initramfs_needs(backend: str, effect: str, mirrored: bool = False) -> str:
    """What the initramfs must carry to assemble the device a plan leaves (InitramfsCarries's
    ``needs``): the cache it makes (+raid1 on a mirrored pair), the plain LV an LVM cache's
    removal leaves, or bcache's backing device, which stays a bcache device without its cache;
    '' for a plan that makes or removes no cache."""
    if effect not in ("makes", "removes") or not backend:
        return ""
    if backend == "bcache":
        return "bcache"
    if effect == "removes":
        return "lvm"
    base = "lvmcache" if backend == "lvmcache" else "writecache"
    return f"{base}+raid1" if mirrored else base


def context(plan: _Plan) -> Context:
    cache_set, modes, mirrored, remakes = None, {}, False, False
    for step in plan.steps:
        m = language.match_argv(step.argv) if step.argv else None
        remakes = remakes or (m is not None and m.shape == "uncache")
        if m is not None and m.shape == "make-bcache":
            cache_set = m.args["UUID"]
        elif m is not None and m.shape == "cache-pool":
            modes[m.args["VGLV2"]] = m.args["MODE"]
        mirrored = mirrored or (m is not None and m.shape == "lvcreate-raid1")
    kind = language.kind_of(plan.kind)
    roles = {d.path: d.role for d in plan.devices}
    needs = initramfs_needs(kind.backend, kind.effect, mirrored) if kind else ""
    return Context(roles, cache_set, modes, kind.segtype if kind else "", needs, remakes)


SEQUENTIAL_CUTOFF_MAX = (1 << 32) - 1


def expected(m: language.Match, ctx: Context) -> tuple[tuple[Check, ...], list[frozenset[Check]]] | str:
    """The preconditions a step of this shape must have, and the sets its postconditions may
    be; or why no step of this shape can be in this plan."""
    a, shape = m.args, m.shape
    dev, vglv, vglv2 = a.get("DEV", ""), a.get("VGLV", ""), a.get("VGLV2", "")
    nothing: list[frozenset[Check]] = [frozenset()]
    if shape == "pvcreate":
        pre: tuple[Check, ...] = (NotMounted(device=dev),) + (() if "--force" in a else (NoSignature(device=dev),))
        return pre, [frozenset({Pv(device=dev)})]
    if shape == "pvremove":
        return (), [frozenset({NotPv(device=dev)})]
    if shape in ("vgcreate", "vgextend"):
        return (), [frozenset({PvInVg(device=dev, vg=a["VG"])})]
    if shape == "vgreduce":
        return (), [frozenset({NotPvInVg(device=dev, vg=a["VG"])})]
    if shape in ("bcache-sequential-cutoff", "bcache-tunables-file"):
        # the kernel keeps sequential_cutoff in an unsigned int; the regex admits ten digits
        cutoff = int(a["VALUE"]) if shape == "bcache-sequential-cutoff" else int(a["VALUE"].split()[0].split("=")[1])
        if cutoff > SEQUENTIAL_CUTOFF_MAX:
            return f"it sets sequential_cutoff to {cutoff} bytes, more than the kernel keeps ({SEQUENTIAL_CUTOFF_MAX})"
    if shape in ("vgremove", "deactivate", "bcache-sequential-cutoff", "bcache-writeback-percent"):
        return (), nothing
    if shape == "lvremove":
        return (), [frozenset(), frozenset({NoLv(lv=vglv)})]
    if shape in ("lvcreate", "lvcreate-raid1", "lvcreate-whole"):
        lv = f"{a['VG']}/{a['NAME']}"
        return ((NoLv(lv=lv),) if shape != "lvcreate-whole" else ()), [frozenset({LvExists(lv=lv)})]
    if shape == "cache-pool":
        return (LvExists(lv=vglv), LvExists(lv=vglv2)), [frozenset({Segtype(lv=vglv2, segtype="cache-pool")})]
    if shape == "cache-attach":
        mode = ctx.pool_modes.get(vglv)
        if mode is None:
            return f"its cache pool {vglv} is not one the plan makes"
        post = frozenset({Segtype(lv=vglv2, segtype="cache"), CacheMode(lv=vglv2, mode=mode)})
        if ctx.remakes:  # the LV was cached before too: only the new pool tells the step ran
            post = post | {CachePool(lv=vglv2, pool=vglv)}
        return (Segtype(lv=vglv, segtype="cache-pool"), NotSegtype(lv=vglv2, segtype="cache")), [post]
    if shape == "writecache-attach":
        return (NotSegtype(lv=vglv2, segtype="writecache"),), [frozenset({Segtype(lv=vglv2, segtype="writecache")})]
    if shape == "vgreduce-missing":
        return (), nothing
    if shape == "activate":
        return (), nothing
    if shape == "repair-leg":
        sub = a["SUBLV"]
        return (PvInVg(device=dev, vg=sub.split("/")[0]),), [frozenset({LvComplete(lv=sub)})]
    if shape in ("uncache", "splitcache", "uncache-force"):
        if not ctx.segtype:
            return "a plan of this kind removes no cache"
        pre = (Segtype(lv=vglv, segtype=ctx.segtype),)
        if shape == "uncache-force":  # never a cache whose SSD is there (or came back): it drops its dirty data
            pre = (*pre, LvPartial(lv=vglv))
        return pre, [frozenset({NotSegtype(lv=vglv, segtype=ctx.segtype)})]
    if shape == "cachemode":
        return (Segtype(lv=vglv, segtype="cache"),), [frozenset({CacheMode(lv=vglv, mode=a["MODE"])})]
    if shape == "make-bcache":
        d2 = a["DEV2"]
        pre = (NoSignature(device=dev), NoSignature(device=d2), NotMounted(device=dev), NotMounted(device=d2))
        return pre, [frozenset({BcacheSuperblock(device=dev), BcacheSuperblock(device=d2)})]
    if shape == "make-bcache-backing":
        return (NoSignature(device=dev), NotMounted(device=dev)), [frozenset({BcacheSuperblock(device=dev)})]
    if shape == "wipefs":
        return (), [frozenset({NoSignature(device=dev)})]
    if shape in language.INITRAMFS_SHAPES:
        if not ctx.initramfs:
            return "a plan of this kind makes or removes no cache the initramfs could assemble"
        # Checked after it ran: the images carry what the device needs (when the initramfs
        # assembles it), or nothing is checked (a device mounted later in the boot).
        return (), [frozenset(), frozenset({InitramfsCarries(needs=ctx.initramfs)})]
    if shape == "bcache-register":
        if ctx.roles.get(dev) == "backing":  # registered; or registered and waiting for its set (a rescue)
            return (), [frozenset({SysfsExists(path=B)}), frozenset({Sysfs(path=f"{B}/running", value="0")})]
        if ctx.cache_set is None:
            return "it registers a cache whose cache set the plan does not make"
        return (), [frozenset({SysfsExists(path=f"/sys/fs/bcache/{ctx.cache_set}")})]
    if shape == "bcache-attach":
        return (), [frozenset({SysfsExists(path=f"{B}/cache")})]
    if shape == "bcache-cache-mode":
        mode = a["VALUE"]
        path = f"{B}/cache_mode"
        plain, or_none = Sysfs(path=path, value=f"[{mode}]"), Sysfs(path=path, value=f"[{mode}]|no cache")
        return (), [frozenset({plain}), frozenset({or_none})]
    if shape == "bcache-detach":
        return (), [frozenset({Sysfs(path=f"{B}/state", value="no cache")})]
    if shape == "bcache-stop-device":
        return (), [frozenset({NoSysfs(path=B)})]
    if shape == "bcache-run":
        # only a backing device waiting for a cache set that is not there: started by hand, it is
        # marked stale for good (a set that came back would have attached it: its cache link)
        pre = (Sysfs(path=f"{B}/running", value="0"), NoSysfs(path=f"{B}/cache"))
        return pre, [frozenset({Sysfs(path=f"{B}/state", value="inconsistent")})]
    if shape == "bcache-stop-set":
        return (), [frozenset({NoSysfs(path=f"/sys/fs/bcache/{a['SET']}")})]
    if shape == "bcache-tunables-file":
        return (), [frozenset({TunablesFile(file=a["FILE"], value=a["VALUE"])})]
    if shape == "bcache-tunables-forget":
        return (), [frozenset({NoTunablesFile(file=a["FILE"])})]
    if shape == "bcache-state":
        if a["VALUE"] not in WAITS:
            return f"it waits for {a['VALUE']!r}, which is not a state a removal waits for ({', '.join(WAITS)})"
        return (), [frozenset({Sysfs(path=f"{B}/state", value=a["VALUE"])})]
    return f"cachewise knows no checks for a {shape} step"  # pragma: no cover - every shape is above


def cache_sets(plan: _Plan) -> set[str]:
    """Every cache set UUID the plan's steps name."""
    out = set()
    for step in plan.steps:
        m = language.match(step)
        if m is None:
            continue
        for key in ("UUID", "SET"):
            if key in m.args:
                out.add(m.args[key])
        if m.shape == "bcache-attach":
            out.add(m.args["VALUE"])
    return out


def check(plan: _Plan) -> None:
    """PlanError when a step's checks are not the ones its command implies (after
    language.check, which has matched every step to its shape), or the plan names more than one
    cache set."""
    sets = cache_sets(plan)
    if len(sets) > 1:
        raise PlanError(f"the plan names {len(sets)} cache sets ({', '.join(sorted(sets))}); a plan works on one")
    ctx = context(plan)
    for number, step in enumerate(plan.steps, 1):
        m = language.match(step)
        if m is None:  # pragma: no cover - language.check refused it
            raise PlanError(f"step {number} ({step.id}) is refused: it is not a step cachewise writes")
        found = expected(m, ctx)
        if isinstance(found, str):
            raise PlanError(f"step {number} ({step.id}) is refused: {found}")
        pre, posts = found
        missing = [c.describe() for c in pre if c not in step.pre]
        if missing:
            raise PlanError(f"step {number} ({step.id}) is refused: its preconditions leave out {'; '.join(missing)}")
        if frozenset(step.post) not in posts or len(set(step.post)) != len(step.post):
            said = "; ".join(c.describe() for c in sorted(posts[0], key=lambda c: c.describe())) or "none"
            raise PlanError(
                f"step {number} ({step.id}) is refused: its postconditions are not the ones its command implies "
                f"({said}), so they cannot tell whether it took effect"
            )
