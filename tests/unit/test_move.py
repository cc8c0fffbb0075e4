"""The lvmcache move onto another SSD (issue 31's lifecycle: replace a worn SSD), built from the
lab's real discovery snapshot (tests/fixtures/lab-caches: labvg/vault cached on SSD0001, which
also holds labvg/data's pool; SSD0002 blank); nothing runs."""

from __future__ import annotations

import dataclasses
import os

import pytest

from advisor.apply.state import LiveState, last_in_effect
from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.plan import language
from advisor.plan.feasible import barriers
from advisor.readers.lvm import Lv
from recipes.common import RecipeError
from recipes.lvmcache import lvmcache_move
from recipes.registry import makes_cache
from tests.conftest import FIXTURES

MiB = 1 << 20
SSD1 = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SSD0001"
SSD2 = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SSD0002"


@pytest.fixture(scope="module")
def layers() -> Inventory:
    return build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))


@pytest.fixture(scope="module")
def alone(layers: Inventory) -> Inventory:
    """The same machine with labvg/data's pool gone from SSD0001: the old SSD holds vault's alone."""
    return dataclasses.replace(layers, devices=tuple(
        dataclasses.replace(d, holders=("dm-5", "dm-6")) if d.name == "sdb" else d for d in layers.devices))


def test_a_move_takes_the_cache_off_attaches_it_on_the_new_ssd_then_frees_the_old(alone: Inventory) -> None:
    plan = lvmcache_move(alone, "labvg/vault", "/dev/sdc")
    plan.check()
    assert [s.id for s in plan.steps] == ["uncache", "pvcreate", "vgextend", "lvcreate-data", "lvcreate-meta",
                                         "cache-pool", "attach", "vgreduce", "pvremove"]
    assert plan.steps[0].progress == "cache_dirty"  # the dirty blocks are counted down
    assert plan.steps[3].argv[-1] == SSD2 and "16384k" in plan.steps[3].argv  # the size it had, on the new SSD
    assert plan.steps[-2].argv == ("vgreduce", "labvg", SSD1) and plan.steps[-1].argv == ("pvremove", "--yes", SSD1)
    # the old SSD leaves the VG only once the new pool is attached
    assert [type(c).__name__ for c in plan.steps[-2].pre] == ["CachePool"]
    assert [(d.role, d.serial) for d in plan.devices] == [("origin", None), ("ssd", "SSD0002"), ("old-ssd", "SSD0001")]
    assert f"{SSD1}: free (out of VG labvg)" in plan.layout_after
    assert makes_cache(plan.kind) and barriers(plan, alone) == []
    # what it destroys is read from its commands: the pool's new LVs on the new SSD, nothing of the old
    assert {n for s in plan.steps for n in language.destroys(s)} >= {SSD2}


def test_an_old_ssd_that_holds_other_lvs_stays_in_the_vg(layers: Inventory) -> None:
    plan = lvmcache_move(layers, "labvg/vault", SSD2, size_bytes=32 * MiB, mode="writeback")
    plan.check()
    assert "vgreduce" not in [s.id for s in plan.steps]
    assert any("also holds other LVs of labvg, so it stays in the VG" in n for n in plan.notes)
    pool = next(s for s in plan.steps if s.id == "cache-pool").argv
    assert "32768k" in next(s for s in plan.steps if s.id == "lvcreate-data").argv
    assert pool[pool.index("--cachemode") + 1] == "writeback"


def test_a_move_is_not_taken_as_done_before_it_ran(alone: Inventory) -> None:
    """The old cache is in the new one's mode: only the new pool's name tells the attach ran, and
    the old SSD is a PV of the VG until the last steps."""
    plan = lvmcache_move(alone, "labvg/vault", "/dev/sdc")
    old = Lv("labvg", "vault", False, "cache", "writethrough", pool="vault_cache_cpool")
    new = Lv("labvg", "vault", False, "cache", "writethrough", pool="vault_cache2_cpool")
    pool = Lv("labvg", "vault_cache2_cpool", True, "cache-pool")
    ssd1, ssd2 = os.path.realpath(SSD1), os.path.realpath(SSD2)
    before = LiveState(pvs={ssd1: "labvg"}, lvs={"labvg/vault": old})
    assert last_in_effect(plan, before) == -1
    attached = LiveState(pvs={ssd1: "labvg", ssd2: "labvg"}, lvs={"labvg/vault": new, "labvg/vault_cache2_cpool": pool})
    assert plan.steps[last_in_effect(plan, attached)].id == "attach"  # a resume frees the old SSD
    done = LiveState(pvs={ssd2: "labvg"}, lvs={"labvg/vault": new, "labvg/vault_cache2_cpool": pool})
    assert last_in_effect(plan, done) == len(plan.steps) - 1


@pytest.mark.parametrize(("lv", "ssd", "message"), [
    ("labvg/vault", "/dev/sdb", "is on /dev/sdb already.*lvmcache-resize"),
    ("labvg/vault", "/dev/sda", "slow device"),  # the PV the LV's own data is on
    ("labvg/vault", "/dev/sdd", "holds data \\(bcache\\)"),
    ("labvg/vault", "/dev/sde1", "partition"),
    ("labvg/vault", "/dev/nope", "not a block device"),
    ("labvg/data_corig", "/dev/sdc", "one of LVM.s own sub-LVs"),
    ("/dev/sdc", "/dev/sdc", "not a logical volume"),
])
def test_moves_that_cannot_be_planned_are_refused_in_a_sentence(layers: Inventory, lv: str, ssd: str,
                                                                 message: str) -> None:
    with pytest.raises(RecipeError, match=message) as err:
        lvmcache_move(layers, lv, ssd)
    assert "Nothing was changed" in str(err.value)


def test_a_mirrored_pool_is_not_moved_onto_one_ssd() -> None:
    """The lab's mirrored writeback pool (one leg lost, here taken as healthy again): a move onto one
    new SSD would drop the mirror without a word."""
    inv = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-degraded.json"))
    healthy = tuple(
        dataclasses.replace(d, caching=dataclasses.replace(d.caching, degraded=False, missing=()))
        if d.caching is not None and d.name == "dm-0" else d
        for d in inv.devices
    )
    with pytest.raises(RecipeError, match="mirrored on two SSDs .* and 1 new SSD was named") as err:
        lvmcache_move(dataclasses.replace(inv, devices=healthy), "labvg/data", "/dev/sdd")
    assert "Name both SSDs" in str(err.value)


@pytest.mark.parametrize("name", ["labvg/vault_cache_cpool_cdata", "labvg/vault_corig"])
def test_lvms_own_sub_lvs_are_not_names_a_plan_takes(layers: Inventory, name: str) -> None:
    with pytest.raises(RecipeError, match="one of LVM's own sub-LVs"):
        lvmcache_move(layers, name, "/dev/sdc")
