"""Every cache the seeds name, against the real kernel (issue 16): dm-writecache attached to a
mounted XFS under writes and detached with the flush counted down; a mirrored (raid1) lvmcache
pool in writeback that loses an SSD without losing a byte; discovery of the cleaner policy,
dm-crypt over a cache, a bcache backing device without cache, ZFS and bcachefs signatures."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.lab.test_watch_lab import parse_cache_status
from tests.vm.lab import HDD, GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario("caches", "caches.sh", (
    LabDisk(HDD.name, HDD.serial, "1G", HDD.bus, HDD.rotation_rate, 150, HDD.wwn),
    LabDisk("ssd1", "SSD0001", "256M", rotation_rate=1), LabDisk("ssd2", "SSD0002", "256M", rotation_rate=1),
    LabDisk("ext", "EXT0001", "128M", rotation_rate=7200), LabDisk("sig", "SIG0001", "192M")),
    timeout=1800, expected_s=390, paired=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def lvs(run: GuestRun, name: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(run.read(name))["report"][0]["lv"]
    return {r["lv_name"].strip("[]"): r for r in rows}


def caching(run: GuestRun, scan: str, path: str) -> dict[str, Any] | None:
    devices = json.loads(run.read(scan))["devices"]
    for d in devices:
        if path in (d["devnode"], d["stable_path"], *d["links"]) or (d["lvm"] and f"/dev/{d['lvm']['vg']}/{d['lvm']['lv']}" == path):
            return d["caching"]
    raise AssertionError(f"{path} not in {scan}")


def verified(run: GuestRun, name: str) -> bool:
    return run.read(f"verify-{name}.txt").strip().endswith("ok")


def test_writecache_attaches_to_mounted_xfs_with_its_sector_size_and_detaches_with_a_countdown(guest: GuestRun) -> None:
    preview = guest.read("wc-preview.txt")
    print(preview)
    assert "block_size=512" in preview and "xfs uses 512-byte sectors" in preview
    row = lvs(guest, "wc-lvs.json")["data"]
    assert row["segtype"] == "writecache" and row["writecache_block_size"] == "512"
    assert "high_watermark=80" in row["cache_settings"]
    during = guest.read("wc-status-under-writes.txt").split()
    assert int(during[4]) > int(during[5]), "the writer's blocks went through the writecache as soon as it was attached"
    assert verified(guest, "wc-attached")
    status = guest.read("wc-status-dirty.txt").split()
    total, free = int(status[4]), int(status[5])
    print(f"writecache blocks in use before the detach: {total - free} of {total}")
    assert total - free > 0, "the writer left blocks in the writecache"
    wc = caching(guest, "scan-writecache.json", "/dev/labvg/data")
    assert wc is not None and wc["kind"] == "dm-writecache" and wc["remove"] == "writecache-detach"
    log = guest.read("wcd-apply.txt")
    print(log)
    left = [int(m.replace(",", "")) for m in re.findall(r"… ([\d,]+) dirty blocks to write back", log)]
    assert left and left[0] > 0, "the flush's progress was shown"
    assert left == sorted(left, reverse=True), f"dirty blocks counted down: {left}"
    assert lvs(guest, "wcd-lvs.json")["data"]["segtype"] == "linear"
    pvs = {r["pv_name"]: r["vg_name"] for r in json.loads(guest.read("wcd-pvs.json"))["report"][0]["pv"]}
    assert sum(1 for vg in pvs.values() if vg == "labvg") == 1, "the SSD was released from the VG"
    assert verified(guest, "wc-detached")


def test_discovery_explains_each_cache_and_layer(guest: GuestRun) -> None:
    data = caching(guest, "scan-layers.json", "/dev/labvg/data")
    assert data is not None and data["kind"] == "lvmcache" and "cleaner" in data["state"]
    vault = caching(guest, "scan-layers.json", "/dev/mapper/vault")
    assert vault is not None and vault["kind"] == "dm-crypt" and "over a cache" in vault["state"]
    zfs_part = next(d for d in json.loads(guest.read("scan-layers.json"))["devices"] if d["fs_type"] == "zfs_member")
    assert zfs_part["caching"]["kind"] == "zfs" and "tank" in zfs_part["caching"]["part"]
    assert any(d["caching"] and d["caching"]["kind"] == "bcachefs" for d in json.loads(guest.read("scan-layers.json"))["devices"])
    backing = [d for d in json.loads(guest.read("scan-layers.json"))["devices"]
               if d["bcache"] and d["bcache"]["role"] == "backing"]
    assert backing and "detached" in backing[0]["caching"]["part"]


def test_remove_knows_each_cache_it_can_remove_and_refuses_the_others_with_the_reason(guest: GuestRun) -> None:
    assert json.loads(guest.read("remove-data.json"))["kind"] == "lvmcache-uncache"
    assert json.loads(guest.read("remove-cached-vault.json"))["kind"] == "lvmcache-uncache"
    for name, why in (("crypt", "over a cache"), ("bcache-backing", "detached"), ("zfs", "ZFS"), ("bcachefs", "bcachefs")):
        err = guest.read(f"remove-{name}.err")
        print(name, err)
        assert err.strip().splitlines()[-1] != "rc 0" and why in err and "Nothing was changed." in err and "Traceback" not in err
    assert "done" in guest.read("lc-remove.txt")
    assert verified(guest, "layers")


def test_a_writeback_cache_moves_to_another_ssd_with_dirty_blocks_and_the_old_ssd_leaves_blank(guest: GuestRun) -> None:
    """lvmcache-move (issue 31): the uncache writes the dirty blocks back, the new pool is attached on
    the second SSD, then the first leaves the VG and is blank; every file reads back the same."""
    print(guest.read("move-preview.txt"), guest.read("move-apply.txt"))
    before, after = (parse_cache_status(guest.read(f"move-{n}.txt").strip()) for n in ("before", "after"))
    assert before["dirty_bytes"] > 0, "the move ran with dirty blocks present"
    assert "done" in guest.read("move-apply.txt") and "rc " not in guest.read("move-apply.txt")
    rows = lvs(guest, "move-lvs.json")
    assert rows["data"]["segtype"] == "cache" and rows["data"]["cache_mode"] == "writeback"
    assert rows["data"]["pool_lv"].strip("[]").startswith("data_cache2")
    old, new = guest.read("move-ssds.txt").split()
    pool_devices = " ".join(r["devices"] for n, r in rows.items() if n.startswith("data_cache2"))
    assert new in pool_devices and old not in pool_devices, pool_devices
    pvs = json.loads(guest.read("move-pvs.json"))["report"][0]["pv"]
    assert len([p for p in pvs if p["vg_name"] == "labvg"]) == 2, pvs  # the HDD and the new SSD
    assert guest.read("move-old-ssd.txt").strip() == "blank", "the old SSD carries no LVM label"
    assert after["capacity_bytes"] == before["capacity_bytes"]  # the size it had
    assert verified(guest, "moved"), guest.read("verify-moved.txt")


def test_mirrored_writeback_pool_survives_an_ssd_failure_and_is_reported_degraded(guest: GuestRun) -> None:
    preview = guest.read("mirror-preview.txt")
    print(preview)
    assert "--type raid1 -m 1" in preview
    rows = lvs(guest, "mirror-lvs.json")
    assert rows["data"]["segtype"] == "cache" and rows["data"]["cache_mode"] == "writeback"
    assert sum(1 for r in rows.values() if r["segtype"] == "raid1") == 2, "data and metadata are raid1"
    healthy = caching(guest, "scan-mirror.json", "/dev/labvg/data")
    assert healthy is not None and not healthy["degraded"]
    assert verified(guest, "mirror-failed"), guest.read("verify-mirror-failed.txt")
    assert guest.read("write-after-failure.txt").strip() == "written"
    assert re.search(r"raid raid1 2 (AD|DA)", guest.read("mirror-status-failed.txt"))
    degraded = caching(guest, "scan-degraded.json", "/dev/labvg/data")
    print(degraded, guest.read("scan-degraded.txt"))
    assert degraded is not None and degraded["degraded"] and "degraded" in degraded["state"]
