"""Recipes build plans from the lab's real discovery snapshot (tests/fixtures/lab-scan) and
never run anything; plan files round-trip, and damaged or newer ones are refused."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.plan.model import PLAN_SCHEMA, Plan, PlanError
from recipes.bcache import bcache_create, bcache_detach
from recipes.common import RecipeError
from recipes.lvmcache import CacheSpec, lvmcache_attach, lvmcache_uncache
from tests.conftest import FIXTURES, cli_words

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
    assert step.description.endswith("to writethrough (dirty blocks are written back first)")
    to_writeback = lvmcache_mode(inv2, "labvg/data", "writeback").steps[0]
    assert to_writeback.progress == "" and "dirty" not in to_writeback.description
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


@pytest.fixture(scope="module")
def inv_xfs(inv: Inventory) -> Inventory:
    """The lab snapshot with an XFS file system (unmounted) on the empty disk sdg."""
    return dataclasses.replace(inv, devices=tuple(
        dataclasses.replace(d, fs_type="xfs") if d.name == "sdg" else d for d in inv.devices))


def test_bcache_create_formats_registers_attaches_and_tunes(inv: Inventory) -> None:
    plan = bcache_create(inv, "sda", "nvme0n1", mode="writeback", sequential_cutoff=4 * MiB, writeback_percent=10)
    ids = [s.id for s in plan.steps]
    assert ids == ["make-bcache", "register-cache", "register-backing", "attach", "cache-mode",
                   "sequential-cutoff", "writeback-percent", "tunables-file"]
    make = plan.steps[0].argv
    cset = make[make.index("--cset-uuid") + 1]
    assert "--writeback" in make and make[-4:] == ("-B", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "-C", NVME)
    # Registration works with or without udev: register_quiet, then the kernel's own sysfs.
    assert plan.steps[1].write == ("/sys/fs/bcache/register_quiet", NVME)
    assert plan.steps[1].post[0].args == {"path": f"/sys/fs/bcache/{cset}"}
    assert plan.steps[3].write == ("{backing}/bcache/attach", cset)
    assert plan.steps[4].write == ("{backing}/bcache/cache_mode", "writeback")
    assert plan.steps[5].write[1] == str(4 * MiB) and plan.steps[6].write[1] == "10"
    # The kernel forgets both at every boot: the last step keeps them where the udev rule finds them.
    kept = f"sequential_cutoff={4 * MiB} writeback_percent=10"
    assert plan.steps[7].write == ("/etc/cachewise/bcache/{backing-uuid}.conf", kept)
    assert plan.steps[7].post[0].to_json() == {"kind": "tunables_file",
                                               "args": {"file": "/etc/cachewise/bcache/{backing-uuid}.conf",
                                                        "value": kept}}
    assert plan.steps[0].undo == (("wipefs", "--all", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"), ("wipefs", "--all", NVME))
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


@pytest.mark.parametrize(("backing", "cache", "kw", "message"), [
    ("sdc1", "nvme0n1", {}, "is in use"),
    ("sdg", "nvme0n1", {}, "holds data \\(xfs\\). bcache needs a reformat of the backing device.*lvmcache"),
    ("sda", "sdg", {}, "holds data \\(xfs\\); making it a bcache cache destroys that. If it can go, pass --wipe"),
    ("sda", "sda", {}, "are the same device"),
    ("sda", "/dev/nonexistent", {}, "is not a block device"),
    ("sda", "sdf", {}, "too small for a bcache cache: 256.0 MiB is 512 buckets.*Operation not permitted"),
    ("sda", "nvme0n1", {"mode": "writearound"}, "is not writethrough or writeback"),
    ("sda", "nvme0n1", {"writeback_percent": 90}, "writeback_percent must be 0 to 40"),
    ("labvg/data", "nvme0n1", {}, "is a lvm device; bcache's backing must be a disk, a partition or an md array"),
])
def test_bcache_create_refuses_bad_inputs(inv_xfs: Inventory, backing: str, cache: str, kw: dict[str, object],
                                          message: str) -> None:
    with pytest.raises(RecipeError) as err:
        bcache_create(inv_xfs, backing, cache, **kw)  # type: ignore[arg-type]
    assert re.search(message, cli_words(err.value))
    assert cli_words(err.value).endswith("Nothing was changed.")


def test_bcache_create_with_wipe_erases_the_signatures_first(inv_xfs: Inventory) -> None:
    plan = bcache_create(inv_xfs, "sda", "sdg", wipe=True)
    assert [s.argv for s in plan.steps[:2]] == [("wipefs", "--all", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"),
                                               ("wipefs", "--all", "/dev/disk/by-id/ata-LabSSD_SSD0001")]
    assert plan.destroys == ("/dev/disk/by-id/ata-LabSSD_SSD0001: xfs",)


def test_bcache_detach_writes_back_before_it_detaches(inv: Inventory) -> None:
    plan = bcache_detach(inv, "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08", wipe_cache=True)
    ids = [s.id for s in plan.steps]
    # The tunables file goes first: the udev rule must not set writeback_percent again mid-flush.
    assert ids == ["forget-tunables", "writethrough", "writeback-percent-0", "flush", "detach", "detached",
                   "stop-cache-set", "wipe-cache"]
    assert plan.steps[0].write == ("/etc/cachewise/bcache/{backing-uuid}.conf", "")
    assert plan.steps[3].wait == ("{backing}/bcache/state", "clean|no cache")
    assert plan.steps[3].progress == "bcache_dirty"
    assert plan.steps[6].write == ("/sys/fs/bcache/92d9f462-55cf-4982-b1c4-ecef2705350f/stop", "1")
    assert plan.steps[7].argv == ("wipefs", "--all", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_BCC0001")
    assert [d.role for d in plan.devices] == ["backing", "cache"]


@pytest.mark.parametrize(("device", "message"), [("sda", "is not a bcache device"),
                                                 ("sde", "is not a bcache backing device or bcacheN")])
def test_bcache_detach_refuses_what_it_cannot_detach(inv: Inventory, device: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        bcache_detach(inv, device)


def test_every_recipe_writes_plans_the_plan_language_accepts(inv: Inventory, inv_xfs: Inventory) -> None:
    """What the recipes emit is exactly what a plan file may say (advisor/plan/language.py)."""
    import dataclasses

    from advisor.disks.devices import LvmInfo
    from recipes.bcache import bcache_detach
    from recipes.lvmcache import lvmcache_mode, lvmcache_new

    lv = next(d for d in inv.devices if d.lvm is not None and d.lvm.role == "lv")
    assert lv.lvm is not None
    cached = dataclasses.replace(inv, devices=tuple(
        dataclasses.replace(d, lvm=LvmInfo("lv", lv.lvm.vg, lv.lvm.lv, "cache")) if d.name == lv.name else d
        for d in inv.devices))
    pv = next(d for d in inv.devices if d.lvm is not None and d.lvm.role == "pv")
    plans = [
        lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 * MiB, mode="writeback")),
        lvmcache_uncache(cached, "labvg/data"),
        lvmcache_uncache(cached, "labvg/data", keep_pool=True),
        lvmcache_uncache(cached, "labvg/data", release=pv.devnode),
        lvmcache_mode(cached, "labvg/data", "writethrough"),
        lvmcache_new(inv, "sda", "nvme0n1", "fastvg", "data", CacheSpec(256 << 20)),
        bcache_create(inv, "sda", "nvme0n1", mode="writeback"),
        bcache_create(inv_xfs, "sda", "sdg", wipe=True),
        bcache_detach(inv, "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08", wipe_cache=True),
    ]
    for plan in plans:
        assert Plan.loads(plan.dumps()) == plan, plan.kind


def test_preview_puts_what_is_destroyed_and_the_commands_first_and_agrees_with_itself(inv: Inventory) -> None:
    from rich.console import Console

    from cachewise.render import plan_preview

    def shown(plan: Plan) -> str:
        console = Console(width=400, record=True)
        console.print(plan_preview(plan))
        return console.export_text()

    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(512 * MiB))
    assert any(s.destructive for s in plan.steps) and not plan.destroys  # pvcreate on an empty SSD
    text = shown(plan)
    assert text.index("Destroys") < text.index("Commands") < text.index("Before")
    assert "(destructive)" not in text and "overwrites the device, which holds no data" in text
    # What a plan destroys is computed from its commands and what its devices held when planned.
    ssd = dataclasses.replace(plan.devices[1], signature="ext4")
    held = dataclasses.replace(plan, devices=(plan.devices[0], ssd))
    assert held.destroys == (f"{ssd.path}: ext4",)
    text = shown(held)
    assert "(destructive)" in text and "holds no data" not in text


def test_the_preview_words_space_for_people_and_says_flushes_only_where_a_step_flushes(inv: Inventory) -> None:
    from rich.console import Console

    from cachewise.render import plan_preview

    def shown(plan: Plan) -> str:
        console = Console(width=400, record=True)
        console.print(plan_preview(plan))
        return console.export_text()

    attach = shown(lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(512 * MiB)))
    assert "Expected time: about" in attach and "dirty blocks flush" not in attach  # nothing is dirty yet
    assert "taken on the SSD in all" in attach and "ssd bytes" not in attach and "_bytes" not in attach
    cached = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))
    uncache = shown(lvmcache_uncache(cached, "labvg/data"))
    assert "(longer while dirty blocks flush)" in uncache


@pytest.mark.parametrize("width", [80, 120])
def test_the_preview_never_cuts_a_path_inside_a_command(inv: Inventory, width: int) -> None:
    """Issue 30: tables that cut paths make copy-paste impossible; each word of each command
    (by-id paths included) appears whole on one line of the preview at 80 columns."""
    from rich.console import Console

    from cachewise.render import plan_preview

    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(512 * MiB))
    console = Console(width=width, record=True)
    console.print(plan_preview(plan))
    lines = console.export_text().splitlines()
    words = {w for s in plan.steps for argv in (s.argv, *s.undo) for w in argv if len(w) > 8}
    assert any(w.startswith("/dev/disk/by-id/") for w in words)
    for w in words:
        assert any(w in line for line in lines), f"{w} is cut at {width} columns"
    assert "…" not in console.export_text()
