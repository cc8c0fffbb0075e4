"""What discovery reports: block devices with stable identity, role and why they are in use.

The JSON form of :class:`Inventory` is the scan's JSON schema, documented in
docs/scan-json.md. Bump :data:`SCAN_SCHEMA` when a field changes meaning or disappears;
adding a field is backwards compatible and does not bump it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from advisor.errors import Next
from advisor.readers.bcache import hprint_bytes

SCAN_SCHEMA = "cachewise.scan/1"

Kind = Literal["disk", "partition", "lvm", "dm", "bcache", "md", "loop", "virtual"]
State = Literal["free", "has-data", "in-use"]


@dataclass(frozen=True)
class LvmInfo:
    """LVM membership: a physical volume of a VG, or a logical volume in a VG."""

    role: Literal["pv", "lv"]
    vg: str | None
    lv: str | None = None
    segtype: str | None = None
    uuid: str | None = None
    pool: str | None = None  # a thin LV's thin pool (lvs pool_lv)
    attr: str | None = None  # lvs lv_attr: its first letter o/O marks the origin of COW snapshots

    @property
    def snapshot_origin(self) -> bool:
        return bool(self.attr) and self.attr[0] in "oO"  # type: ignore[index]


@dataclass(frozen=True)
class BcacheInfo:
    """bcache role. ``backing`` and ``cache`` are the underlying devices, ``bcache`` the bcacheN."""

    role: Literal["backing", "cache", "bcache", "unregistered"]
    cache_set_uuid: str | None = None
    dev_uuid: str | None = None
    state: str | None = None
    cache_mode: str | None = None
    dirty_data: str | None = None
    bcache_device: str | None = None
    backing_device: str | None = None
    running: bool | None = None  # a backing device's bcacheN is started (0: it waits for its cache set)

    @property
    def dirty_bytes(self) -> int | None:
        """The kernel's dirty_data in bytes ('0.0k' is 0, 'nothing dirty'); None when not read."""
        return hprint_bytes(self.dirty_data)


@dataclass(frozen=True)
class MdInfo:
    role: Literal["array", "member"]
    array: str | None = None
    level: str | None = None
    degraded: int | None = None  # members missing (md/degraded), arrays only


CacheKind = Literal[
    "lvmcache", "dm-writecache", "bcache", "flashcache", "enhanceio", "zfs", "bcachefs", "md", "dm-crypt"
]


# Layers that own their devices' data and manage SSDs themselves, or that cachewise never
# touches: a device in one holds data whatever blkid says of it.
OTHER_SYSTEMS: tuple[CacheKind, ...] = ("zfs", "bcachefs", "flashcache", "enhanceio")


@dataclass(frozen=True)
class Caching:
    """A device's part in a cache (or cache-like layer)."""

    kind: CacheKind
    part: str  # "cached LV", "bcache backing device", "member of ZFS pool tank" ...
    state: str  # "writeback, smq policy", "degraded: a mirror leg is missing", "dirty" ...
    can: str  # what can be done for it besides cachewise's own actions, as a sentence
    remove: str | None = None  # the kind of plan that removes this cache, when cachewise can
    degraded: bool = False  # a device under it is missing (a mirrored cache runs on its other leg)
    next: tuple[Next, ...] = ()  # what cachewise can do for it: each front end words these
    # What went wrong with the cache itself (advisor/disks/failure.py): it cannot serve any more
    # (the kernel stopped using it, or its only SSD is gone: the way out is to take it off the
    # origin), its metadata went read-only or asks for a check, the devices under its cache that
    # are gone (kernel names), its mode, and what it all means, in a sentence ('' when all is well).
    failed: bool = False
    read_only: bool = False
    needs_check: bool = False
    missing: tuple[str, ...] = ()
    mode: str | None = None
    trouble: str = ""

    def to_json(self) -> dict[str, Any]:
        """The scan JSON's object."""
        return {
            "kind": self.kind,
            "part": self.part,
            "state": self.state,
            "can": self.can,
            "remove": self.remove,
            "degraded": self.degraded,
            "failed": self.failed,
            "read_only": self.read_only,
            "needs_check": self.needs_check,
            "missing": list(self.missing),
            "mode": self.mode,
            "trouble": self.trouble,
        }


@dataclass(frozen=True)
class Unread:
    """A fact discovery could not read, and why (no udev, not root, tool missing ...)."""

    fact: str
    reason: str


@dataclass(frozen=True)
class Device:
    name: str
    kind: Kind
    devnode: str
    devnum: str
    identity: str | None
    stable_path: str | None
    links: tuple[str, ...] = ()
    serial: str | None = None
    wwn: str | None = None
    model: str | None = None
    vendor: str | None = None
    transport: str | None = None
    size_bytes: int = 0
    logical_sector_size: int | None = None
    physical_sector_size: int | None = None
    rotational: bool | None = None
    discard: bool | None = None
    removable: bool = False
    read_only: bool = False
    parent: str | None = None
    partitions: tuple[str, ...] = ()
    holders: tuple[str, ...] = ()
    slaves: tuple[str, ...] = ()
    mountpoints: tuple[str, ...] = ()
    swap: bool = False
    fs_type: str | None = None
    fs_uuid: str | None = None
    fs_label: str | None = None
    fs_block_size: int | None = None  # blkid's BLOCK_SIZE: XFS's sector size, ext4's block size
    partition_table: str | None = None
    dm_name: str | None = None
    dm_uuid: str | None = None
    loop_file: str | None = None
    lvm: LvmInfo | None = None
    bcache: BcacheInfo | None = None
    md: MdInfo | None = None
    caching: Caching | None = None  # its part in a cache or cache-like layer (advisor.disks.caches)
    hidden: bool = False
    state: State = "free"
    in_use_reason: str = ""
    unreadable: tuple[Unread, ...] = ()

    @property
    def display_path(self) -> str:
        return self.stable_path or self.devnode

    @property
    def signature(self) -> str | None:
        """What writing over the device would destroy, in a few words ('ext4', 'gpt partition
        table', 'LVM2_member'); None when it holds nothing discovery can see (an LV is not data
        by itself: its file system is)."""
        if self.fs_type:
            return self.fs_type
        if self.partition_table:
            return f"{self.partition_table} partition table"
        if self.partitions:
            return "partitions " + ", ".join(self.partitions)
        if self.lvm is not None and self.lvm.role == "pv":
            return "LVM PV"
        if self.bcache is not None:
            return "bcache"
        if self.md is not None and self.md.role == "member":
            return "RAID member"
        if self.caching is not None and self.caching.kind in OTHER_SYSTEMS:
            return self.caching.part  # found by its magic where blkid did not name it (bcachefs)
        return None

    @property
    def role(self) -> str:
        """A short word or two for tables: 'LVM PV', 'bcache backing', 'ext4' ..., else what it is
        in a cache-like layer ('dm-crypt', 'bcachefs') or its kind ('disk', 'loop'): never empty, so
        the scan's table and JSON say the same."""
        if self.lvm is not None:
            return "LVM PV" if self.lvm.role == "pv" else f"LV {self.lvm.vg}/{self.lvm.lv}"
        if self.bcache is not None:
            return {
                "backing": "bcache backing",
                "cache": "bcache cache",
                "bcache": "bcache device",
                "unregistered": "bcache (unregistered)",
            }[self.bcache.role]
        if self.md is not None:
            return f"RAID {self.md.level or ''}".strip() if self.md.role == "array" else "RAID member"
        if self.swap:
            return "swap"
        if self.fs_type:
            return self.fs_type
        if self.partition_table:
            return f"{self.partition_table} table"
        if self.caching is not None:
            return self.caching.kind
        return self.kind

    def to_json(self) -> dict[str, Any]:
        data = asdict(replace(self, caching=None))
        data["caching"] = self.caching.to_json() if self.caching is not None else None
        data["role"] = self.role
        return data


INACTIVE_IDENTITY = "lv-uuid:"  # the identity of an LV that is not active (it has no dm device yet)


@dataclass(frozen=True)
class InactiveLv:
    """A cached LV that lvm2 reports but that is not active, so it is no block device: after a
    reboot with its cache's SSD dead lvm2 refuses to activate it (``partial``), and nothing on it
    comes up. Discovery lists it so that ``scan``, ``doctor`` and ``plan remove`` can name it and
    get its origin back (docs/dead-ssd.md)."""

    vg: str
    lv: str
    uuid: str
    segtype: str  # "cache" or "writecache"
    attr: str  # lvs lv_attr: its ninth letter ``p`` marks a part on a missing PV
    size_bytes: int
    mode: str | None = None  # cache_mode: writethrough, writeback (None for dm-writecache)
    origin_missing: bool = False  # the part on a missing PV is (also) its origin's, not only its cache's

    @property
    def name(self) -> str:
        return f"{self.vg}/{self.lv}"

    @property
    def path(self) -> str:
        return f"/dev/{self.vg}/{self.lv}"

    @property
    def identity(self) -> str:
        return f"{INACTIVE_IDENTITY}{self.uuid}"

    @property
    def partial(self) -> bool:
        return len(self.attr) > 8 and self.attr[8] == "p"

    @property
    def rescuable(self) -> bool:
        """Only its cache is on a missing PV: taking the cache off gets its origin back."""
        return self.partial and not self.origin_missing

    @property
    def kind(self) -> Literal["dm-cache", "dm-writecache"]:
        return "dm-writecache" if self.segtype == "writecache" else "dm-cache"

    def names(self) -> set[str]:
        """The names a user types for it, as for an active LV."""
        return lv_names(self.vg, self.lv)


def lv_names(vg: str, lv: str) -> set[str]:
    """The names of an LV: VG/LV, /dev/VG/LV and /dev/mapper/VG-LV (lvm2 doubles a '-' in either)."""
    return {f"{vg}/{lv}", f"/dev/{vg}/{lv}", f"/dev/mapper/{vg.replace('-', '--')}-{lv.replace('-', '--')}"}


@dataclass(frozen=True)
class Inventory:
    """One discovery pass over the machine."""

    taken_at: str
    hostname: str
    udev: Literal["running", "database-only", "absent", "no-libudev"]
    root: bool
    devices: tuple[Device, ...]
    notes: tuple[str, ...] = ()
    memory_bytes: int | None = None  # the machine's memory, when the snapshot says
    inactive: tuple[InactiveLv, ...] = ()  # cached LVs that are not active (no block device)
    schema: str = field(default=SCAN_SCHEMA)

    def by_name(self, name: str) -> Device | None:
        for dev in self.devices:
            if dev.name == name:
                return dev
        return None

    def without(self, names: set[str]) -> Inventory:
        """This inventory minus the named devices and everything on them (a hot-unplug)."""
        gone = set(names)
        changed = True
        while changed:
            changed = False
            for dev in self.devices:
                if dev.name not in gone and (dev.parent in gone or (dev.slaves and set(dev.slaves) <= gone)):
                    gone.add(dev.name)
                    changed = True
        return replace(self, devices=tuple(d for d in self.devices if d.name not in gone))

    def visible(self, show_all: bool = False) -> tuple[Device, ...]:
        return self.devices if show_all else tuple(d for d in self.devices if not d.hidden)

    def to_json(self, show_all: bool = False) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "taken_at": self.taken_at,
            "hostname": self.hostname,
            "udev": self.udev,
            "root": self.root,
            "notes": list(self.notes),
            "memory_bytes": self.memory_bytes,
            "devices": [d.to_json() for d in self.visible(show_all)],
            "inactive": [asdict(lv) for lv in self.inactive],
        }

    def inactive_lv(self, name: str) -> InactiveLv | None:
        """The cached LV that is not active that ``name`` denotes (VG/LV, /dev/VG/LV, /dev/mapper/...)."""
        return next((lv for lv in self.inactive if name in lv.names()), None)

    def tree(self, show_all: bool = False) -> list[tuple[int, Device]]:
        """Devices grouped by disk: each disk, its partitions, and what is stacked on them.

        A stacked device (LV, bcacheN, md array) that spans several disks is listed under the
        first of them only.
        """
        shown = {d.name: d for d in self.visible(show_all)}
        out: list[tuple[int, Device]] = []
        seen: set[str] = set()

        def visit(dev: Device, depth: int) -> None:
            if dev.name in seen:
                return
            seen.add(dev.name)
            out.append((depth, dev))
            holders = dev.holders
            if dev.bcache is not None and dev.bcache.role == "cache":
                # bcacheN lists its cache device among its slaves; show it under the backing one.
                holders = tuple(h for h in holders if not h.startswith("bcache"))
            for child in (*dev.partitions, *holders):
                if child in shown:
                    visit(shown[child], depth + 1)

        roots = [d for d in shown.values() if d.parent is None and not (set(d.slaves) & shown.keys())]
        for dev in sorted(roots, key=_natural_key):
            visit(dev, 0)
        for dev in sorted(shown.values(), key=_natural_key):
            visit(dev, 0)
        return out


def _natural_key(dev: Device) -> tuple[int, str]:
    order = {"disk": 0, "md": 1, "bcache": 2, "lvm": 3, "dm": 4, "loop": 5, "virtual": 6, "partition": 7}
    return (order.get(dev.kind, 9), dev.name)


def underlying_disks(inv: Inventory, dev: Device) -> list[Device]:
    """The whole disks a device sits on: itself for a disk, its parent for a partition, the
    disks under an LV, md array or bcache device (through the slaves)."""
    out: list[Device] = []
    seen: set[str] = set()
    todo = [dev]
    while todo:
        d = todo.pop(0)
        if d.name in seen:
            continue
        seen.add(d.name)
        if d.kind == "disk":
            out += [d] if d not in out else []
        elif d.kind == "partition" and d.parent:
            parent = inv.by_name(d.parent)
            out += [parent] if parent is not None and parent not in out else []
        else:
            todo[:0] = [lower for lower in map(inv.by_name, d.slaves) if lower is not None]  # depth first, in order
    return out
