"""The safety gate (advisor.disks.gate): which backends can go in front of a device or on it,
from what discovery knows of it and of what is stacked above and below it. On the lab's captured
snapshots (tests/fixtures/lab-scan, lab-caches) where the lab holds the case, and on built
devices for the LVM layouts the snapshots lack (thin, snapshots, mirrors); then held to
``recommend``, ``plan`` and apply's preflight."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from advisor.backends import BACKENDS, BCACHE, LVMCACHE, WRITECACHE
from advisor.disks.collect import RawSystem
from advisor.disks.devices import Caching, Device, Inventory, LvmInfo, MdInfo
from advisor.disks.discovery import build_inventory
from advisor.disks.gate import Barrier, fast_barriers, slow_barriers, writecache_barrier, writecache_max_bytes
from advisor.units import GiB
from tests.conftest import FIXTURES, LAB_SCAN

LAYERS = FIXTURES / "lab-caches" / "raw-layers.json"
RAW = LAB_SCAN / "raw-udev.json"


def lab(path: Path) -> Inventory:
    return build_inventory(RawSystem.load(path))


def named(inv: Inventory, name: str) -> Device:
    return next(d for d in inv.devices if d.name == name)


def barred(barriers: list[Barrier], *, migrate: bool = False) -> set[str]:
    """The ids of the backends the barriers bar (refusals only, or migrations only)."""
    return {b.id for x in barriers if x.migrate == migrate for b in x.backends}


def codes_of(barriers: list[Barrier]) -> list[str]:
    return [b.code for b in barriers]


ALL = {b.id for b in BACKENDS}
LVM = {LVMCACHE.id, WRITECACHE.id}


# --- on the lab's snapshots ------------------------------------------------------------------


def test_members_of_zfs_and_bcachefs_are_refused_for_every_backend_in_either_part() -> None:
    inv = lab(LAYERS)
    for name, words in (("sde1", "L2ARC"), ("sde2", "bcachefs device add")):
        dev = named(inv, name)
        for found in (slow_barriers(inv, dev), fast_barriers(inv, dev)):
            assert codes_of(found)[:1] == ["owned-by-other-system"] and barred(found) == ALL
            assert words in found[0].what, found[0].what
    disk = named(inv, "sde")  # holds both: as an SSD, wiping it would destroy the pool
    owned = fast_barriers(inv, disk)
    assert owned[0].code == "owned-by-other-system" and "holds" in owned[0].what and barred(owned) == ALL


def test_a_bcachefs_member_blkid_does_not_name_holds_data() -> None:
    dev = named(lab(LAYERS), "sde2")  # blkid 2.38 knows no bcachefs: found by its magic
    assert dev.fs_type is None and dev.signature == "bcachefs member" and dev.state == "has-data"


def test_what_sits_on_or_under_a_cache_is_refused_as_stacking() -> None:
    inv = lab(LAYERS)
    vault = slow_barriers(inv, named(inv, "dm-8"))  # a LUKS volume opened on a cached LV
    assert "stacked-on-cache" in codes_of(vault) and barred(vault) == ALL
    assert "labvg/vault" in next(b for b in vault if b.code == "stacked-on-cache").what
    pv = slow_barriers(inv, named(inv, "sda"))  # the PV under two cached LVs
    assert {"stacked-on-cache", "lvm-pv"} <= set(codes_of(pv))


def test_a_bcache_backing_device_is_used_through_its_bcache_device_never_formatted_again() -> None:
    inv = lab(LAYERS)
    found = slow_barriers(inv, named(inv, "sdd"))  # a backing device without a cache
    part = next(b for b in found if b.code == "bcache-part")
    assert barred([part]) == ALL and "bcache0" in part.what


def test_an_lv_takes_the_lvm_caches_and_a_disk_with_data_takes_them_only_after_a_move() -> None:
    inv = lab(RAW)
    lv = slow_barriers(inv, named(inv, "dm-1"))  # labvg/data
    assert codes_of(lv) == ["bcache-needs-block"] and barred(lv) == {BCACHE.id}
    ext4 = slow_barriers(inv, named(inv, "sdc1"))  # an ext4 partition
    assert barred(ext4) == set() and barred(ext4, migrate=True) == LVM
    assert "into LVM" in ext4[0].what
    # bcache formats its backing device: not while an open dm-crypt volume is built on it (its
    # recipe refuses it), so recommend offers no bcache on it either (issue 30)
    crypt = slow_barriers(inv, named(inv, "sdc2"))  # the partition labplain (dm-0) is opened on
    assert barred(crypt) == set() and barred(crypt, migrate=True) == LVM | {BCACHE.id}
    assert "held by dm-0" in crypt[-1].what
    free = slow_barriers(inv, named(inv, "sda"))  # a free disk: bcache, or lvmcache once an LV is made on it
    assert barred(free) == set() and codes_of(free) == ["not-an-lv-yet"] and barred(free, migrate=True) == LVM
    assert codes_of(slow_barriers(inv, named(inv, "sdb"))) == ["lvm-pv"]


# --- LVM layouts the lab's snapshots lack, built --------------------------------------------


def built(lvm: LvmInfo, **kw: object) -> tuple[Inventory, Device]:
    base: dict[str, object] = dict(name="dm-9", kind="lvm", devnode="/dev/dm-9", devnum="254:9",
                                   identity="dm-uuid:LVM-x", stable_path=f"/dev/{lvm.vg}/{lvm.lv}",
                                   size_bytes=8 << 40, lvm=lvm, fs_type="xfs", state="has-data")
    base.update(kw)
    dev = Device(**base)  # type: ignore[arg-type]
    return Inventory("2026-11-25T00:00:00+00:00", "host", "running", True, (dev,)), dev


@pytest.mark.parametrize(("lvm", "code", "bars"), [
    (LvmInfo("lv", "pve", "vm-100-disk-0", "thin", pool="data"), "thin-lv", ALL),
    (LvmInfo("lv", "pve", "data", "thin-pool"), "thin-pool", ALL),
    (LvmInfo("lv", "vg", "snap", "snapshot"), "lv-snapshot", ALL),
    (LvmInfo("lv", "vg", "old", "mirror"), "lv-segtype", LVM),
    (LvmInfo("lv", "vg", "home", "linear", attr="Owi-a-s---"), "lv-segtype", LVM),  # merging a snapshot
    (LvmInfo("lv", "vg", "home", "linear", attr="owi-aos---"), "snapshot-origin", {WRITECACHE.id}),
])
def test_lvm2s_own_rules_bar_what_it_would_refuse(lvm: LvmInfo, code: str, bars: set[str]) -> None:
    inv, dev = built(lvm)
    found = slow_barriers(inv, dev)
    assert codes_of(found)[0] == code and barred([found[0]]) == bars, (codes_of(found), barred(found))
    assert BCACHE.id in barred(found), "bcache never goes in front of an LV"
    if code == "thin-lv":
        assert "pve/data" in found[0].what and "2.03.22" in found[0].what


def test_raid_and_striped_lvs_take_both_lvm_caches() -> None:
    for segtype in ("raid1", "raid5", "raid5_ls", "raid0", "raid10_near", "striped", "linear"):
        inv, dev = built(LvmInfo("lv", "vg", "data", segtype, attr="rwi-aor---"))
        assert barred(slow_barriers(inv, dev)) == {BCACHE.id}, segtype


def test_an_md_member_and_a_zfs_pool_on_luks_on_an_lv_are_refused() -> None:
    member = Device("sdx", "disk", "/dev/sdx", "8:96", "serial:x", "/dev/disk/by-id/x", md=MdInfo("member", "md0"),
                    holders=("md0",), state="in-use")
    array = Device("md0", "md", "/dev/md0", "9:0", "md-uuid:x", "/dev/md/0", slaves=("sdx",),
                   md=MdInfo("array", "md0", "raid5"))
    inv = Inventory("t", "h", "running", True, (member, array))
    assert codes_of(slow_barriers(inv, member))[0] == "md-member"
    assert barred(slow_barriers(inv, array)) == set(), "the array itself: lvmcache after a move, or bcache"
    lv = Device("dm-1", "lvm", "/dev/dm-1", "254:1", "dm-uuid:LVM-a", "/dev/vg/tank", holders=("dm-2",),
                lvm=LvmInfo("lv", "vg", "tank", "linear"), fs_type="crypto_LUKS")
    crypt = Device("dm-2", "dm", "/dev/dm-2", "254:2", "dm-uuid:CRYPT-b", "/dev/mapper/tank", slaves=("dm-1",),
                   fs_type="zfs_member", caching=Caching("zfs", "member of ZFS pool tank", "pool member", "use L2ARC"))
    inv = Inventory("t", "h", "running", True, (lv, crypt))
    found = slow_barriers(inv, lv)
    assert found[0].code == "owned-by-other-system" and "holds /dev/mapper/tank" in found[0].what


# --- dm-writecache's memory ------------------------------------------------------------------


def test_a_writecache_is_held_to_a_quarter_of_the_memory_its_entries_take() -> None:
    ram = 16 * GiB
    big = writecache_barrier(466 * GiB, 512, ram)  # the SSD whole, in 512-byte blocks: ~80 GiB of entries
    assert big is not None and big.code == "writecache-memory" and barred([big]) == {WRITECACHE.id}
    assert writecache_barrier(100 * GiB, 4096, ram) is None  # ~2.1 GiB of 16 GiB
    cap = writecache_max_bytes(ram, 4096)
    assert cap is not None and writecache_barrier(cap, 4096, ram) is None
    assert writecache_barrier(cap + (64 << 20), 4096, ram) is not None
    assert writecache_max_bytes(None, 4096) is None and writecache_barrier(466 * GiB, 512, None) is None


# --- held to recommend, plan and apply -------------------------------------------------------


def test_recommend_says_dont_cache_for_a_zfs_member_names_l2arc_and_offers_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cachewise.cli import main

    rc = main(["--state-dir", str(tmp_path), "recommend", "--from-raw", str(LAYERS), "--slow", "sde1", "--fast",
               "sdc", "--workload", "database", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["verdict"] == "dont-cache" and out["config"] is None
    assert "L2ARC" in out["summary"] + " ".join(r["text"] for r in out["reasons"])
    assert [o for o in out["runner_ups"] if o["verdict"] == "cache"] == [], "only what can be planned is offered"
    assert "owned-by-other-system" in {g["code"] for g in out["gate"]}
    assert "G-OWN-1" in out["findings"]


def test_recommend_offers_no_backend_the_gate_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cachewise.cli import main

    # An LV with data: bcache cannot go in front of an LV, so it is neither chosen nor offered.
    assert main(["--state-dir", str(tmp_path), "recommend", "--from-raw", str(RAW), "--slow", "labvg/data",
                 "--fast", "nvme0n1", "--workload", "database", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    offered = [o["config"]["backend"] for o in out["runner_ups"] if o["config"]] + (
        [out["config"]["backend"]] if out["config"] else [])
    assert offered and "bcache" not in offered
    assert [g["code"] for g in out["gate"]] == ["bcache-needs-block"]


def test_plan_refuses_a_cache_on_another_systems_device_even_with_the_wipe_allowed(tmp_path: Path,
                                                                                     capsys: pytest.CaptureFixture[str]
                                                                                     ) -> None:
    from cachewise.cli import main

    before = LAYERS.read_bytes()
    rc = main(["--state-dir", str(tmp_path), "plan", "bcache-create", "--from-raw", str(LAYERS), "--backing", "sdc",
               "--cache", "sde2", "--wipe", "-o", str(tmp_path / "plan.json")])
    err = capsys.readouterr().err
    assert rc != 0 and "bcachefs" in err and "Nothing was changed" in err and not (tmp_path / "plan.json").exists()
    assert LAYERS.read_bytes() == before


def test_preflight_holds_a_plan_made_before_the_gate_to_it() -> None:
    from advisor.apply.preflight import verify_gate
    from advisor.apply.state import LiveState
    from recipes.bcache import bcache_create

    inv = lab(RAW)
    plan = bcache_create(inv, "sdg", "nvme0n1")  # two free disks: the gate lets it be
    assert verify_gate(plan, LiveState(plan=plan, _inv=inv)) == []
    # Since then, sdg became a bcachefs member (blkid does not know it; cachewise's magic does).
    sdg = named(inv, "sdg")
    owned = dataclasses.replace(sdg, caching=Caching("bcachefs", "bcachefs member", "file system member",
                                                     "add the SSD with bcachefs device add"))
    now = dataclasses.replace(inv, devices=tuple(owned if d is sdg else d for d in inv.devices))
    problems = verify_gate(plan, LiveState(plan=plan, _inv=now))
    assert [p.code for p in problems] == ["gate"] and "bcachefs member" in problems[0].sentence()


def test_every_gate_code_cites_a_finding() -> None:
    from advisor.advice.explain import GATE_FINDINGS
    from advisor.advice.findings import finding
    from advisor.disks import gate
    from advisor.errors import CODES

    source = Path(gate.__file__).read_text()
    declared = {c for c in CODES if f'"{c}"' in source}
    assert declared <= set(GATE_FINDINGS), declared - set(GATE_FINDINGS)
    for ids in GATE_FINDINGS.values():
        for fid in ids:
            assert finding(fid).text


def test_a_thin_lv_on_a_proxmox_host_is_not_cached_and_the_thin_pool_is_named() -> None:
    from advisor.advice.facts import device_facts
    from advisor.advice.model import Inputs
    from advisor.advice.recommend import recommend

    inv, lv = built(LvmInfo("lv", "pve", "vm-100-disk-0", "thin", pool="data", attr="Vwi-aotz--"))
    ssd = Device("nvme0n1", "disk", "/dev/nvme0n1", "259:0", "serial:n", "/dev/disk/by-id/nvme-x",
                 size_bytes=500 * 10**9, rotational=False, transport="nvme")
    inv = dataclasses.replace(inv, devices=(*inv.devices, ssd), memory_bytes=32 * GiB)
    slow = dataclasses.replace(device_facts(inv, lv, lambda d: None, part="slow"), device_class="hdd")
    fast = device_facts(inv, ssd, lambda d: None, part="fast")
    r = recommend(Inputs(slow, (fast,), workload="database", memory_bytes=inv.memory_bytes))
    assert r.verdict == "dont-cache" and r.config is None and "pve/data" in r.summary
    assert not [o for o in r.runner_ups if o.config is not None]


def test_an_ssd_that_carries_a_bcache_set_or_an_md_array_is_never_wiped_for_a_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cachewise.cli import main

    inv = lab(RAW)
    bcache_cache = fast_barriers(inv, named(inv, "sde"))  # the cache device of a live cache set
    assert "bcache-part" in codes_of(bcache_cache) and barred(bcache_cache) == ALL
    rc = main(["--state-dir", str(tmp_path), "plan", "lvmcache-attach", "--from-raw", str(RAW), "--lv", "labvg/data",
               "--ssd", "sde", "--size", "256m", "--wipe", "-o", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert rc != 0 and "bcache" in err and not (tmp_path / "p.json").exists()
    member = Device("sdx", "disk", "/dev/sdx", "8:96", "serial:x", "/dev/disk/by-id/x", size_bytes=500 * 10**9,
                    md=MdInfo("member", "md0"), fs_type="linux_raid_member", state="has-data")
    inactive = Inventory("t", "h", "running", True, (member,))  # its array is not assembled
    assert "md-member" in codes_of(fast_barriers(inactive, member)) and barred(fast_barriers(inactive, member)) == ALL


def test_a_handed_plan_of_any_kind_may_not_destroy_another_systems_device() -> None:
    from advisor.plan.feasible import barriers
    from advisor.plan.model import Step
    from recipes.lvmcache import lvmcache_uncache

    inv = lab(LAYERS)
    plan = lvmcache_uncache(inv, "labvg/data")
    zfs = named(inv, "sde1")
    assert barriers(plan, inv) == []
    forged = dataclasses.replace(
        plan, steps=(*plan.steps, Step("wipe", ("wipefs", "--all", zfs.display_path))))
    found = barriers(forged, inv)
    assert [b.code for b in found] == ["owned-by-other-system"] and "ZFS pool tank" in found[0].what
    undo = dataclasses.replace(plan, steps=(dataclasses.replace(plan.steps[0], undo=(
        ("pvcreate", "--yes", "--force", zfs.display_path),)), *plan.steps[1:]))
    assert [b.code for b in barriers(undo, inv)] == ["owned-by-other-system"], "a rollback runs the undo commands"


def test_barriers_copy_with_their_facts() -> None:
    import copy
    import pickle

    inv = lab(LAYERS)
    (b,) = slow_barriers(inv, named(inv, "sde1"))
    for twin in (copy.deepcopy(b), pickle.loads(pickle.dumps(b))):
        assert twin.what == b.what and twin.backends == b.backends and twin.next == b.next


def test_a_plan_from_a_recommendation_that_cannot_judge_yet_is_refused_with_what_to_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cachewise.cli import main

    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"verdict": "cant-judge", "config": None, "uncertain": {"record": "\x1b[2J anything"}}))
    rc = main(["--state-dir", str(tmp_path), "plan", "lvmcache-attach", "--from-raw", str(RAW), "--lv", "labvg/data",
               "--ssd", "nvme0n1", "--recommendation", str(rec), "-o", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert rc == 1 and "cannot judge the workload yet" in err and "a day, or a week" in err
    assert "\x1b" not in err and not (tmp_path / "p.json").exists(), "what to record is cachewise's, not the file's"
