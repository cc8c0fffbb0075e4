"""`cachewise plan` and `cachewise apply` against real lvm2, dm-cache and bcache in the guest:
data checksums survive a writethrough cache and its removal, a SIGKILL after any step resumes
or rolls back cleanly, and bad inputs change no byte on any disk. Writeback lvmcache with
dirty blocks: test_watch_lab.py; bcache and Ansible: test_apply_bcache_ansible_lab.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.vm.lab import HDD, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario, soak

EXPECTED_BAD = {
    "nonexistent-ssd": "/dev/nonexistent is not a block device",
    "partition-not-disk": "is a partition, and a whole disk is expected",
    "mounted-target": "is mounted",
    "has-filesystem": "holds data (ext4)",
    "same-device-twice": "is the slow device itself",
    "ssd-too-small": "is too small",
    "other-vg": "is a physical volume of another VG (othervg)",
    "not-an-lv": "is not a logical volume",
    "shell-metachar-lv": "is not a logical volume",
    "shell-metachar-ssd": "is not a block device",
    "bad-size": "not a size",
    "bad-chunk": "not a multiple of 32 KiB",
    "not-lvmcache-recommendation": "is not an lvmcache",
    "output-exists": "already exists",
    "uncache-not-cached": "is not cached",
    "changed-size": "the devices changed since the plan was made",
    "changed-identity": "is now a different device",
    "corrupt-plan": "is incomplete or damaged",
    "truncated-plan": "not valid JSON",
    "garbage-plan": "not valid JSON",
    "newer-schema": "newer than this cachewise understands",
    "missing-plan": "cannot read the plan",
    "no-yes-no-tty": "pass --yes",
    "not-root": "needs root",
    "missing-tool": "is not installed (apt-get install lvm2)",
    "nothing-to-resume": "no interrupted plan",
    # Tampered plans: the refusal names what was tampered with.
    "tamper-rm": "rm is not a program cachewise plans run",
    "tamper-sh": "sh is not a program cachewise plans run",
    "tamper-path": "names a program by path",
    "tamper-unbound": "names a device the plan is not bound to",
    "tamper-undo": "its undo command is refused",
    "tamper-identity": "has no identity",
    "tamper-twice": "twice",
    "tamper-write": "takes no such value",
    # Role-confused and unbound plans: refused when read, whatever their steps claim to be.
    "tamper-role": "is not a wipefs command a cachewise recipe writes in a lvmcache-attach plan",
    "tamper-otherlv": "names the LV othervg/keep, which is neither the plan's origin nor one the plan creates",
    "tamper-othervg": "names the VG othervg",
}


# No IOPS limit here: this scenario checks data, not speed, and hashes whole disks twice.
SCENARIO = Scenario("apply", "apply_lvm.sh", (
    LabDisk(HDD.name, HDD.serial, "384M", HDD.bus, HDD.rotation_rate, None, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    LabDisk("part", "PART0001", "256M"), LabDisk("other", "OTHER0001", "128M")), timeout=7200 if soak() else 2400, expected_s=440, paired=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def lvs(run: GuestRun, name: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(run.read(f"{name}-lvs.json"))["report"][0]["lv"]
    return {f"{r['vg_name']}/{r['lv_name'].strip('[]')}": r for r in rows}


def pv_vgs(run: GuestRun, name: str) -> dict[str, str]:
    rows = json.loads(run.read(f"{name}-pvs.json"))["report"][0]["pv"]
    return {r["pv_name"]: r["vg_name"] for r in rows}


def ks(run: GuestRun, name: str) -> list[int]:
    """The steps a crash loop stopped at: every step in the soak run, a resume and a roll back
    (or an abandon) otherwise."""
    return [int(k) for k in run.read(name).split()]


@pytest.mark.soak
def test_soak_crash_tests_stop_at_every_step(guest: GuestRun) -> None:
    if not soak():
        pytest.skip("every step is crash-tested in the soak run: CACHEWISE_SOAK=1 pytest -m lab tests/lab")
    steps = len(json.loads(guest.read("crash.json"))["steps"])
    assert ks(guest, "crash-ks.txt") == ks(guest, "term-ks.txt") == list(range(1, steps + 1))


def verified(run: GuestRun, name: str) -> bool:
    return run.read(f"verify-{name}.txt").strip().endswith("ok")


def test_bad_inputs_explain_and_leave_every_disk_byte_identical(guest: GuestRun) -> None:
    results = {r["name"]: r for r in json.loads(guest.read("bad-inputs.json"))}
    print(guest.read("bad-inputs.log"))
    expected = dict(EXPECTED_BAD)  # a missing kernel module: tests/unit/test_execute.py
    assert set(expected) <= set(results)
    assert len(expected) >= 20
    for name, text in expected.items():
        r = results[name]
        assert r["rc"] != 0, name
        assert text in r["stderr"], f"{name}: {r['stderr']}"
        assert "Nothing was changed." in r["stderr"] or "nothing was" in r["stderr"].lower(), f"{name}: {r['stderr']}"
        assert "Traceback" not in r["stderr"], name
    assert guest.read("disks-before.txt") == guest.read("disks-after.txt")


def test_writethrough_attach_workload_and_uncache_keep_every_checksum(guest: GuestRun) -> None:
    print(guest.read("wt-preview.txt"))
    attached = lvs(guest, "wt-attached")
    assert attached["labvg/data"]["segtype"] == "cache" and attached["labvg/data"]["cache_mode"] == "writethrough"
    assert verified(guest, "wt-cached")
    assert lvs(guest, "wt-uncached")["labvg/data"]["segtype"] == "linear"
    assert all(vg != "labvg" or "SSD" not in pv for pv, vg in pv_vgs(guest, "wt-uncached").items())
    assert verified(guest, "wt-uncached")
    assert "done" in guest.read("wt-apply.txt") and "done" in guest.read("wt-uncache.txt")


def test_sigkill_after_each_step_resumes_or_rolls_back(guest: GuestRun) -> None:
    steps = len(json.loads(guest.read("crash.json"))["steps"])
    assert steps == 6
    for k in ks(guest, "crash-ks.txt"):
        after = guest.read(f"crash-{k}-after.txt")
        print(f"--- killed after step {k}\n{after}")
        assert after.strip().endswith("rc 0"), after
        state = lvs(guest, f"crash-{k}-after")
        if k % 2:
            assert state["labvg/data"]["segtype"] == "cache", f"resume after step {k} completes the attach"
        else:
            assert state["labvg/data"]["segtype"] == "linear"
            assert not any(name.startswith("labvg/data_cache") for name in state), f"rollback after step {k}"
        assert verified(guest, f"crash-{k}")
    audit = guest.read("audit.log")
    assert "lvconvert --yes --type cache --cachepool labvg/data_cache labvg/data" in audit


def test_sigterm_during_each_step_stops_between_steps_and_resume_rollback_or_abandon_completes(guest: GuestRun) -> None:
    steps = len(json.loads(guest.read("crash.json"))["steps"])
    before = guest.read("dm-before-term.txt")
    for k in ks(guest, "term-ks.txt"):
        stopped = guest.read(f"term-{k}-apply.txt")
        events = [json.loads(line)["event"] for line in guest.read(f"term-{k}-journal.jsonl").splitlines() if line]
        print(f"--- SIGTERM during step {k}\n{stopped}")
        assert "Traceback" not in stopped
        if k < steps:
            assert "received SIGTERM and stopped between steps" in stopped and stopped.strip().endswith("rc 1")
            assert events.count("step-end") == k and events[-1] == "interrupted", events
        else:  # the last step finished, and with it the plan
            assert events[-1] == "done" and stopped.strip().endswith("rc 0")
        after = guest.read(f"term-{k}-after.txt")
        assert after.strip().endswith("rc 0"), after
        state = lvs(guest, f"term-{k}-after")
        if k == 3:
            assert "Abandoned" in after
        elif k % 2 and k < steps:
            assert state["labvg/data"]["segtype"] == "cache", f"resume after SIGTERM in step {k} completes the attach"
        elif k < steps:
            assert state["labvg/data"]["segtype"] == "linear"
            assert not any(name.startswith("labvg/data_cache") for name in state), f"rollback after step {k}"
        assert guest.read(f"dm-after-term-{k}.txt") == before, "no device-mapper device is left behind"
    assert verified(guest, "term")


def test_a_crash_mid_record_then_abandon_leaves_nothing_pending(guest: GuestRun) -> None:
    """The journal's last record was cut off by a crash; abandoning appends the decision on a line
    of its own, so it is read back and no plan is left to resume."""
    abandon = guest.read("torn-abandon.txt")
    print(abandon)
    assert "Abandoned" in abandon and abandon.strip().endswith("rc 0"), abandon
    lines = guest.read("torn-journal.jsonl").splitlines()
    assert lines[-2].endswith('"event": "step-be') and json.loads(lines[-1])["event"] == "abandoned", lines[-3:]
    resume = guest.read("torn-resume.txt")
    assert "there is no interrupted plan to resume" in resume and resume.strip().endswith("rc 1"), resume
    assert verified(guest, "torn")
