"""A dead cache SSD (issue 29), from what the lab captured after pulling the SSD of each kind of
cache under load (tests/fixtures/lab-deadssd/, README.md there): the kernel's status lines read
for their health, discovery and the watch saying what went wrong and what it means, and the
plans that get the origin back (a rescue) or rebuild a mirror's lost leg (a repair)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from advisor.disks.collect import RawSystem, parse_dm_status
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory
from advisor.plan.canon import cache_sets
from advisor.plan.model import Plan, PlanError
from advisor.readers import dmstatus
from advisor.runner import CommandResult
from advisor.watch.sampler import Sampler
from cachewise.core import Core, Refused, plans
from recipes.lvmcache import RepairOptions
from recipes.removal import RemoveOptions
from tests.conftest import FIXTURES

DEAD = FIXTURES / "lab-deadssd"


def raw(name: str) -> RawSystem:
    return RawSystem.load(DEAD / name)


def inventory(name: str) -> Inventory:
    return build_inventory(raw(name))


def lv(inv: Inventory, vglv: str) -> Device:
    vg, name = vglv.split("/")
    return next(d for d in inv.devices if d.lvm is not None and (d.lvm.vg, d.lvm.lv) == (vg, name))


def line(name: str, dm: str) -> str:
    return parse_dm_status((DEAD / name).read_text())[dm]


def make(snapshot: str, recipe: str, options: object) -> Plan:
    core = Core.for_snapshot(raw(snapshot))
    plan = plans.make(core, inventory(snapshot), recipe, options)
    plan.check()  # every step in the plan language, with the checks its shape implies
    return plan


# -- the kernel's words --


def test_a_failed_dm_cache_says_fail_and_nothing_else() -> None:
    health = dmstatus.health(line("a-pulled-dmstatus.txt", "vga-data"))
    assert health is not None and health.failed and health.said == "Fail"
    before = dmstatus.health((DEAD / "a-before-dmstatus.txt").read_text())
    assert before is not None and before.ok


def test_a_writecache_that_lost_its_ssd_reports_error_1_and_its_counters() -> None:
    text = line("c-pulled-dmstatus.txt", "vgc-data")
    health = dmstatus.health(text)
    assert health is not None and health.failed and health.error == 1 and health.said == "error 1"
    assert dmstatus.WritecacheStatus.parse(text).total_blocks == 127100


def test_a_mirror_that_lost_a_leg_reports_a_dead_leg_per_raid1_lv() -> None:
    for dm in ("vgf-data_cache_cpool_cdata", "vgf-data_cache_cpool_cmeta"):
        raid = dmstatus.RaidStatus.parse(line("f-pulled-dmstatus.txt", dm))
        assert raid.legs == "AD" and raid.dead == 1 and not raid.in_sync
    cache = dmstatus.health(line("f-pulled-dmstatus.txt", "vgf-data"))
    assert cache is not None and cache.ok, "the cache itself runs on the leg that is left"


@pytest.mark.parametrize("text", ["0 8 raid raid1 2 AX 8/8 idle 0 0 -", "0 8 raid raid1 3 AD 8/8 idle", "0 8 raid"])
def test_bad_raid_lines_are_refused(text: str) -> None:
    with pytest.raises(dmstatus.StatusError):
        dmstatus.RaidStatus.parse(text)
    assert dmstatus.health(text) is None


# -- discovery --


def test_discovery_says_the_writethrough_cache_failed_its_ssd_is_gone_and_nothing_is_lost() -> None:
    data = lv(inventory("a-pulled-raw.json"), "vga/data")
    c = data.caching
    assert c is not None and c.failed and c.missing == ("sdb",) and c.mode == "writethrough"
    assert "fail mode (the kernel says Fail)" in c.trouble and "nothing is lost" in c.trouble
    assert [n.action for n in c.next] == ["rescue"] and c.remove == "lvmcache-uncache"
    assert json.loads(json.dumps(c.to_json()))["missing"] == ["sdb"]


def test_discovery_names_the_loss_of_a_writeback_cache() -> None:
    # captured before discovery read dmsetup status: lvm2's [unknown] extents and the slave sysfs keeps
    c = lv(inventory("b-pulled-raw.json"), "vgb/data").caching
    assert c is not None and c.failed and c.mode == "writeback" and c.missing == ("sdc",)
    assert "lacks the blocks that were dirty on the SSD" in c.trouble and "not noticed yet" in c.trouble


def test_discovery_of_a_writecache_whose_ssd_is_gone() -> None:
    c = lv(inventory("c-pulled-raw.json"), "vgc/data").caching
    assert c is not None and c.kind == "dm-writecache" and c.failed and "error 1" in c.trouble
    assert "lacks every block written since the writecache last wrote back" in c.trouble


def test_discovery_of_a_mirror_on_one_leg_offers_the_repair_first() -> None:
    c = lv(inventory("f-pulled-raw.json"), "vgf/data").caching
    assert c is not None and c.degraded and not c.failed and c.missing == ("sdh",)
    assert [n.action for n in c.next][:1] == ["repair-mirror"] and "lvconvert --repair" in c.can


def test_discovery_of_a_writethrough_bcache_whose_set_is_gone() -> None:
    inv = inventory("d-pulled-raw.json")
    bcache0 = next(d for d in inv.devices if d.name == "bcache0")
    c = bcache0.caching
    assert c is not None and c.failed and c.mode == "writethrough" and "does not come back by itself" in c.trouble
    assert "has every write" in c.trouble


def test_discovery_of_a_writeback_bcache_started_without_its_dirty_set() -> None:
    inv = inventory("e-running-raw.json")
    bcache1 = next(d for d in inv.devices if d.name == "bcache1")
    c = bcache1.caching
    assert c is not None and c.failed and "inconsistent" in c.trouble and "damaged" in c.trouble


# -- the watch --


def fake_sys(root: Path, snapshot: RawSystem) -> Path:
    """sysfs as the snapshot saw it: each block device with its dm name, I/O counters and slaves
    (a deleted disk's name stays in slaves/, pointing nowhere, as on kernel 6.1)."""
    sysfs = root / "sys"
    for folder in ("block", "class/block", "dev/block"):
        (sysfs / folder).mkdir(parents=True)
    for b in snapshot.blocks:
        dev = sysfs / "devices" / b.name
        (dev / "slaves").mkdir(parents=True)
        if b.attrs.get("dm/name"):
            (dev / "dm").mkdir()
            (dev / "dm" / "name").write_text(b.attrs["dm/name"] + "\n")
        (dev / "stat").write_text("100 0 800 0 10 0 160 0 0 0 0\n")
        for slave in b.slaves:
            os.symlink(sysfs / "class" / "block" / slave, dev / "slaves" / slave)
        for folder in ("block", "class/block"):
            os.symlink(dev, sysfs / folder / b.name)
        os.symlink(dev, sysfs / "dev" / "block" / b.devnum)
    return sysfs


class DmRunner:
    def __init__(self, table: str, status: str) -> None:
        self.table, self.status = table, status

    def which(self, tool: str) -> str | None:
        return f"/sbin/{tool}"

    def run(self, argv: list[str], timeout: float | None = None, check: bool = True) -> CommandResult:
        return CommandResult(tuple(argv), 0, {"table": self.table, "status": self.status}[argv[1]], "", 0.01)


@pytest.mark.parametrize(
    ("case", "name", "state", "words"),
    [
        ("a", "vga/data", "failed", "dm-cache is in fail mode"),
        ("c", "vgc/data", "failed", "dm-writecache stopped on an I/O error (error 1)"),
        ("f", "vgf/data", "degraded", "runs on the other alone"),
    ],
)
def test_the_watch_reports_the_failure_at_once(tmp_path: Path, case: str, name: str, state: str, words: str) -> None:
    sysfs = fake_sys(tmp_path, raw(f"{case}-pulled-raw.json"))
    runner = DmRunner(
        (DEAD / f"{case}-pulled-dmtable.txt").read_text(), (DEAD / f"{case}-pulled-dmstatus.txt").read_text()
    )
    sampler = Sampler(runner, sysfs, clock=lambda: 1000.0)  # type: ignore[arg-type]
    refs = [r for r in sampler.caches() if r.name == name]
    (sample,) = sampler.sample(refs)
    assert sample.state == state and words in sample.trouble and sample.missing
    assert sample.missing == lv(inventory(f"{case}-pulled-raw.json"), name).caching.missing  # type: ignore[union-attr]


def test_status_in_the_lab_had_no_sample_of_the_failed_cache() -> None:
    """What `status --json` said before this change (captured in the lab): the cache listed, its
    sample missing, so nothing said it had failed. The sampler now reads one (above)."""
    (cache,) = json.loads((DEAD / "a-pulled-status.json").read_text())["caches"]
    assert cache["name"] == "vga/data" and cache["sample"] is None


# -- the way out --


def test_a_writethrough_rescue_takes_the_cache_off_and_drops_the_missing_pv() -> None:
    plan = make("a-pulled-raw.json", "remove", RemoveOptions(device="/dev/vga/data", free_ssd=True))
    assert [s.argv for s in plan.steps] == [
        ("lvconvert", "--yes", "--uncache", "vga/data"),
        ("vgreduce", "--removemissing", "vga"),
    ]
    assert plan.title.startswith("Rescue vga/data") and "nothing is lost" in plan.layout_after[0]
    assert [d.role for d in plan.devices] == ["origin"]  # the dead SSD is no device of the plan


def test_a_writeback_rescue_names_the_loss_and_needs_it_accepted() -> None:
    with pytest.raises(Refused) as refused:
        make("b-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgb/data"))
    assert refused.value.code == "rescue-loses-data" and [n.action for n in refused.value.next] == ["accept-data-loss"]
    assert "lacks the blocks that were dirty" in str(refused.value)
    plan = make("b-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgb/data", accept_data_loss=True))
    step = plan.steps[0]
    assert step.argv == ("lvconvert", "--yes", "--force", "--uncache", "vgb/data")
    assert "the blocks only the SSD held are lost" in step.description  # said again as the rescue runs
    assert "lacks the blocks that were dirty" in plan.layout_after[0]


def test_a_forced_uncache_runs_only_while_the_cache_is_on_a_missing_device() -> None:
    """A rescue plan saved while the SSD was gone must not drop a cache that came back (a loose
    cable, a reboot), and a plan file cannot turn a removal into a forced one."""
    import dataclasses

    from advisor.plan.checks import LvPartial

    plan = make("b-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgb/data", accept_data_loss=True))
    assert LvPartial(lv="vgb/data") in plan.steps[0].pre
    bare = dataclasses.replace(plan.steps[0], pre=tuple(c for c in plan.steps[0].pre if c.kind != "lv_partial"))
    with pytest.raises(PlanError):
        Plan.loads(dataclasses.replace(plan, steps=(bare, *plan.steps[1:])).dumps())
    healthy = make("a-pulled-raw.json", "remove", RemoveOptions(device="/dev/vga/data", free_ssd=True))
    assert not any(c.kind == "lv_partial" for c in healthy.steps[0].pre), "an uncache that flushes needs no such check"


def test_the_missing_ssd_leaves_the_vg_only_with_the_last_lv_that_used_it() -> None:
    """lvm2 refuses `vgreduce --removemissing` while another LV has a part on the missing PV
    (one SSD caching several LVs of one VG, c-vgreduce.txt): the first rescue keeps it, says why."""
    import dataclasses

    from advisor.backends import LVMCACHE
    from recipes.lvm import remove_cache

    inv = inventory("a-pulled-raw.json")
    origin = lv(inv, "vga/data")
    assert origin.lvm is not None
    twin = dataclasses.replace(origin, name="dm-99", lvm=dataclasses.replace(origin.lvm, lv="home"))
    shared = dataclasses.replace(inv, devices=(*inv.devices, twin))
    first = remove_cache(shared, "vga/data", LVMCACHE, "lvmcache-uncache")
    assert [s.id for s in first.steps] == ["uncache"]
    assert any("vga/home still use it" in n for n in first.notes)
    alone = remove_cache(inv, "vga/data", LVMCACHE, "lvmcache-uncache")
    assert [s.id for s in alone.steps] == ["uncache", "vgreduce-missing"]


def test_a_writecache_rescue_runs_on_the_inactive_lv() -> None:
    with pytest.raises(Refused, match="lacks every block"):
        make("c-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgc/data"))
    plan = make("c-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgc/data", accept_data_loss=True))
    assert [s.id for s in plan.steps] == ["deactivate", "uncache", "vgreduce-missing", "activate"]
    assert plan.steps[1].argv == ("lvconvert", "--yes", "--force", "--uncache", "vgc/data")
    assert any(c.kind == "not_mounted" for c in plan.steps[0].pre), "the file system is unmounted first"


def test_removing_a_mirror_on_one_leg_is_refused_with_the_repair_first() -> None:
    with pytest.raises(Refused) as refused:
        make("f-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgf/data"))
    assert refused.value.code == "mirror-degraded" and refused.value.next[0].action == "repair-mirror"


def test_the_repair_rebuilds_each_lost_leg_on_the_new_ssd() -> None:
    inv = inventory("f-pulled-raw.json")
    new = next(d for d in inv.devices if d.serial == "SSDF003")
    plan = make("f-pulled-raw.json", "cache-repair", RepairOptions(lv="vgf/data", ssd=new.devnode))
    ssd = plan.roles()["ssd"]
    assert [s.argv for s in plan.steps] == [
        ("pvcreate", "--yes", ssd),
        ("vgextend", "vgf", ssd),
        ("lvconvert", "--yes", "--repair", "vgf/data_cache_cpool_cdata", ssd),
        ("lvconvert", "--yes", "--repair", "vgf/data_cache_cpool_cmeta", ssd),
        ("vgreduce", "--removemissing", "vgf"),
    ]
    assert [c.kind for c in plan.steps[2].post] == ["lv_complete"]
    assert plan.kernel_modules and "dm_raid" in plan.kernel_modules


def test_a_repair_plan_cannot_name_an_lv_outside_its_origin() -> None:
    inv = inventory("f-pulled-raw.json")
    new = next(d for d in inv.devices if d.serial == "SSDF003")
    plan = json.loads(make("f-pulled-raw.json", "cache-repair", RepairOptions(lv="vgf/data", ssd=new.devnode)).dumps())
    for other in ("vgf/other_cdata", "vgf/data_other", "vgf/data_cache_cpool"):
        plan["steps"][2]["argv"][3] = other
        with pytest.raises(PlanError, match="not an LV under the plan's origin"):
            Plan.from_json(plan)


def test_nothing_to_repair_on_a_cache_that_is_not_a_degraded_mirror() -> None:
    with pytest.raises(Refused, match="nothing to repair"):
        make("a-pulled-raw.json", "cache-repair", RepairOptions(lv="vga/data", ssd="/dev/sdc"))


def test_a_writethrough_bcache_is_rescued_by_stopping_and_starting_it_without_its_set() -> None:
    inv = inventory("d-pulled-raw.json")
    backing = next(d for d in inv.devices if d.name == "sda4")
    plan = make("d-pulled-raw.json", "remove", RemoveOptions(device="/dev/bcache0", free_ssd=True))
    assert [(s.id, s.write) for s in plan.steps] == [
        ("stop", ("{backing}/bcache/stop", "1")),
        ("register", ("/sys/fs/bcache/register_quiet", backing.display_path)),
        ("run", ("{backing}/bcache/running", "1")),
    ]
    assert [c.kind for c in plan.steps[0].pre] == ["not_mounted"], "its file system is unmounted first"
    assert "nothing is lost" in plan.layout_after[0] and plan.roles() == {"backing": backing.display_path}


def test_a_writeback_bcache_rescue_needs_the_loss_accepted_and_one_started_stale_has_none() -> None:
    with pytest.raises(Refused) as refused:
        make("e-registered-raw.json", "remove", RemoveOptions(device="/dev/sda5"))
    assert refused.value.code == "rescue-loses-data" and "stopped the device" in str(refused.value)
    assert "lacks the data that was dirty in the cache" in str(refused.value)
    plan = make("e-registered-raw.json", "remove", RemoveOptions(device="/dev/sda5", accept_data_loss=True))
    assert [s.id for s in plan.steps] == ["stop", "register", "run"]
    with pytest.raises(Refused, match="already runs without its cache set"):
        make("e-running-raw.json", "remove", RemoveOptions(device="/dev/sda5", accept_data_loss=True))


def test_the_lab_proved_the_writecache_rescue_these_steps_run() -> None:
    """The third boot ran the rescue's commands by hand on the inactive LV (i-*.txt): each one
    worked, and the files written before the attach were on the origin."""
    plan = make("i-pulled-raw.json", "remove", RemoveOptions(device="/dev/vgi/data", accept_data_loss=True))
    ran = {"deactivate": "i-deactivate.txt", "uncache": "i-uncache-force.txt", "vgreduce-missing": "i-vgreduce.txt"}
    for step in plan.steps:
        if step.id in ran:
            assert (DEAD / ran[step.id]).read_text().strip().splitlines()[-1].startswith("rc 0"), step.id
    assert "writecache has been detached" in (DEAD / "i-uncache-force.txt").read_text()
    verify = (DEAD / "i-verify.txt").read_text()
    assert "a: OK" in verify and "b: OK" in verify and "c: FAILED" in verify  # c went through the writecache


def test_a_bcache_detach_does_nothing_once_its_set_is_gone() -> None:
    """Why the rescue restarts the device instead: after a detach the superblock still names the
    set, and registered again the device waits for it (g-*.txt)."""
    assert "cset.uuid\t\t11111111-2222-3333-4444-555555555511" in (DEAD / "g-detached-super.txt").read_text()
    waiting = json.loads((DEAD / "g-reregistered-backing.json").read_text())
    assert waiting["running"] == "0" and waiting["state"] == "clean" and "dev ->" not in waiting
    assert "cache_state\t3 [inconsistent]" in (DEAD / "h-detached-super.txt").read_text()  # after running=1


def test_the_bcache_rescue_names_no_cache_set_to_stop() -> None:
    """Stopping the bcache device is not stopping a cache set: preflight holds a plan that stops a
    set to the set its backing device is attached to, and this one has none (the lab refused it so)."""
    plan = make("d-pulled-raw.json", "remove", RemoveOptions(device="/dev/bcache0"))
    assert cache_sets(plan) == set()


# -- a cached LV lvm2 will not activate (after a reboot with the SSD dead) --

INACTIVE = "j-inactive-raw.json"  # vge/data: lvmcache writethrough, its SSD pulled, then refused by vgchange -ay


def inactive_variant(tmp_path: Path, lv: str = "data", **row: str) -> str:
    """The lab's capture with one of vge's lvs rows changed (another mode, all parts there, the
    origin partial), written under tmp_path; returns its path for :func:`make`."""
    data = json.loads((DEAD / INACTIVE).read_text())
    for r in data["lvs"]:
        if (r["vg_name"], r["lv_name"]) == ("vge", lv):
            r.update(row)
    out = tmp_path / "variant-raw.json"
    out.write_text(json.dumps(data))
    return str(out)


def test_a_cached_lv_lvm2_refused_is_listed_though_it_is_no_block_device() -> None:
    assert "Refusing activation of partial LV vge/data" in (DEAD / "j-vgchange.txt").read_text()
    inv = inventory(INACTIVE)
    assert not any(d.lvm is not None and (d.lvm.vg, d.lvm.lv) == ("vge", "data") for d in inv.devices)
    (gone,) = inv.inactive
    assert (gone.name, gone.segtype, gone.mode, gone.partial) == ("vge/data", "cache", "writethrough", True)
    assert gone.size_bytes == 320 * 2**20 and gone.identity.startswith("lv-uuid:")
    assert inv.inactive_lv("/dev/vge/data") == inv.inactive_lv("/dev/mapper/vge-data") == gone
    (note,) = [n for n in inv.notes if "vge/data" in n]
    assert "nothing on it comes up" in note and "nothing is lost once the cache is taken off" in note
    from advisor.disks.changes import inventory_from_json

    again = inventory_from_json(json.loads(json.dumps(inv.to_json())))
    assert again.inactive == inv.inactive, "a saved snapshot keeps it"


def test_the_rescue_of_an_inactive_lv_takes_the_cache_off_as_it_is_then_activates_it() -> None:
    plan = make(INACTIVE, "remove", RemoveOptions(device="vge/data", free_ssd=True))
    assert [s.argv for s in plan.steps] == [  # up before the VG drops the PV (that may fail: another LV on it)
        ("lvconvert", "--yes", "--uncache", "vge/data"),
        ("lvchange", "--yes", "-ay", "vge/data"),
        ("vgreduce", "--removemissing", "vge"),
    ]
    assert any("none to give back" in n for n in plan.notes), "--free-ssd is not silently ignored"
    assert plan.kind == "lvmcache-uncache" and plan.title.startswith("Rescue vge/data")
    assert "nothing is lost" in plan.layout_after[0] and "not active" in plan.layout_before[0]
    (origin,) = plan.devices
    assert (origin.role, origin.path, origin.identity) == (
        "origin",
        "/dev/vge/data",
        inventory(INACTIVE).inactive[0].identity,
    )
    assert plan.target == "/dev/vge/data"  # the name the user types to confirm
    assert Plan.loads(plan.dumps()) == plan


def test_an_inactive_writeback_rescue_names_the_loss_and_forces_only_a_partial_lv(tmp_path: Path) -> None:
    from advisor.plan.checks import LvPartial

    wb = inactive_variant(tmp_path, cache_mode="writeback")
    with pytest.raises(Refused) as refused:
        make(wb, "remove", RemoveOptions(device="vge/data"))
    assert refused.value.code == "rescue-loses-data" and "lacks the blocks that were dirty" in str(refused.value)
    plan = make(wb, "remove", RemoveOptions(device="vge/data", accept_data_loss=True))
    assert plan.steps[0].argv == ("lvconvert", "--yes", "--force", "--uncache", "vge/data")
    assert LvPartial(lv="vge/data") in plan.steps[0].pre


def test_an_inactive_lv_with_every_part_there_is_to_be_activated_first(tmp_path: Path) -> None:
    whole = inactive_variant(tmp_path, lv_attr="Cwi---C---")
    (lv_,) = inventory(whole).inactive
    assert not lv_.partial and "lvchange -ay vge/data" in " ".join(inventory(whole).notes)
    with pytest.raises(Refused) as refused:
        make(whole, "remove", RemoveOptions(device="vge/data"))
    assert refused.value.code == "lv-inactive" and [n.action for n in refused.value.next] == ["activate-lv"]


def test_the_wrong_remover_keeping_or_releasing_are_refused_for_an_inactive_lv() -> None:
    from recipes.lvmcache import UncacheOptions
    from recipes.writecache import DetachOptions

    with pytest.raises(Refused) as refused:
        make(INACTIVE, "writecache-detach", DetachOptions(lv="vge/data"))
    assert refused.value.code == "not-cached-with" and "lvmcache-uncache" in str(refused.value)
    with pytest.raises(Refused, match="cannot be kept"):
        make(INACTIVE, "lvmcache-uncache", UncacheOptions(lv="vge/data", keep_pool=True))
    ssd = next(d for d in inventory(INACTIVE).devices if d.serial == "SSDF003")
    with pytest.raises(Refused) as refused:
        make(INACTIVE, "remove", RemoveOptions(device="vge/data", release_ssd=(ssd.devnode,)))
    assert refused.value.code == "release-missing"


def test_apply_holds_an_inactive_lv_to_its_uuid_and_size_active_or_not() -> None:
    import dataclasses

    from advisor.apply.preflight import verify_devices
    from advisor.apply.state import LiveState
    from advisor.readers.lvm import Lv

    plan = make(INACTIVE, "remove", RemoveOptions(device="vge/data"))
    gone = inventory(INACTIVE).inactive[0]
    row = Lv("vge", "data", False, "cache", "writethrough", uuid=gone.uuid, size_bytes=gone.size_bytes, attr=gone.attr)
    inv = inventory(INACTIVE)

    def problems(lvs: dict[str, Lv], now: Inventory = inv) -> list[str]:
        return [p.code for p in verify_devices(plan, LiveState(None, {}, lvs, now))]

    assert problems({"vge/data": row}) == []
    assert problems({}) == ["device-missing"]
    assert problems({"vge/data": dataclasses.replace(row, uuid="other-uuid")}) == ["device-replaced"]
    assert problems({"vge/data": dataclasses.replace(row, size_bytes=1 << 30)}) == ["device-resized"]
    # active now: not what the plan was made for (its SSD came back, or it was forced up), unless
    # a resume finds it so (the plan's own step activated it): then the same LV by its UUID
    a = lv(inventory("a-pulled-raw.json"), "vga/data")
    assert a.lvm is not None
    active = dataclasses.replace(
        a,
        lvm=dataclasses.replace(a.lvm, vg="vge", uuid=gone.uuid),
        size_bytes=gone.size_bytes,
        links=("/dev/vge/data",),
    )
    up = dataclasses.replace(inv, devices=(*inv.devices, active))
    assert problems({}, up) == ["device-replaced"]
    assert verify_devices(plan, LiveState(None, {}, {}, up), resuming=True) == []
    other = dataclasses.replace(active, lvm=dataclasses.replace(a.lvm, vg="vge", uuid="other"))
    state = LiveState(None, {}, {}, dataclasses.replace(inv, devices=(*inv.devices, other)))
    assert [p.code for p in verify_devices(plan, state, resuming=True)] == ["device-replaced"]


def test_doctor_names_the_inactive_lv_with_the_rescue_and_one_deactivated_with_the_command(tmp_path: Path) -> None:
    from advisor.health.doctor import examine
    from advisor.health.look import Look

    report = examine(Look(0.0, False, True, inventory(INACTIVE)))
    (failed,) = [f for f in report.findings if f.subject == "vge/data"]
    assert (failed.code, failed.severity) == ("cache-failed", "critical")
    assert failed.fix is not None and (failed.fix.plan, dict(failed.fix.options)) == ("remove", {"device": "vge/data"})
    assert [(h.name, h.failed) for h in report.caches if h.name == "vge/data"] == [("vge/data", True)]
    core = Core.for_snapshot(raw(INACTIVE))
    from cachewise.core.doctor import fix_plan

    assert fix_plan(core, inventory(INACTIVE), failed.fix).title.startswith("Rescue vge/data")
    whole = examine(Look(0.0, False, True, inventory(inactive_variant(tmp_path, lv_attr="Cwi---C---"))))
    (note,) = [f for f in whole.findings if f.subject == "vge/data"]
    assert (note.code, note.severity) == ("cache-inactive", "warning")
    assert note.fix is not None and note.fix.command == ("lvchange", "-ay", "vge/data")


def test_an_lv_whose_origin_is_missing_is_not_rescued_by_dropping_its_cache(tmp_path: Path) -> None:
    """A partial LV is not always a dead SSD: when the origin's disk is the missing one, taking the
    cache off would drop its dirty blocks and bring nothing back (lvm2's rows of the hidden
    sub-LVs say which part is partial)."""
    from advisor.health.doctor import examine
    from advisor.health.look import Look

    inv = inventory(INACTIVE)
    assert not inv.inactive[0].origin_missing and inv.inactive[0].rescuable  # the lab's: its cache's parts
    path = inactive_variant(tmp_path, "[data_corig]", lv_attr="owi---C-p-")
    (gone,) = inventory(path).inactive
    assert gone.origin_missing and not gone.rescuable
    with pytest.raises(Refused) as refused:
        make(path, "remove", RemoveOptions(device="vge/data", accept_data_loss=True))
    assert refused.value.code == "origin-missing"
    (finding,) = [f for f in examine(Look(0.0, False, True, inventory(path))).findings if f.subject == "vge/data"]
    assert (finding.code, finding.severity) == ("cache-inactive", "critical") and finding.fix is not None
    assert not finding.fix.plan and "bring the missing disk back" in finding.fix.how
    assert "bring that disk back" in " ".join(inventory(path).notes)


def test_only_lvs_that_are_not_active_and_have_no_device_are_listed_as_inactive(tmp_path: Path) -> None:
    """lv_attr's fifth letter: ``a`` active, ``s`` suspended (a block device still: a failed
    writecache flush leaves it so), ``-`` not active; and an LV with a block device is never listed
    twice, whatever lvm2's report says."""
    for state, listed in (("a", False), ("s", False), ("-", True)):
        path = inactive_variant(tmp_path, lv_attr=f"Cwi-{state}-C-p-")
        assert bool(inventory(path).inactive) == listed, state
    assert inventory("a-pulled-raw.json").inactive == ()  # vga/data: active, a block device
    data = json.loads((DEAD / "a-pulled-raw.json").read_text())
    for r in data["lvs"]:
        if r["lv_name"] == "data":
            r["lv_attr"] = "Cwi---C-p-"  # a report that disagrees with the kernel's devices
    (tmp_path / "stale.json").write_text(json.dumps(data))
    assert inventory(str(tmp_path / "stale.json")).inactive == ()
