"""A dead cache SSD, for each backend, and the way out, against the real kernel (issue 29):
lvmcache writethrough, dm-writecache and bcache writethrough lose their SSD under load, and a
mirrored writeback pool one of its two; `status --json` says so at once; the rescue plans run
with `cachewise apply` and every file's sha256 is the same on the origin; the mirror is repaired
onto a third SSD. Measured behaviour: docs/dead-ssd.md."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from tests.vm.lab import HDD, GuestRun, LabDisk, LabPool, Scenario

SSDS = ("SSDA001", "SSDC001", "SSDD001", "SSDE001", "SSDF001", "SSDF002", "SSDF003")
SCENARIO = Scenario(
    "deadssd",
    "deadssd.sh",
    (
        LabDisk(HDD.name, HDD.serial, "3G", HDD.bus, HDD.rotation_rate, 150, HDD.wwn),
        *(LabDisk(s.lower(), s, "384M" if s == "SSDD001" else "192M", rotation_rate=1) for s in SSDS),
    ),
    timeout=1200,
    expected_s=380,
    paired=True,
)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def caches(run: GuestRun, name: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in json.loads(run.read(name))["caches"]}


def verified(run: GuestRun, name: str) -> bool:
    return run.read(f"{name}-verify.txt").strip().endswith("ok")


def applied(run: GuestRun, name: str) -> str:
    log = run.read(f"{name}-apply.txt")
    print(log)
    assert log.strip().endswith("rc 0"), f"the {name} plan did not run through"
    return log


def test_status_reports_each_failure_at_once(guest: GuestRun) -> None:
    print(guest.read("pulls.txt"))
    print(guest.read("status.txt"))
    before, after = caches(guest, "status-before.json"), caches(guest, "status.json")
    assert all(c["sample"]["state"] in ("ok", "dirty", "clean") for c in before.values())
    dm = after["vga/data"]["sample"]
    assert dm["state"] == "failed" and "fail mode" in dm["trouble"] and "nothing is lost" in dm["trouble"]
    assert dm["missing"], "the SSD that is gone is named"
    wc = after["vgc/data"]["sample"]
    assert wc["state"] == "failed" and "dm-writecache stopped on an I/O error" in wc["trouble"]
    (bcache,) = [c for n, c in after.items() if c["kind"] == "bcache"]
    assert bcache["sample"]["state"] == "failed" and "cache set" in bcache["sample"]["trouble"]
    mirror = after["vgf/data"]["sample"]
    assert mirror["state"] == "degraded" and "repair the mirror" in mirror["trouble"]


def test_doctor_names_each_pulled_ssd_with_its_way_out(guest: GuestRun) -> None:
    print(guest.read("doctor.txt"))
    data = json.loads(guest.read("doctor.json"))
    found = {(f["code"], f["subject"]): f for f in data["findings"]}
    for lv in ("vga/data", "vgc/data"):
        failed = found.get(("cache-failed", lv))
        assert failed is not None and failed["severity"] == "critical", sorted(found)
        assert failed["fix"] and (failed["fix"]["plan"] or failed["fix"]["command"]), failed
    assert any(code == "cache-failed" and subject.startswith("bcache") for code, subject in found), sorted(found)
    degraded = found.get(("cache-degraded", "vgf/data"))
    assert degraded is not None and "repair" in json.dumps(degraded["fix"]), sorted(found)
    assert guest.read("doctor.rc").strip() == "2"


def test_lvmcache_writethrough_is_rescued_with_nothing_lost(guest: GuestRun) -> None:
    preview = guest.read("a-preview.txt")
    assert "Rescue vga/data" in preview and "nothing is lost" in preview
    applied(guest, "a")
    assert verified(guest, "a"), guest.read("a-verify.txt")
    (lv,) = [r for r in json.loads(guest.read("a-lvs.json"))["report"][0]["lv"] if r["lv_name"] == "data"]
    assert lv["lv_attr"].startswith("-wi-a"), "a plain LV again, active"


def test_writecache_rescue_names_the_loss_then_keeps_what_the_origin_had(guest: GuestRun) -> None:
    refused = guest.read("c-refused-preview.txt")
    print(refused)
    assert not refused.strip().endswith("rc 0") and "--accept-data-loss" in refused
    assert "lacks every block written since the writecache last wrote back" in refused
    log = applied(guest, "c")
    assert "lost" in log, "the loss is named again as the rescue runs"
    assert verified(guest, "c"), guest.read("c-verify.txt")  # written before the attach: on the origin


def test_bcache_writethrough_is_rescued_and_comes_back_after_a_restart(guest: GuestRun) -> None:
    assert "nothing is lost" in guest.read("d-preview.txt")
    applied(guest, "d")
    assert verified(guest, "d"), guest.read("d-verify.txt")
    assert re.search(r"cache_state\s+3", guest.read("d-super.txt")), "the superblock says it runs without a cache"
    running, state = guest.read("d-restarted.txt").split("\n")[:2]
    assert running == "1" and state == "inconsistent", "registered again, it started by itself"
    assert verified(guest, "d-restarted")


def test_a_degraded_mirror_is_repaired_onto_a_new_ssd_before_any_removal(guest: GuestRun) -> None:
    refused = guest.read("f-remove-preview.txt")
    assert "cache-repair" in refused and not refused.strip().endswith("rc 0")
    applied(guest, "f")
    rows = {r["lv_name"].strip("[]"): r for r in json.loads(guest.read("f-lvs.json"))["report"][0]["lv"]}
    assert all(r["lv_attr"][8] != "p" for r in rows.values()), "no part of the cache is on a missing PV"
    assert "data_cache_cpool_cdata" in rows and rows["data"]["lv_health_status"] == ""
    assert verified(guest, "f")
    after = caches(guest, "status-after.json")
    assert after["vgf/data"]["sample"]["trouble"] == ""


def test_a_cached_lv_lvm2_will_not_activate_is_named_and_rescued_with_nothing_lost(guest: GuestRun) -> None:
    """As after a reboot with the SSD dead: lvm2 refuses the partial LV, so it is no block device;
    scan and doctor still name it, and the rescue takes its cache off as it is, then activates it."""
    assert guest.read("e-deactivate.txt").strip().endswith("rc 0"), guest.read("e-deactivate.txt")
    print(guest.read("e-vgchange.txt"))
    (row,) = [r for r in json.loads(guest.read("e-inactive-lvs.json"))["report"][0]["lv"] if r["lv_name"] == "data"]
    assert row["lv_attr"][4] != "a" and row["lv_attr"][8] == "p", f"vge/data is active or complete: {row}"
    inv = build_inventory(RawSystem.load(guest.out / "e-inactive-raw.json"))
    assert [(lv.name, lv.partial, lv.mode) for lv in inv.inactive] == [("vge/data", True, "writethrough")]
    assert "vge/data is gone" in guest.read("scan.txt") and "nothing is lost" in guest.read("scan.txt")
    found = {(f["code"], f["subject"]): f for f in json.loads(guest.read("doctor.json"))["findings"]}
    failed = found.get(("cache-failed", "vge/data"))
    assert failed is not None and failed["fix"]["plan"] == "remove", sorted(found)
    preview = guest.read("e-preview.txt")
    assert "Rescue vge/data" in preview and "nothing is lost" in preview, preview
    applied(guest, "e")
    assert verified(guest, "e"), guest.read("e-verify.txt")
    (lv,) = [r for r in json.loads(guest.read("e-lvs.json"))["report"][0]["lv"] if r["lv_name"] == "data"]
    assert lv["lv_attr"].startswith("-wi-a"), "a plain LV again, active"
    (origin,) = json.loads(guest.read("e-plan.json"))["devices"]
    assert origin["identity"] == f"lv-uuid:{lv['lv_uuid']}", "the uncache keeps the LV's UUID: a resume finds it"
