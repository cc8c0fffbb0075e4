"""One boot, two must-shows of apply/undo against the real kernel and tools:
the lvmcache attach as an Ansible playbook applied with ansible-playbook against localhost
(twice; the second run changes nothing), and bcache writeback on empty disks created, written,
detached safely while dirty data exists, and stopped, with every checksum kept."""

from __future__ import annotations

import json
import re

import pytest

from tests.vm.lab import HDD, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario, soak

SCENARIO = Scenario("bcache-ansible", "apply_bcache_ansible.sh", (
    LabDisk(HDD.name, HDD.serial, "384M", HDD.bus, HDD.rotation_rate, None, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    # bcache's cache must have more than 512 buckets of 512 KiB (recipes/bcache.py).
    # An HDD's 150 IOPS and 2 MiB/s, so the write-back of dirty data takes long enough to
    # watch: bcache's writeback merges adjacent dirty extents into large writes, and with the
    # IOPS limit alone 23 MiB went back to the disk in under 5 s, before the first poll.
    LabDisk("bhdd", "BHDD0001", "384M", "scsi", rotation_rate=7200, iops_limit=150, bps_limit=2 * 1024 * 1024),
    LabDisk("bssd", "BSSD0001", "320M", "sata", rotation_rate=1)), timeout=3600 if soak() else 1800, expected_s=290,
    paired=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    print((run.out / "timeline.txt").read_text() if (run.out / "timeline.txt").exists() else "")
    return run


def recap(text: str) -> dict[str, int]:
    line = next(line for line in text.splitlines() if line.startswith("localhost") and "ok=" in line)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


@pytest.mark.soak
def test_the_ansible_playbook_applies_the_same_attach_and_is_idempotent(guest: GuestRun) -> None:
    if not soak():
        pytest.skip("ansible-playbook runs twice in the soak run: CACHEWISE_SOAK=1 pytest -m lab tests/lab "
                    "(the unit tier runs it against lvm stubs)")
    first, second = guest.read("ansible-1.txt"), guest.read("ansible-2.txt")
    print(first[-2500:], second[-800:])
    assert first.strip().endswith("rc 0") and second.strip().endswith("rc 0")
    plan_steps = len(re.findall(r"^TASK \[step \d+: ", first, re.M))
    assert plan_steps == 6 and recap(first)["changed"] == 6 and recap(first)["failed"] == 0, "the six steps ran"
    assert recap(second)["changed"] == 0 and recap(second)["failed"] == 0, "a second run changes nothing"
    rows = {r["lv_name"]: r for r in json.loads(guest.read("ansible-lvs.json"))["report"][0]["lv"]}
    assert rows["data"]["segtype"] == "cache" and rows["data"]["cache_mode"] == "writethrough"
    assert guest.read("an-verify.txt").strip().endswith("ok"), "every file's sha256 after a fio run and remount"


def lv_row(run: GuestRun, name: str) -> dict[str, str]:
    return json.loads(run.read(name))["report"][0]["lv"][0]


def test_mode_change_to_writeback_and_back_with_dirty_blocks(guest: GuestRun) -> None:
    to_wt = guest.read("mode-wt.txt")
    samples = [int(s) for s in guest.read("mode-dirty-samples.txt").split()]
    print(guest.read("mode-wb.txt"), samples, to_wt)
    assert lv_row(guest, "mode-wb-lvs.json")["cache_mode"] == "writeback"
    assert max(samples) > 0, "dirty blocks existed when the switch back began"
    assert "(dirty blocks are written back first)" in to_wt and "done" in to_wt
    after = lv_row(guest, "mode-wt-lvs.json")
    assert after["cache_mode"] == "writethrough" and after["segtype"] == "cache"
    assert guest.read("an-verify.txt").strip().endswith("ok"), "the file written during the switch is intact"


def test_bcache_writeback_on_empty_disks_detaches_safely_with_dirty_data(guest: GuestRun) -> None:
    print(guest.read("bc-preview.txt"), guest.read("bc-apply.err"), guest.read("bc-detach.txt"))
    result = json.loads(guest.read("bc-apply.json"))
    assert result["outcome"] == "done" and result["bcache_device"].startswith("/dev/bcache/by-uuid/")
    settings = guest.read("bc-settings.txt").split("\n")
    assert "[writeback]" in settings[0] and settings[1].strip() == "4.0M" and settings[2].strip() == "10"
    dirty = guest.read("bc-dirty-before.txt").split()
    assert dirty[0] not in ("0", "0.0k") and dirty[2] not in ("0", "0.0k"), "the detach starts with dirty data"
    detach = guest.read("bc-detach.txt")
    shown = re.findall(r"([\d.]+[kMG]?) dirty data to write back", detach)
    assert shown and shown[0] not in ("0", "0.0k"), "the flush's progress is visible"
    assert guest.read("bc-state-after.txt").strip() == "no cache"
    assert "blkid rc 2" in guest.read("bc-cache-after.txt"), "--wipe-cache erased the cache's superblock"
    assert guest.read("bc-verify.txt").strip().endswith("ok")
    assert guest.read("bc-verify-raw.txt").strip().endswith("ok"), "the backing disk itself holds the data"
