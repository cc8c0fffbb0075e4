"""Discovery over raw snapshots captured in the lab guest (tests/fixtures/lab-scan)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import _split_dm_lvm_name, _transport, build_inventory
from advisor.readers.blkid import parse_export as parse_blkid_export
from tests.conftest import LAB_SCAN


def dev(inv: Inventory, serial: str) -> Device:
    found = [d for d in inv.devices if d.serial == serial]
    assert len(found) == 1
    return found[0]


def test_disks_identity_transport_and_rotational(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    hdd, ssd, nvme = dev(inv, "HDD0001"), dev(inv, "SSD0001"), dev(inv, "NVME0001")
    assert (hdd.identity, hdd.transport, hdd.rotational) == ("wwn:0x5000c500a1b2c3d4", "scsi", True)
    assert (ssd.identity, ssd.transport, ssd.rotational, ssd.model) == ("serial:SSD0001", "sata", False, "LabSSD")
    assert (nvme.identity, nvme.transport, nvme.rotational) == ("serial:NVME0001", "nvme", False)
    assert hdd.stable_path == "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"
    assert ssd.stable_path == "/dev/disk/by-id/ata-LabSSD_SSD0001"
    assert nvme.stable_path is not None and nvme.stable_path.startswith("/dev/disk/by-id/nvme-QEMU")
    assert all(d.state == "free" for d in (hdd, ssd, nvme))


def test_identity_is_the_same_with_and_without_udev(raw_udev: RawSystem, raw_noudev: RawSystem) -> None:
    with_udev = {d.serial: d.identity for d in build_inventory(raw_udev).devices if d.serial}
    without = {d.serial: d.identity for d in build_inventory(raw_noudev).devices if d.serial}
    assert with_udev == without and len(with_udev) >= 8


def test_without_udev_paths_are_missing_and_said(raw_noudev: RawSystem) -> None:
    inv = build_inventory(raw_noudev)
    assert inv.udev == "absent"
    hdd = dev(inv, "HDD0001")
    assert hdd.stable_path is None and hdd.links == ()
    assert [u.fact for u in hdd.unreadable] == ["by-id path"]
    assert any("udev is not running" in n for n in inv.notes)
    # blkid filled in what udev would have said.
    part1 = next(d for d in inv.devices if d.kind == "partition" and d.mountpoints)
    assert part1.fs_type == "ext4" and part1.fs_label == "labdata"


@pytest.mark.parametrize("fixture", ["raw_udev", "raw_noudev"])
def test_partitions_lvm_and_bcache_roles(fixture: str, request: pytest.FixtureRequest) -> None:
    inv = build_inventory(request.getfixturevalue(fixture))
    disk = dev(inv, "PART0001")
    assert disk.partition_table == "gpt" and len(disk.partitions) == 2
    p1 = inv.by_name(disk.partitions[0])
    assert p1 is not None and p1.partition_table is None
    assert p1.rotational == disk.rotational and p1.logical_sector_size == 512
    p2 = inv.by_name(disk.partitions[1])
    plain = next(d for d in inv.devices if d.kind == "dm")
    assert p2 is not None and plain.slaves == (p2.name,) and plain.stable_path == "/dev/mapper/labplain"
    assert disk.in_use_reason == (
        f"in use because {p1.name} is mounted at /run/lab/mnt; {p2.name}: held by {plain.name} (labplain)"
    )

    pv = dev(inv, "LVM0001")
    assert pv.lvm is not None and (pv.lvm.role, pv.lvm.vg) == ("pv", "labvg")
    lv = next(d for d in inv.devices if d.kind == "lvm")
    assert lv.lvm is not None and (lv.lvm.vg, lv.lvm.lv, lv.lvm.segtype) == ("labvg", "data", "linear")
    assert lv.stable_path == "/dev/labvg/data" and lv.state == "has-data"

    backing, cache = dev(inv, "BCB0001"), dev(inv, "BCC0001")
    bdev = next(d for d in inv.devices if d.kind == "bcache")
    assert backing.bcache is not None and cache.bcache is not None and bdev.bcache is not None
    assert backing.bcache.role == "backing" and cache.bcache.role == "cache"
    assert backing.bcache.cache_set_uuid == cache.bcache.cache_set_uuid is not None
    assert bdev.identity == f"bcache:{backing.bcache.dev_uuid}"
    assert "held by" not in cache.in_use_reason  # bcacheN holding the cache is explained, not listed
    if inv.udev == "running":
        assert bdev.stable_path == f"/dev/bcache/by-uuid/{backing.bcache.dev_uuid}"
    else:
        assert bdev.stable_path is None


def test_bcache_registered_before_udev_has_no_link_and_says_why(raw_udev: RawSystem) -> None:
    raw = copy.deepcopy(raw_udev)
    for block in raw.blocks:
        if block.name.startswith("bcache"):
            block.links = [link for link in block.links if not link.startswith("/dev/bcache/")]
    bdev = next(d for d in build_inventory(raw).devices if d.kind == "bcache")
    assert bdev.stable_path is None and bdev.identity is not None
    assert [u.fact for u in bdev.unreadable] == ["stable path"]


def test_super_show_agrees_with_sysfs(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    text = (LAB_SCAN / "bcache-super-show.txt").read_text()
    backing = dev(inv, "BCB0001")
    assert backing.bcache is not None
    assert re.search(rf"dev.uuid\s+{backing.bcache.dev_uuid}", text)
    assert re.search(rf"cset.uuid\s+{backing.bcache.cache_set_uuid}", text)


def test_lvs_and_pvs_reports_match_discovery(raw_udev: RawSystem) -> None:
    lvs = json.loads((LAB_SCAN / "lvs.json").read_text())["report"][0]["lv"]
    pvs = json.loads((LAB_SCAN / "pvs.json").read_text())["report"][0]["pv"]
    assert raw_udev.lvs == lvs and raw_udev.pvs == pvs
    inv = build_inventory(raw_udev)
    assert dev(inv, "LVM0001").devnode == pvs[0]["pv_name"]


def test_lvm_names_come_from_dm_names_when_lvs_cannot_run(raw_noudev: RawSystem) -> None:
    raw = copy.deepcopy(raw_noudev)
    raw.pvs = raw.lvs = None
    inv = build_inventory(raw)
    assert dev(inv, "LVM0001").lvm is not None and dev(inv, "LVM0001").lvm.vg == "labvg"  # type: ignore[union-attr]
    lv = next(d for d in inv.devices if d.kind == "lvm")
    assert lv.lvm is not None and (lv.lvm.vg, lv.lvm.lv, lv.lvm.segtype) == ("labvg", "data", None)


def test_tree_groups_by_disk(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    tree = inv.tree()
    names = [d.name for _, d in tree]
    assert len(names) == len(set(names)) == len(inv.visible())
    depth = {d.name: level for level, d in tree}
    pv, lv = dev(inv, "LVM0001"), next(d for d in inv.devices if d.kind == "lvm")
    assert depth[pv.name] == 0 and depth[lv.name] == 1 and names.index(lv.name) == names.index(pv.name) + 1
    backing = dev(inv, "BCB0001")
    bdev = next(d for d in inv.devices if d.kind == "bcache")
    assert names.index(bdev.name) == names.index(backing.name) + 1


def test_loop_devices_hidden_unless_all(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    loops = [d for d in inv.devices if d.kind == "loop"]
    assert loops and all(d.hidden for d in loops)
    assert not any(d.kind == "loop" for d in inv.visible())
    assert any(d.kind == "loop" for d in inv.visible(show_all=True))
    attached = [d for d in loops if d.loop_file]
    assert [d.identity for d in attached] == ["loop-file:/run/lab/loop.img"]


def test_without_removes_device_and_what_sits_on_it(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    pv = dev(inv, "LVM0001")
    gone = inv.without({pv.name})
    assert not any(d.name == pv.name or d.kind == "lvm" for d in gone.devices)
    assert len(gone.devices) == len(inv.devices) - 2


def test_json_keys_are_documented(raw_udev: RawSystem) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "scan-json.md").read_text()
    data = build_inventory(raw_udev).to_json()
    for key in data:
        assert f"`{key}`" in doc, f"top-level key {key} missing from docs/scan-json.md"
    for key in data["devices"][0]:
        assert f"`{key}`" in doc, f"device key {key} missing from docs/scan-json.md"


def test_raw_snapshot_round_trips(raw_udev: RawSystem, tmp_path: Path) -> None:
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw_udev.to_json()))
    assert RawSystem.load(path) == raw_udev


def test_raw_snapshot_of_wrong_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "raw.json"
    path.write_text(json.dumps({"schema": "cachewise.raw/99", "blocks": []}))
    with pytest.raises(ValueError, match="not a cachewise raw snapshot"):
        RawSystem.load(path)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("labvg-data", ("labvg", "data")), ("my--vg-lv--1", ("my-vg", "lv-1")), ("vg-data_corig", ("vg", "data_corig")),
     ("nodash", None)],
)
def test_dm_name_split_undoes_lvm_escaping(name: str, expected: tuple[str, str] | None) -> None:
    assert _split_dm_lvm_name(name) == expected


def test_transport_from_real_sysfs_paths(raw_udev: RawSystem) -> None:
    seen = {b.name: _transport(b.sys_path) for b in raw_udev.blocks if b.devtype == "disk"}
    assert set(seen.values()) >= {"scsi", "sata", "nvme", None}
    # Paths of the kinds the lab cannot emulate, as the kernel lays them out.
    assert _transport("/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb") == "usb"
    assert _transport("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/host0/port-0:0/end_device-0:0/target0:0:0/0:0:0:0/block/sda") == "sas"
    assert _transport("/sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda") == "virtio"


def test_blkid_export_parsing() -> None:
    text = "DEVNAME=/dev/sdc\nUUID=m78t8k\nVERSION=LVM2\\ 001\nTYPE=LVM2_member\nUSAGE=raid\n"
    assert parse_blkid_export(text) == {
        "DEVNAME": "/dev/sdc", "UUID": "m78t8k", "VERSION": "LVM2 001", "TYPE": "LVM2_member", "USAGE": "raid",
    }


def test_refresh_rereads_only_the_named_devices(raw_udev: RawSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.disks import collect as collect_mod

    hot = next(b for b in raw_udev.blocks if b.attrs.get("device/vpd_pg80") == "HOT0001")
    without_hot = copy.deepcopy(raw_udev)
    without_hot.blocks = [b for b in without_hot.blocks if b.name != hot.name]
    asked: list[set[str] | None] = []

    def fake_read(names: set[str] | None = None) -> tuple[list[object], str]:
        asked.append(names)
        return [copy.deepcopy(b) for b in raw_udev.blocks if names is not None and b.name in names], "running"

    monkeypatch.setattr(collect_mod, "_read_blocks", fake_read)
    back = collect_mod.refresh(without_hot, {hot.name})
    assert asked == [{hot.name}]
    assert {b.name for b in back.blocks} == {b.name for b in raw_udev.blocks}
    assert back.pvs == raw_udev.pvs and back.lvs == raw_udev.lvs  # tool answers carried over

    # A removed PV takes its LV with it: both are re-read, neither is found.
    pv = next(b for b in raw_udev.blocks if b.attrs.get("device/vpd_pg80") == "LVM0001")
    monkeypatch.setattr(collect_mod, "_read_blocks", lambda names=None: ([], "running"))
    gone = collect_mod.refresh(raw_udev, {pv.name})
    assert pv.name not in {b.name for b in gone.blocks}
    assert not set(pv.holders) & {b.name for b in gone.blocks}
