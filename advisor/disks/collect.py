"""Collect raw facts about block devices from udev (pyudev), sysfs and a few tools.

This module is the only part of discovery that touches the live system. It produces a
:class:`RawSystem`, plain data that :mod:`advisor.disks.discovery` turns into an
:class:`~advisor.disks.devices.Inventory` without further I/O. A scan can save a RawSystem
as JSON (a raw snapshot); the unit tests replay snapshots captured that way in the lab.

udev is optional: without libudev or without a running udev daemon, sysfs still lists every
device (pyudev reads it), and blkid fills in signatures; what cannot be read is recorded
with the reason.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from advisor import strict
from advisor.errors import Described, codes, what_of
from advisor.inputs import load_json
from advisor.readers import bcache as bcache_reader
from advisor.readers import lvm
from advisor.readers.blkid import parse_export
from advisor.runner import CommandError, CommandRunner, ToolMissing

RAW_SCHEMA = "cachewise.raw/1"
SNAPSHOT_LIMIT = 256 << 20  # a machine with a thousand disks saves a few MiB

SYS_BLOCK = Path("/sys/class/block")
UDEV_RUN = Path("/run/udev")

# sysfs files read for every block device, relative to its sysfs directory.
ATTRS = (
    "size",
    "ro",
    "removable",
    "partition",
    "queue/rotational",
    "queue/logical_block_size",
    "queue/physical_block_size",
    "queue/discard_max_bytes",
    "device/model",
    "device/vendor",
    "device/serial",
    "device/wwid",
    "serial",
    "wwid",
    "dm/name",
    "dm/uuid",
    "md/level",
    "md/degraded",
    "loop/backing_file",
)


@dataclass
class RawBlock:
    name: str
    devtype: str
    devnum: str
    devnode: str
    sys_path: str
    parent: str | None
    properties: dict[str, str]
    links: list[str]
    attrs: dict[str, str]
    holders: list[str]
    slaves: list[str]
    bcache: dict[str, str] | None = None
    udev_initialized: bool = False


@dataclass
class RawMount:
    devnum: str | None
    device: str
    mountpoint: str
    fstype: str


@dataclass
class RawSystem:
    """Everything discovery needs, as collected. JSON round-trips through to_json/from_json."""

    taken_at: str
    hostname: str
    root: bool
    udev: str
    blocks: list[RawBlock]
    mounts: list[RawMount] = field(default_factory=list)
    swaps: list[str] = field(default_factory=list)
    blkid: dict[str, dict[str, str]] = field(default_factory=dict)
    pvs: list[dict[str, str]] | None = None
    lvs: list[dict[str, str]] | None = None
    # Facts that could not be read: {"fact", "reason"} and, for one device's fact, "device".
    unread: list[dict[str, str]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    # Device-mapper target types of each dm device by dm name ("cache", "crypt", "flashcache";
    # `dmsetup table`, root only; never the targets' arguments, which may hold keys).
    dm_targets: dict[str, list[str]] = field(default_factory=dict)
    # The kernel's status of each cache, writecache and raid target by dm name (`dmsetup status`,
    # root only; the line after "NAME: "): a failed dm-cache says "Fail" there, which lvm2 hides
    # behind "partial" once a device under it is missing.
    dm_status: dict[str, str] = field(default_factory=dict)
    # EnhanceIO caches (/proc/enhanceio/NAME/config): {"name", "src_name", "ssd_name", "mode"}.
    enhanceio: list[dict[str, str]] = field(default_factory=list)
    # Signatures this blkid does not know, read by cachewise itself (bcachefs before util-linux 2.39).
    magic: dict[str, str] = field(default_factory=dict)
    memory_bytes: int | None = None  # the machine's memory (the gate holds dm-writecache's entries to a share)
    schema: str = RAW_SCHEMA

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> RawSystem:
        """A snapshot from its JSON, every field typed as the dataclasses say (StrictError, a
        ValueError, naming the first that is not)."""
        if not isinstance(data, dict) or data.get("schema") != RAW_SCHEMA:
            data = data if isinstance(data, dict) else {}
            raise ValueError(f"not a cachewise raw snapshot (schema {data.get('schema')!r}, expected {RAW_SCHEMA})")
        unread = data.get("unread", [])
        if isinstance(unread, list):
            data = {**data, "unread": [_unread_v1(u) if isinstance(u, dict) else u for u in unread]}
        raw = strict.load(cls, data, "the snapshot")
        cycle = _cycle(raw.blocks)
        if cycle:
            raise ValueError(f"its devices hold each other in a circle ({' -> '.join(cycle)}), which no kernel reports")
        return raw

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RawSystem:
        """A snapshot file: a regular file of at most SNAPSHOT_LIMIT bytes, strict JSON
        (Unreadable, BadJson or ValueError saying why not)."""
        return cls.from_json(load_json(path, SNAPSHOT_LIMIT))


def _cycle(blocks: list[RawBlock]) -> list[str]:
    """A circle in what the devices say of each other (a device on a partition of itself, two
    that hold each other), as the names round it; empty when there is none."""
    below: dict[str, set[str]] = {b.name: set() for b in blocks}  # name -> what it sits on
    for b in blocks:
        below[b.name] |= set(b.slaves)
        if b.parent:
            below[b.name].add(b.parent)
        for h in b.holders:
            below.setdefault(h, set()).add(b.name)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in below:
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(below[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(below.get(nxt, ()))))
    return []


def _unread_v1(item: dict[str, str]) -> dict[str, str]:
    """Snapshots saved before the device had its own field named it in the fact ("signature of
    sdb"); read them into the current form."""
    if "device" in item or " of " not in item.get("fact", ""):
        return item
    fact, _, device = item["fact"].rpartition(" of ")
    return {**item, "fact": fact, "device": device}


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if path.name.startswith("vpd_pg80"):
        # SCSI VPD page 0x80: 4-byte header, then the unit serial number.
        data = data[4:]
    return data.replace(b"\0", b"").decode("utf-8", "replace").strip()


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _read_block(sys_path: Path) -> dict[str, Any]:
    """What sysfs says of one device, whoever lists it: attributes, bcache files, holders, slaves."""
    attrs: dict[str, str] = {}
    for name in (*ATTRS, "device/vpd_pg80"):
        value = _read(sys_path / name)
        if value is not None:
            attrs[name] = value
    bdir = sys_path / "bcache"
    bcache = (
        bcache_reader.read_files(bdir, bcache_reader.DISCOVERY_FILES, bcache_reader.LINKS) if bdir.is_dir() else None
    )
    return {
        "attrs": attrs,
        "bcache": bcache,
        "holders": _listdir(sys_path / "holders"),
        "slaves": _listdir(sys_path / "slaves"),
    }


def udev_state() -> str:
    if (UDEV_RUN / "control").exists():
        return "running"
    if (UDEV_RUN / "data").is_dir():
        return "database-only"
    return "absent"


def _block_from_pyudev(dev: Any) -> RawBlock:
    sys_path = Path(dev.sys_path)
    parent = dev.find_parent("block")
    return RawBlock(
        name=dev.sys_name,
        devtype=dev.device_type or "",
        devnum=f"{os.major(dev.device_number)}:{os.minor(dev.device_number)}",
        devnode=dev.device_node or f"/dev/{dev.sys_name}",
        sys_path=str(sys_path),
        parent=parent.sys_name if parent is not None else None,
        properties={str(k): str(v) for k, v in dev.properties.items()},
        links=sorted(str(link) for link in dev.device_links),
        **_read_block(sys_path),
        udev_initialized=bool(dev.is_initialized),
    )


def _blocks_from_pyudev(names: set[str] | None = None) -> list[RawBlock]:
    """All block devices, or only ``names`` (those that still exist)."""
    import pyudev  # lazy: libudev is loaded here; ImportError/OSError mean it is missing

    context = pyudev.Context()
    if names is None:
        return [_block_from_pyudev(dev) for dev in context.list_devices(subsystem="block")]
    blocks = []
    for name in sorted(names):
        try:
            blocks.append(_block_from_pyudev(pyudev.Devices.from_name(context, "block", name)))
        except pyudev.DeviceNotFoundError:
            continue
    return blocks


def _parse_udev_db(path: Path) -> tuple[dict[str, str], list[str]]:
    props: dict[str, str] = {}
    links: list[str] = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return props, links
    for line in text.splitlines():
        if line.startswith("E:") and "=" in line:
            key, _, value = line[2:].partition("=")
            props[key] = value
        elif line.startswith("S:"):
            links.append("/dev/" + line[2:])
    return props, sorted(links)


def _block_from_sysfs(name: str) -> RawBlock | None:
    """One device read without libudev: sysfs, plus udev's database file if present."""
    sys_path = (SYS_BLOCK / name).resolve()
    if not sys_path.is_dir():
        return None
    uevent: dict[str, str] = {}
    for line in (_read(sys_path / "uevent") or "").splitlines():
        key, _, value = line.partition("=")
        uevent[key] = value
    devnum = _read(sys_path / "dev") or ""
    db_props, links = _parse_udev_db(UDEV_RUN / "data" / f"b{devnum}")
    devtype = uevent.get("DEVTYPE", "")
    return RawBlock(
        name=name,
        devtype=devtype,
        devnum=devnum,
        devnode="/dev/" + uevent.get("DEVNAME", name),
        sys_path=str(sys_path),
        parent=sys_path.parent.name if devtype == "partition" else None,
        properties={**uevent, **db_props},
        links=links,
        **_read_block(sys_path),
        udev_initialized=bool(db_props),
    )


def _blocks_from_sysfs(names: set[str] | None = None) -> list[RawBlock]:
    wanted = sorted(names) if names is not None else _listdir(SYS_BLOCK)
    return [b for b in (_block_from_sysfs(n) for n in wanted) if b is not None]


def _read_blocks(names: set[str] | None = None) -> tuple[list[RawBlock], str]:
    state = udev_state()
    try:
        return _blocks_from_pyudev(names), state
    except (ImportError, OSError):
        return _blocks_from_sysfs(names), "no-libudev"


def devnum_of(path: str) -> str | None:
    """ "MAJOR:MINOR" of the block device at ``path`` (links followed); None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _mounts() -> list[RawMount]:

    mounts = []
    for part in psutil.disk_partitions(all=True):
        if not part.device.startswith("/"):
            continue
        mounts.append(RawMount(devnum_of(part.device), part.device, part.mountpoint, part.fstype))
    return mounts


def _swaps() -> list[str]:
    out: list[str] = []
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if fields and fields[1:2] == ["partition"]:
            devnum = devnum_of(fields[0])
            if devnum:
                out.append(devnum)
    return out


def _needs_signature_probe(block: RawBlock) -> bool:
    """Whether blkid must look: udev has not probed this device (or its rules skipped it)."""
    props = block.properties
    if props.get("ID_FS_TYPE") or props.get("ID_PART_TABLE_TYPE"):
        return False
    if block.attrs.get("size", "0") in ("0", ""):
        return False
    skipped = any(
        props.get(flag) == "1"
        for flag in ("DM_UDEV_DISABLE_DISK_RULES_FLAG", "DM_UDEV_DISABLE_OTHER_RULES_FLAG", "DM_NOSCAN", "DM_SUSPENDED")
    )
    # udev's blkid builtin ran and found nothing: that is the answer, no need to ask again.
    return not block.udev_initialized or skipped


codes({"scan-interrupted": "the scan was overtaken by a newer one{why}"})


class ScanInterrupted(Described):
    """A newer request made this scan pointless (see ``should_stop`` in :func:`collect`)."""

    CODE = "scan-interrupted"


def collect(
    runner: CommandRunner | None = None,
    *,
    tools: bool = True,
    reuse: RawSystem | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RawSystem:
    """Read the live system. Never writes anything; safe as any user.

    With ``tools=False`` no external program runs (blkid, pvs, lvs take seconds on slow
    machines): their answers are taken from ``reuse``, an earlier snapshot, for the devices
    that are still there. The TUI uses this to show a hot-plugged disk at once, then follows
    with a full scan. ``should_stop`` is asked between tool runs; when it says yes the scan
    raises :class:`ScanInterrupted`.
    """

    def checkpoint() -> None:
        if should_stop is not None and should_stop():
            raise ScanInterrupted("")

    runner = runner or CommandRunner()
    if not tools:
        return _quick_collect(reuse)
    root = os.geteuid() == 0
    unread: list[dict[str, str]] = []
    blocks, state = _read_blocks()
    if state == "no-libudev":
        unread.append({"fact": "udev properties", "reason": "libudev could not be loaded; sysfs was read directly"})
    checkpoint()

    blkid: dict[str, dict[str, str]] = {}
    probe = [b for b in blocks if _needs_signature_probe(b)]
    if probe and runner.which("blkid") is None:
        unread.append({"fact": "signatures", "reason": "blkid is not installed (util-linux) and udev has no data"})
        probe = []
    for block in probe:
        checkpoint()
        if not os.access(block.devnode, os.R_OK):
            unread.append(
                {
                    "fact": "signature",
                    "device": block.name,
                    "reason": f"udev has no data and {block.devnode} is readable only by root",
                }
            )
            continue
        try:
            res = runner.run(["blkid", "-p", "-o", "export", block.devnode], check=False, timeout=15)
        except CommandError as exc:
            unread.append({"fact": "signature", "device": block.name, "reason": what_of(exc)})
            continue
        # Exit 2 with no error text: no signature found, which is an answer, not an error.
        if res.returncode == 0 or (res.returncode == 2 and not res.stderr.strip()):
            blkid[block.name] = parse_export(res.stdout)
        else:
            unread.append(
                {
                    "fact": "signature",
                    "device": block.name,
                    "reason": res.stderr.strip() or f"blkid exit {res.returncode}",
                }
            )

    checkpoint()
    magic = {b.name: found for b in blocks if _needs_magic(b, blkid) for found in [_read_magic(b)] if found}
    dm = root and any(b.attrs.get("dm/name") for b in blocks)
    dm_targets = _dm_targets(runner) if dm else {}
    dm_status = _dm_status(runner) if dm and any(set(t) & set(STATUS_TARGETS) for t in dm_targets.values()) else {}

    pvs = lvs = None
    has_lvm = any(
        b.attrs.get("dm/uuid", "").startswith("LVM-")
        or b.properties.get("ID_FS_TYPE") == "LVM2_member"
        or blkid.get(b.name, {}).get("TYPE") == "LVM2_member"
        for b in blocks
    )
    if has_lvm:
        if not root:
            unread.append(
                {
                    "fact": "LVM reports",
                    "reason": "pvs and lvs need root; VG and LV names come from device-mapper names instead",
                }
            )
        else:
            try:
                checkpoint()
                pvs = lvm.pvs(runner)
                checkpoint()
                lvs = lvm.lvs(runner)
            except ToolMissing as exc:
                unread.append({"fact": "LVM reports", "reason": f"{exc.what} (install {exc.package or exc.tool})"})
            except (CommandError, lvm.ReportError) as exc:
                unread.append({"fact": "LVM reports", "reason": f"pvs/lvs failed: {what_of(exc)}"})

    return RawSystem(
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
        hostname=socket.gethostname(),
        memory_bytes=psutil.virtual_memory().total,
        root=root,
        udev=state,
        blocks=blocks,
        mounts=_mounts(),
        swaps=_swaps(),
        blkid=blkid,
        pvs=pvs,
        lvs=lvs,
        unread=unread,
        versions={"kernel": os.uname().release},
        dm_targets=dm_targets,
        dm_status=dm_status,
        enhanceio=_enhanceio(),
        magic=magic,
    )


# Superblock magics older blkid does not know: bcachefs (util-linux 2.39 added it), 16 bytes at
# 4 KiB + 24 (its superblock's magic field).
MAGICS = ((4096 + 24, bytes.fromhex("c68573f666ce90a9d96a60cf803df7ef"), "bcachefs"),)


def _needs_magic(block: RawBlock, blkid: dict[str, dict[str, str]]) -> bool:
    props, probed = block.properties, blkid.get(block.name, {})
    # udev reports the disk's partition table on each partition too: only a disk's own counts.
    table = block.devtype == "disk" and (props.get("ID_PART_TABLE_TYPE") or probed.get("PTTYPE"))
    return (
        block.devtype in ("disk", "partition") and not props.get("ID_FS_TYPE") and not probed.get("TYPE") and not table
    )


def _read_magic(block: RawBlock) -> str | None:
    """The signature :data:`MAGICS` finds on the device, if any (None when it cannot be read)."""
    try:
        with open(block.devnode, "rb") as fh:
            for offset, magic, name in MAGICS:
                fh.seek(offset)
                if fh.read(len(magic)) == magic:
                    return name
    except OSError:
        return None
    return None


def parse_dm_targets(text: str) -> dict[str, list[str]]:
    """``dmsetup table`` output -> the target type of each segment, by dm name."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(": ")
        fields = rest.split()
        if sep and len(fields) >= 3:
            out.setdefault(name, []).append(fields[2])
    return out


def _dm_targets(runner: CommandRunner) -> dict[str, list[str]]:
    return parse_dm_targets(_dmsetup(runner, "table"))


# The targets whose status discovery keeps: their health is in it (advisor/readers/dmstatus.py).
STATUS_TARGETS = ("cache", "writecache", "raid")


def parse_dm_status(text: str) -> dict[str, str]:
    """``dmsetup status`` output -> the first status line of each cache, writecache or raid
    target, by dm name (``<start> <length> <target> ...``)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(": ")
        fields = rest.split()
        if sep and len(fields) >= 3 and fields[2] in STATUS_TARGETS:
            out.setdefault(name, rest.strip())
    return out


def _dm_status(runner: CommandRunner) -> dict[str, str]:
    return parse_dm_status(_dmsetup(runner, "status"))


def _dmsetup(runner: CommandRunner, what: str) -> str:
    """``dmsetup table`` or ``status`` of every device ('' when it cannot be read)."""
    if runner.which("dmsetup") is None:
        return ""
    try:
        res = runner.run(["dmsetup", what], check=False, timeout=15)
    except CommandError:
        return ""
    return res.stdout if res.returncode == 0 else ""


ENHANCEIO = Path("/proc/enhanceio")


def _enhanceio(root: Path = ENHANCEIO) -> list[dict[str, str]]:
    """The EnhanceIO caches the kernel has (its out-of-tree module makes /proc/enhanceio/NAME)."""
    caches = []
    for name in _listdir(root):
        config: dict[str, str] = {"name": name}
        try:
            for line in (root / name / "config").read_text().splitlines():
                key, _, value = line.strip().partition(" ")
                if key in ("src_name", "ssd_name", "mode"):
                    config[key] = value.strip()
        except OSError:
            pass
        caches.append(config)
    return caches


def _quick_collect(reuse: RawSystem | None) -> RawSystem:
    blocks, state = _read_blocks()
    return _assemble(blocks, state, reuse)


def refresh(raw: RawSystem, names: set[str]) -> RawSystem:
    """``raw`` with the named devices read again (or dropped if gone), their parents and the
    devices stacked on or under them too; no external tools. The TUI shows a hot-plug event
    with this in a fraction of a full re-read on slow machines."""
    related = set(names)
    for block in raw.blocks:
        if block.name in names:
            related.update(block.holders, block.slaves, [block.parent] if block.parent else [])
    fresh, state = _read_blocks(related)
    # A new disk's partitions may not have had events of their own yet.
    for block in list(fresh):
        if block.devtype == "disk":
            extra = {n for n in _listdir(Path(block.sys_path)) if n.startswith(block.name)} - related
            if extra:
                more, _ = _read_blocks(extra)
                fresh.extend(more)
    fresh_names = {b.name for b in fresh}
    gone = related - fresh_names
    blocks = [b for b in raw.blocks if b.name not in fresh_names and b.name not in gone] + fresh
    return _assemble(sorted(blocks, key=lambda b: b.name), state, raw)


def _assemble(blocks: list[RawBlock], state: str, reuse: RawSystem | None) -> RawSystem:
    """A snapshot of ``blocks`` with tool answers carried over from ``reuse`` where the device
    is unchanged (same name, device number and size)."""
    key = {b.name: (b.devnum, b.attrs.get("size")) for b in (reuse.blocks if reuse else [])}
    kept = {b.name for b in blocks if key.get(b.name) == (b.devnum, b.attrs.get("size"))}
    names = {b.name for b in blocks}
    blkid = {name: sig for name, sig in (reuse.blkid if reuse else {}).items() if name in kept}
    unread = [u for u in (reuse.unread if reuse else []) if u.get("device", "") in names | {""}]
    return RawSystem(
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
        hostname=socket.gethostname(),
        memory_bytes=psutil.virtual_memory().total,
        root=os.geteuid() == 0,
        udev=state,
        blocks=blocks,
        mounts=_mounts(),
        swaps=_swaps(),
        blkid=blkid,
        pvs=reuse.pvs if reuse else None,
        lvs=reuse.lvs if reuse else None,
        unread=unread,
        versions={"kernel": os.uname().release},
        dm_targets={
            n: t
            for n, t in (reuse.dm_targets if reuse else {}).items()
            if any(b.attrs.get("dm/name") == n and b.name in kept for b in blocks)
        },
        dm_status={
            n: t
            for n, t in (reuse.dm_status if reuse else {}).items()
            if any(b.attrs.get("dm/name") == n and b.name in kept for b in blocks)
        },
        enhanceio=_enhanceio(),
        magic={name: m for name, m in (reuse.magic if reuse else {}).items() if name in kept},
    )
