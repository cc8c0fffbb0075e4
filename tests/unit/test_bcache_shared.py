"""One SSD caching several disks with bcache (issue 31): `bcache-join` adds an empty disk to the
cache set that runs already, and a detach of one of them leaves the set running for the others
(stopping it would stop their bcache devices too). Built from the lab's real discovery snapshot
(tests/fixtures/lab-scan: bcache0 on BCB0001 with the cache set on BCC0001); nothing runs."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.devices import BcacheInfo, Inventory
from advisor.disks.discovery import build_inventory
from advisor.plan import language
from advisor.plan.feasible import barriers
from recipes.bcache import bcache_create, bcache_detach, bcache_join
from recipes.common import RecipeError
from recipes.registry import makes_cache
from tests.conftest import FIXTURES

CSET = "92d9f462-55cf-4982-b1c4-ecef2705350f"
HDD = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"


@pytest.fixture(scope="module")
def lab() -> Inventory:
    return build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))


@pytest.fixture(scope="module")
def shared(lab: Inventory) -> Inventory:
    """The same machine once sda has joined the set (bcache1 on it), as discovery would see it."""
    sdd = next(d for d in lab.devices if d.name == "sdd")
    assert sdd.bcache is not None
    second = dataclasses.replace(
        next(d for d in lab.devices if d.name == "sda"),
        fs_type="bcache",
        holders=("bcache1",),
        bcache=dataclasses.replace(sdd.bcache, dev_uuid="5d6f0e36-0f0e-4bd4-8a51-0a4b1f0f7a21", bcache_device="bcache1"),
    )
    return dataclasses.replace(lab, devices=tuple(second if d.name == "sda" else d for d in lab.devices))


@pytest.mark.parametrize("via", ["/dev/sde", "bcache0", "/dev/sdd"])
def test_a_disk_joins_the_running_cache_set_named_by_any_of_its_parts(lab: Inventory, via: str) -> None:
    plan = bcache_join(lab, "/dev/sda", via, mode="writeback", writeback_percent=20)
    plan.check()
    assert [s.id for s in plan.steps] == ["make-bcache", "register-backing", "attach", "cache-mode",
                                         "sequential-cutoff", "writeback-percent", "tunables-file"]
    assert plan.steps[0].argv == ("make-bcache", "--writeback", "-B", HDD)  # the backing device alone
    assert plan.steps[2].write == ("{backing}/bcache/attach", CSET)
    assert [c.describe() for c in plan.steps[2].pre] == [f"/sys/fs/bcache/{CSET} exists"]
    assert plan.steps[-1].write == ("/etc/cachewise/bcache/{backing-uuid}.conf",
                                    "sequential_cutoff=4194304 writeback_percent=20")
    # it destroys the new disk's contents and nothing of the set's devices
    assert {n for s in plan.steps for n in language.destroys(s)} == {HDD}
    assert [d.role for d in plan.devices] == ["backing"] and barriers(plan, lab) == []
    assert makes_cache(plan.kind)
    assert "caching /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_BCB0001 and " + HDD in plan.layout_after[1]


@pytest.mark.parametrize(("backing", "via", "message"), [
    ("/dev/sda", "/dev/sdg", "not part of a running bcache cache set"),
    ("/dev/sdd", "/dev/sde", "attached to the cache set .* already"),
    ("/dev/sdc", "/dev/sde", "partition in use"),
    ("/dev/sdb", "/dev/sde", "in use"),
    ("/dev/nope", "/dev/sde", "not a block device"),
])
def test_joins_that_cannot_be_planned_are_refused_in_a_sentence(lab: Inventory, backing: str, via: str,
                                                                 message: str) -> None:
    with pytest.raises(RecipeError, match=message) as err:
        bcache_join(lab, backing, via)
    assert "Nothing was changed" in str(err.value)


def test_create_on_the_cache_device_of_a_running_set_points_to_the_join(lab: Inventory) -> None:
    with pytest.raises(RecipeError, match="bcache-join instead"):
        bcache_create(lab, "/dev/sda", "/dev/sde")


def test_a_detach_leaves_a_shared_cache_set_running_for_the_others(shared: Inventory) -> None:
    plan = bcache_detach(shared, "bcache0")
    plan.check()
    assert "stop-cache-set" not in [s.id for s in plan.steps]
    assert not any(s.write and s.write[0].startswith("/sys/fs/bcache/") for s in plan.steps)
    assert any(f"The cache set stays for {HDD}: stopping it would stop their bcache devices too." == n
               for n in plan.notes)
    with pytest.raises(RecipeError, match=f"the cache set {CSET} also caches {HDD}, so its cache device is not wiped"):
        bcache_detach(shared, "bcache0", wipe_cache=True)


def test_the_last_detach_stops_the_set_and_may_wipe_it(lab: Inventory, shared: Inventory) -> None:
    alone = bcache_detach(lab, "bcache0", wipe_cache=True)
    assert [s.id for s in alone.steps][-2:] == ["stop-cache-set", "wipe-cache"]
    # a backing device of the set that is detached already does not hold the set
    gone = dataclasses.replace(shared, devices=tuple(
        dataclasses.replace(d, bcache=BcacheInfo("backing", CSET, "x", "no cache")) if d.name == "sda" else d
        for d in shared.devices))
    assert "stop-cache-set" in [s.id for s in bcache_detach(gone, "bcache0").steps]


def test_the_shared_set_the_lab_made_keeps_running_when_one_disk_leaves() -> None:
    """The lab's own capture of two disks on one cache set (tests/fixtures/lab-shared)."""
    inv = build_inventory(RawSystem.load(FIXTURES / "lab-shared" / "raw-shared.json"))
    first = bcache_detach(inv, "bcache0")
    assert "stop-cache-set" not in [s.id for s in first.steps]
    assert any("SHHDD02" in n for n in first.notes)
    with pytest.raises(RecipeError, match="also caches .*SHHDD01, so its cache device is not wiped"):
        bcache_detach(inv, "bcache1", wipe_cache=True)
