"""Turn raw udev/sysfs facts into an Inventory: identity, transport, roles, in-use reasons.

Pure functions over :class:`~advisor.disks.collect.RawSystem` (advisor.disks.collect reads it).
Identity never rests on kernel names (sdX, dm-N and bcacheN change between boots): it is the WWN
or serial for disks, the device-mapper UUID for LVs, the backing-device UUID for bcache,
the backing file for loop devices.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from advisor.disks.caches import tpool_layer, with_caching
from advisor.disks.collect import RawBlock, RawSystem, devnum_of
from advisor.disks.devices import (
    OTHER_SYSTEMS,
    BcacheInfo,
    Device,
    InactiveLv,
    Inventory,
    Kind,
    LvmInfo,
    MdInfo,
    State,
    Unread,
    lv_names,
)
from advisor.disks.failure import Failure
from advisor.errors import codes
from advisor.readers.bcache import selected
from advisor.readers.lvm import Lv

codes({"no-such-device": "{path} is not a block device on this machine"})


def _kind(block: RawBlock) -> Kind:
    name = block.name
    if block.devtype == "partition":
        return "partition"
    if name.startswith("loop"):
        return "loop"
    if name.startswith(("zram", "ram", "nbd")) or name.startswith("sr"):
        return "virtual"
    if "dm/name" in block.attrs or name.startswith("dm-"):
        return "lvm" if block.attrs.get("dm/uuid", "").startswith("LVM-") else "dm"
    if name.startswith("bcache"):
        return "bcache"
    if name.startswith("md") and "md/level" in block.attrs:
        return "md"
    return "disk"


def _transport(sys_path: str) -> str | None:
    p = sys_path
    if "/devices/virtual/" in p:
        return None
    checks = (
        (r"/nvme/", "nvme"),
        (r"/usb\d+/", "usb"),
        (r"/end_device-|/sas_", "sas"),
        (r"/session\d+/", "iscsi"),
        (r"/ata\d+/", "sata"),
        (r"/mmc_host/|/mmc\d+", "mmc"),
        (r"/host\d+/", "scsi"),
        (r"/virtio\d+/block/", "virtio"),
    )
    for pattern, name in checks:
        if re.search(pattern, p):
            return name
    return None


def _unescape_udev(value: str) -> str:
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), value).strip()


def _serial(block: RawBlock) -> str | None:
    for key in ("device/vpd_pg80", "device/serial", "serial"):
        value = block.attrs.get(key, "").strip()
        if value:
            return value
    props = block.properties
    return props.get("ID_SERIAL_SHORT") or props.get("ID_SCSI_SERIAL") or None


def _wwn(block: RawBlock) -> str | None:
    for key in ("device/wwid", "wwid"):
        value = block.attrs.get(key, "").strip()
        if value.startswith("naa."):
            return "0x" + value[4:].lower()
        if value.startswith("eui."):
            return value.lower()
    props = block.properties
    value = props.get("ID_WWN_WITH_EXTENSION") or props.get("ID_WWN") or ""
    # NVMe namespaces without an EUI-64 or NGUID get a made-up "nvme.<vendor>-<serial>-..."
    # id and ATA disks a "t10." one; neither is a WWN, and the serial identifies them better.
    return value.lower() if value.lower().startswith(("0x", "eui.", "naa.")) else None


def _model_vendor(block: RawBlock) -> tuple[str | None, str | None]:
    props = block.properties
    model = block.attrs.get("device/model") or (
        _unescape_udev(props["ID_MODEL_ENC"]) if "ID_MODEL_ENC" in props else props.get("ID_MODEL")
    )
    vendor = block.attrs.get("device/vendor") or (
        _unescape_udev(props["ID_VENDOR_ENC"]) if "ID_VENDOR_ENC" in props else props.get("ID_VENDOR")
    )
    if vendor and vendor.startswith("0x"):
        vendor = None  # virtio reports its PCI vendor id here, not a name
    return (model or None), (vendor or None)


def _by_id_rank(link: str) -> tuple[int, int, str]:
    base = link.rsplit("/", 1)[-1]
    if base.startswith("wwn-"):
        rank = 1
    elif base.startswith(
        ("nvme-eui.", "nvme-nvme.", "scsi-3", "dm-name-", "dm-uuid-", "lvm-pv-uuid-", "md-uuid-", "md-name-")
    ):
        rank = 2
    else:
        rank = 0
    return rank, len(base), base


def _stable_path(block: RawBlock, kind: Kind, lvm: LvmInfo | None) -> str | None:
    if kind == "lvm" and block.attrs.get("dm/uuid", "").endswith("-tpool"):  # under a thin pool's /dev/VG/LV
        return f"/dev/mapper/{block.attrs['dm/name']}"
    if kind == "lvm" and lvm is not None and lvm.vg and lvm.lv:
        return f"/dev/{lvm.vg}/{lvm.lv}"
    if kind == "dm" and block.attrs.get("dm/name"):
        return f"/dev/mapper/{block.attrs['dm/name']}"
    by_uuid_bcache = [link for link in block.links if link.startswith("/dev/bcache/by-uuid/")]
    if by_uuid_bcache:
        return by_uuid_bcache[0]
    by_id = sorted((link for link in block.links if link.startswith("/dev/disk/by-id/")), key=_by_id_rank)
    if by_id:
        return by_id[0]
    by_path = sorted(link for link in block.links if link.startswith("/dev/disk/by-path/"))
    if by_path:
        return by_path[0]
    return None


def _split_dm_lvm_name(name: str) -> tuple[str, str] | None:
    """Split a device-mapper name of an LV into VG and LV (lvm escapes '-' as '--')."""
    match = re.fullmatch(r"((?:[^-]|--)+)-((?:[^-]|--)+)", name)
    if not match:
        return None
    return match.group(1).replace("--", "-"), match.group(2).replace("--", "-")


def _signature(block: RawBlock, raw: RawSystem) -> tuple[str | None, str | None, str | None, str | None]:
    props = block.properties
    fs_type = props.get("ID_FS_TYPE") or None
    fs_uuid = props.get("ID_FS_UUID") or None
    label = _unescape_udev(props["ID_FS_LABEL_ENC"]) if "ID_FS_LABEL_ENC" in props else props.get("ID_FS_LABEL")
    ptable = props.get("ID_PART_TABLE_TYPE") or None
    if block.devtype == "partition":
        ptable = None  # udev and blkid report the parent disk's table on each partition
    probed = raw.blkid.get(block.name)
    if probed is not None:
        fs_type = fs_type or probed.get("TYPE")
        fs_uuid = fs_uuid or probed.get("UUID")
        label = label or probed.get("LABEL")
        if block.devtype != "partition":
            ptable = ptable or probed.get("PTTYPE")
    return fs_type, fs_uuid, (label or None), ptable


def _fs_block_size(block: RawBlock, raw: RawSystem) -> int | None:
    """The file system's block size as blkid reports it (udev: ID_FS_BLOCK_SIZE)."""
    text = block.properties.get("ID_FS_BLOCK_SIZE") or raw.blkid.get(block.name, {}).get("BLOCK_SIZE")
    return _int(text)


def _bcache(block: RawBlock, kind: Kind, fs_type: str | None, fs_uuid: str | None) -> BcacheInfo | None:
    info = block.bcache
    if info is not None:
        if kind == "bcache":
            return BcacheInfo(
                role="bcache",
                cache_set_uuid=info.get("cache"),
                dev_uuid=info.get("backing_dev_uuid") or block.properties.get("BCACHE_CACHED_UUID"),
                state=info.get("state"),
                cache_mode=selected(info.get("cache_mode")),
                dirty_data=info.get("dirty_data"),
                backing_device=info.get("backing_dev_name") or (block.slaves[0] if block.slaves else None),
            )
        if "set" in info:
            return BcacheInfo(role="cache", cache_set_uuid=info["set"], dev_uuid=fs_uuid)
        return BcacheInfo(
            role="backing",
            cache_set_uuid=info.get("cache"),
            dev_uuid=info.get("backing_dev_uuid") or fs_uuid,
            state=info.get("state"),
            cache_mode=selected(info.get("cache_mode")),
            dirty_data=info.get("dirty_data"),
            bcache_device=info.get("dev"),
            # its device is linked (dev) once it runs: snapshots from before running was read
            running=info["running"] == "1" if "running" in info else "dev" in info,
        )
    if fs_type == "bcache":
        return BcacheInfo(role="unregistered", dev_uuid=fs_uuid)
    return None


# The largest number sysfs gives a block device (the kernel keeps sector counts in 64 bits): a
# snapshot saying more is not read as a size (SQLite, JSON readers and the plans keep 63 bits).
SYSFS_MAX = (1 << 63) - 1


def _size(block: RawBlock) -> int:
    sectors = _int(block.attrs.get("size", "0")) or 0
    return sectors * 512 if 0 <= sectors <= SYSFS_MAX // 512 else 0


def _int(value: str | None) -> int | None:
    try:
        n = int(value) if value is not None and len(value) < 24 else None
    except ValueError:
        return None
    return n if n is not None and -SYSFS_MAX <= n <= SYSFS_MAX else None


def _identity(
    kind: Kind,
    block: RawBlock,
    serial: str | None,
    wwn: str | None,
    parent_identity: str | None,
    bcache: BcacheInfo | None,
    md_uuid: str | None,
) -> str | None:
    if kind == "disk":
        if wwn:
            return f"wwn:{wwn}"
        if serial:
            return f"serial:{serial}"
        return None
    if kind == "partition":
        number = block.attrs.get("partition") or block.properties.get("PARTN")
        if parent_identity and number:
            return f"{parent_identity}/part{number}"
        partuuid = block.properties.get("ID_PART_ENTRY_UUID")
        return f"partuuid:{partuuid}" if partuuid else None
    if kind in ("lvm", "dm"):
        uuid = block.attrs.get("dm/uuid")
        if uuid:
            return f"dm-uuid:{uuid}"
        name = block.attrs.get("dm/name")
        return f"dm-name:{name}" if name else None
    if kind == "bcache":
        return f"bcache:{bcache.dev_uuid}" if bcache and bcache.dev_uuid else None
    if kind == "md":
        return f"md-uuid:{md_uuid}" if md_uuid else None
    if kind == "loop":
        backing = block.attrs.get("loop/backing_file")
        return f"loop-file:{backing}" if backing else None
    return None


def build_inventory(raw: RawSystem) -> Inventory:
    blocks = {b.name: b for b in raw.blocks}
    children: dict[str, list[str]] = {}
    for b in raw.blocks:
        if b.parent:
            children.setdefault(b.parent, []).append(b.name)
    mounts: dict[str, list[str]] = {}
    for m in raw.mounts:
        if m.devnum:
            mounts.setdefault(m.devnum, []).append(m.mountpoint)
    swaps = set(raw.swaps)
    pv_vg = {row.get("pv_name", ""): row.get("vg_name") or None for row in raw.pvs or []}
    lv_rows = {(row.get("vg_name"), (row.get("lv_name") or "").strip("[]")): row for row in raw.lvs or []}

    # Parents first so a partition can build on its disk's identity.
    order = sorted(raw.blocks, key=lambda b: (b.parent is not None, b.name))
    identities: dict[str, str | None] = {}
    devices: dict[str, Device] = {}
    for block in order:
        kind = _kind(block)
        fs_type, fs_uuid, fs_label, ptable = _signature(block, raw)
        serial = _serial(block) if kind == "disk" else None
        wwn = _wwn(block) if kind == "disk" else None
        model, vendor = _model_vendor(block) if kind == "disk" else (None, None)
        parent_block = blocks.get(block.parent) if block.parent else None
        # Partitions have no queue/ directory: the disk's transport and queue facts apply.
        queue = parent_block.attrs if kind == "partition" and parent_block is not None else block.attrs
        transport = _transport(parent_block.sys_path if kind == "partition" and parent_block else block.sys_path)

        lvm: LvmInfo | None = None
        if kind == "lvm":
            vg = block.properties.get("DM_VG_NAME")
            lv = block.properties.get("DM_LV_NAME")
            if not (vg and lv):
                split = _split_dm_lvm_name(block.attrs.get("dm/name", ""))
                vg, lv = split if split else (None, None)
            row = lv_rows.get((vg, lv or ""), {})
            lvm = LvmInfo(
                role="lv",
                vg=vg,
                lv=lv,
                segtype=row.get("segtype") or None,
                uuid=row.get("lv_uuid") or None,
                pool=row.get("pool_lv", "").strip("[]") or None,
                attr=row.get("lv_attr") or None,
            )
        elif fs_type == "LVM2_member":
            vg = pv_vg.get(block.devnode)
            if vg is None:
                # Without pvs, the VG shows in the names of the LVs this PV holds.
                for holder in block.holders:
                    split = _split_dm_lvm_name(blocks[holder].attrs.get("dm/name", "")) if holder in blocks else None
                    if split and blocks[holder].attrs.get("dm/uuid", "").startswith("LVM-"):
                        vg = split[0]
                        break
            lvm = LvmInfo(role="pv", vg=vg, uuid=fs_uuid)

        bcache = _bcache(block, kind, fs_type, fs_uuid)
        md: MdInfo | None = None
        md_uuid = block.properties.get("MD_UUID")
        if kind == "md":
            md = MdInfo(
                role="array",
                array=block.name,
                level=block.attrs.get("md/level"),
                degraded=_int(block.attrs.get("md/degraded")),
            )
        elif fs_type == "linux_raid_member":
            array = next((h for h in block.holders if h.startswith("md")), None)
            md = MdInfo(role="member", array=array)

        parent_identity = identities.get(block.parent) if block.parent else None
        identity = _identity(kind, block, serial, wwn, parent_identity, bcache, md_uuid)
        identities[block.name] = identity

        unreadable: list[Unread] = []
        if kind in ("disk", "partition", "bcache") and not block.links and raw.udev != "running":
            unreadable.append(
                Unread("by-id path", f"udev is {_udev_words(raw.udev)}, so there are no /dev/disk/by-id links")
            )
        if (
            kind == "bcache"
            and raw.udev == "running"
            and not any(link.startswith("/dev/bcache/") for link in block.links)
        ):
            unreadable.append(
                Unread(
                    "stable path",
                    "udev made no /dev/bcache/by-uuid link (bcache was registered "
                    "before udev ran); the backing device's UUID identifies it",
                )
            )
        if kind == "disk" and identity is None and _size(block) > 0:
            unreadable.append(
                Unread("serial and WWN", "the device reports neither; its identity falls back to its kernel name")
            )
        for item in raw.unread:
            if item.get("device") == block.name:
                unreadable.append(Unread(item["fact"], item["reason"]))

        devices[block.name] = Device(
            name=block.name,
            kind=kind,
            devnode=block.devnode,
            devnum=block.devnum,
            identity=identity,
            stable_path=_stable_path(block, kind, lvm),
            links=tuple(block.links),
            serial=serial,
            wwn=wwn,
            model=model,
            vendor=vendor,
            transport=transport,
            size_bytes=_size(block),
            logical_sector_size=_int(queue.get("queue/logical_block_size")),
            physical_sector_size=_int(queue.get("queue/physical_block_size")),
            rotational=_bool(queue.get("queue/rotational")),
            discard=(_int(queue.get("queue/discard_max_bytes")) or 0) > 0
            if "queue/discard_max_bytes" in queue
            else None,
            removable=block.attrs.get("removable") == "1",
            read_only=block.attrs.get("ro") == "1",
            parent=block.parent,
            partitions=tuple(sorted(children.get(block.name, []))),
            holders=tuple(block.holders),
            slaves=tuple(block.slaves),
            mountpoints=tuple(sorted(mounts.get(block.devnum, []))),
            swap=block.devnum in swaps,
            fs_type=fs_type,
            fs_uuid=fs_uuid,
            fs_label=fs_label,
            fs_block_size=_fs_block_size(block, raw) if fs_type else None,
            partition_table=ptable,
            dm_name=block.attrs.get("dm/name"),
            dm_uuid=block.attrs.get("dm/uuid") or None,
            loop_file=block.attrs.get("loop/backing_file"),
            lvm=lvm,
            bcache=bcache,
            md=md,
            unreadable=tuple(unreadable),
        )

    devices = _settle_states(devices)
    devices = with_caching(devices, lv_rows, raw.dm_targets, raw.enhanceio, raw.magic, raw.dm_status)
    devices = {name: _owned(dev) for name, dev in devices.items()}
    notes = _notes(raw)
    ordered = tuple(devices[b.name] for b in sorted(raw.blocks, key=lambda b: b.name))
    active = {(d.lvm.vg or "", d.lvm.lv or "") for d in ordered if d.lvm is not None and d.lvm.role == "lv"}
    inactive = _inactive(raw.lvs or [], active)
    notes += tuple(inactive_sentence(lv) for lv in inactive)
    return Inventory(
        taken_at=raw.taken_at,
        hostname=raw.hostname,
        udev=raw.udev,  # type: ignore[arg-type]
        root=raw.root,
        devices=ordered,
        notes=notes,
        memory_bytes=raw.memory_bytes,
        inactive=inactive,
    )


def _inactive(rows: list[dict[str, str]], active: set[tuple[str, str]]) -> tuple[InactiveLv, ...]:
    """The cached LVs lvm2 reports that are not active (lv_attr's fifth letter ``-``) and have no
    block device (``active``: the VG/LV names of those that have one): nothing else lists them.
    Whether the part of them on a missing PV is the cache or the origin comes from their hidden
    sub-LVs' rows ([data_corig], [data_cache_cpool_cdata] ...)."""
    lvs = [Lv.from_row(r) for r in rows]
    partial = {(lv.vg, lv.name) for lv in lvs if lv.partial}
    out = []
    for lv in lvs:
        if lv.hidden or lv.segtype not in ("cache", "writecache") or lv.attr[4:5] != "-" or (lv.vg, lv.name) in active:
            continue
        subs = {name for vg, name in partial if vg == lv.vg and name.startswith(f"{lv.name}_")}
        out.append(
            InactiveLv(
                vg=lv.vg,
                lv=lv.name,
                uuid=lv.uuid,
                segtype=lv.segtype,
                attr=lv.attr,
                size_bytes=lv.size_bytes or 0,
                mode=(lv.cache_mode or None) if lv.segtype == "cache" else None,
                origin_missing=any(name.endswith(("_corig", "_wcorig")) for name in subs),
            )
        )
    return tuple(sorted(out, key=lambda lv: lv.name))


def inactive_sentence(lv: InactiveLv) -> str:
    """What a cached LV that is not active means, and the way out, in a sentence."""
    if lv.origin_missing:
        return (
            f"the cached LV {lv.name} is not active: a part of its origin (the slow device) is on a PV lvm2 cannot "
            "find, so lvm2 will not activate it; bring that disk back (its cache is not the part that is missing)"
        )
    if lv.partial:
        return f"{inactive_failure(lv).sentence()}; removing its cache (a rescue plan) gets the origin back"
    return (
        f"the cached LV {lv.name} is not active, so nothing on it is reachable; `lvchange -ay {lv.name}` activates it "
        "(lvm2 says why if it cannot)"
    )


def inactive_failure(lv: InactiveLv) -> Failure:
    """A cached LV lvm2 will not activate because a part of it is on a PV it cannot find."""
    return Failure(lv.kind, lv.name, lv.mode, failed=True, missing=("a PV lvm2 cannot find",), said="inactive")


def _bool(value: str | None) -> bool | None:
    return None if value is None else value.strip() == "1"


def _udev_words(state: str) -> str:
    return {
        "running": "running",
        "database-only": "not running (its database is stale)",
        "absent": "not running",
        "no-libudev": "not available (no libudev)",
    }.get(state, state)


def _notes(raw: RawSystem) -> tuple[str, ...]:
    notes = []
    if raw.udev != "running":
        notes.append(
            f"udev is {_udev_words(raw.udev)}: identities come from serial numbers and WWNs read in sysfs, "
            "and signatures from blkid."
        )
    if not raw.root:
        notes.append(
            "Not running as root: file-system signatures udev does not know and LVM reports could not be read."
        )
    for item in raw.unread:
        if "device" not in item:
            notes.append(f"{item['fact']}: {item['reason']}")
    return tuple(notes)


def _describe(dev: Device, devices: dict[str, Device]) -> list[str]:
    """Reasons a device itself is active (not counting its partitions)."""
    reasons = []
    if dev.mountpoints:
        reasons.append("mounted at " + ", ".join(dev.mountpoints))
    if dev.swap:
        reasons.append("active swap")
    if dev.lvm is not None and dev.lvm.role == "pv":
        reasons.append(f"LVM physical volume of VG {dev.lvm.vg}" if dev.lvm.vg else "LVM physical volume in no VG")
    if dev.bcache is not None:
        b = dev.bcache
        if b.role == "backing":
            cached = f", cached by set {b.cache_set_uuid}" if b.cache_set_uuid else ", no cache attached"
            reasons.append(f"bcache backing device of {b.bcache_device or 'a bcache device'}{cached}")
        elif b.role == "cache":
            reasons.append(f"bcache cache device of set {b.cache_set_uuid}")
        elif b.role == "unregistered":
            reasons.append("holds a bcache superblock that is not registered")
    if dev.md is not None and dev.md.role == "member":
        reasons.append(f"member of RAID {dev.md.array}" if dev.md.array else "RAID member superblock")
    explained = {dev.bcache.bcache_device} if dev.bcache and dev.bcache.bcache_device else set()
    if dev.bcache is not None and dev.bcache.role == "cache":
        # A cache device lists every bcacheN of its set as a holder.
        explained |= {h for h in dev.holders if h.startswith("bcache")}
    others = [
        h
        for h in dev.holders
        if h not in explained and not (dev.lvm and dev.lvm.role == "pv") and not (dev.md and dev.md.array == h)
    ]
    if others:
        reasons.append("held by " + ", ".join(_label(devices.get(h), h) for h in others))
    return reasons


def _label(dev: Device | None, name: str) -> str:
    if dev is None:
        return name
    if dev.lvm is not None and dev.lvm.role == "lv":
        return f"{name} (LV {dev.lvm.vg}/{dev.lvm.lv})"
    if dev.dm_name:
        return f"{name} ({dev.dm_name})"
    return name


def _settle_states(devices: dict[str, Device]) -> dict[str, Device]:
    hidden: set[str] = set()
    for name, dev in devices.items():
        if dev.kind in ("loop", "virtual") or dev.size_bytes == 0:
            hidden.add(name)
    # Anything built only on hidden devices is hidden too (a partition of a loop, an LV on loops).
    changed = True
    while changed:
        changed = False
        for name, dev in devices.items():
            if name in hidden:
                continue
            below = [dev.parent] if dev.parent else list(dev.slaves)
            if below and all(b in hidden for b in below):
                hidden.add(name)
                changed = True

    out: dict[str, Device] = {}
    for name, dev in devices.items():
        state, reason = _state(dev, devices)
        out[name] = replace(dev, hidden=name in hidden, state=state, in_use_reason=reason)
    return out


def _state(dev: Device, devices: dict[str, Device]) -> tuple[State, str]:
    own = _describe(dev, devices)
    parts = [devices[p] for p in dev.partitions if p in devices]
    busy_parts = []
    for part in parts:
        reasons = _describe(part, devices)
        if reasons:
            busy_parts.append(
                f"{part.name} is {reasons[0]}" if reasons[0].startswith("mounted") else f"{part.name}: {reasons[0]}"
            )
    if dev.kind == "bcache" and not own and not dev.fs_type:
        over = dev.bcache.backing_device if dev.bcache else None
        return "has-data", f"has data: the bcache device over {over or 'its backing device'}, no file system on it yet"
    if own or busy_parts:
        return "in-use", "in use because " + "; ".join(own + busy_parts)
    if parts:
        table = f"a {dev.partition_table} partition table" if dev.partition_table else "a partition table"
        return "has-data", f"has data: {table} with {len(parts)} partition{'s' if len(parts) != 1 else ''}"
    if dev.fs_type:
        label = f" labelled {dev.fs_label!r}" if dev.fs_label else ""
        return "has-data", f"has data: holds a {dev.fs_type} signature{label}, not mounted"
    if dev.partition_table:
        return "has-data", f"has data: an empty {dev.partition_table} partition table"
    if dev.lvm is not None and dev.lvm.role == "lv" and dev.lvm.segtype == "thin-pool":
        thin = sorted(
            f"{d.lvm.vg}/{d.lvm.lv}"
            for d in devices.values()
            if d.lvm is not None and d.lvm.segtype == "thin" and d.lvm.vg == dev.lvm.vg and d.lvm.pool == dev.lvm.lv
        )
        if thin:
            return "in-use", f"in use because thin pool of {', '.join(thin)}"
        return "has-data", f"has data: thin pool {dev.lvm.vg}/{dev.lvm.lv}"
    if dev.lvm is not None and dev.lvm.role == "lv":
        return "has-data", f"has data: LV {dev.lvm.vg}/{dev.lvm.lv} with no file system signature"
    if dev.size_bytes == 0:
        return "free", "empty: no medium or no backing file"
    if any(u.fact == "signature" for u in dev.unreadable):
        return "free", "looks free, but its signature could not be read (run as root to be sure)"
    return "free", "free: no signature, not mounted, nothing holds it"


def _owned(dev: Device) -> Device:
    """A member of a file system that tiers itself (found by its magic where blkid did not name
    it) holds data, whatever its signature said."""
    if dev.state == "free" and dev.caching is not None and dev.caching.kind in OTHER_SYSTEMS:
        return replace(dev, state="has-data", in_use_reason=f"has data: {dev.caching.part}")
    return dev


def names_of(dev: Device) -> set[str]:
    """Every name that denotes ``dev`` in the forms scan prints or a user types: the kernel name
    (sda, dm-0), its node, the stable path and every link (by-id, by-uuid, by-path ...), and for
    device-mapper devices /dev/mapper/NAME, and for an LV VG/LV and /dev/VG/LV."""
    names = {dev.name, dev.devnode, f"/dev/{dev.name}", *dev.links}
    if dev.stable_path:
        names.add(dev.stable_path)
    if dev.dm_name:
        names.add(f"/dev/mapper/{dev.dm_name}")
    # A thin pool's -tpool layer carries its LV's name too; VG/LV is the pool's public device.
    if dev.lvm is not None and dev.lvm.role == "lv" and dev.lvm.vg and dev.lvm.lv and not tpool_layer(dev):
        names |= lv_names(dev.lvm.vg, dev.lvm.lv)
    return names


def find_device(inv: Inventory, path: str) -> Device | None:
    """The device a name denotes, in any form scan prints (:func:`names_of`): first by the
    inventory's own names, so that a saved snapshot resolves without this machine; then, for a
    path on this machine, by the device it is (a link scan did not list, a node made elsewhere)."""
    text = path  # as given: "/dev/sdb " (a trailing space) is no name of sdb
    for d in inv.devices:
        if text in names_of(d):
            return d
    if not text.startswith("/"):
        return None
    devnum = devnum_of(text)
    hit = next((d for d in inv.devices if d.devnum == devnum), None) if devnum else None
    if hit is not None:
        return hit
    real = os.path.realpath(text)
    return next((d for d in inv.devices if real in (d.devnode, f"/dev/{d.name}")), None)
