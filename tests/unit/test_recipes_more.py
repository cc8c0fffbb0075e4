"""dm-writecache recipes, mirrored (raid1) cache pools on two SSDs and the one remove recipe,
built from the lab's real discovery snapshot (tests/fixtures/lab-scan); nothing runs."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.errors import CachewiseError
from advisor.plan.model import Plan, PlanError
from recipes.common import RecipeError
from recipes.lvmcache import CacheSpec, lvmcache_attach, lvmcache_new, lvmcache_uncache
from recipes.writecache import WritecacheSpec, writecache_attach, writecache_detach
from tests.conftest import FIXTURES, raises_worded

MiB, GiB = 1 << 20, 1 << 30
NVME = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"
SECOND = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"  # sda: free in the snapshot, the second "SSD" here


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))


def with_lv(inv: Inventory, **changes: object) -> Inventory:
    """The snapshot with labvg/data changed (a file system on it, or a cache)."""
    devices = []
    for d in inv.devices:
        if d.lvm is not None and d.lvm.lv == "data":
            lvm = dataclasses.replace(d.lvm, segtype=changes.pop("segtype")) if "segtype" in changes else d.lvm
            d = dataclasses.replace(d, lvm=lvm, **changes)  # type: ignore[arg-type]
        devices.append(d)
    return dataclasses.replace(inv, devices=tuple(devices))


def test_writecache_plan_makes_an_inactive_cachevol_and_attaches_it(inv: Inventory) -> None:
    plan = writecache_attach(inv, "labvg/data", "nvme0n1", WritecacheSpec(64 * MiB, high_watermark=80))
    assert [s.id for s in plan.steps] == ["pvcreate", "vgextend", "lvcreate-cachevol", "deactivate", "attach"]
    assert plan.steps[2].argv == ("lvcreate", "--yes", "--wipesignatures", "y", "-n", "data_wcache", "-L", "65536k",
                                  "labvg", NVME)
    assert plan.steps[3].argv == ("lvchange", "--yes", "-an", "labvg/data_wcache")
    assert plan.steps[4].argv == ("lvconvert", "--yes", "--type", "writecache", "--cachevol", "labvg/data_wcache",
                                  "--cachesettings", "block_size=4096 high_watermark=80", "labvg/data")
    assert plan.steps[4].undo == (("lvconvert", "--yes", "--splitcache", "labvg/data"),)
    assert plan.kernel_modules == ("dm_writecache",)
    assert Plan.loads(plan.dumps()) == plan, "the plan language accepts every command it emits"


@pytest.mark.parametrize(("fs", "block", "expected"), [
    ("xfs", 512, 512), ("xfs", 4096, 4096), ("ext4", 4096, 4096), ("ext4", 1024, 512), ("xfs", None, 512),
    (None, None, 4096),
])
def test_writecache_block_size_follows_the_file_system(inv: Inventory, fs: str | None, block: int | None,
                                                       expected: int) -> None:
    changed = with_lv(inv, fs_type=fs, fs_block_size=block)
    plan = writecache_attach(changed, "labvg/data", "nvme0n1", WritecacheSpec(64 * MiB))
    assert f"block_size={expected}" in plan.steps[-1].argv


def test_a_writecache_block_bigger_than_the_file_system_is_refused(inv: Inventory) -> None:
    xfs512 = with_lv(inv, fs_type="xfs", fs_block_size=512)
    with pytest.raises(RecipeError, match="would stop labvg/data from mounting.*Nothing was changed"):
        writecache_attach(xfs512, "labvg/data", "nvme0n1", WritecacheSpec(64 * MiB, block_size=4096))


@pytest.mark.parametrize(("spec", "message"), [
    (WritecacheSpec(64 * MiB, high_watermark=120), "high_watermark 120 is not between 0 and 100"),
    (WritecacheSpec(64 * MiB, high_watermark=20, low_watermark=40), "low_watermark \\(40\\) is above"),
    (WritecacheSpec(64 * MiB, block_size=1024), "not 512 or 4096"),
    (WritecacheSpec(0), "above 0"),
    (WritecacheSpec(4 * GiB), "too small"),
])
def test_bad_writecache_specs_are_refused(inv: Inventory, spec: WritecacheSpec, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        writecache_attach(inv, "labvg/data", "nvme0n1", spec)


def test_a_cached_lv_gets_no_second_cache(inv: Inventory) -> None:
    for segtype in ("cache", "writecache"):
        with pytest.raises(RecipeError, match="already cached"):
            writecache_attach(with_lv(inv, segtype=segtype), "labvg/data", "nvme0n1", WritecacheSpec(64 * MiB))


def test_two_ssds_make_a_raid1_cache_pool(inv: Inventory) -> None:
    plan = lvmcache_attach(inv, "labvg/data", ["nvme0n1", "sda"], CacheSpec(256 * MiB, mode="writeback"))
    assert [s.id for s in plan.steps] == ["pvcreate-1", "vgextend-1", "pvcreate-2", "vgextend-2", "lvcreate-data",
                                          "lvcreate-meta", "cache-pool", "attach"]
    data = plan.steps[4].argv
    assert data == ("lvcreate", "--yes", "--wipesignatures", "y", "--type", "raid1", "-m", "1", "-n", "data_cache",
                    "-L", "262144k", "labvg", NVME, SECOND)
    assert plan.steps[5].argv[4:8] == ("--type", "raid1", "-m", "1")
    assert {d.role: d.path for d in plan.devices} == {"origin": "/dev/labvg/data", "ssd": NVME, "ssd2": SECOND}
    assert "dm_raid" in plan.kernel_modules
    assert "mirrored" in plan.title and any("either SSD can fail" in n for n in plan.notes)
    assert not any("an SSD failure loses them" in n for n in plan.notes)
    assert Plan.loads(plan.dumps()) == plan
    # Each SSD holds a whole copy, plus one 4 MiB raid metadata extent per raid1 LV.
    assert plan.space["ssd_bytes_used"] == 256 * MiB + 2 * 8 * MiB + MiB + 2 * 4 * MiB


def test_a_mirrored_writecache_is_a_raid1_cachevol(inv: Inventory) -> None:
    plan = writecache_attach(inv, "labvg/data", [NVME, "sda"], WritecacheSpec(64 * MiB))
    assert plan.steps[4].argv[4:8] == ("--type", "raid1", "-m", "1") and plan.steps[4].argv[-2:] == (NVME, SECOND)
    assert plan.kernel_modules == ("dm_writecache", "dm_raid")


@pytest.mark.parametrize(("ssds", "message"), [
    (["nvme0n1", NVME], "is named twice"),
    (["nvme0n1", "sda", "sdb"], "3 were given"),
    (["nvme0n1", "sdb"], "is the slow device itself"),
    (["nvme0n1", "sdc1"], "is a partition"),
])
def test_bad_ssd_pairs_are_refused(inv: Inventory, ssds: list[str], message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        lvmcache_attach(inv, "labvg/data", ssds, CacheSpec(64 * MiB))


def test_a_new_cached_lv_can_have_a_mirrored_pool(inv: Inventory) -> None:
    nvme = inv.by_name("nvme0n1")
    assert nvme is not None
    second = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0002"  # a copy of the free NVMe under another identity
    twin = dataclasses.replace(nvme, name="nvme1n1", devnode="/dev/nvme1n1", devnum="259:9", identity="serial:NVME0002",
                               serial="NVME0002", stable_path=second, links=(second,))
    three = dataclasses.replace(inv, devices=(*inv.devices, twin))
    plan = lvmcache_new(three, "sda", ["nvme0n1", "nvme1n1"], "newvg", "big", CacheSpec(128 * MiB))
    ids = [s.id for s in plan.steps]
    assert ids[:7] == ["pvcreate-1", "pvcreate-2", "pvcreate-3", "vgcreate", "vgextend-1", "vgextend-2",
                       "lvcreate-origin"]
    assert plan.steps[ids.index("lvcreate-data")].argv[-2:] == (NVME, second)
    assert "--type" in plan.steps[ids.index("lvcreate-data")].argv
    assert {d.role for d in plan.devices} == {"origin", "ssd", "ssd2"}
    assert Plan.loads(plan.dumps()) == plan


def test_remove_recipes_name_the_right_one_for_the_cache_type(inv: Inventory) -> None:
    wc = with_lv(inv, segtype="writecache")
    with pytest.raises(RecipeError, match="use writecache-detach"):
        lvmcache_uncache(wc, "labvg/data")
    plan = writecache_detach(wc, "labvg/data")
    assert plan.kind == "writecache-detach"
    assert plan.steps[0].argv == ("lvconvert", "--yes", "--uncache", "labvg/data")
    assert plan.steps[0].progress == "writecache_dirty"
    assert writecache_detach(wc, "labvg/data", keep_cachevol=True).steps[0].argv[2] == "--splitcache"
    with pytest.raises(RecipeError, match="use lvmcache-uncache"):
        writecache_detach(with_lv(inv, segtype="cache"), "labvg/data")
    with pytest.raises(RecipeError, match="not cached with dm-writecache"):
        writecache_detach(inv, "labvg/data")


def test_removing_a_mirrored_cache_releases_both_ssds(inv: Inventory) -> None:
    cached = with_lv(inv, segtype="cache")
    pv = next(d for d in inv.devices if d.lvm is not None and d.lvm.role == "pv")
    plan = lvmcache_uncache(cached, "labvg/data", release=[pv.display_path])
    assert [s.id for s in plan.steps] == ["uncache", "vgreduce", "pvremove"]
    with pytest.raises(RecipeError, match="named twice"):
        lvmcache_uncache(cached, "labvg/data", release=[pv.display_path, pv.devnode])
    with pytest.raises(RecipeError, match="is not a physical volume of VG labvg"):
        lvmcache_uncache(cached, "labvg/data", release=[pv.display_path, "nvme0n1"])


def test_tampered_writecache_settings_are_refused(inv: Inventory) -> None:
    data = writecache_attach(inv, "labvg/data", "nvme0n1", WritecacheSpec(64 * MiB)).to_json()
    argv = list(data["steps"][-1]["argv"])
    argv[-2] = "block_size=4096;reboot"
    data["steps"][-1]["argv"] = argv
    with pytest.raises(PlanError, match="refused|not a command|shape|cachewise plans"):
        Plan.from_json(data)


def recommendation(inputs: dict[str, object] | None = None, **config: object) -> object:
    from advisor.advice.config import CacheConfig
    from advisor.advice.model import Recommendation

    base: dict[str, object] = {"backend": "lvmcache", "mode": "writeback", "size_bytes": 64 * MiB,
                               "effective_bytes": 18 * MiB, "fast_space_bytes": 90 * MiB}
    base.update(config)
    return Recommendation("cache", "", CacheConfig(**base), (), (), (), None, inputs or {})  # type: ignore[arg-type]


def test_a_mirrored_pool_recommendation_plans_that_pool_on_both_ssds(inv: Inventory) -> None:
    from cachewise.core import Core, plans

    core = Core.for_snapshot(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))
    plan = plans.recommended(core, inv, recommendation(mirrored_pool=True), "labvg/data", [NVME, SECOND])  # type: ignore[arg-type]
    assert plan.kind == "lvmcache-attach" and {d.role for d in plan.devices} == {"origin", "ssd", "ssd2"}
    assert "raid1" in plan.steps[4].argv
    single = plans.recommended(core, inv, recommendation(mode="writethrough"), "labvg/data", [NVME, SECOND])  # type: ignore[arg-type]
    assert {d.role for d in single.devices} == {"origin", "ssd"}, "writethrough needs no mirror: one SSD"
    writecache = {"backend": "lvmcache-writecache", "writecache_block_size": 4096}
    with raises_worded(CachewiseError, "needs your acceptance of the risk in so many words"):
        plans.recommended(core, inv, recommendation(**writecache), "labvg/data", [NVME])  # type: ignore[arg-type]
    wc = plans.recommended(core, inv, recommendation({"accept_writeback_risk": True}, **writecache),  # type: ignore[arg-type]
                           "labvg/data", [NVME])
    assert wc.kind == "writecache-attach" and "block_size=4096" in wc.steps[-1].argv


def md_raid1(inv: Inventory) -> Inventory:
    """The snapshot with the free NVMe replaced by an md RAID1 array of two SSDs (as the user made it)."""
    from advisor.disks.devices import MdInfo

    nvme = inv.by_name("nvme0n1")
    assert nvme is not None
    md = dataclasses.replace(nvme, name="md0", kind="md", devnode="/dev/md0", devnum="9:0", identity="md-uuid:f00d",
                             stable_path="/dev/disk/by-id/md-uuid-f00d", links=("/dev/disk/by-id/md-uuid-f00d",
                                                                                  "/dev/md/fast"),
                             serial=None, md=MdInfo("array", "md0", "raid1", 0))
    return dataclasses.replace(inv, devices=tuple(md if d.name == "nvme0n1" else d for d in inv.devices))


def test_an_md_raid1_the_user_made_is_a_fast_device_for_every_backend(inv: Inventory) -> None:
    from recipes.bcache import bcache_create

    raid = md_raid1(inv)
    lvm = lvmcache_attach(raid, "labvg/data", "/dev/md/fast", CacheSpec(256 * MiB, mode="writeback"))
    assert lvm.steps[0].argv == ("pvcreate", "--yes", "/dev/disk/by-id/md-uuid-f00d")
    assert not any("raid1" in s.argv for s in lvm.steps), "the array mirrors already: no LVM raid1 on top"
    bc = bcache_create(raid, "sda", "md0", mode="writeback")
    assert any("/dev/disk/by-id/md-uuid-f00d" in s.argv for s in bc.steps if s.argv)
    assert not any(s.argv and s.argv[0] == "mdadm" for p in (lvm, bc) for s in p.steps), "never creates an array"


def test_the_block_size_is_read_from_the_device_when_udev_has_not_seen_the_mkfs(inv: Inventory, tmp_path) -> None:
    """Seen in the lab: an ext4 made on an LV moments before was not yet in udev's database, and
    a writecache of 4 KiB blocks was planned over its 1 KiB blocks (lvconvert refused it). blkid
    reads the device itself: here a real ext4 with 1 KiB blocks in a file (nothing on a disk)."""
    import shutil
    import subprocess

    from advisor.disks.fsblock import with_fs_block_size
    from advisor.runner import CommandRunner

    mkfs = shutil.which("mkfs.ext4") or shutil.which("mkfs.ext4", path="/usr/sbin:/sbin")
    if mkfs is None or CommandRunner().which("blkid") is None:
        pytest.fail("mkfs.ext4 and blkid (e2fsprogs, util-linux) are needed: packaging/test.sh installs them")
    image = tmp_path / "fs.img"
    image.write_bytes(b"")
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    subprocess.run([mkfs, "-q", "-F", "-b", "1024", str(image)], check=True)
    unseen = with_lv(inv, fs_type=None, fs_block_size=None, devnode=str(image))
    lv = next(d for d in unseen.devices if d.lvm is not None and d.lvm.lv == "data")
    filled = with_fs_block_size(unseen, lv, CommandRunner())
    seen = next(d for d in filled.devices if d.name == lv.name)
    assert (seen.fs_type, seen.fs_block_size) == ("ext4", 1024)
    plan = writecache_attach(filled, "labvg/data", "nvme0n1", WritecacheSpec(64 * MiB))
    assert "block_size=512" in plan.steps[-1].argv
