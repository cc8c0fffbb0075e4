"""`cachewise scan --json` in a real guest: every device kind, with and without udev, and
hot-plug on the live Disks screen. One boot serves every test in this module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.vm.lab import HDD, NVME, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario

DISKS = [
    HDD,
    SATA_SSD,
    NVME,
    LabDisk("part", "PART0001"),
    LabDisk("lvm", "LVM0001"),
    LabDisk("bcb", "BCB0001"),
    LabDisk("bcc", "BCC0001"),
    LabDisk("hot", "HOT0001", "256M"),
]


# Alone: the hot-plug check times how fast the Disks screen shows a disk coming and going.
SCENARIO = Scenario("scan", "scan.sh", tuple(DISKS), timeout=1200, expected_s=300, alone=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    keep = Path(__file__).parents[1] / "vm" / "last-run"
    if keep.parent.exists():
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(run.out, keep)
    return run


def scan(run: GuestRun, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run.read(name))
    assert data["schema"] == "cachewise.scan/1"
    return data


def by_serial(data: dict[str, Any], serial: str) -> dict[str, Any]:
    found = [d for d in data["devices"] if d["serial"] == serial]
    assert len(found) == 1, f"expected one device with serial {serial}, got {found}"
    return found[0]


def by_name(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(d for d in data["devices"] if d["name"] == name)


MODES = ["scan-noudev.json", "scan-udev.json"]


@pytest.mark.parametrize("mode", MODES)
def test_disks_identity_transport_rotational(guest: GuestRun, mode: str) -> None:
    data = scan(guest, mode)
    assert data["udev"] == ("running" if "-udev" in mode else "absent")
    hdd = by_serial(data, "HDD0001")
    assert hdd["identity"] == "wwn:0x5000c500a1b2c3d4" and hdd["wwn"] == "0x5000c500a1b2c3d4"
    assert hdd["transport"] == "scsi" and hdd["rotational"] is True
    assert hdd["size_bytes"] == 2 * 1024**3
    ssd = by_serial(data, "SSD0001")
    assert ssd["transport"] == "sata" and ssd["rotational"] is False
    assert ssd["identity"] == "serial:SSD0001" and ssd["model"] == "LabSSD"
    nvme = by_serial(data, "NVME0001")
    assert nvme["transport"] == "nvme" and nvme["rotational"] is False and nvme["identity"] == "serial:NVME0001"
    for dev in (hdd, ssd, nvme):
        assert dev["state"] == "free", dev["in_use_reason"]
        assert dev["in_use_reason"].startswith("free: no signature")
        assert dev["logical_sector_size"] == 512
    if mode == "scan-udev.json":
        assert hdd["stable_path"].startswith("/dev/disk/by-id/")
        assert ssd["stable_path"] == "/dev/disk/by-id/ata-LabSSD_SSD0001"
        assert nvme["stable_path"].startswith("/dev/disk/by-id/nvme-")
    else:
        # No udev, no links: identity still comes from sysfs, and the gap is said.
        for dev in (hdd, ssd, nvme):
            assert dev["stable_path"] is None
            assert any(u["fact"] == "by-id path" for u in dev["unreadable"])
        assert any("udev is not running" in note for note in data["notes"])


@pytest.mark.parametrize("mode", MODES)
def test_partitioned_disk_with_mounted_ext4(guest: GuestRun, mode: str) -> None:
    data = scan(guest, mode)
    disk = by_serial(data, "PART0001")
    assert disk["partition_table"] == "gpt" and len(disk["partitions"]) == 2
    assert disk["state"] == "in-use"
    p1 = by_name(data, disk["partitions"][0])
    p2 = by_name(data, disk["partitions"][1])
    assert p1["fs_type"] == "ext4" and p1["fs_label"] == "labdata"
    assert p1["mountpoints"] == ["/run/lab/mnt"]
    assert p1["state"] == "in-use" and "mounted at /run/lab/mnt" in p1["in_use_reason"]
    assert f"{p1['name']} is mounted at /run/lab/mnt" in disk["in_use_reason"]
    assert p1["identity"] == f"{disk['identity']}/part1" and p1["transport"] == "scsi"
    # part2 carries a plain device-mapper device.
    plain = next(d for d in data["devices"] if d["kind"] == "dm")
    assert plain["dm_name"] == "labplain" and plain["identity"] == "dm-uuid:CW-LABPLAIN"
    assert plain["stable_path"] == "/dev/mapper/labplain" and plain["slaves"] == [p2["name"]]
    assert p2["state"] == "in-use" and p2["in_use_reason"] == f"in use because held by {plain['name']} (labplain)"
    if mode == "scan-udev.json":
        assert p1["stable_path"].startswith("/dev/disk/by-id/") and p1["stable_path"].endswith("-part1")


@pytest.mark.parametrize("mode", MODES)
def test_lvm_pv_vg_lv(guest: GuestRun, mode: str) -> None:
    data = scan(guest, mode)
    pv = by_serial(data, "LVM0001")
    assert pv["fs_type"] == "LVM2_member"
    assert pv["lvm"]["role"] == "pv" and pv["lvm"]["vg"] == "labvg"
    assert pv["state"] == "in-use" and "LVM physical volume of VG labvg" in pv["in_use_reason"]
    lv = next(d for d in data["devices"] if d["kind"] == "lvm")
    assert lv["lvm"] == {"role": "lv", "vg": "labvg", "lv": "data", "segtype": "linear", "uuid": lv["lvm"]["uuid"],
                         "pool": None, "attr": lv["lvm"]["attr"]}
    assert lv["lvm"]["attr"].startswith("-wi-a"), "lvs lv_attr: a linear LV, active, no snapshots"
    assert lv["stable_path"] == "/dev/labvg/data"
    assert lv["identity"].startswith("dm-uuid:LVM-")
    assert lv["slaves"] == [pv["name"]] and lv["name"] in pv["holders"]
    assert lv["size_bytes"] == 256 * 1024**2


@pytest.mark.parametrize("mode", MODES)
def test_bcache_backing_and_cache(guest: GuestRun, mode: str) -> None:
    data = scan(guest, mode)
    backing = by_serial(data, "BCB0001")
    cache = by_serial(data, "BCC0001")
    bdev = next(d for d in data["devices"] if d["kind"] == "bcache")
    super_show = guest.read("bcache-super-show.txt")
    cset = cache["bcache"]["cache_set_uuid"]
    assert f"cset.uuid\t\t{cset}" in super_show
    assert backing["bcache"]["role"] == "backing" and backing["bcache"]["cache_set_uuid"] == cset
    assert backing["bcache"]["state"] == "clean" and backing["bcache"]["cache_mode"] == "writethrough"
    assert backing["bcache"]["bcache_device"] == bdev["name"]
    assert cache["bcache"]["role"] == "cache"
    assert f"bcache backing device of {bdev['name']}" in backing["in_use_reason"]
    assert f"bcache cache device of set {cset}" in cache["in_use_reason"]
    dev_uuid = backing["bcache"]["dev_uuid"]
    assert f"dev.uuid\t\t{dev_uuid}" in super_show
    assert bdev["identity"] == f"bcache:{dev_uuid}"
    # bcacheN is built on both: the kernel lists backing and cache devices as its slaves.
    assert sorted(bdev["slaves"]) == sorted([backing["name"], cache["name"]])
    assert bdev["bcache"]["backing_device"] == backing["name"]
    if mode == "scan-udev.json":
        assert bdev["stable_path"] == f"/dev/bcache/by-uuid/{dev_uuid}"


@pytest.mark.parametrize("mode", MODES)
def test_loop_devices_only_with_all(guest: GuestRun, mode: str) -> None:
    loopdev = guest.read("loopdev.txt").strip().rsplit("/", 1)[-1]
    default = scan(guest, mode)
    assert all(d["kind"] != "loop" for d in default["devices"])
    everything = scan(guest, mode.replace(".json", "-all.json"))
    loop = by_name(everything, loopdev)
    assert loop["kind"] == "loop" and loop["hidden"] is True
    assert loop["identity"] == "loop-file:/run/lab/loop.img"


def test_non_root_scan_says_what_it_could_not_read(guest: GuestRun) -> None:
    data = scan(guest, "scan-nonroot.json")
    assert data["root"] is False
    assert by_serial(data, "HDD0001")["identity"] == "wwn:0x5000c500a1b2c3d4"
    assert any("Not running as root" in n for n in data["notes"])
    assert any("pvs and lvs need root" in n for n in data["notes"])
    # udev ran by then, so the PV's VG still shows; the LV's name comes from device-mapper.
    assert by_serial(data, "LVM0001")["lvm"]["vg"] == "labvg"


@pytest.mark.parametrize("mode", ["hotplug-noudev.json", "hotplug-udev.json"])
def test_hotplug_shows_within_two_seconds(guest: GuestRun, mode: str) -> None:
    # Medians of three remove/add cycles (each value is in removed_all / added_all).
    result = json.loads(guest.read(mode))
    print(mode, result)
    assert result["initial_seconds"] is not None
    assert result["removed_seconds"] is not None and result["removed_seconds"] <= 2.0
    assert result["added_seconds"] is not None and result["added_seconds"] <= 2.0
