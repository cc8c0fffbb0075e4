"""What discovery says about caches and cache-like layers: each device's part in one, its state,
and what cachewise can do for it.

cachewise sets up and removes lvmcache (dm-cache), dm-writecache and bcache. It must also know
the layers it must not touch or that make a block cache pointless, and say why:
- flashcache and EnhanceIO, out-of-tree caching modules that are unmaintained (flashcache's last
  release was 2017, EnhanceIO's 2015) and absent from mainline kernels;
- ZFS pool members and bcachefs members: both file systems manage their own SSD tiers (ZFS's
  L2ARC and special vdevs, bcachefs's promote and foreground targets); a block cache under one
  device of a pool hides the devices from the file system's own logic;
- md arrays (a redundant fast side makes writeback acceptable) and dm-crypt, whose place
  relative to a cache decides whether the SSD holds plaintext.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from advisor.backends import BCACHE, LVMCACHE, WRITECACHE
from advisor.disks.devices import Caching, Device, Inventory
from advisor.disks.failure import Failure
from advisor.errors import Next, next_step
from advisor.readers import dmstatus

NEVER = (
    "cachewise never sets up, changes or removes {what}: it is an out-of-tree kernel module, unmaintained "
    "since {year} and missing from mainline kernels, so no plan could be tested against the running kernel. "
    "Remove it with its own tools ({tool}) once its dirty data is written back, then ask cachewise again."
)


def _lv_state(row: Mapping[str, str]) -> tuple[str, bool]:
    attr = row.get("lv_attr", "")
    health = row.get("lv_health_status", "")
    if health == "partial" or (len(attr) > 8 and attr[8] == "p"):
        return "degraded: a device under it is missing (LVM reports it partial)", True
    if health:
        return f"LVM health: {health}", True
    return "", False


def _join(*bits: str) -> str:
    return "; ".join(b for b in bits if b)


def _mirrored(row: Mapping[str, str], vg_rows: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether the cache under an LV (its pool's data and metadata, or its cachevol) is raid1."""
    pool = row.get("pool_lv", "").strip("[]")
    if not pool:
        return False
    parts = [r for name, r in vg_rows.items() if name == pool or name.startswith(f"{pool}_")]
    return any(r.get("segtype") == "raid1" for r in parts)


def _parts(row: Mapping[str, str], vg_rows: Mapping[str, Mapping[str, str]]) -> dict[str, Mapping[str, str]]:
    """The rows of the LVs that make a cached LV's cache: its cache pool (or cache volume) and
    everything under it (data, metadata, raid images), by name without brackets."""
    pool = row.get("pool_lv", "").strip("[]")
    return {n: r for n, r in vg_rows.items() if pool and (n == pool or n.startswith(f"{pool}_"))}


def _lost(r: Mapping[str, str]) -> bool:
    """lvm2 places the row's extents on a PV it cannot find ("[unknown]")."""
    return "[unknown]" in r.get("devices", "")


def _gone_under(dev: Device, devices: Mapping[str, Device]) -> tuple[str, ...]:
    """The kernel names of the devices under a cached LV's cache that are gone: sysfs keeps a
    slave's name in slaves/ after its disk was deleted, so a name there with no device of its
    own was pulled. The origin's side (the _corig or _wcorig LV) is not the cache's."""

    def origin(name: str) -> bool:
        under = devices.get(name)
        return under is not None and (under.dm_name or "").endswith(("_corig", "_wcorig"))

    gone: list[str] = []
    seen: set[str] = set()
    todo = [s for s in dev.slaves if not origin(s)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        under = devices.get(name)
        if under is None:
            gone.append(name)
        else:
            todo += list(under.slaves)
    return tuple(sorted(gone))


def mirror_legs(inv: Inventory, dev: Device) -> list[Device]:
    """The raid1 LVs under a cached LV (its cache pool's data and metadata, or its cache volume,
    mirrored on two SSDs), each once, by name: what a repair rebuilds a lost leg of."""
    found: dict[str, Device] = {}
    todo, seen = list(dev.slaves), set()
    while todo:
        sub = inv.by_name(todo.pop())
        if sub is None or sub.name in seen:
            continue
        seen.add(sub.name)
        if sub.lvm is not None and sub.lvm.segtype == "raid1" and sub.lvm.lv:
            found[sub.lvm.lv.strip("[]")] = sub
        else:
            todo += list(sub.slaves)
    return [found[name] for name in sorted(found)]


def lvm_failure(
    dev: Device,
    row: Mapping[str, str],
    vg_rows: Mapping[str, Mapping[str, str]],
    devices: Mapping[str, Device],
    dm_status: Mapping[str, str],
) -> Failure | None:
    """What is wrong with the cache of a cached LV (None: nothing lvm2 and the kernel report):
    its target's status (Fail, read-only metadata, needs_check, a writecache error), and the
    devices under its cache that are gone, with whether a mirrored cache still has a leg."""
    lvm = dev.lvm
    if lvm is None or lvm.segtype not in ("cache", "writecache"):
        return None
    kind: Literal["dm-cache", "dm-writecache"] = "dm-cache" if lvm.segtype == "cache" else "dm-writecache"
    parts = _parts(row, vg_rows)
    line = dm_status.get(dev.dm_name or "")
    health = dmstatus.health(line) if line else None
    attr = row.get("lv_attr", "")
    flag = attr[8] if len(attr) > 8 else "-"  # lvs(8): (F)ailed, (M)etadata read only, (E)rror
    lost = [n for n, r in parts.items() if _lost(r)]
    under = _gone_under(dev, devices)
    missing = under or (("a PV lvm2 cannot find",) if lost else ())
    raids = [n for n, r in parts.items() if r.get("segtype") == "raid1"]
    # A mirror runs on while each of its raid1 LVs keeps one image on a device that is there.
    degraded = (
        bool(missing)
        and bool(raids)
        and all(any(not _lost(r) for n, r in parts.items() if n.startswith(f"{raid}_rimage_")) for raid in raids)
    )
    failed = (
        (health is not None and health.failed) or flag in "FE" or row.get("lv_health_status") in ("failed", "error")
    )
    mode = row.get("cache_mode") or None if kind == "dm-cache" else "writeback"
    failure = Failure(
        kind,
        f"{lvm.vg}/{lvm.lv}",
        mode,
        failed=failed,
        read_only=(health is not None and health.read_only) or flag == "M",
        needs_check=health is not None and health.needs_check,
        degraded=degraded,
        missing=missing,
        said=health.said if health is not None else "",
    )
    return failure if failure.any else None


def _trouble(failure: Failure | None) -> dict[str, Any]:
    """The Caching fields of a failure."""
    if failure is None:
        return {}
    return {
        "failed": failure.broken,
        "read_only": failure.read_only,
        "needs_check": failure.needs_check,
        "missing": failure.missing,
        "mode": failure.mode,
        "trouble": failure.sentence(),
        "degraded": failure.degraded or failure.gone,
    }


def lvm_caching(
    dev: Device,
    row: Mapping[str, str],
    vg_rows: Mapping[str, Mapping[str, str]] | None = None,
    devices: Mapping[str, Device] | None = None,
    dm_status: Mapping[str, str] | None = None,
) -> Caching | None:
    lvm = dev.lvm
    if lvm is None or lvm.role != "lv":
        return None
    vglv = f"{lvm.vg}/{lvm.lv}"
    health, degraded = _lv_state(row)
    mirrored = " (mirrored: LVM raid1 on two SSDs)" if _mirrored(row, vg_rows or {}) else ""
    failure = lvm_failure(dev, row, vg_rows or {}, devices or {}, dm_status or {})
    if failure is not None:
        return _failed_lvm(dev, lvm.segtype or "", vglv, mirrored, failure)
    if lvm.segtype == "cache":
        mode, policy = row.get("cache_mode", ""), row.get("cache_policy", "")
        what = ", ".join(x for x in (mode, f"{policy} policy" if policy else "") if x) or "mode unknown (run as root)"
        if policy == "cleaner":
            what += " (writing dirty blocks back, promoting nothing)"
        return Caching(
            "lvmcache",
            "cached LV" + mirrored,
            _join(what, health),
            "repair the mirror with `lvconvert --repair` on its cache pool once a new SSD is in the VG"
            if degraded
            else "",
            mode=mode or None,
            remove=LVMCACHE.remover,
            degraded=degraded,
            next=(
                next_step("watch", target=vglv),
                next_step("change-mode", target=vglv),
                next_step("remove", target=vglv),
            ),
        )
    if lvm.segtype == "writecache":
        return Caching(
            "dm-writecache",
            "LV with a writecache (caches writes only)" + mirrored,
            _join("writeback", health),
            "",
            mode="writeback",
            remove=WRITECACHE.remover,
            degraded=degraded,
            next=(next_step("watch", target=vglv), next_step("remove", target=vglv)),
        )
    if lvm.segtype == "cache-pool":
        return Caching(
            "lvmcache",
            "cache pool, attached to no LV",
            health or "unused",
            f"attach it with lvconvert --type cache --cachepool {vglv} VG/LV, or free its space with lvremove {vglv}",
            degraded=degraded,
        )
    return None


def _failed_lvm(dev: Device, segtype: str, vglv: str, mirrored: str, failure: Failure) -> Caching:
    """A cached LV whose cache failed, lost its SSD, or runs on one leg of its mirror: what that
    means, and the way out (the repair of a mirror first; the rescue of a cache that is gone)."""
    writecache = segtype == "writecache"
    what = {
        "failed": "failed",
        "gone": "failed: its SSD is gone",
        "degraded": "degraded: one SSD of its mirror is gone",
    }
    state = f"{failure.mode or 'mode unknown'}, {what.get(failure.state, failure.state)}"
    steps: tuple[Next, ...]
    if failure.degraded:
        can = (
            "repair the mirror before anything else: put a new SSD in the volume group and rebuild the missing "
            "leg onto it (lvconvert --repair of the cache's data and metadata); remove the cache only after that"
        )
        steps = (next_step("repair-mirror", target=vglv), next_step("watch", target=vglv))
    elif failure.broken:
        can = f"take the cache off so the origin runs on its own: {failure.origin()}"
        steps = (next_step("rescue", target=vglv),)
    else:
        can = ""
        steps = (next_step("watch", target=vglv), next_step("remove", target=vglv))
    return Caching(
        "dm-writecache" if writecache else "lvmcache",
        ("LV with a writecache (caches writes only)" if writecache else "cached LV") + mirrored,
        state,
        can,
        remove=(WRITECACHE if writecache else LVMCACHE).remover,
        next=steps,
        **_trouble(failure),
    )


def bcache_failure(dev: Device) -> Failure | None:
    """A registered bcache whose cache set is gone: its state still reads clean or dirty (a
    detached one reads "no cache") but the link to its cache set went with the set, as the lab
    saw after pulling the SSD; or it was started without a set that held dirty data
    ("inconsistent")."""
    b = dev.bcache
    if b is None or b.role not in ("bcache", "backing"):
        return None
    name = b.bcache_device if b.role == "backing" and b.bcache_device else dev.name
    if b.state == "inconsistent":  # started without its set; in writethrough the set held nothing dirty
        return (
            None if b.cache_mode == "writethrough" else Failure("bcache", name, b.cache_mode, True, said="inconsistent")
        )
    if not b.cache_set_uuid and b.state in ("clean", "dirty"):
        said = "stopped" if b.running is False else b.state
        return Failure("bcache", name, b.cache_mode, failed=True, said=said)
    return None


def bcache_caching(dev: Device) -> Caching | None:
    b = dev.bcache
    if b is None:
        return None
    failure = bcache_failure(dev)
    if failure is not None:
        return Caching(
            "bcache",
            "bcache device whose cache set is gone" if b.role == "bcache" else "bcache backing device, its set gone",
            f"{b.cache_mode or 'mode unknown'}, failed: {b.state}",
            f"take the cache off for good so that it comes back after a restart: {failure.origin()}",
            remove=BCACHE.remover,
            next=(next_step("rescue", target=dev.devnode),),
            **_trouble(failure),
        )
    if b.role == "bcache":
        dirty = b.dirty_data if b.dirty_data and b.dirty_data.rstrip("kKMGTiB").strip() not in ("0", "0.0") else ""
        state = _join(
            b.state or "", (b.cache_mode or "") if b.cache_set_uuid else "", f"dirty data {dirty}" if dirty else ""
        )
        if not b.cache_set_uuid:
            return Caching(
                "bcache",
                "bcache device with no cache attached",
                state or "no cache",
                # Not a cache: nothing of a removal's flush and detach applies to it (issue 30).
                f"reads and writes go straight to {b.backing_device or 'its backing device'}, so there is no cache "
                f"to remove; attach a cache set to cache {b.backing_device or 'it'}, or use it as it is",
            )
        return Caching(
            "bcache",
            "bcache device",
            state or "unknown",
            "",
            remove=BCACHE.remover,
            next=(next_step("watch", target=dev.name), next_step("remove", target=dev.devnode)),
        )
    if b.role == "backing":
        if not b.cache_set_uuid:
            return Caching(
                "bcache",
                "bcache backing device, detached",
                _join(b.state or "no cache"),
                f"its data is reached through {b.bcache_device or 'its bcache device'}; attach a cache set "
                "to cache it again",
            )
        return Caching(
            "bcache",
            "bcache backing device",
            _join(b.state or "", b.cache_mode or ""),
            "",
            remove=BCACHE.remover,
            next=(next_step("remove", target=dev.devnode),),
        )
    if b.role == "cache":
        return Caching(
            "bcache",
            "bcache cache device",
            f"cache set {b.cache_set_uuid}",
            "",
            next=(next_step("free-bcache-cache"),),
        )
    return Caching(
        "bcache",
        "bcache superblock, not registered",
        "unregistered",
        f"register it (echo {dev.devnode} > /sys/fs/bcache/register) to use its data, or erase it "
        f"(wipefs -a {dev.devnode}) if it holds nothing you need",
    )


def _dm_crypt(dev: Device, devices: Mapping[str, Device], is_cache: Callable[[Device], bool]) -> Caching | None:
    uuid = dev.dm_uuid or ""
    if uuid.startswith("CRYPT-"):
        kind = uuid.split("-")[1] if "-" in uuid else "crypt"
        below = _any_stacked(dev, devices, "slaves", is_cache)
        above = _any_stacked(dev, devices, "holders", is_cache)
        if below:
            where = (
                f"over a cache ({below}): the cache holds only ciphertext, so the SSD leaks nothing; this is "
                "the right order"
            )
        elif above:
            where = (
                f"under a cache ({above}): the cache holds the decrypted data, so the SSD keeps plaintext; "
                "to keep it encrypted, cache the device under the encryption instead"
            )
        else:
            where = "no cache above or below"
        return Caching(
            "dm-crypt",
            f"open {kind} volume",
            where,
            "cache the device it opens (under the encryption), so that the SSD holds only ciphertext",
        )
    if dev.fs_type == "crypto_LUKS":
        opened = any((devices[h].dm_uuid or "").startswith("CRYPT-") for h in dev.holders if h in devices)
        return Caching(
            "dm-crypt",
            "LUKS container",
            "open" if opened else "closed",
            "cache this device (under the encryption) so that the SSD holds only ciphertext",
        )
    return None


def _any_stacked(dev: Device, devices: Mapping[str, Device], direction: str, is_cache: Callable[[Device], bool]) -> str:
    """The name of a cache device stacked above (holders) or below (slaves) ``dev``, or ''."""
    seen: set[str] = set()
    todo = list(getattr(dev, direction))
    while todo:
        name = todo.pop()
        if name in seen or name not in devices:
            continue
        seen.add(name)
        other = devices[name]
        if is_cache(other):
            return other.lvm and other.lvm.lv and f"{other.lvm.vg}/{other.lvm.lv}" or other.name
        todo += list(getattr(other, direction))
    return ""


def explain(
    dev: Device,
    devices: Mapping[str, Device],
    lv_row: Mapping[str, str],
    dm_targets: list[str],
    enhanceio: list[dict[str, str]],
    magic: str | None,
    vg_rows: Mapping[str, Mapping[str, str]] | None = None,
    dm_status: Mapping[str, str] | None = None,
) -> Caching | None:
    """The device's part in a cache or cache-like layer, or None."""

    def is_cache(d: Device) -> bool:
        return (d.lvm is not None and d.lvm.segtype in ("cache", "writecache")) or (
            d.bcache is not None and d.bcache.role == "bcache"
        )

    found = lvm_caching(dev, lv_row, vg_rows, devices, dm_status) or bcache_caching(dev)
    if found is not None:
        return found
    if "flashcache" in dm_targets:
        return Caching(
            "flashcache",
            "flashcache device",
            "active",
            NEVER.format(
                what="flashcache", year=2017, tool="flashcache_destroy, or dmsetup remove after a clean shutdown"
            ),
        )
    for cache in enhanceio:
        for key, part in (("src_name", "source device"), ("ssd_name", "SSD")):
            if cache.get(key) in (dev.devnode, *dev.links):
                return Caching(
                    "enhanceio",
                    f"EnhanceIO {part} of cache {cache.get('name', '?')}",
                    f"mode {cache.get('mode', 'unknown')}",
                    NEVER.format(what="EnhanceIO", year=2015, tool="eio_cli delete"),
                )
    if dev.fs_type == "zfs_member":
        pool = f" {dev.fs_label}" if dev.fs_label else ""
        return Caching(
            "zfs",
            f"member of ZFS pool{pool}",
            "pool member",
            f"a block cache does not apply: ZFS caches in its own layers. Add the SSD to the pool as "
            f"L2ARC (zpool add{pool or ' POOL'} cache SSD) for reads, or as a special vdev (mirrored) for "
            "metadata and small blocks; a block cache under one member would hide it from ZFS",
        )
    if dev.fs_type == "bcachefs" or magic == "bcachefs":
        return Caching(
            "bcachefs",
            "bcachefs member",
            "file system member",
            "a block cache does not apply: bcachefs tiers across SSDs and HDDs itself. Add the SSD to the "
            "file system (bcachefs device add) and set its foreground and promote targets to it",
        )
    if dev.md is not None and dev.md.role == "array":
        level = dev.md.level or "md"
        degraded = (dev.md.degraded or 0) > 0
        redundant = level in ("raid1", "raid10", "raid4", "raid5", "raid6")
        return Caching(
            "md",
            f"md {level} array",
            "degraded: a member is missing" if degraded else "in sync",
            (
                "as the fast side it is redundant, so writeback is acceptable on it; cachewise uses it but "
                "never creates an md array"
                if redundant
                else "as the fast side it is not redundant; writethrough only"
            ),
            degraded=degraded,
        )
    return _dm_crypt(dev, devices, is_cache)


def with_caching(
    devices: dict[str, Device],
    lv_rows: Mapping[tuple[str | None, str], Mapping[str, str]],
    dm_targets: Mapping[str, list[str]],
    enhanceio: list[dict[str, str]],
    magic: Mapping[str, str],
    dm_status: Mapping[str, str] | None = None,
) -> dict[str, Device]:
    by_vg: dict[str | None, dict[str, Mapping[str, str]]] = {}
    for (vg, lv), row in lv_rows.items():
        by_vg.setdefault(vg, {})[lv.strip("[]")] = row
    out = {}
    for name, dev in devices.items():
        row = lv_rows.get((dev.lvm.vg, dev.lvm.lv or ""), {}) if dev.lvm is not None else {}
        caching = explain(
            dev,
            devices,
            row,
            dm_targets.get(dev.dm_name or "", []),
            enhanceio,
            magic.get(name),
            by_vg.get(dev.lvm.vg, {}) if dev.lvm is not None else {},
            dm_status,
        )
        # LVM's own sub-LVs (a cache pool's data and metadata, raid images, a cache's origin) are
        # hidden unless every device is asked for: they are parts of the LV above them. A thin
        # pool is the exception: lvm2 calls it private too, but it is what its admin names
        # (Proxmox's pve/data), and lvm2 caches it through its data LV.
        private = "private" in row.get("lv_role", "").split(",")
        pool = thin_pool(dev)
        if pool is not None:
            tdata = by_vg.get(dev.lvm.vg if dev.lvm else None, {}).get(f"{pool}_tdata", {})
            caching = caching or thin_pool_caching(dev, tdata)
            dev = replace(dev, caching=caching, hidden=False)
        elif caching is not None or private:
            dev = replace(dev, caching=caching, hidden=dev.hidden or private)
        out[name] = dev
    return out


def tpool_layer(dev: Device) -> bool:
    """Whether ``dev`` is the thin-pool target under a thin pool's public device (VG-POOL-tpool)."""
    return dev.lvm is not None and dev.lvm.segtype == "thin-pool" and (dev.dm_uuid or "").endswith("-tpool")


def thin_pool(dev: Device) -> str | None:
    """The thin pool's LV name when ``dev`` is its public device (VG-POOL, not the -tpool layer
    under it), else None."""
    lvm = dev.lvm
    if lvm is None or lvm.role != "lv" or lvm.segtype != "thin-pool" or not lvm.lv or tpool_layer(dev):
        return None
    return lvm.lv


def thin_pool_caching(dev: Device, tdata: Mapping[str, str]) -> Caching | None:
    """A thin pool whose data LV lvm2 caches (lvconvert --type cache on the pool caches its
    _tdata): what it is, which cachewise neither plans nor removes yet."""
    if tdata.get("segtype") != "cache" or dev.lvm is None:
        return None
    vglv = f"{dev.lvm.vg}/{dev.lvm.lv}"
    mode, policy = tdata.get("cache_mode", ""), tdata.get("cache_policy", "")
    return Caching(
        "lvmcache",
        "thin pool whose data LV is cached",
        ", ".join(x for x in (mode, f"{policy} policy" if policy else "") if x) or "mode unknown (run as root)",
        f"cachewise does not plan or remove a thin pool's cache yet; `lvconvert --uncache {vglv}` writes its dirty "
        "blocks back and removes it",
        mode=mode or None,
    )
