"""bcache writeback on empty disks through `cachewise plan` / `cachewise apply` (real bcache in
the guest): created, written with checksums, detached safely while dirty data exists, stopped;
the backing disk reads back the same checksums."""

from __future__ import annotations

import json

import pytest

from tests.vm.lab import GuestRun, Lab, LabDisk


@pytest.fixture(scope="module")
def guest(lab_ready: None, tmp_path_factory: pytest.TempPathFactory) -> GuestRun:
    disks = [LabDisk("bhdd", "BHDD0001", "256M", "scsi", rotation_rate=7200),
             LabDisk("bssd", "BSSD0001", "128M", "sata", rotation_rate=1)]
    run = Lab(disks, workdir=tmp_path_factory.mktemp("lab-bcache")).run("apply_bcache.sh", timeout=900)
    log = (run.out / "scenario.log").read_text() if (run.out / "scenario.log").exists() else run.console[-4000:]
    print(f"lab bcache scenario: exit {run.returncode} in {run.seconds:.0f} s")
    assert run.returncode == 0, f"guest scenario failed:\n{log[-6000:]}"
    return run


def test_bcache_writeback_on_empty_disks_detaches_safely_with_dirty_data(guest: GuestRun) -> None:
    print(guest.read("bc-preview.txt"), guest.read("bc-apply.err"), guest.read("bc-detach.txt"))
    result = json.loads(guest.read("bc-apply.json"))
    assert result["outcome"] == "done" and result["bcache_device"].startswith("/dev/bcache/by-uuid/")
    settings = guest.read("bc-settings.txt").split("\n")
    assert "[writeback]" in settings[0] and settings[1].strip() == "4.0M" and settings[2].strip() == "10"
    dirty = guest.read("bc-dirty-before.txt").split()
    assert dirty[0] not in ("0", "0.0k"), "the detach must start with dirty data"
    detach = guest.read("bc-detach.txt")
    assert "dirty data to write back" in detach, "flush progress is visible"
    assert guest.read("bc-state-after.txt").strip() == "no cache"
    assert guest.read("bc-verify.txt").strip().endswith("ok")
    assert guest.read("bc-verify-raw.txt").strip().endswith("ok"), "the backing disk itself holds the data"


