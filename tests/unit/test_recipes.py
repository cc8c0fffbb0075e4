"""Recipes build plans from the lab's real discovery snapshot (tests/fixtures/lab-scan) and
never run anything; plan files round-trip, and damaged or newer ones are refused."""

from __future__ import annotations

import json

import pytest

from advisor.collect import RawSystem
from advisor.devices import Inventory
from advisor.discovery import build_inventory
from recipes.lvmcache import CacheSpec, RecipeError, lvmcache_attach, lvmcache_uncache
from recipes.plan import PLAN_SCHEMA, Plan, PlanError
from tests.conftest import FIXTURES

MiB, GiB = 1 << 20, 1 << 30
NVME = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))


def test_attach_plan_has_the_exact_lvm_commands_in_order(inv: Inventory) -> None:
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(512 * MiB))
    assert [s.id for s in plan.steps] == ["pvcreate", "vgextend", "lvcreate-data", "lvcreate-meta", "cache-pool", "attach"]
    assert plan.steps[0].argv == ("pvcreate", "--yes", NVME)
    assert plan.steps[2].argv == ("lvcreate", "--yes", "--wipesignatures", "y", "-n", "data_cache", "-L", "524288k",
                                  "labvg", NVME)
    assert plan.steps[3].argv[-3:] == ("8192k", "labvg", NVME)  # lvm2's metadata rule: 8 MiB
    assert "--chunksize" in plan.steps[4].argv and "64k" in plan.steps[4].argv
    assert plan.steps[5].argv == ("lvconvert", "--yes", "--type", "cache", "--cachepool", "labvg/data_cache",
                                  "labvg/data")
    assert all(s.post for s in plan.steps), "every step can be checked afterwards"
    assert all(s.undo for s in plan.steps), "every step can be undone"
    assert plan.destroys == ()
    assert {d.role for d in plan.devices} == {"origin", "ssd"}
    assert all(d.identity and d.size_bytes for d in plan.devices)
    assert plan.space["ssd_bytes_used"] == 512 * MiB + 2 * 8 * MiB + MiB


def test_plan_json_round_trips(inv: Inventory) -> None:
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 * MiB, mode="writeback"))
    again = Plan.loads(plan.dumps())
    assert again == plan
    assert json.loads(plan.dumps())["schema"] == PLAN_SCHEMA


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not valid JSON"),
    ('{"steps": []}', "not a cachewise plan"),
    ('{"schema": "cachewise.plan/9", "steps": []}', "newer than this cachewise understands"),
    ('{"schema": "cachewise.plan/1", "kind": "x"}', "incomplete or damaged"),
])
def test_damaged_or_newer_plans_are_refused(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        Plan.loads(text)


def test_unknown_check_in_a_plan_is_refused(inv: Inventory) -> None:
    data = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 * MiB)).to_json()
    data["steps"][0]["post"][0]["kind"] = "rm_rf"
    with pytest.raises(PlanError, match="unknown check"):
        Plan.from_json(data)


@pytest.mark.parametrize(("lv", "ssd", "spec", "kw", "message"), [
    ("labvg/nope", "nvme0n1", CacheSpec(GiB), {}, "is not a logical volume"),
    ("labvg/da;ta", "nvme0n1", CacheSpec(GiB), {}, "is not a logical volume"),
    ("labvg/data", "/dev/nonexistent", CacheSpec(GiB), {}, "is not a block device"),
    ("labvg/data", "sdb", CacheSpec(GiB), {}, "is the slow device itself"),
    ("labvg/data", "sdc", CacheSpec(GiB), {}, "has a partition in use"),
    ("labvg/data", "sdc1", CacheSpec(GiB), {"allow_partition": True}, "is mounted"),
    ("labvg/data", "sdc2", CacheSpec(GiB), {}, "is a partition, and a whole disk is expected"),
    ("labvg/data", "nvme0n1", CacheSpec(5 * GiB), {}, "is too small"),
    ("labvg/data", "nvme0n1", CacheSpec(GiB, mode="writearound"), {}, "is not writethrough or writeback"),
    ("labvg/data", "nvme0n1", CacheSpec(GiB, chunk_bytes=48 * 1024), {}, "not a multiple of 32 KiB"),
])
def test_bad_inputs_are_refused_with_a_sentence(inv: Inventory, lv: str, ssd: str, spec: CacheSpec,
                                                kw: dict[str, bool], message: str) -> None:
    with pytest.raises(RecipeError, match=message) as err:
        lvmcache_attach(inv, lv, ssd, spec, **kw)
    assert "Nothing was changed." in str(err.value)


def test_uncache_refuses_an_lv_that_is_not_cached(inv: Inventory) -> None:
    with pytest.raises(RecipeError, match="is not cached"):
        lvmcache_uncache(inv, "labvg/data")


def test_mode_change_plan_switches_with_lvchange_and_shows_the_flush(inv: Inventory) -> None:
    import dataclasses

    from recipes.lvmcache import lvmcache_mode

    lv = next(d for d in inv.devices if d.lvm is not None and d.lvm.lv == "data")
    cached = dataclasses.replace(lv, lvm=dataclasses.replace(lv.lvm, segtype="cache"))
    inv2 = dataclasses.replace(inv, devices=tuple(cached if d is lv else d for d in inv.devices))
    plan = lvmcache_mode(inv2, "labvg/data", "writethrough")
    (step,) = plan.steps
    assert step.argv == ("lvchange", "--yes", "--cachemode", "writethrough", "labvg/data")
    assert step.progress == "cache_dirty" and step.post[0].kind == "cache_mode"
    assert lvmcache_mode(inv2, "labvg/data", "writeback").steps[0].progress == ""
    with pytest.raises(RecipeError, match="is not cached"):
        lvmcache_mode(inv, "labvg/data", "writeback")


def test_new_cached_lv_on_empty_disks(inv: Inventory) -> None:
    from recipes.lvmcache import lvmcache_new

    plan = lvmcache_new(inv, "sda", "nvme0n1", "fastvg", "data", CacheSpec(256 << 20))
    assert [s.id for s in plan.steps] == ["pvcreate-1", "pvcreate-2", "vgcreate", "vgextend", "lvcreate-origin",
                                          "lvcreate-data", "lvcreate-meta", "cache-pool", "attach"]
    assert plan.steps[2].argv == ("vgcreate", "fastvg", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4")
    assert plan.steps[-1].argv[-1] == "fastvg/data"
    with pytest.raises(RecipeError, match="already exists"):
        lvmcache_new(inv, "sda", "nvme0n1", "labvg", "data", CacheSpec(256 << 20))
    with pytest.raises(RecipeError, match="has a partition in use"):
        lvmcache_new(inv, "sdc", "nvme0n1", "newvg", "data", CacheSpec(256 << 20))
    with pytest.raises(RecipeError, match=r"holds data \(LVM2_member\)"):
        lvmcache_new(inv, "sdb", "nvme0n1", "newvg", "data", CacheSpec(256 << 20))
