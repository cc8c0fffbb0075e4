"""The history database: migrations, snapshots, identities, and its failure messages."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from advisor.disks.devices import Device, Inventory
from advisor.history import DB_NAME, MIGRATIONS, STATE_ENV, History, HistoryError, default_state_dir
from tests.conftest import cli_words


def inventory(name: str = "sda", taken_at: str = "2026-11-22T00:00:00+00:00") -> Inventory:
    disk = Device(name=name, kind="disk", devnode=f"/dev/{name}", devnum="8:0", identity="serial:HDD0001",
                  stable_path="/dev/disk/by-id/scsi-HDD0001", size_bytes=2 << 30)
    return Inventory(taken_at=taken_at, hostname="h", udev="running", root=True, devices=(disk,))


def test_fresh_database_is_migrated_to_latest(tmp_path: Path) -> None:
    with History(tmp_path / DB_NAME) as hist:
        assert hist.version == len(MIGRATIONS)


def test_records_snapshots_and_tracks_identity_across_renames(tmp_path: Path) -> None:
    with History(tmp_path / DB_NAME) as hist:
        first = hist.record_inventory(inventory("sda", "2026-11-22T00:00:00+00:00"))
        hist.record_inventory(inventory("sdc", "2026-11-23T00:00:00+00:00"))
        rows = hist.snapshots()
        assert [r.id for r in rows] == [first + 1, first]
        seen = hist.device_seen("serial:HDD0001")
        assert seen is not None
        assert seen["first_seen"].startswith("2026-11-22") and seen["last_seen"].startswith("2026-11-23")
        assert seen["last_name"] == "sdc"
        snap = hist.snapshot_json(first)
        assert snap is not None and snap["devices"][0]["name"] == "sda"


def test_reopening_keeps_data_and_does_not_remigrate(tmp_path: Path) -> None:
    with History(tmp_path / DB_NAME) as hist:
        hist.record_inventory(inventory())
    with History(tmp_path / DB_NAME) as hist:
        assert len(hist.snapshots()) == 1


def test_upgrades_an_older_schema(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    sqlite3.connect(path).close()  # version 0: an empty file from before any migration
    with History(path) as hist:
        assert hist.version == len(MIGRATIONS)


def test_newer_schema_is_refused_without_change(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(HistoryError) as err:
        History(path)
    assert re.search("newer than this cachewise knows.*nothing was changed", cli_words(err.value), re.IGNORECASE)
    assert path.read_bytes() == before


def test_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(HistoryError, match="not a usable cachewise history database"):
        History(path)


def test_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(HistoryError) as err:
        History(blocker / "sub" / DB_NAME)
    assert "--state-dir" in cli_words(err.value)


def test_state_dir_override_and_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "s"))
    assert default_state_dir() == tmp_path / "s"
    monkeypatch.delenv(STATE_ENV)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir() == tmp_path / "xdg" / "cachewise"
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert default_state_dir() == Path("/var/lib/cachewise")

