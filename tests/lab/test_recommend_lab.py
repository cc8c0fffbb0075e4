"""`cachewise recommend` in a real guest: a recommendation for the lab's HDD and SSD from a
trace captured there, and real lvm2 accepting the recommended lvmcache configuration
(attached for real to a mounted ext4 LV, data read back unchanged)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from advisor.advice.lvmrules import lvm_chunk_size, lvm_metadata_size
from advisor.workload.traces import load_trace
from tests.unit.test_readme import guest_commands
from tests.vm.accuracy import counters, settled_after
from tests.vm.lab import HDD, NVME, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario("recommend", "recommend.sh", (
    LabDisk(HDD.name, HDD.serial, "3G", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "1G", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    LabDisk(NVME.name, NVME.serial, "256M", NVME.bus),  # NVMe: smartctl's output
    # The README's machine (its examples run as written, tests/unit/test_readme.py): sdb an HDD,
    # sdc and sdd SSDs large enough for its sizes (sparse images: only what is written takes space).
    LabDisk("rmhdd", "RMHDD1", "2T", "scsi", rotation_rate=7200, iops_limit=150),
    LabDisk("rmssd1", "RMSSD1", "128G", "scsi", rotation_rate=1),
    LabDisk("rmssd2", "RMSSD2", "128G", "scsi", rotation_rate=1)), timeout=2700, expected_s=700, paired=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def lvs(run: GuestRun, name: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(run.read(name))["report"][0]["lv"]
    return {r["lv_name"]: r for r in rows}


def kib(text: str) -> int:
    return int(round(float(text.rstrip("kK")) * 1024))


def test_recommendation_from_the_lab_trace(guest: GuestRun) -> None:
    rec = json.loads(guest.read("rec.json"))
    print(guest.read("rec.txt"))
    assert rec["schema"] == "cachewise.recommend/1"
    assert rec["curve"]["source"] == "trace"
    assert rec["inputs"]["device_classes"] == {
        "/dev/labvg/data": "hdd (probe)", rec["inputs"]["fast"][0]: "ssd (probe)"}
    # The data is on LVM with ext4 on a single SSD: lvmcache writethrough, in place.
    assert rec["verdict"] == "cache"
    cfg = rec["config"]
    assert (cfg["backend"], cfg["mode"], cfg["policy"]) == ("lvmcache", "writethrough", "smq")
    assert cfg["fast_space_bytes"] <= 1 << 30
    assert 0 < cfg["predicted_hit_ratio"] <= 1
    assert {"T-LVM-2", "T-SIZE-1", "M-META-1", "L-SIZE-4"} <= set(rec["findings"])
    declared = guest.read("rec.txt")  # --workload database, as text
    assert "Why" in declared and "modelled as database (random I/O)" in declared and "T-LVM-1" in declared


def hottest(offsets: np.ndarray[Any, Any], k: int = 100) -> set[int]:
    """The ``k`` offsets read most often."""
    values, counts = np.unique(offsets, return_counts=True)
    return {int(v) for v in values[np.argsort(-counts, kind="stable")[:k]]}


def test_the_prediction_holds_on_the_next_day_through_the_cache_made(guest: GuestRun) -> None:
    """Out of sample (issue 28): recommend predicted the read hit ratio from day 1's trace by
    replaying it through the smq simulator; days 2 and 3 ran the workload drawn afresh (other
    requests in another order, the same hot spot) through the recommended cache as lvm2 made
    it: day 2 warmed it from empty, and the kernel's read counters over day 3 must be within 0.10
    of the prediction (the out-of-sample suite's method, docs/accuracy.md)."""
    # The days are not day 1 again: fio's own logs differ request by request, and share their
    # hottest blocks. (fio 3.33's offsets did not change with --randseed: with a seed for each
    # day, day 2 had repeated day 1's requests in the same order.)
    day1, day2, day3 = (load_trace(guest.out / f"day{n}.iolog").requests["offset"] for n in (1, 2, 3))
    for other in (day2, day3):
        n = min(len(day1), len(other), 2000)
        assert n > 1000 and np.mean(day1[:n] == other[:n]) < 0.2
        assert len(hottest(day1) & hottest(other)) >= 50
    rec = json.loads(guest.read("rec.json"))
    cfg = rec["config"]
    assert "K-SMQ-1" in rec["findings"], "the prediction came from the smq replay (day 1 settled)"
    samples = guest.out / "day2.samples"
    kernel, kernel_63, _ = settled_after(samples, "dmcache", float(guest.read("day3.start")))
    times, hits, misses = counters(samples, "dmcache")
    predicted_63 = (cfg.get("warmup") or {}).get("simulated_seconds_63")
    print(f"predicted {cfg['predicted_hit_ratio']:.3f}, kernel {kernel:.3f} on day 3, {times[-1]:.0f} s and "
          f"{int(hits[-1] - hits[0] + misses[-1] - misses[0]):,} reads from the cache's making; 63% of it after "
          f"{predicted_63} s predicted, {kernel_63} s observed")
    assert times[-1] > 90 and hits[-1] - hits[0] + misses[-1] - misses[0] > 3000
    assert abs(cfg["predicted_hit_ratio"] - kernel) <= 0.10
    # The time to 63% is shown, not held to 2x here: fio reads back to back, so through the cache it
    # ran about 7 times faster than on the disk it was traced on, and smq's promotions follow its
    # once-a-second ticks: the kernel reached 63% in 7.5 s where the replay at the traced rate took
    # 20 s (docs/recommend.md).


def test_lvm2_accepts_the_recommended_configuration(guest: GuestRun) -> None:
    cfg = json.loads(guest.read("rec.json"))["config"]
    after = lvs(guest, "lvs-after.json")
    print(after)
    assert after["data"]["segtype"] == "cache"
    assert after["data"]["cache_mode"] == cfg["mode"] and after["data"]["cache_policy"] == cfg["policy"]
    assert kib(after["data"]["chunk_size"]) == cfg["chunk_size_bytes"]
    pool = after["[cwcache_cpool]"] if "[cwcache_cpool]" in after else after["[cwcache]"]
    assert kib(pool["lv_size"]) == cfg["size_bytes"]
    assert kib(pool["lv_metadata_size"]) == cfg["metadata_size_bytes"]
    assert " cache " in guest.read("dm-status.txt")
    assert guest.read("sha-before.txt").split()[0] == guest.read("sha-after.txt").split()[0]


def test_our_chunk_and_metadata_rules_match_lvm2s_own_choice(guest: GuestRun) -> None:
    default = lvs(guest, "lvm-default.json")["cwdefault"]
    size = kib(default["lv_size"])
    print(default)
    assert kib(default["chunk_size"]) == lvm_chunk_size(size)
    assert kib(default["lv_metadata_size"]) == lvm_metadata_size(size, lvm_chunk_size(size))


def test_bad_inputs_say_nothing_changed(guest: GuestRun) -> None:
    assert "/dev/nonexistent is not a block device on this machine" in guest.read("bad-missing.err")
    assert "the same device is named twice" in guest.read("bad-twice.err")
    assert "--workload TYPE" in guest.read("bad-noworkload.err")
    for name in ("bad-missing.err", "bad-twice.err", "bad-noworkload.err"):
        assert "Nothing was changed." in guest.read(name)


def test_the_safety_gate_refuses_zfs_and_bcachefs_members_on_the_real_machine(guest: GuestRun) -> None:
    """Issue 26: discovery's facts reach the recommendation and the plan: a ZFS pool member gets
    "don't cache" with L2ARC named, and a bcachefs member (which the guest's blkid does not know)
    is refused as the SSD whatever --wipe allows, its bytes untouched."""
    print(guest.read("rec-zfs.err"), guest.read("plan-bcachefs.err"))
    rec = json.loads(guest.read("rec-zfs.json"))
    assert (rec["verdict"], rec["cause"], rec["config"]) == ("dont-cache", "gate", None)
    assert "L2ARC" in rec["summary"] and "owned-by-other-system" in {g["code"] for g in rec["gate"]}
    assert not [o for o in rec["runner_ups"] if o["config"]], "nothing offered"
    err = guest.read("plan-bcachefs.err")
    assert err.strip().endswith("rc 1") and "bcachefs member" in err and "Nothing was changed." in err
    assert guest.read("bcachefs-before.txt").split()[0] == guest.read("bcachefs-after.txt").split()[0]


def readme_runs(run: GuestRun) -> dict[str, dict[str, str]]:
    """The README's commands the guest ran: text, output, exit code, and how each ended."""
    runs = {}
    for cmd in sorted((run.out / "readme").glob("*.cmd"), key=lambda p: int(p.stem)):
        n = cmd.stem
        files = {k: (run.out / "readme" / f"{n}.{k}") for k in ("out", "rc", "how")}
        runs[cmd.read_text().rstrip("\n")] = {k: f.read_text().strip() if f.exists() else "" for k, f in files.items()}
    return runs


def test_the_readme_disks_have_the_readme_names(guest: GuestRun) -> None:
    names = dict(line.split(" ", 1) for line in guest.read("readme-names.txt").splitlines() if " " in line)
    print(names)
    assert (names.get("sdb"), names.get("sdc"), names.get("sdd")) == ("RMHDD1", "RMSSD1", "RMSSD2")


def test_every_readme_example_runs_as_written_in_the_guest(guest: GuestRun) -> None:
    """Every README command that needs root or the disks ran word for word (sudo stripped), exited 0
    (130 where Ctrl-C ended a watch, as the README says it does), without a traceback."""
    runs = readme_runs(guest)
    for command, r in runs.items():
        print(f"$ {command}\n  -> rc {r['rc']} {r['how']}\n{r['out'][-1500:]}")
    assert sorted(runs) == sorted(guest_commands()), "the guest ran exactly the README's guest commands"
    timeouts = guest.out / "readme-wait-timeouts.txt"
    assert not timeouts.exists(), f"waited in vain for: {timeouts.read_text()}"
    for command, r in runs.items():
        ended_by_ctrl_c = r["how"] == "ctrl-c"
        expected = {"0", "130"} if ended_by_ctrl_c and " watch " in command else {"0"}
        assert r["rc"] in expected, f"{command!r} exited {r['rc']}: {r['out'][-2000:]}"
        assert "Traceback" not in r["out"], command
    files = guest.read("readme-files.txt")
    for name in ("data.cwtrace", "rec.json", "attach.json", "before.json", "new.json", "bc.json", "m.json", "wc.json",
                 "attach.yml", "uncache.json", "mode.json", "rm.json", "detach.json"):
        assert f" {name}\n" in files, f"{name} was not written: {files}"


def test_the_readme_story_on_its_machine(guest: GuestRun) -> None:
    """What the examples say they do, on the README's machine: the probe tells the HDD from the SSD,
    the trace feeds the recommendation for the same LV, the attach makes an lvmcache the watch and
    status commands see, a crashed uncache is resumed, a crashed attach abandoned by the journal's
    README name, and bcache0 is found clean."""
    runs = readme_runs(guest)
    out = {c: r["out"] for c, r in runs.items()}
    probe = out["sudo cachewise probe /dev/sdb /dev/sdc"]
    assert "in use" in probe and "hdd" in probe.lower() and "ssd" in probe.lower(), probe
    rec = json.loads((guest.out / "readme-cwd" / "rec.json").read_text())
    assert rec["curve"]["source"] == "trace" and rec["config"]["backend"] == "lvmcache", rec["summary"]
    assert "/dev/vg0/data" in rec["inputs"]["device_classes"]
    attached = {r["lv_name"]: r for r in json.loads(guest.read("readme-lvs-attached.json"))["report"][0]["lv"]}
    assert attached["data"]["segtype"] == "cache" and attached["data"]["cache_mode"] == rec["config"]["mode"]
    assert "done" in out["sudo cachewise apply attach.json"]
    assert "before" in out["sudo cachewise replay data.cwtrace --target /dev/vg0/data --label after --compare before.json"]
    assert "vg0/data" in out["sudo cachewise status"]
    assert "cachewise_cache_info" in guest.read("readme.prom")
    assert "Hit ratio" in out["sudo cachewise tui --watch vg0/data"]
    resumed = {r["lv_name"]: r for r in json.loads(guest.read("readme-lvs-resumed.json"))["report"][0]["lv"]}
    assert resumed["data"]["segtype"] == "linear", "the resumed uncache finished"
    assert "Abandoned" in out[next(c for c in out if "--abandon" in c)]
    assert "clean" in out["sudo cachewise watch bcache0 --until-clean"]
