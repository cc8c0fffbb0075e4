"""The guided flows in the real TUI, in tmux, driven by keys only as a new user would (issue 15):
from the start screen to a working lvmcache on the Warm-up screen and back out through the Remove
flow with the flush counting down, and a bcache pair on empty disks likewise; every checksum
unchanged. Each screen the walk waited for is kept in test-artifacts/lab-tui-flow/."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.vm.lab import HDD, REPO, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario("tui-flow", "tui_flow.sh", (
    LabDisk(HDD.name, HDD.serial, "1G", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    # bcache's cache needs more than 512 buckets (recipes/bcache.py).
    LabDisk("bhdd", "BHDD0001", "384M", "scsi", rotation_rate=7200, iops_limit=300),
    LabDisk("bssd", "BSSD0001", "320M", "sata", rotation_rate=1)), timeout=1800, expected_s=415, paired=True)

ARTEFACTS = REPO / "test-artifacts" / "lab-tui-flow"


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    print(run.read("timeline.txt") if (run.out / "timeline.txt").exists() else run.log_tail())
    shutil.rmtree(ARTEFACTS, ignore_errors=True)
    ARTEFACTS.mkdir(parents=True)
    for path in run.out.glob("flow-*.txt"):
        shutil.copy(path, ARTEFACTS / path.name)
    return run


def shot(run: GuestRun, name: str) -> str:
    found = sorted(run.out.glob(f"flow-[0-9][0-9]-{name}.txt"))
    assert found, f"the walk never reached {name}: {sorted(p.name for p in run.out.glob('flow-*'))}\n{run.log_tail()}"
    return found[-1].read_text()


def said(run: GuestRun, name: str) -> str:
    """The screen's words with its lines joined: a sentence the terminal wrapped reads whole."""
    return " ".join(shot(run, name).split())


def test_the_walk_reached_every_screen_by_keys(guest: GuestRun) -> None:
    errors = guest.out / "flow-errors.txt"
    assert not errors.exists(), errors.read_text() + "\n" + guest.log_tail()
    assert guest.returncode == 0, guest.log_tail()
    assert "Add an SSD cache" in shot(guest, "start") and "Remove a cache" in shot(guest, "start")
    for name, step in (("add-slow", "step 1 of 7: Slow device"), ("add-fast", "step 2 of 7: Fast device"),
                       ("add-measure", "step 3 of 7: Measure"), ("add-workload", "step 4 of 7: Workload"),
                       ("add-recommend", "step 5 of 7: Recommendation"), ("add-preview", "step 6 of 7"),
                       ("add-warmup", "step 7 of 7: Warm-up"), ("remove-pick", "step 1 of 2: Cached device"),
                       ("remove-preview", "step 2 of 2"), ("bc-warmup", "step 7 of 7: Warm-up")):
        assert step in shot(guest, name), f"{name}:\n{shot(guest, name)}"
    # The probe measured both devices in the guest, by latency.
    measured = shot(guest, "add-measured")
    assert "hdd" in measured and "ssd" in measured, measured


def test_the_add_flow_made_a_writeback_lvmcache_that_warmed_up(guest: GuestRun) -> None:
    assert "Your choice instead: lvmcache (dm-cache) writeback" in shot(guest, "add-choice")
    # Planned with "Accept writeback risk" unticked, it was refused, naming the box; ticked, planned.
    refused = shot(guest, "add-refused")
    assert '"Accept writeback risk" if losing' in refused and "Nothing was changed" in refused, refused
    assert "Your choice instead: lvmcache (dm-cache) writeback" in shot(guest, "add-choice-accepted")
    preview = shot(guest, "add-preview")
    assert "Destroys" in preview and "labvg/data (dm-" in preview  # the name to type, as the screen names it
    assert guest.read("typed-names.txt").splitlines()[0] == "labvg/data"  # the name the preview shows
    warm = shot(guest, "add-warm")
    assert "Hit ratio" in warm and "Fill" in warm
    fill = re.search(r"Fill\s+([\d.]+)%", warm)
    assert fill and float(fill.group(1)) > 0, warm
    status = guest.read("status-dirty.txt").split()
    assert status[2] == "cache" and int(status[13]) > 0, status  # dirty blocks when the removal began


def test_the_remove_flow_flushed_with_a_countdown_and_kept_every_byte(guest: GuestRun) -> None:
    progress = "\n".join(shot(guest, f"remove-progress-{i}") for i in range(1, 7)) + shot(guest, "remove-done")
    assert re.search(r"[\d,]+ dirty blocks to write back", progress), progress
    assert "Esc goes back to the caches left" in said(guest, "remove-done")
    assert guest.read("sums-before.txt") == guest.read("sums-after.txt")
    assert "cache" not in guest.read("lvs-after.txt"), guest.read("lvs-after.txt")
    # The SSD was given back: out of the VG, no LVM label left.
    ssd = guest.read("ssd.txt").strip()
    assert ssd not in guest.read("pvs-after.txt").split(), guest.read("pvs-after.txt")
    assert "LVM2_member" not in guest.read("ssd-signatures-after.txt")
    assert "Nothing to choose here" in shot(guest, "remove-list-after")  # the list read the disks again


def test_a_bcache_pair_on_empty_disks_through_the_same_flows(guest: GuestRun) -> None:
    choice = shot(guest, "bc-choice")
    assert re.search(r"Backend\s+bcache", choice), choice
    assert "bcache" in shot(guest, "bc-warmup")
    assert guest.read("bc-sum-before.txt") == guest.read("bc-sum-after.txt")
    assert "no cache" in guest.read("bc-state-after.txt")
    assert "bcache" not in guest.read("bssd-signatures-after.txt")  # the cache SSD was wiped, given back
    assert "Esc goes back to the caches left" in said(guest, "bc-remove-done")
