"""A cache for the long run (issue 29): every cache kind cachewise offers survives a power cut
with dirty data. One two-boot scenario: boot 1 (powercut.sh) makes lvmcache writethrough and
writeback, a mirrored writeback pool, dm-writecache and bcache writethrough and writeback through
`cachewise plan` / `apply`, writes and fsyncs files through each, keeps blocks dirty, and cuts
the power without a sync; boot 2 (powercut_after.sh) comes back on the same disk images as a
system does (udev, then `vgchange -ay`) and checks every cache, file and tunable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.vm.lab import GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario(
    "powercut",
    "powercut.sh",
    (
        LabDisk("pchdd", "PCHDD01", "1G", rotation_rate=7200, iops_limit=150),
        LabDisk("pcssd1", "PCSSD01", "512M", rotation_rate=1),
        LabDisk("pcssd2", "PCSSD02", "256M", rotation_rate=1),
        LabDisk("bwth", "PCBWTH", "256M", rotation_rate=7200),
        LabDisk("bwts", "PCBWTS", "384M", rotation_rate=1),
        LabDisk("bwbh", "PCBWBH", "256M", rotation_rate=7200),
        LabDisk("bwbs", "PCBWBS", "384M", rotation_rate=1),
    ),
    timeout=1500,
    expected_s=420,
    paired=True,
    reboots=("powercut_after.sh",),
)
LVS = ("wt", "wb", "mir", "wc")
BCACHES = ("bwt", "bwb")


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def lvs(run: GuestRun, name: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(run.read(name))["report"][0]["lv"]
    return {r["lv_name"]: r for r in rows}


def test_the_power_was_cut_with_dirty_blocks_in_every_writeback_cache(guest: GuestRun) -> None:
    assert (guest.out / "cut-1").exists(), "boot 1 ended in the power cut"
    dirty = dict(line.split(maxsplit=1) for line in guest.read("dirty-before-cut.txt").splitlines())
    print(dirty)
    assert set(dirty) == {"wb", "mir", "wc", "bwb"}
    for name, value in dirty.items():
        number = float(value.rstrip("kKMG"))
        assert number > 0, f"{name} held no dirty data when the power was cut: {value}"
    before = lvs(guest, "before-lvs.json")
    assert [before[n]["segtype"] for n in LVS] == ["cache", "cache", "cache", "writecache"]
    assert before["wt"]["cache_mode"] == "writethrough" and before["wb"]["cache_mode"] == "writeback"
    assert before["mir"]["cache_mode"] == "writeback"


def test_every_cache_is_back_after_the_reboot(guest: GuestRun) -> None:
    assert guest.read("after-vgchange.txt").strip().endswith("rc 0"), guest.read("after-vgchange.txt")
    after = lvs(guest, "after-lvs.json")
    print({n: (after[n]["segtype"], after[n]["lv_attr"], after[n]["lv_health_status"]) for n in LVS})
    assert [after[n]["segtype"] for n in LVS] == ["cache", "cache", "cache", "writecache"]
    for name in LVS:
        assert after[name]["lv_attr"][4] == "a", f"pc/{name} is not active after the reboot: {after[name]['lv_attr']}"
    for name in BCACHES:
        device = guest.read(f"after-{name}-device.txt").strip()
        assert device.startswith("/dev/bcache"), f"the {name} file system was not found by its UUID after the reboot"
        state = guest.read(f"{name}-state-after.txt").strip()
        assert state in ("clean", "dirty"), f"{name} came back without its cache: {state}"


def test_every_fsynced_file_is_unchanged(guest: GuestRun) -> None:
    for name in (*LVS, *BCACHES):
        result = guest.read(f"after-{name}-sums.txt")
        files = len(guest.read(f"{name}.sums").splitlines())
        assert files == (6 if name in LVS else 3), f"{name}: {files} files recorded"  # bcache: made empty
        assert result.strip().endswith("ok"), f"{name} after the power cut:\n{result}"


def test_bcache_tunables_are_as_set_after_the_reboot(guest: GuestRun) -> None:
    for name in BCACHES:
        before = guest.read(f"{name}-tunables-before.txt")
        after = guest.read(f"{name}-tunables-after.txt")
        print(name, before, after, sep="\n")
        assert "sequential_cutoff 8.0M" in before and "writeback_percent 40" in before
        assert after == before, f"{name}'s tunables after the reboot differ from those the plan set"
    files = guest.read("after-tunables-files.txt")
    assert files.count("sequential_cutoff=8388608") == 2 and files.count("writeback_percent=40") == 2, files
    assert json.loads(guest.read("after-status.json"))["tunables"] == [], "status sees no drift"


def test_status_and_scan_describe_every_cache_after_the_reboot(guest: GuestRun) -> None:
    status = guest.read("after-status.txt")
    print(status)
    for name in LVS:
        assert f"pc/{name}" in status
    data = json.loads(guest.read("after-status.json"))
    names = [c["name"] for c in data["caches"]]
    assert len(names) == len(set(names)) == len(LVS) + len(BCACHES), f"each cache once: {names}"
    text = json.dumps(data)
    for name in LVS:
        assert f'"pc/{name}"' in text or f'"lv": "{name}"' in text
    for name in BCACHES:
        bdev = guest.read(f"after-{name}-device.txt").strip().removeprefix("/dev/")
        assert bdev in text, f"status --json does not name {bdev}"
    scan = json.loads(guest.read("after-scan.json"))
    removable = [d["caching"]["kind"] for d in scan["devices"] if d.get("caching") and d["caching"].get("remove")]
    print(sorted(removable))
    assert removable.count("lvmcache") == 3 and removable.count("dm-writecache") == 1, removable
    assert removable.count("bcache") >= 2, removable


def findings(run: GuestRun, name: str) -> list[dict[str, Any]]:
    data = json.loads(run.read(name))
    assert data["schema"] == "cachewise.doctor/1"
    return list(data["findings"])


def test_doctor_names_a_flush_that_does_not_progress(guest: GuestRun) -> None:
    found = findings(guest, "stuck-doctor.json")
    for f in found:
        print(f["severity"], f["subject"], f["what"], "Cause:", f["cause"], "Fix:", (f["fix"] or {}).get("how"))
    stuck = {f["subject"] for f in found if f["code"] == "dirty-stuck"}
    # bcache's writeback was switched off (writeback_running 0): its dirty data cannot go down
    assert any(s.startswith("bcache") for s in stuck), stuck
    for f in found:
        if f["code"] == "dirty-stuck":
            assert f["cause"] and f["fix"] and f["fix"]["how"], f
    assert int(guest.read("stuck-doctor.rc")) in (1, 2)


def test_doctor_finds_nothing_wrong_with_the_caches_after_the_reboot(guest: GuestRun) -> None:
    found = findings(guest, "after-doctor.json")
    print(guest.read("after-doctor.txt"))
    serious = [f for f in found if f["severity"] in ("warning", "critical")]
    assert not serious, serious
    assert guest.read("after-doctor.rc").strip() == "0"


def test_doctor_names_a_cache_lvm2_could_not_activate_at_the_next_boot(guest: GuestRun) -> None:
    assert "cache_check_gone" in guest.read("bad-lvmconf.txt"), guest.read("bad-lvmconf.txt")
    found = findings(guest, "bad-doctor.json")
    print(guest.read("bad-doctor.txt"))
    boot = [f for f in found if f["code"] == "boot-check-missing"]
    assert boot, [f["code"] for f in found]
    assert "/usr/sbin/cache_check_gone" in boot[0]["what"] and boot[0]["fix"]["how"]
    assert boot[0]["severity"] == "critical" and guest.read("bad-doctor.rc").strip() == "2"
