"""The readers of external formats, fed outputs captured in the lab (tests/fixtures/): LVM's
JSON reports in both formats, dm-cache and dm-writecache status lines, bcache's sysfs files."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from advisor.readers import lvm
from advisor.readers.bcache import BcacheState, hprint_bytes, selected
from advisor.readers.dmstatus import CacheStatus, StatusError, WritecacheStatus, dm_name
from advisor.runner import CommandFailed, CommandResult
from tests.conftest import FIXTURES

READERS = FIXTURES / "lab-readers"


def test_lvm_json_rows_are_strings_and_lvs_become_dataclasses() -> None:
    rows = lvm.rows((FIXTURES / "lab-scan" / "lvs.json").read_text(), "lv")
    assert rows[0]["lv_size"] == "268435456" and rows[0]["vg_name"] == "labvg"
    lv = lvm.Lv.from_row(rows[0])
    assert (lv.full_name, lv.segtype, lv.size_bytes, lv.hidden) == ("labvg/data", "linear", 268435456, False)


def test_json_std_numbers_and_nulls_read_as_text() -> None:
    # lvm2 2.03.17+: the same report with numbers as numbers and undefined values as null.
    data = json.loads((FIXTURES / "lab-scan" / "lvs.json").read_text())
    row = data["report"][0]["lv"][0]
    row["lv_size"], row["origin"] = int(row["lv_size"]), None
    assert lvm.rows(json.dumps(data), "lv")[0]["lv_size"] == "268435456"
    assert lvm.rows(json.dumps(data), "lv")[0]["origin"] == ""
    with pytest.raises(lvm.ReportError):
        lvm.rows("{not json", "lv")


def test_cached_lv_rows_from_the_lab() -> None:
    rows = lvm.rows((READERS / "lvs-cached.json").read_text(), "lv")
    lvs = {lv.full_name: lv for lv in map(lvm.Lv.from_row, rows)}
    data = lvs["labvg/data"]
    assert data.segtype == "cache" and data.cache_mode == "writeback" and data.cache_policy == "smq"
    assert data.cache_dirty_blocks is not None and data.cache_dirty_blocks > 0, "captured under writes"
    assert any(lv.hidden and lv.name.endswith("_cpool") for lv in lvs.values())


class OldLvm:
    """lvm2 2.03.16: refuses json_std with its own words (captured in the lab), accepts json."""

    def __init__(self) -> None:
        self.argvs: list[tuple[str, ...]] = []

    def which(self, tool: str) -> str | None:
        return f"/usr/sbin/{tool}-{id(self)}"

    def run(self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
        argv = tuple(argv)
        self.argvs.append(argv)
        if "json_std" in argv:
            raise CommandFailed(argv, 3, (READERS / "lvs-json-std-2.03.16.txt").read_text())
        return CommandResult(argv, 0, (FIXTURES / "lab-scan" / "lvs.json").read_text(), "", 0.1)


def test_report_falls_back_to_json_once_on_old_lvm2() -> None:
    old = OldLvm()
    first = lvm.lvs(old)  # type: ignore[arg-type]
    second = lvm.lvs(old)  # type: ignore[arg-type]
    assert first == second and first[0]["lv_name"] == "data"
    formats = [a[a.index("--reportformat") + 1] for a in old.argvs]
    assert formats == ["json_std", "json", "json"], "json_std is tried once per lvm2 binary"


def test_dm_cache_status_from_the_lab() -> None:
    line = (FIXTURES / "lab-recommend" / "dmsetup-status-cache.txt").read_text()
    s = CacheStatus.parse(line)
    assert (s.block_sectors, s.used_blocks, s.total_blocks) == (128, 0, 3072)
    assert (s.read_hits, s.read_misses, s.write_hits, s.write_misses, s.dirty) == (0, 65, 0, 0, 0)
    assert s.mode == "writethrough" and s.policy == "smq" and s.core_args == {"migration_threshold": "2048"}
    assert s.metadata_mode == "rw" and not s.needs_check
    busy = CacheStatus.parse((READERS / "dmsetup-status-cache-writeback.txt").read_text())
    assert busy.mode == "writeback" and busy.used_blocks > 0 and busy.read_hits > 0


def test_dm_writecache_status_from_the_lab() -> None:
    s = WritecacheStatus.parse((READERS / "dmsetup-status-writecache.txt").read_text())
    assert s.error == 0 and s.total_blocks > 0 and 0 <= s.free_blocks <= s.total_blocks
    assert s.write_blocks is not None and s.write_blocks > 0, "kernel 6.1 reports the statistics"
    assert WritecacheStatus.parse("0 1024 writecache 0 100 60 5").read_blocks is None  # before 5.15


def test_status_lines_of_other_targets_are_refused() -> None:
    with pytest.raises(StatusError):
        CacheStatus.parse("0 2048 linear")
    with pytest.raises(StatusError):
        WritecacheStatus.parse((FIXTURES / "lab-recommend" / "dmsetup-status-cache.txt").read_text())
    with pytest.raises(StatusError):
        CacheStatus.parse("0 2048 cache 8 15/2048 128")
    assert dm_name("lab-vg", "my-data") == "lab--vg-my--data"


def test_bcache_sysfs_from_the_lab() -> None:
    files = {}
    for line in (FIXTURES / "lab-scan" / "bcache-sysfs.tsv").read_text().splitlines():
        path, _, value = line.partition("\t")
        if path.startswith("bcache0/bcache/"):
            files[path.removeprefix("bcache0/bcache/")] = value.strip()
    state = BcacheState.parse(files)
    assert (state.state, state.cache_mode, state.dirty_bytes) == ("clean", "writethrough", 0)
    assert state.sequential_cutoff_bytes == 4 << 20 and state.writeback_percent == 10
    assert state.writeback_rate_bytes == 512 << 10 and state.running is True and state.clean


def test_bcache_sysfs_with_statistics_from_the_lab() -> None:
    files = json.loads((READERS / "bcache-sysfs-writeback.json").read_text())
    state = BcacheState.parse(files)
    assert state.cache_mode == "writeback" and state.dirty_bytes is not None
    total = state.stats["stats_total"]
    assert total.hits + total.misses > 0 and total.hit_ratio is not None


@pytest.mark.parametrize(("text", "expected"), [("0.0k", 0), ("8.7M", int(8.7 * 2**20)), ("512.0k", 512 * 1024),
                                                ("1.0T", 2**40), ("512", 512), ("garbage", None), (None, None)])
def test_bcache_hprint(text: str | None, expected: int | None) -> None:
    assert hprint_bytes(text) == expected


def test_bcache_selected_choice() -> None:
    assert selected("[writethrough] writeback writearound none") == "writethrough"
    assert selected("writethrough [writeback] writearound none") == "writeback"
    assert selected(None) is None
