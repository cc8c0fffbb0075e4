"""The probe: fio command line, parsing and classification over fio JSON captured in the lab,
and every bad input refused with a sentence before anything runs."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from advisor.disks.probe import (
    PHASES,
    PhaseResult,
    ProbeError,
    ProbeResult,
    check_target,
    classify,
    fio_argv,
    parse_fio,
)
from advisor.history import DB_NAME, History
from cachewise.cli import main
from tests.conftest import FIXTURES, cli_words

LAB_PROBE = FIXTURES / "lab-probe"
DEVICES: dict[str, dict[str, Any]] = json.loads((LAB_PROBE / "devices.json").read_text())
PROBED = [s for s, d in DEVICES.items() if d["truth"] in ("hdd", "ssd", "nvme")]


def phases(serial: str) -> list[PhaseResult]:
    return parse_fio(json.loads((LAB_PROBE / f"fio-{serial}.json").read_text()))


@pytest.mark.parametrize("serial", PROBED)
def test_classifier_matches_what_the_lab_disk_is(serial: str) -> None:
    facts = DEVICES[serial]
    result = classify(phases(serial), facts["kernel_rotational"], facts["transport"])
    assert result.device_class == facts["truth"], result.reason
    assert result.confidence == "high"


def test_liars_are_flagged_with_the_reason() -> None:
    fast = classify(phases("FASTROT1"), True, "scsi")
    assert fast.device_class == "ssd"
    assert fast.disagreements == (
        "the kernel reports rotational, but it answers like an SSD; USB bridges and RAID controllers often "
        "report this wrongly",
    )
    slow = classify(phases("SLOWFLAT1"), False, "scsi")
    assert slow.device_class == "hdd" and "the kernel reports non-rotational, but it answers like a hard disk" in slow.disagreements[0]
    assert classify(phases("HDD0001"), True, "scsi").disagreements == ()


def test_reasons_quote_the_measurement() -> None:
    hdd = classify(phases("HDD0001"), True, "scsi")
    p50 = next(p for p in phases("HDD0001") if p.name == "randread-qd1").lat_p50_ms
    assert p50 is not None and 4.0 < p50 < 10.0
    assert hdd.reason == f"random 4 KiB reads take {p50:.1f} ms at the median: seek-bound, a hard disk"


def test_parse_fio_reads_every_phase() -> None:
    got = phases("NVME0001")
    assert [p.name for p in got] == [p.name for p in PHASES]
    assert all(p.ios > 0 and p.iops > 0 for p in got)
    assert got[0].lat_p50_ms is not None and got[0].lat_p99_ms is not None and got[0].lat_p99_ms >= got[0].lat_p50_ms


def test_unknown_when_nothing_completed_or_latency_is_ambiguous() -> None:
    assert classify([], None, None).device_class == "unknown"
    middling = PhaseResult("randread-qd1", 500, 800.0, 3.2, 1.2, 1.5, 2.0, 1000)
    verdict = classify([middling], False, "sata")
    assert verdict.device_class == "unknown" and "too slow for flash, too fast for a seeking disk" in verdict.reason


@pytest.mark.parametrize(("qd32_iops", "expected"), [(3600.0, "ssd"), (1300.0, "unknown")])
def test_ambiguous_latency_is_decided_by_parallelism(qd32_iops: float, expected: str) -> None:
    """1.07 ms at depth 1 (flash under a slow emulated controller, measured in the lab) is
    flash when depth 32 serves several times the IOPS; a seeking disk gains about 2x at most."""
    qd1 = PhaseResult("randread-qd1", 2000, 900.0, 3.5, 1.07, 1.4, 2.5, 2200)
    qd32 = PhaseResult("randread-qd32", 4000, qd32_iops, 14.0, 8.0, 12.0, 20.0, 1500)
    verdict = classify([qd1, qd32], True, "scsi")
    assert verdict.device_class == expected
    if expected == "ssd":
        assert verdict.confidence == "low" and "as only flash does" in verdict.reason
        assert "the kernel reports rotational, but it answers like an SSD" in verdict.disagreements[0]
    else:
        assert "too slow for flash, too fast for a seeking disk" in verdict.reason


def test_zero_reads_lower_confidence() -> None:
    assert classify(phases("SSD0001"), False, "sata", zero_reads=True).confidence == "medium"


def test_fio_command_is_read_only_one_device_per_job() -> None:
    argv = fio_argv("/dev/sdx", 512 << 30, 4.5, "/tmp/out.json")
    assert argv[:2] == ["fio", "--readonly"]
    assert argv.count("--filename=/dev/sdx") == len(PHASES) == argv.count("--ioengine=libaio") == argv.count("--direct=1")
    assert argv.count("--stonewall") == len(PHASES) - 1
    assert not any("write" in a or a.startswith("--rw=rw") or a.startswith("--rw=randrw") for a in argv)
    # Sequential reads spread over the whole disk: 16 zones of a 512 GiB disk.
    assert "--zonemode=strided" in argv and f"--zonerange={(512 << 30) // 16}" in argv
    runtimes = [int(a.split("=")[1].removesuffix("ms")) for a in argv if a.startswith("--runtime=")]
    assert sum(runtimes) == 4500


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_nonexistent_path_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "/dev/does-not-exist"]) == 1
    assert "cachewise: /dev/does-not-exist does not exist; nothing was probed." in capsys.readouterr().err


def test_regular_file_is_refused_and_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "disk.img"
    target.write_bytes(b"data" * 4096)
    before = sha(target)
    assert main(["probe", str(target)]) == 1
    assert f"{target} is not a block device; nothing was probed." in capsys.readouterr().err
    assert sha(target) == before


def test_unreadable_device_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    node = next(p for p in ("/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1") if Path(p).exists())
    monkeypatch.setattr("os.access", lambda path, mode: False)
    with pytest.raises(ProbeError) as err:
        check_target(node)
    assert re.search("needs root .*nothing was probed. Run it with sudo", cli_words(err.value))


def test_missing_fio_is_named_with_its_package(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("advisor.runner.CommandRunner._path", lambda self: "/nonexistent")
    assert main(["probe", "/dev/does-not-matter"]) == 1
    assert "fio is not installed, so the probe cannot run; install the fio package (apt-get install fio). Nothing was probed." in capsys.readouterr().err


def test_same_device_twice_and_bad_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "/dev/x", "/dev/x"]) == 1
    assert "the same device is named twice; nothing was probed." in capsys.readouterr().err
    assert main(["probe", "--seconds", "0", "/dev/x"]) == 1
    assert "--seconds must be between 0.5 and 60" in capsys.readouterr().err


def test_busy_disk_is_not_probed_without_yes(capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.disks.collect import collect
    from advisor.disks.discovery import build_inventory

    busy = next((d for d in build_inventory(collect()).devices if d.state == "in-use" and d.kind == "disk"), None)
    if busy is None:
        pytest.skip("this machine has no disk in use")
    assert main(["probe", busy.devnode]) == 1  # pytest's stdin is not a terminal
    err = capsys.readouterr().err
    assert f"{busy.name} is {busy.in_use_reason}; the probe adds about" in err
    assert "pass --yes to probe busy disks anyway; nothing was probed." in err


def test_results_round_trip_through_history(tmp_path: Path) -> None:
    fio = json.loads((LAB_PROBE / "fio-HDD0001.json").read_text())
    got = parse_fio(fio)
    result = ProbeResult("sdb", "/dev/sdb", "wwn:0x5000c500a1b2c3d4", 536870912, True, "scsi", tuple(got),
                         classify(got, True, "scsi"), False, True, 7.1, "fio-3.33", (), fio)
    with History(tmp_path / DB_NAME) as hist:
        hist.record_probe(result, "HDD0001", "0x5000c500a1b2c3d4")
        found = hist.latest_probe("wwn:0x5000c500a1b2c3d4", 536870912)
        assert hist.latest_probe("wwn:0x5000c500a1b2c3d4", 1) is None  # same identity, other size: not this disk
    assert found is not None
    back = ProbeResult.from_json(found)
    assert back == result
