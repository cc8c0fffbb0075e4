"""One SSD caching two disks with bcache, against the real kernel (issue 31): `bcache-join` adds a
second disk to the cache set `bcache-create` made; a detach of the first that would wipe the SSD is
refused; the detach without it writes the first's dirty data back and leaves the set running for
the second; the last detach stops the set and wipes the SSD; every checksum of both disks reads
back the same (tests/vm/guest/shared.sh). About 5 minutes on one vCPU: the soak run only
(`CACHEWISE_SOAK=1`)."""

from __future__ import annotations

import json

import pytest

from tests.vm.lab import GuestRun, LabDisk, LabPool, Scenario, soak

if not soak():
    pytest.skip("the soak run only (CACHEWISE_SOAK=1)", allow_module_level=True)

SCENARIO = Scenario("shared", "shared.sh", (
    LabDisk("h1", "SHHDD01", "384M", "scsi", rotation_rate=7200, iops_limit=150),
    LabDisk("h2", "SHHDD02", "256M", "scsi", rotation_rate=7200, iops_limit=150),
    # bcache's cache must have more than 512 buckets of 512 KiB (recipes/bcache.py)
    LabDisk("ssd", "SHSSD01", "320M", "sata", rotation_rate=1)), timeout=1800, expected_s=330, paired=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    print(run.read("timeline.txt") if (run.out / "timeline.txt").exists() else run.log_tail())
    assert run.returncode == 0, run.log_tail()
    return run


def test_the_second_disk_joins_the_same_cache_set_with_its_own_tunables(guest: GuestRun) -> None:
    print(guest.read("join-preview.txt"))
    first, second = guest.read("csets.txt").split()
    assert first == second, "both bcache devices are attached to one cache set"
    states = guest.read("shared-state.txt").splitlines()
    assert len(states) == 2 and all("[writeback]" in line for line in states), states
    assert len(guest.read("tunables-files.txt").split()) == 2, "each backing device has its tunables file"
    shared = [d for d in json.loads(guest.read("scan-shared.json"))["devices"] if (d.get("bcache") or {}).get("role") == "backing"]
    assert len(shared) == 2 and len({d["bcache"]["cache_set_uuid"] for d in shared}) == 1


def test_a_detach_leaves_the_set_to_the_other_disk_and_loses_nothing(guest: GuestRun) -> None:
    refused = guest.read("refused.txt")
    print(refused, guest.read("detach-1-preview.txt"), guest.read("detach-1.txt"))
    assert refused.strip().splitlines()[-1] != "rc 0" and "also caches" in refused and "Nothing was changed" in refused
    assert "Traceback" not in refused
    after = guest.read("after-detach-1.txt").split("\n")
    assert after[0] == "no cache", "the first disk is detached"
    assert "set running" in after and "second cached" in after and "written" in after
    assert guest.read("verify-1a.txt").strip().endswith("ok") and guest.read("verify-2a.txt").strip().endswith("ok")


def test_the_last_detach_stops_the_set_and_frees_the_ssd(guest: GuestRun) -> None:
    print(guest.read("detach-2.txt"))
    after = guest.read("after-detach-2.txt").splitlines()
    assert after == ["set gone", "ssd blank"], after
    for name in ("verify-1b", "verify-2b"):
        assert guest.read(f"{name}.txt").strip().endswith("ok"), guest.read(f"{name}.txt")
