"""The cache backends cachewise sets up and removes: dm-cache (lvmcache), dm-writecache and bcache.

One descriptor per backend, the one place that says what each is: the names it goes by in the
recommendation, the kernel and discovery, the kernel modules it needs, its modes, what lvm2
calls its segment, and how much dirty data it holds while a removal or a mode change flushes it.
Discovery, the watch, the executor and the recipes' registry (recipes/registry.py) read them
here; the advice extends them with its traits. A new backend is one more descriptor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from advisor.readers import dmstatus
from advisor.runner import CommandRunner

BackendId = Literal["lvmcache", "lvmcache-writecache", "bcache"]
Target = Literal["dm-cache", "dm-writecache", "bcache"]
Mode = Literal["writethrough", "writeback"]
# How a flush's progress is read while a step runs: the dirty blocks of an LV's dm target
# (read with dmsetup while lvconvert or lvchange flushes), or bcache's dirty_data in sysfs.
Progress = Literal["cache_dirty", "writecache_dirty", "bcache_dirty"]
DirtyReader = Callable[[CommandRunner, str, str], int | None]


def _cache_dirty(runner: CommandRunner, vg: str, lv: str) -> int | None:
    status = dmstatus.cache_status(runner, vg, lv)
    return None if status is None else status.dirty


def _writecache_dirty(runner: CommandRunner, vg: str, lv: str) -> int | None:
    # dm-writecache holds only written blocks: those in use are the ones left to write back.
    status = dmstatus.writecache_status(runner, vg, lv)
    return None if status is None else status.used_blocks


@dataclass(frozen=True)
class Backend:
    id: BackendId  # the recommendation's name (recommend --json "backend")
    label: str  # for people: "lvmcache (dm-cache)"
    noun: str  # in a sentence: "an lvmcache"
    target: Target  # the kernel's: the watch's and status's kind
    family: str  # discovery's name for a cache of it (Caching.kind)
    modes: tuple[Mode, ...]  # the modes it offers; the first is the safe default
    caches_reads: bool
    kernel_modules: tuple[str, ...]  # what a plan that makes one needs loaded
    progress: Progress  # how the executor shows a flush of it
    remover: str  # the kind of plan that removes a cache of it (recipes/registry.py holds them to it)
    lvm_segtype: str | None = None  # lvm2's segment type of an LV cached by it
    keeps: str = ""  # what lvm2 keeps as an LV when the cache is split off instead of removed
    dirty: DirtyReader | None = None  # dirty blocks of an LV cached by it, read from the kernel

    def __str__(self) -> str:
        return self.label


LVMCACHE = Backend(
    "lvmcache",
    "lvmcache (dm-cache)",
    "an lvmcache",
    "dm-cache",
    "lvmcache",
    ("writethrough", "writeback"),
    caches_reads=True,
    kernel_modules=("dm_cache", "dm_cache_smq"),
    progress="cache_dirty",
    remover="lvmcache-uncache",
    lvm_segtype="cache",
    keeps="cache pool",
    dirty=_cache_dirty,
)
WRITECACHE = Backend(
    "lvmcache-writecache",
    "lvmcache writecache (dm-writecache)",
    "a writecache",
    "dm-writecache",
    "dm-writecache",
    ("writeback",),
    caches_reads=False,
    kernel_modules=("dm_writecache",),
    progress="writecache_dirty",
    remover="writecache-detach",
    lvm_segtype="writecache",
    keeps="cache volume",
    dirty=_writecache_dirty,
)
BCACHE = Backend(
    "bcache",
    "bcache",
    "a bcache",
    "bcache",
    "bcache",
    ("writethrough", "writeback"),
    caches_reads=True,
    kernel_modules=("bcache",),
    progress="bcache_dirty",
    remover="bcache-detach",
)
BACKENDS: tuple[Backend, ...] = (LVMCACHE, WRITECACHE, BCACHE)
PROGRESS: tuple[Progress, ...] = tuple(b.progress for b in BACKENDS)


def listed(last: str = "or") -> str:
    """Every backend, for a sentence: "lvmcache (dm-cache), lvmcache writecache (dm-writecache) or
    bcache" (``last`` joins the last two)."""
    labels = [b.label for b in BACKENDS]
    return f"{', '.join(labels[:-1])} {last} {labels[-1]}"


def backend(backend_id: str) -> Backend:
    """The backend of this id (KeyError for none)."""
    for b in BACKENDS:
        if b.id == backend_id:
            return b
    raise KeyError(backend_id)


def by_target(target: str) -> Backend | None:
    """The backend whose kernel target the watch names a cache by ("dm-cache", "bcache" ...)."""
    return next((b for b in BACKENDS if b.target == target), None)


def by_segtype(segtype: str | None) -> Backend | None:
    """The backend of an LV with lvm2's segment type ``segtype``, if it is a cache."""
    return next((b for b in BACKENDS if segtype is not None and b.lvm_segtype == segtype), None)


def by_progress(progress: str) -> Backend | None:
    return next((b for b in BACKENDS if b.progress == progress), None)
