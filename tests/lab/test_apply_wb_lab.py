"""Uncaching a writeback lvmcache while it holds dirty blocks, with a writer still running:
the flush's progress is shown and every checksum matches afterwards (real dm-cache)."""

from __future__ import annotations

import json
import re

import pytest

from tests.vm.lab import HDD, SATA_SSD, GuestRun, Lab, LabDisk


@pytest.fixture(scope="module")
def guest(lab_ready: None, tmp_path_factory: pytest.TempPathFactory) -> GuestRun:
    disks = [LabDisk(HDD.name, HDD.serial, "384M", HDD.bus, HDD.rotation_rate, None, HDD.wwn),
             LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model)]
    run = Lab(disks, workdir=tmp_path_factory.mktemp("lab-wb")).run("apply_wb.sh", timeout=900)
    log = (run.out / "scenario.log").read_text() if (run.out / "scenario.log").exists() else run.console[-4000:]
    print(f"lab writeback scenario: exit {run.returncode} in {run.seconds:.0f} s")
    assert run.returncode == 0, f"guest scenario failed:\n{log[-6000:]}"
    return run


def segtype(run: GuestRun, name: str) -> tuple[str, str]:
    row = next(r for r in json.loads(run.read(name))["report"][0]["lv"] if r["lv_name"] == "data")
    return row["segtype"], row["cache_mode"]


def test_uncache_from_writeback_with_dirty_blocks_keeps_every_checksum(guest: GuestRun) -> None:
    samples = [int(s) for s in guest.read("wb-dirty-samples.txt").split()]
    uncache = guest.read("wb-uncache.txt")
    print(samples, uncache)
    assert segtype(guest, "wb-attached-lvs.json") == ("cache", "writeback")
    assert max(samples) > 0, "dirty blocks existed when the uncache began"
    flushed = [int(n.replace(",", "")) for n in re.findall(r"… ([\d,]+) dirty blocks to write back", uncache)]
    assert flushed and max(flushed) > 0, "the flush's progress is shown while dirty blocks remain"
    assert "done" in uncache
    assert segtype(guest, "wb-uncached-lvs.json")[0] == "linear"
    assert guest.read("verify.txt").strip().endswith("ok")
