"""`cachewise probe` in a real guest: five disks classified by measurement (two lie about
being rotational), a never-written disk, a disk that vanishes mid-probe, bad inputs, and
every probed image byte-identical afterwards. One boot serves the module."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.vm.lab import HDD, NVME, SATA_SSD, GuestRun, Lab, LabDisk, LabPool, Scenario

FAST_ROTATIONAL = LabDisk("fastrot", "FASTROT1", "512M", "scsi", rotation_rate=7200)  # lies: says rotational
SLOW_FLAT = LabDisk("slowflat", "SLOWFLAT1", "512M", "scsi", rotation_rate=1, iops_limit=150)  # lies: says SSD
PROBED = [
    LabDisk(HDD.name, HDD.serial, "512M", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "512M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    LabDisk(NVME.name, NVME.serial, "512M", NVME.bus),
    FAST_ROTATIONAL,
    SLOW_FLAT,
]
EXPECTED = {"HDD0001": "hdd", "SSD0001": "ssd", "NVME0001": "nvme", "FASTROT1": "ssd", "SLOWFLAT1": "hdd"}
DISKS = [*PROBED, LabDisk("zero", "ZERO0001", "256M"), LabDisk("hot", "HOT0001", "256M", iops_limit=150)]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def fill_with_data(lab: Lab) -> dict[str, Any]:
    """Real data on every probed disk, so reads are not answered from holes; its hashes."""
    for disk in PROBED:
        with lab.image(disk).open("r+b") as fh:
            fh.write(os.urandom(512 << 20))
    return {"before": {d.serial: sha256(lab.image(d)) for d in PROBED}}


# Alone: each probe's duration is checked against its budget.
SCENARIO = Scenario("probe", "probe.sh", tuple(DISKS), timeout=1200, expected_s=250, alone=True,
                    prepare=fill_with_data)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> tuple[GuestRun, dict[str, str], dict[str, str]]:
    run = lab_pool.result(SCENARIO)
    before = run.prepared["before"]
    after = {d.serial: sha256(run.out.parent / f"{d.name}.img") for d in PROBED}
    keep = Path(__file__).parents[1] / "vm" / "last-probe-run"
    shutil.rmtree(keep, ignore_errors=True)
    shutil.copytree(run.out, keep)
    return run, before, after


def by_serial(run: GuestRun) -> dict[str, dict[str, Any]]:
    data = json.loads(run.read("probe.json"))
    out = {}
    for r in data["results"]:
        serial = "HDD0001" if r["identity"] == "wwn:0x5000c500a1b2c3d4" else r["identity"].split(":", 1)[1]
        out[serial] = r
    return out


def test_five_disks_classified_by_measurement(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    run, _, _ = guest
    found = by_serial(run)
    for serial, cls in EXPECTED.items():
        r = found[serial]
        print(serial, r["classification"], [(p["name"], p["lat_p50_ms"], p["iops"], p["mbps"]) for p in r["phases"]])
        assert r["classification"]["device_class"] == cls, f"{serial}: {r['classification']}"
        assert r["complete"] is True and len(r["phases"]) == 3
        assert r["zero_reads"] is False


def test_both_liars_are_flagged_and_honest_disks_are_not(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    found = by_serial(guest[0])
    assert "the kernel reports rotational, but it answers like an SSD" in found["FASTROT1"]["classification"]["disagreements"][0]
    assert "the kernel reports non-rotational, but it answers like a hard disk" in found["SLOWFLAT1"]["classification"]["disagreements"][0]
    for serial in ("HDD0001", "SSD0001", "NVME0001"):
        assert found[serial]["classification"]["disagreements"] == []


def test_each_probe_takes_at_most_ten_seconds(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    for serial, r in by_serial(guest[0]).items():
        print(f"{serial}: {r['seconds']} s")
        assert r["seconds"] <= 10.0


def test_probed_images_are_byte_identical(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    _, before, after = guest
    assert before == after


def test_never_written_disk_is_marked_possibly_optimistic(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    r = json.loads(guest[0].read("probe-zero.json"))["results"][0]
    assert r["zero_reads"] is True
    assert any("read back as zeros" in n and "optimistic" in n for n in r["notes"])


def test_vanishing_disk_reports_what_was_measured(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    run = guest[0]
    assert run.read("probe-vanish.rc").strip() == "1"
    data = json.loads(run.read("probe-vanish.json"))
    r = data["results"][0]
    assert r["complete"] is False and r["phases"], "the QD1 phase ran before the disk went"
    assert any("the device disappeared during the probe; measured before that: randread-qd1" in n for n in r["notes"])


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("nonexistent", "/dev/sdzz does not exist; nothing was probed."),
        ("notblock", "/etc/hostname is not a block device; nothing was probed."),
        ("mounted", "pass --yes to probe busy disks anyway; nothing was probed."),
        ("twice", "the same device is named twice; nothing was probed."),
        ("nofio", "fio is not installed"),
        ("notroot", "needs root"),
    ],
)
def test_bad_inputs_refuse_with_a_sentence(guest: tuple[GuestRun, dict[str, str], dict[str, str]], case: str, message: str) -> None:
    run = guest[0]
    assert run.read(f"bad-{case}.rc").strip() != "0"
    err = run.read(f"bad-{case}.err")
    assert message in err, err
    assert run.read(f"bad-{case}.out") == ""
    assert run.read("zero-before.sha") == run.read("zero-after.sha")


def test_results_are_in_history_with_fio_json(guest: tuple[GuestRun, dict[str, str], dict[str, str]]) -> None:
    rows = json.loads(guest[0].read("history-probes.json"))
    classes = {row["result"]["identity"]: row["device_class"] for row in rows}
    assert len(rows) >= 6 and set(classes.values()) >= {"hdd", "ssd", "nvme"}
    assert all(row["fio_version"].startswith("fio-") and row["fio"]["jobs"] for row in rows if row["result"]["complete"])
