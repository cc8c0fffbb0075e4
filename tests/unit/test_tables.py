"""The CLI's tables (issue 30): a path, a device name, a by-id path or a UUID is never broken, at
80 columns as with --wide, and the table says what the JSON says of every device."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from cachewise.cli import main
from cachewise.render import devices_table
from tests.conftest import FIXTURES, LAB_SCAN

SNAPSHOTS = [
    LAB_SCAN / "raw-udev.json",
    LAB_SCAN / "raw-noudev.json",
    FIXTURES / "lab-caches" / "raw-layers.json",
    FIXTURES / "lab-caches" / "raw-writecache.json",
    FIXTURES / "lab-caches" / "raw-degraded.json",
]
LONG = "/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_with_Heatsink_4TB_S7DSNJ0W123456X_1-part1"
UUID = "92d9f462-55cf-4982-b1c4-ecef2705350f"


def scan(raw: Path, columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
         *extra: str) -> tuple[list[str], list[dict[str, object]]]:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["scan", "--all", "--no-record", "--from-raw", str(raw), *extra]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert main(["scan", "--all", "--no-record", "--json", "--from-raw", str(raw)]) == 0
    return lines, json.loads(capsys.readouterr().out)["devices"]


@pytest.mark.parametrize("raw", SNAPSHOTS, ids=lambda p: p.name)
@pytest.mark.parametrize("how", [(80,), (200,), (80, "--wide")], ids=["80", "200", "wide"])
def test_paths_and_names_are_printed_whole(raw: Path, how: tuple[object, ...], capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    columns, *extra = how
    lines, devices = scan(raw, int(str(columns)), capsys, monkeypatch, *map(str, extra))
    for d in devices:
        for whole in (d["name"], d["stable_path"], d["role"]):
            if whole:
                assert any(str(whole) in line for line in lines), (whole, "\n".join(lines))
        bcache = d["bcache"]
        if isinstance(bcache, dict) and bcache["cache_set_uuid"] and d["state"] == "in-use":
            assert any(str(bcache["cache_set_uuid"]) in line for line in lines), bcache
    if "--wide" in extra:  # nothing wrapped: every state's reason is on one line
        for d in devices:
            reason = str(d["in_use_reason"]).split(": ", 1)[-1].removeprefix("in use because ")
            assert any(reason in line for line in lines), reason
    elif columns == 80:
        assert max(map(len, lines)) <= 80


def test_a_long_by_id_path_and_a_uuid_stay_whole_at_80_columns() -> None:
    inv = build_inventory(RawSystem.load(LAB_SCAN / "raw-udev.json"))
    inv = replace(inv, devices=tuple(replace(d, stable_path=LONG) if d.name == "sdc1" else d for d in inv.devices))
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(devices_table(inv, show_all=True), crop=False)
    lines = console.export_text().splitlines()
    assert any(line.strip() == LONG for line in lines), "\n".join(lines)
    assert sum(UUID in line for line in lines) >= 2  # the backing device's set and the cache device's


def _table_rows(lines: list[str]) -> dict[str, tuple[str, str]]:
    """Kernel name -> (role, first line of state) from the table's rows (a name's line, not a path's)."""
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 6 and cells[0] and cells[1]:  # a path's line has no size
            rows[cells[0].lstrip("└ ").strip()] = (cells[4], cells[5])
    return rows


def _listing_rows(lines: list[str]) -> dict[str, tuple[str, str]]:
    """Kernel name -> (role, state line) from the narrow listing: name line, path line, state line."""
    rows = {}
    for i, line in enumerate(lines):
        if "  role " in line:
            name = line.strip().lstrip("└ ").split()[0]
            state = next(x for x in lines[i + 1:i + 3] if x.strip().split(":")[0] in ("free", "has-data", "in-use"))
            rows[name] = (line.split("  role ", 1)[1].strip(), state.strip())
    return rows


@pytest.mark.parametrize("raw", SNAPSHOTS, ids=lambda p: p.name)
@pytest.mark.parametrize("columns", [80, 200])
def test_the_table_says_what_the_json_says(raw: Path, columns: int, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    lines, devices = scan(raw, columns, capsys, monkeypatch, *(["--wide"] if columns == 200 else []))
    rows = _table_rows(lines) if columns == 200 else _listing_rows(lines)
    assert set(rows) == {d["name"] for d in devices}
    for d in devices:
        role, state = rows[str(d["name"])]
        assert d["role"] and role == d["role"], (d["name"], role, d["role"])
        assert state.split(":")[0] == d["state"], (d["name"], state, d["state"])
