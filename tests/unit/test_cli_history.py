"""`cachewise history`, `history show ID` and `history diff ID [ID2]` (issue 30): snapshots that
repeat the one before say so, one is shown as scan shows it, two are compared by stable identity,
and a bad ID is one sentence with nothing changed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.disks.changes import diff, inventory_from_json
from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.history import History
from cachewise.cli import main
from tests.conftest import FIXTURES, LAB_SCAN

SCAN = build_inventory(RawSystem.load(LAB_SCAN / "raw-udev.json"))
LAYERS = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """#1 #2 #3 the same devices (#3 later), #4 another layout, #5 the same as #4."""
    with History.open_default(tmp_path) as hist:
        for inv in (SCAN, SCAN, replace(SCAN, taken_at="2026-12-01T00:00:00+00:00"), LAYERS, LAYERS):
            hist.record_inventory(inv)
    return tmp_path


def run(state: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--state-dir", str(state), "history", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_recorded_snapshot_reads_back_as_the_inventory_it_was() -> None:
    back = inventory_from_json(SCAN.to_json(show_all=True))
    assert [d.name for d in back.devices] == [d.name for d in SCAN.devices]
    assert [replace(d, caching=None) for d in back.devices] == [replace(d, caching=None) for d in SCAN.devices]
    assert diff(SCAN, back) == []


def test_listing_says_which_snapshot_each_repeats(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(state, capsys, "--json")
    assert code == 0
    same = {s["id"]: s["same_as"] for s in json.loads(out)["snapshots"]}
    assert same == {5: 4, 4: None, 3: 1, 2: 1, 1: None}
    code, out, _ = run(state, capsys)
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert "same as #1" in rows["3"] and "same as #1" in rows["2"] and "same as #4" in rows["5"]
    assert "same as" not in rows["4"]


@pytest.mark.parametrize("size", [80, 200])
def test_show_prints_a_snapshot_as_scan_does(state: Path, size: int, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(size))
    assert main(["scan", "--no-record", "--from-raw", str(FIXTURES / "lab-caches" / "raw-layers.json")]) == 0
    scanned = capsys.readouterr().out
    code, out, _ = run(state, capsys, "show", "#4")
    assert code == 0
    assert out.splitlines()[0].startswith("Snapshot #4, taken ")
    assert out.splitlines()[1:] == scanned.splitlines()
    code, out, _ = run(state, capsys, "show", "4", "--json", "--all")
    data = json.loads(out)
    assert data["snapshot_id"] == 4 and data["schema"] == "cachewise.scan/1"
    assert [d["name"] for d in data["devices"]] == [d.name for d in LAYERS.devices]


def test_diff_names_devices_by_identity(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(state, capsys, "diff", "1", "2")
    assert code == 0 and "no change" in out
    code, out, _ = run(state, capsys, "diff", "1", "--json")  # against the newest, #5
    data = json.loads(out)
    assert data["schema"] == "cachewise.history-diff/1" and (data["from"]["id"], data["to"]["id"]) == (1, 5)
    by_path = {c["stable_path"]: c for c in data["changes"]}
    sda = by_path["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"]
    assert sda["what"] == "changed"
    assert {c["field"]: (c["before"], c["after"]) for c in sda["changes"]} == {
        "size_bytes": (2 << 30, 1 << 30), "state": ("free", "in-use"), "role": ("disk", "LVM PV")}
    ssd = by_path["/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SSD0001"]  # sdg then, sdb now: the same disk
    assert ("name", "sdg", "sdb") in [(c["field"], c["before"], c["after"]) for c in ssd["changes"]]
    assert by_path["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"]["what"] == "removed"
    assert by_path["/dev/labvg/vault"]["what"] == "added"
    code, out, _ = run(state, capsys, "diff", "1")
    lines = out.splitlines()
    assert "~ changed sda" in lines and "    /dev/disk/by-id/wwn-0x5000c500a1b2c3d4" in lines
    assert "    role: disk -> LVM PV" in lines and "    name: sdg -> sdb" in lines


@pytest.mark.parametrize(("args", "said"), [
    (["show", "99"], "there is no snapshot #99 in"),
    (["show", "x1"], "'x1' is not a snapshot number such as 12 or #12"),
    (["diff", "1", "-3"], "'-3' is not a snapshot number"),
    (["diff", "42"], "the newest is #5"),
])
def test_a_bad_id_is_one_sentence(state: Path, args: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = (state / "history.sqlite3").read_bytes()
    code, out, err = run(state, capsys, *args)
    assert code == 1 and out == ""
    assert said in err and err.count("\n") == 1 and err.rstrip().endswith("Nothing was changed.")
    assert "Traceback" not in err
    assert (state / "history.sqlite3").read_bytes() == before


def test_no_snapshots_at_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(tmp_path, capsys, "diff", "1")
    assert code == 1 and "it has none yet" in err


def test_a_short_listing_says_changed_on_its_oldest_row_when_an_older_one_differs(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit 2 shows #5 and #4: #4 differs from #3 (not shown), so it says "changed"; the very
    first snapshot, with nothing before it, says nothing."""
    code, out, _ = run(state, capsys, "--limit", "2")
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert code == 0 and set(rows) == {"5", "4"} and "changed" in rows["4"]
    code, out, _ = run(state, capsys)
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert "changed" not in rows["1"] and "same as" not in rows["1"]


@pytest.mark.parametrize("bad", [{"devices": 3}, {"devices": "x", "notes": 5}, {"notes": {"a": 1}, "udev": 7},
                                 {"memory_bytes": "lots"}])
def test_a_malformed_history_row_reads_as_what_can_be_read(bad: dict[str, object]) -> None:
    inv = inventory_from_json({**SCAN.to_json(show_all=True), **bad})
    assert isinstance(inv.devices, tuple) and isinstance(inv.notes, tuple)
