"""Re-check a cache after it was made: the verdict of advisor/health/recheck.py on what the kernel
counted (the history's samples and one read now), what it was predicted to do, and a trace or
capture of the same days; with the plan that carries the verdict out, made as `plan KIND` would."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from advisor.advice.lvmrules import LVM_EXTENT, lvm_chunk_size, lvm_metadata_size, round_down
from advisor.advice.profile import trace_profile
from advisor.backends import Backend, by_target
from advisor.disks.devices import Inventory
from advisor.disks.discovery import find_device
from advisor.errors import CachewiseError, codes, next_step
from advisor.health.recheck import Situation, Verdict
from advisor.health.recheck import recheck as judge
from advisor.history import History
from advisor.plan.model import Plan
from advisor.prediction import Prediction
from advisor.watch.sampler import CacheRef, Sample
from cachewise.core import plans, watch
from cachewise.core.context import Core, Refused
from cachewise.core.workload import analyze
from recipes.lvm import free_after_uncache

codes(
    {
        "recheck-writecache": "{target} is a dm-writecache, which caches writes: the re-check judges read caches "
        "(lvmcache, bcache); doctor judges a writecache's backlog",
        "recheck-unread": "{target} could not be read now ({why})",
        "recheck-unwell": "{target} is not well ({state}): a re-check judges a working cache; doctor says what is "
        "wrong and what to do",
    }
)


@dataclass(frozen=True)
class RecheckRequest:
    """``trace``: a trace or capture of the cache's workload over the same days (sizes it);
    ``record``: keep the sample read now in the history, as watch and doctor do."""

    target: str
    trace: Path | None = None
    record: bool = True


@dataclass(frozen=True)
class Rechecked:
    verdict: Verdict
    plan: Plan | None  # the plan that carries it out, when cachewise makes one
    refused: CachewiseError | None  # why that plan could not be made
    warnings: tuple[CachewiseError, ...] = ()


def _backend(ref: CacheRef) -> Backend:
    found = by_target(ref.kind)
    if found is None:  # the watch finds no other kind
        raise Refused("recheck-unread", target=ref.name, why=f"a cache of kind {ref.kind}")
    return found


def _room(inv: Inventory, ref: CacheRef, backend: Backend) -> int | None:
    """The largest cache the SSD(s) under this cache could hold once it is taken off: for an
    lvmcache, what the PVs its pool is on will have (recipes/lvm.py), less a pool's metadata and
    its spare; for a bcache, its cache device."""
    if backend.id == "bcache":
        dev = find_device(inv, ref.cache) if ref.cache else None
        return dev.size_bytes if dev is not None else None
    origin = find_device(inv, ref.name)
    if origin is None or origin.lvm is None:
        return None
    free = free_after_uncache(inv, origin)
    if not free:
        return None
    room = min(free.values())
    meta = lvm_metadata_size(room, lvm_chunk_size(room))
    return max(0, round_down(room - 2 * meta, LVM_EXTENT))


def recheck(core: Core, request: RecheckRequest) -> Rechecked:
    ref = watch.target(core, request.target)
    backend = _backend(ref)
    if backend.caches_reads is False:
        raise Refused("recheck-writecache", target=ref.name, next=[next_step("see-caches")])
    warnings: list[CachewiseError] = []
    now_samples = core.sampler().sample([ref])
    if not now_samples:
        raise Refused("recheck-unread", target=ref.name, why="no sample", next=[next_step("see-caches")])
    now = now_samples[0]
    if now.trouble or not now.capacity_bytes:
        raise Refused(
            "recheck-unwell",
            target=ref.name,
            state=now.trouble or now.state or "no capacity read",
            next=[next_step("run-doctor", target=ref.name)],
        )
    made_at, predicted = watch.made(core, ref)
    past: list[Sample] = []
    warning = core.record(lambda h: past.extend(h.samples(ref.name, made_at or 0.0)))
    if warning is not None:
        warnings.append(warning)
    if request.record and core.state_dir is not None:

        def keep(h: History) -> None:
            h.record_samples([now])

        warning = core.record(keep)
        if warning is not None:
            warnings.append(warning)
    prof = None
    if request.trace is not None:
        analysis, _ = analyze(core, request.trace)
        # No latencies: a trace of the days the cache served was taken through it, so its
        # stretches already came at the cache's speed (the closed loop is in it).
        prof = trace_profile(analysis)
    inv = core.discovery.scan()
    situation = Situation(
        target=ref.name,
        backend=backend,
        capacity_bytes=now.capacity_bytes,
        mode=now.mode,
        samples=[*past, now],
        made_at=made_at,
        prediction=predicted,
        profile=prof,
        room_bytes=_room(inv, ref, backend),
        now=time.time(),
    )
    verdict = judge(situation)
    plan, refused = None, None
    if verdict.plan:
        try:
            recipe = plans.recipe_of(verdict.plan)
            plan = plans.make(core, inv, verdict.plan, recipe.options(**verdict.options))
        except CachewiseError as exc:
            refused = exc
        if plan is not None and verdict.action in ("grow", "shrink") and verdict.curve_at_size is not None:
            # what the new cache should do, for the watch and the next re-check
            plan = replace(
                plan,
                prediction=Prediction(verdict.curve_at_size, prof.hot_bytes if prof else None, None, None),
            )
    return Rechecked(verdict, plan, refused, tuple(dict.fromkeys(warnings)))
