"""A plan's initramfs step against Debian's initramfs-tools (issue 29): a dm-writecache on an LV
whose file system the initramfs mounts (x-initrd.mount). Apply refuses it while initramfs-tools
would leave dm-writecache out (the fix named), then, with that fixed, attaches the cache, makes
the image again and checks with lsinitramfs that it carries dm-writecache; the data is intact.
The guest boots without an initramfs, so the image is inspected, not booted. Long (the image is
made under emulation): the soak run only (`CACHEWISE_SOAK=1`, the README's soak command)."""

from __future__ import annotations

import json

import pytest

from tests.vm.lab import GuestRun, LabDisk, LabPool, Scenario, soak

if not soak():
    pytest.skip("the soak run only (CACHEWISE_SOAK=1)", allow_module_level=True)

SCENARIO = Scenario(
    "initramfs",
    "initramfs.sh",
    (LabDisk("irhdd", "IRHDD01", "512M", rotation_rate=7200), LabDisk("irssd", "IRSSD01", "256M", rotation_rate=1)),
    timeout=3600,
    expected_s=600,
    paired=True,  # one vCPU beside another soak or paired guest
)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def test_the_plan_ends_with_the_initramfs_step(guest: GuestRun) -> None:
    print(guest.read("versions.txt"))
    plan = json.loads(guest.read("wc.json"))
    assert plan["steps"][-1]["argv"] == ["update-initramfs", "-u", "-k", "all"], guest.read("wc-preview.txt")
    assert "needed at boot" in guest.read("wc-preview.txt")


def test_apply_refuses_while_the_image_would_lack_dm_writecache_and_changes_nothing(guest: GuestRun) -> None:
    refused = guest.read("refused.txt")
    print(refused)
    assert not refused.strip().endswith("rc 0")
    assert "/etc/initramfs-tools/modules" in refused and "dm-writecache" in refused
    assert guest.read("segtype-after-refusal.txt").strip() == "linear", "nothing was changed"
    assert "dm-writecache" not in guest.read("image-before.txt"), "Debian's image lacks it (MODULES=most)"


def test_with_the_fix_the_image_is_made_again_and_carries_dm_writecache(guest: GuestRun) -> None:
    applied = guest.read("apply.txt")
    print(applied)
    start, end = map(float, guest.read("apply-seconds.txt").split())
    print(f"apply with the initramfs step: {end - start:.0f} s")
    assert applied.strip().endswith("rc 0")
    assert "update-initramfs -u -k all" in applied
    assert int(guest.read("image-mtime-after.txt")) > int(guest.read("image-mtime-before.txt"))
    assert "dm-writecache.ko" in guest.read("image-after.txt")
    (journal,) = [p for p in guest.out.glob("*.jsonl")]
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    ends = {r["step"]: r["returncode"] for r in records if r["event"] == "step-end"}
    assert ends.get("initramfs") == 0, ends
    lvs = json.loads(guest.read("lvs.json"))["report"][0]["lv"]
    assert [r["segtype"] for r in lvs if r["lv_name"] == "data"] == ["writecache"]
    assert guest.read("verify.txt").strip().endswith("ok"), guest.read("verify.txt")
