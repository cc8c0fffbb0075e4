"""Discovery recognises caches and cache-like layers and says what cachewise can do for each:
the kinds the lab cannot make (flashcache, EnhanceIO, md, dm-crypt under a cache) on built
devices; those it can, on the snapshots captured in the lab (tests/fixtures/lab-caches)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from advisor.disks.caches import explain
from advisor.disks.collect import RawSystem, _enhanceio, parse_dm_targets
from advisor.disks.devices import BcacheInfo, Device, Inventory, LvmInfo, MdInfo
from advisor.disks.discovery import build_inventory
from cachewise.core import Core, Refused, plans
from recipes.removal import RemoveOptions
from tests.conftest import FIXTURES

CACHES = FIXTURES / "lab-caches"


def dev(name: str, **kw: object) -> Device:
    base: dict[str, object] = {"name": name, "kind": "disk", "devnode": f"/dev/{name}", "devnum": "8:0",
                               "identity": f"serial:{name}", "stable_path": f"/dev/disk/by-id/x-{name}"}
    base.update(kw)
    return Device(**base)  # type: ignore[arg-type]


def test_dmsetup_table_gives_target_types_and_never_their_arguments() -> None:
    text = ("vg-data: 0 1228800 cache 254:10 254:5 254:11 128 2 metadata2 writeback smq 0\n"
            "secret: 0 2048 crypt aes-xts-plain64 :64:logon:cryptsetup:abc 0 254:0 4096\n"
            "fc: 0 100 flashcache conf:\nfc: 100 100 linear 8:0 0\nNo devices found\n")
    assert parse_dm_targets(text) == {"vg-data": ["cache"], "secret": ["crypt"], "fc": ["flashcache", "linear"]}


def test_enhanceio_caches_are_read_from_proc(tmp_path: Path) -> None:
    (tmp_path / "home_cache").mkdir()
    (tmp_path / "home_cache" / "config").write_text("src_name   /dev/sdb1\nssd_name   /dev/sdc\nmode   3\n")
    assert _enhanceio(tmp_path) == [{"name": "home_cache", "src_name": "/dev/sdb1", "ssd_name": "/dev/sdc", "mode": "3"}]
    assert _enhanceio(tmp_path / "absent") == []


@pytest.mark.parametrize(("device", "targets", "eio", "kind", "words"), [
    (dev("dm-4", kind="dm", dm_name="fc"), ["flashcache"], [], "flashcache", "unmaintained since 2017"),
    (dev("sdb1", kind="partition"), [], [{"name": "c1", "src_name": "/dev/sdb1", "ssd_name": "/dev/sdc"}], "enhanceio",
     "unmaintained since 2015"),
    (dev("sdc"), [], [{"name": "c1", "src_name": "/dev/sdb1", "ssd_name": "/dev/sdc"}], "enhanceio", "eio_cli delete"),
])
def test_unmaintained_caches_are_explained_and_never_removable(device: Device, targets: list[str],
                                                                 eio: list[dict[str, str]], kind: str, words: str) -> None:
    c = explain(device, {device.name: device}, {}, targets, eio, None)
    assert c is not None and c.kind == kind and c.remove is None and words in c.can


def test_md_arrays_say_whether_they_are_redundant_and_in_sync() -> None:
    raid1 = dev("md0", kind="md", md=MdInfo("array", "md0", "raid1", 0))
    c = explain(raid1, {}, {}, [], [], None)
    assert c is not None and c.kind == "md" and c.state == "in sync" and "writeback is acceptable" in c.can
    degraded = explain(dataclasses.replace(raid1, md=MdInfo("array", "md0", "raid1", 1)), {}, {}, [], [], None)
    assert degraded is not None and degraded.degraded and "degraded" in degraded.state
    raid0 = explain(dataclasses.replace(raid1, md=MdInfo("array", "md0", "raid0", 0)), {}, {}, [], [], None)
    assert raid0 is not None and "not redundant" in raid0.can


def test_dm_crypt_says_where_it_sits_relative_to_a_cache() -> None:
    cached = dev("dm-2", kind="lvm", lvm=LvmInfo("lv", "vg", "data", "cache"), holders=("dm-3",))
    crypt_over = dev("dm-3", kind="dm", dm_uuid="CRYPT-LUKS2-abc-vault", slaves=("dm-2",))
    devices = {d.name: d for d in (cached, crypt_over)}
    over = explain(crypt_over, devices, {}, ["crypt"], [], None)
    assert over is not None and "over a cache (vg/data)" in over.state and "ciphertext" in over.state
    crypt_under = dev("dm-5", kind="dm", dm_uuid="CRYPT-LUKS2-def-disk", holders=("bcache0",))
    bcache = dev("bcache0", kind="bcache", bcache=BcacheInfo("bcache", "set", backing_device="dm-5"),
                 slaves=("dm-5",))
    under = explain(crypt_under, {d.name: d for d in (crypt_under, bcache)}, {}, ["crypt"], [], None)
    assert under is not None and "under a cache (bcache0)" in under.state and "plaintext" in under.state


def test_bcache_in_every_state() -> None:
    attached = dev("bcache0", kind="bcache", bcache=BcacheInfo("bcache", "set1", state="dirty", cache_mode="writeback",
                                                                dirty_data="12.0M"))
    c = explain(attached, {}, {}, [], [], None)
    assert c is not None and c.remove == "bcache-detach" and "dirty" in c.state and "12.0M" in c.state
    no_cache = dataclasses.replace(attached, bcache=BcacheInfo("bcache", None, state="no cache", backing_device="sdb"))
    c = explain(no_cache, {}, {}, [], [], None)
    assert c is not None and c.remove is None and "no cache attached" in c.part
    detached = dev("sdb", bcache=BcacheInfo("backing", None, state="no cache", bcache_device="bcache0"))
    c = explain(detached, {}, {}, [], [], None)
    assert c is not None and "detached" in c.part and c.remove is None
    unregistered = dev("sdd", bcache=BcacheInfo("unregistered"))
    c = explain(unregistered, {}, {}, [], [], None)
    assert c is not None and "register" in c.can and "wipefs" in c.can


@pytest.mark.parametrize(("row", "state", "degraded"), [
    ({"cache_mode": "writeback", "cache_policy": "smq", "lv_attr": "Cwi-aoC---"}, "writeback, smq policy", False),
    ({"cache_mode": "writethrough", "cache_policy": "cleaner", "lv_attr": "Cwi-aoC---"}, "promoting nothing", False),
    ({"cache_mode": "writeback", "cache_policy": "smq", "lv_attr": "Cwi-aoC-p-", "lv_health_status": "partial"},
     "degraded", True),
    ({}, "mode unknown", False),
])
def test_lvmcache_mode_policy_and_health_from_lvs(row: dict[str, str], state: str, degraded: bool) -> None:
    lv = dev("dm-2", kind="lvm", lvm=LvmInfo("lv", "vg", "data", "cache"))
    c = explain(lv, {}, row, [], [], None)
    assert c is not None and c.kind == "lvmcache" and state in c.state and c.degraded is degraded
    assert c.remove == "lvmcache-uncache"


# --- on what the lab's kernel and tools made (tests/vm/guest/caches.sh) ---

def lab_inventory(name: str) -> Inventory:
    return build_inventory(RawSystem.load(CACHES / name))


def by_path(inv: Inventory, path: str) -> Device:
    found = next((d for d in inv.devices if path in (d.devnode, d.display_path, *d.links)
                  or (d.lvm is not None and f"/dev/{d.lvm.vg}/{d.lvm.lv}" == path)), None)
    assert found is not None, path
    return found


def test_lab_writecache_lv_is_recognised() -> None:
    data = by_path(lab_inventory("raw-writecache.json"), "/dev/labvg/data")
    assert data.caching is not None and data.caching.kind == "dm-writecache"
    assert data.caching.remove == "writecache-detach"


def test_lab_layers_are_each_recognised() -> None:
    inv = lab_inventory("raw-layers.json")
    data = by_path(inv, "/dev/labvg/data")
    assert data.caching is not None and data.caching.kind == "lvmcache" and "cleaner" in data.caching.state
    vault = by_path(inv, "/dev/mapper/vault")
    assert vault.caching is not None and vault.caching.kind == "dm-crypt" and "over a cache" in vault.caching.state
    kinds = {d.caching.kind for d in inv.devices if d.caching is not None}
    assert {"zfs", "bcachefs", "bcache", "lvmcache", "dm-crypt"} <= kinds
    zfs = next(d for d in inv.devices if d.fs_type == "zfs_member")
    assert zfs.caching is not None and "tank" in zfs.caching.part and "L2ARC" in zfs.caching.can
    backing = next(d for d in inv.devices if d.bcache is not None and d.bcache.role == "backing")
    assert backing.caching is not None and "detached" in backing.caching.part


def test_lab_degraded_mirror_is_reported() -> None:
    data = by_path(lab_inventory("raw-degraded.json"), "/dev/labvg/data")
    assert data.caching is not None and data.caching.degraded and "degraded" in data.caching.state
    assert "lvconvert --repair" in data.caching.can


def test_scan_json_of_the_lab_carries_the_caching_object() -> None:
    data = lab_inventory("raw-layers.json").to_json(show_all=True)
    assert any(d["caching"] and d["caching"]["kind"] == "zfs" for d in data["devices"])
    json.dumps(data)


@pytest.mark.parametrize(("path", "why"), [
    ("/dev/mapper/vault", "over a cache"), ("zfs", "ZFS"), ("bcachefs", "bcachefs"), ("backing", "detached"),
])
def test_remove_refuses_what_cachewise_does_not_remove_with_the_reason(path: str, why: str) -> None:
    inv = lab_inventory("raw-layers.json")
    target = {"zfs": lambda: next(d for d in inv.devices if d.fs_type == "zfs_member").devnode,
              "bcachefs": lambda: next(d for d in inv.devices if d.caching and d.caching.kind == "bcachefs").devnode,
              "backing": lambda: next(d for d in inv.devices if d.bcache and d.bcache.role == "backing").devnode,
              }.get(path, lambda: path)()
    core = Core.for_snapshot(RawSystem.load(CACHES / "raw-layers.json"))
    with pytest.raises(Refused, match=f"{why}.*Nothing was changed"):
        plans.make(core, inv, "remove", RemoveOptions(device=target))


def test_remove_picks_the_recipe_of_the_cache_type() -> None:
    inv = lab_inventory("raw-layers.json")
    core = Core.for_snapshot(RawSystem.load(CACHES / "raw-layers.json"))
    assert plans.make(core, inv, "remove", RemoveOptions(device="/dev/labvg/data")).kind == "lvmcache-uncache"
    wc = lab_inventory("raw-writecache.json")
    assert plans.make(Core.for_snapshot(RawSystem.load(CACHES / "raw-writecache.json")), wc, "remove",
                      RemoveOptions(device="/dev/labvg/data")).kind == "writecache-detach"
