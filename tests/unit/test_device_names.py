"""A device is accepted in every form `scan` prints (issue 30): the kernel name, its /dev node,
the stable path, every by-id/by-uuid/by-path link, /dev/mapper/NAME, and VG/LV or /dev/VG/LV for
an LV, by every command that takes one (probe, recommend, plan), on a saved snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory, find_device
from advisor.errors import CachewiseError
from cachewise.cli import main
from cachewise.core import Core, load_snapshot
from cachewise.core.measure import probe_targets
from recipes.common import RecipeError
from recipes.lvm import SUB_LV, find_lv
from tests.conftest import FIXTURES, LAB_SCAN

SNAPSHOTS = [
    LAB_SCAN / "raw-udev.json",
    LAB_SCAN / "raw-noudev.json",
    FIXTURES / "lab-caches" / "raw-layers.json",
    FIXTURES / "lab-caches" / "raw-writecache.json",
    FIXTURES / "lab-thin" / "raw-cached.json",  # a thin pool: its -tpool layer carries the pool's LV name too
    FIXTURES / "lab-shared" / "raw-shared.json",
]


def tpool(device: dict[str, object]) -> bool:
    """The thin-pool target under a thin pool: its LV's names are the pool's public device's."""
    return str(device["dm_uuid"] or "").endswith("-tpool")


def printed_names(device: dict[str, object]) -> set[str]:
    """Every name scan's JSON gives a device, and the LV forms of an LV."""
    names = {str(device["name"]), str(device["devnode"]), *map(str, device["links"])}  # type: ignore[call-overload]
    if device["stable_path"]:
        names.add(str(device["stable_path"]))
    lvm = device["lvm"]
    if isinstance(lvm, dict) and lvm["role"] == "lv" and not tpool(device):
        names |= {f"{lvm['vg']}/{lvm['lv']}", f"/dev/{lvm['vg']}/{lvm['lv']}"}
    if device["dm_name"]:
        names.add(f"/dev/mapper/{device['dm_name']}")
    return names


@pytest.mark.parametrize("raw", SNAPSHOTS, ids=lambda p: p.name)
def test_every_printed_name_finds_its_device(raw: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--all", "--json", "--no-record", "--from-raw", str(raw)]) == 0
    devices = json.loads(capsys.readouterr().out)["devices"]
    inv = build_inventory(RawSystem.load(raw))
    checked = 0
    for device in devices:
        for name in printed_names(device):
            found = find_device(inv, name)
            assert found is not None and found.name == device["name"], (name, device["name"])
            checked += 1
        if device["lvm"] and device["lvm"]["role"] == "lv" and not tpool(device):
            lvm = device["lvm"]
            for name in (f"{lvm['vg']}/{lvm['lv']}", device["name"], device["stable_path"]):
                if device["hidden"] and SUB_LV.search(lvm["lv"]):  # LVM's own parts: no name a plan takes
                    with pytest.raises(RecipeError, match="one of LVM's own sub-LVs"):
                        find_lv(inv, name)
                else:
                    assert find_lv(inv, name).name == device["name"]
    assert checked > len(devices)


def test_probe_takes_a_loop_device_as_recommend_takes_a_disk(tmp_path: Path) -> None:
    """`probe loop0` resolves as `recommend --slow sda` does (the same resolver)."""
    core = Core.for_snapshot(load_snapshot(LAB_SCAN / "raw-udev.json"), tmp_path)
    named = ["loop0", "/dev/loop0", "sda", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "labvg/data",
             "/dev/labvg/data", "/dev/mapper/labvg-data", "dm-1", "/dev/disk/by-path/pci-0000:00:0a.0-scsi-0:0:0:0"]
    found = [probe_targets(core, [name])[0][0].name for name in named]
    assert found == ["loop0", "loop0", "sda", "sda", "dm-1", "dm-1", "dm-1", "dm-1", "sda"]
    with pytest.raises(CachewiseError) as refused:
        probe_targets(core, ["sda", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"])
    assert refused.value.code == "same-device-two-paths"
    with pytest.raises(CachewiseError) as unknown:
        probe_targets(core, ["sdz"])
    assert unknown.value.code == "no-such-device"


@pytest.mark.parametrize(
    "slow", ["sda", "/dev/sda", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/disk/by-id/scsi-35000c500a1b2c3d4"]
)
@pytest.mark.parametrize("fast", ["nvme0n1", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"])
def test_recommend_takes_every_form(slow: str, fast: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--state-dir", str(tmp_path), "recommend", "--from-raw", str(LAB_SCAN / "raw-udev.json"),
              "--workload", "database", "--json"]
    assert main([*common, "--slow", "sda", "--fast", "nvme0n1"]) == 0
    by_kernel_name = json.loads(capsys.readouterr().out)
    assert main([*common, "--slow", slow, "--fast", fast]) == 0
    named = json.loads(capsys.readouterr().out)
    assert named["verdict"] == by_kernel_name["verdict"]
    assert named.get("config") == by_kernel_name.get("config")


@pytest.mark.parametrize("lv", ["labvg/data", "/dev/labvg/data", "/dev/mapper/labvg-data", "dm-1",
                                "/dev/disk/by-id/dm-name-labvg-data"])
@pytest.mark.parametrize("ssd", ["sdg", "/dev/disk/by-id/ata-LabSSD_SSD0001"])
def test_plan_takes_every_form(lv: str, ssd: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--state-dir", str(tmp_path), "plan", "lvmcache-attach", "--from-raw", str(LAB_SCAN / "raw-udev.json"),
                 "--lv", lv, "--ssd", ssd, "--size", "128m", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert any("labvg/data" in " ".join(step["argv"]) for step in plan["steps"])
