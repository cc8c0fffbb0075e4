"""`cachewise recommend` in a real guest: a recommendation for the lab's HDD and SSD from a
trace captured there, and real lvm2 accepting the recommended lvmcache configuration
(attached for real to a mounted ext4 LV, data read back unchanged)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from advisor.advice.lvmrules import lvm_chunk_size, lvm_metadata_size
from tests.vm.lab import HDD, NVME, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario("recommend", "recommend.sh", (
    LabDisk(HDD.name, HDD.serial, "3G", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "1G", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    LabDisk(NVME.name, NVME.serial, "256M", NVME.bus)), timeout=1200, expected_s=270, paired=True)  # NVMe: smartctl's output


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def lvs(run: GuestRun, name: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(run.read(name))["report"][0]["lv"]
    return {r["lv_name"]: r for r in rows}


def kib(text: str) -> int:
    return int(round(float(text.rstrip("kK")) * 1024))


def test_recommendation_from_the_lab_trace(guest: GuestRun) -> None:
    rec = json.loads(guest.read("rec.json"))
    print(guest.read("rec.txt"))
    assert rec["schema"] == "cachewise.recommend/1"
    assert rec["curve"]["source"] == "trace"
    assert rec["inputs"]["device_classes"] == {
        "/dev/labvg/data": "hdd (probe)", rec["inputs"]["fast"][0]: "ssd (probe)"}
    # The data is on LVM with ext4 on a single SSD: lvmcache writethrough, in place.
    assert rec["verdict"] == "cache"
    cfg = rec["config"]
    assert (cfg["backend"], cfg["mode"], cfg["policy"]) == ("lvmcache", "writethrough", "smq")
    assert cfg["fast_space_bytes"] <= 1 << 30
    assert 0 < cfg["predicted_hit_ratio"] <= 1
    assert {"T-LVM-2", "T-SIZE-1", "M-META-1", "L-SIZE-4"} <= set(rec["findings"])
    declared = guest.read("rec.txt")  # --workload database, as text
    assert "Why" in declared and "modelled as database (random I/O)" in declared and "T-LVM-1" in declared


def test_lvm2_accepts_the_recommended_configuration(guest: GuestRun) -> None:
    cfg = json.loads(guest.read("rec.json"))["config"]
    after = lvs(guest, "lvs-after.json")
    print(after)
    assert after["data"]["segtype"] == "cache"
    assert after["data"]["cache_mode"] == cfg["mode"] and after["data"]["cache_policy"] == cfg["policy"]
    assert kib(after["data"]["chunk_size"]) == cfg["chunk_size_bytes"]
    pool = after["[cwcache_cpool]"] if "[cwcache_cpool]" in after else after["[cwcache]"]
    assert kib(pool["lv_size"]) == cfg["size_bytes"]
    assert kib(pool["lv_metadata_size"]) == cfg["metadata_size_bytes"]
    assert " cache " in guest.read("dm-status.txt")
    assert guest.read("sha-before.txt").split()[0] == guest.read("sha-after.txt").split()[0]


def test_our_chunk_and_metadata_rules_match_lvm2s_own_choice(guest: GuestRun) -> None:
    default = lvs(guest, "lvm-default.json")["cwdefault"]
    size = kib(default["lv_size"])
    print(default)
    assert kib(default["chunk_size"]) == lvm_chunk_size(size)
    assert kib(default["lv_metadata_size"]) == lvm_metadata_size(size, lvm_chunk_size(size))


def test_bad_inputs_say_nothing_changed(guest: GuestRun) -> None:
    assert "/dev/nonexistent is not a block device on this machine" in guest.read("bad-missing.err")
    assert "the same device is named twice" in guest.read("bad-twice.err")
    assert "--workload TYPE" in guest.read("bad-noworkload.err")
    for name in ("bad-missing.err", "bad-twice.err", "bad-noworkload.err"):
        assert "Nothing was changed." in guest.read(name)


def test_the_safety_gate_refuses_zfs_and_bcachefs_members_on_the_real_machine(guest: GuestRun) -> None:
    """Issue 26: discovery's facts reach the recommendation and the plan: a ZFS pool member gets
    "don't cache" with L2ARC named, and a bcachefs member (which the guest's blkid does not know)
    is refused as the SSD whatever --wipe allows, its bytes untouched."""
    print(guest.read("rec-zfs.err"), guest.read("plan-bcachefs.err"))
    rec = json.loads(guest.read("rec-zfs.json"))
    assert (rec["verdict"], rec["cause"], rec["config"]) == ("dont-cache", "gate", None)
    assert "L2ARC" in rec["summary"] and "owned-by-other-system" in {g["code"] for g in rec["gate"]}
    assert not [o for o in rec["runner_ups"] if o["config"]], "nothing offered"
    err = guest.read("plan-bcachefs.err")
    assert err.strip().endswith("rc 1") and "bcachefs member" in err and "Nothing was changed." in err
    assert guest.read("bcachefs-before.txt").split()[0] == guest.read("bcachefs-after.txt").split()[0]
