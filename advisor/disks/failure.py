"""A cache whose SSD failed or went away: what the kernel did, what that means for reads, writes
and the data, and what gets the origin back.

Discovery (advisor/disks/caches.py) and the watch's sampler (advisor/watch/sampler.py) each read
the facts their own way (lvm2's reports and ``dmsetup status``; the kernel's tables and sysfs)
and describe them with one :class:`Failure`, so that ``scan``, ``status``, ``watch`` and the
Warm-up screen say the same thing. What the sentences claim was measured on Debian 12's kernel
6.1 with lvm2 2.03.16 by pulling the SSD under load (docs/dead-ssd.md,
tests/fixtures/lab-deadssd/):

- dm-cache switches to fail mode (its status reads ``Fail``) within a second of its first
  metadata commit after the SSD is gone; every flush then fails, and so does I/O of blocks the
  SSD held, so a file system on it shuts down (XFS did, "log I/O error"), writethrough or not.
  I/O of blocks the SSD did not hold still reaches the origin. lvm2 marks the LV ``partial``.
- In writethrough the origin has every write: ``lvconvert --uncache`` (no ``--force``) skips the
  flush of a failed cache and gives the origin back whole. In writeback the blocks that were
  dirty on the SSD are lost; lvm2 refuses the uncache without ``--force``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["dm-cache", "dm-writecache", "bcache"]


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names)


@dataclass(frozen=True)
class Failure:
    """What is wrong with one cache. ``missing``: the devices under its cache that are gone
    (kernel names as last known, such as ``sdb``); ``said``: the kernel's own words."""

    kind: Kind
    name: str  # "labvg/data", "bcache0"
    mode: str | None = None  # "writethrough", "writeback"; None when it could not be read
    failed: bool = False  # the kernel stopped using the cache (fail mode, a writecache error, a cache set gone)
    read_only: bool = False  # dm-cache's metadata went read-only after an error
    needs_check: bool = False  # dm-cache's metadata asks for cache_check before the next activation
    degraded: bool = False  # a mirrored cache lost one leg and runs on the other
    missing: tuple[str, ...] = ()
    said: str = ""  # "inactive": an LV lvm2 will not activate (no kernel state to read)

    @property
    def any(self) -> bool:
        return self.failed or self.read_only or self.needs_check or self.degraded or bool(self.missing)

    @property
    def gone(self) -> bool:
        """The cache's only copy is gone: its SSD (or both of a mirror) was pulled or died."""
        return bool(self.missing) and not self.degraded

    @property
    def broken(self) -> bool:
        """The cache cannot serve any more (failed, or its SSD is gone): it needs a rescue."""
        return self.failed or self.gone

    @property
    def writeback(self) -> bool:
        """Whether writes may have been on the SSD only (dm-writecache always caches writes so)."""
        return self.kind == "dm-writecache" or self.mode == "writeback"

    @property
    def state(self) -> str:
        """One word for tables: failed, gone, degraded, read-only, needs_check (or '')."""
        if self.failed:
            return "failed"
        if self.gone:
            return "gone"
        if self.degraded:
            return "degraded"
        if self.read_only:
            return "read-only"
        return "needs_check" if self.needs_check else ""

    def sentence(self) -> str:
        """What happened and what it means, for people."""
        if self.degraded:
            return (
                f"one SSD of {self.name}'s mirrored cache is gone ({_names(self.missing)}): the cache runs on the "
                "other alone, with no second copy of its blocks; put in a new SSD and repair the mirror onto it "
                "before anything else"
            )
        gone = f"the SSD of {self.name} is gone ({_names(self.missing)})" if self.missing else ""
        if self.kind == "bcache" and not self.missing:
            gone = f"the cache set of {self.name} is gone (its SSD died or was pulled)"
        if self.broken:
            return "; ".join(b for b in (gone, self._kernel(), self.origin()) if b)
        if self.read_only:
            return (
                f"the cache metadata of {self.name} went read-only after an error: the cache still serves I/O but "
                "promotes and writes back nothing"
            )
        if self.needs_check:
            return (
                f"the cache metadata of {self.name} is marked needs_check: lvm2 will not activate the cache again "
                "until cache_check passes"
            )
        return ""

    def _kernel(self) -> str:
        """What the kernel does with the cache now."""
        if self.said == "inactive":
            return (
                "lvm2 does not activate an LV with a part on a missing PV, so it is no block device and nothing on "
                "it comes up (at boot neither)"
            )
        if self.kind == "dm-cache":
            if not self.failed:
                return (
                    "dm-cache has not noticed yet and switches to fail mode at its next metadata write; then every "
                    "flush and every read or write of a block held on the SSD fails"
                )
            return (
                f"dm-cache is in fail mode (the kernel says {self.said or 'Fail'}): every flush and every read or "
                "write of a block held on the SSD fails, so the file system on it may have shut down; the rest "
                "still reaches the origin"
            )
        if self.kind == "dm-writecache":
            said = f" ({self.said})" if self.said else ""
            return (
                f"dm-writecache stopped on an I/O error{said}: it fails writes and the reads of blocks it held"
                if self.failed
                else "dm-writecache has not noticed yet"
            )
        if self.said == "stopped":
            return (
                f"bcache stopped the device of {self.name} because its cache set held dirty data (writeback): the data "
                "is out of reach until the device is started without the set"
            )
        if self.said == "inconsistent":
            return (
                f"bcache was started without its cache set while the set held dirty data (state inconsistent): "
                f"{self.name} runs on its backing device alone"
            )
        return (
            f"{self.name} runs on its backing device alone: reads and writes reach the disk; the backing device "
            "still names the set, so once it is stopped or the machine restarts, bcache waits for the set and the "
            "device does not come back by itself"
        )

    def origin(self) -> str:
        """What is and is not on the origin once the cache is taken off."""
        if self.kind == "bcache" and self.said in ("inconsistent", "stopped"):
            return (
                "the backing device lacks the data that was dirty in the cache: the file system on it may be "
                "damaged beyond repair (in the lab a fresh XFS was)"
            )
        if self.kind == "dm-writecache":
            return (
                "the origin lacks every block written since the writecache last wrote back: those blocks were on "
                "the SSD only, and the file system on the origin may need a repair"
            )
        if self.writeback:
            return (
                "the origin lacks the blocks that were dirty on the SSD (writeback): they are lost, and the file "
                "system on it may need a repair"
            )
        if self.mode == "writethrough":
            return "the origin has every write (writethrough), so nothing is lost once the cache is taken off"
        return "whether the origin has every write depends on the cache's mode, which could not be read"
