"""LVM's JSON reports (``pvs``/``lvs``), parsed into rows and dataclasses.

lvm2 2.03.17 added ``--reportformat json_std`` (numbers as JSON numbers, undefined values as
null); older lvm2 (Debian 12 ships 2.03.16) knows only ``json``, whose values are all strings,
and refuses json_std with an "Invalid report format" error. :func:`report` asks for json_std
and falls back to json once per process, and :func:`rows` reads both, so callers see strings
either way. Fixtures: tests/fixtures/lab-scan/lvs.json, pvs.json, tests/fixtures/lab-readers/.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from advisor.errors import Described, codes
from advisor.runner import CommandFailed, CommandRunner

PVS_FIELDS = ("pv_name", "vg_name", "pv_uuid", "pv_size", "dev_size")
# What discovery shows of each LV. Cache columns make lvs read every cached LV's kernel status,
# so they are asked for only where they are used (CACHE_FIELDS).
# cache_mode and cache_policy come from LVM's metadata; lv_health_status reads the kernel's
# status of raid LVs only (a mirrored cache pool's missing leg shows as "partial").
LVS_FIELDS = (
    "lv_name",
    "vg_name",
    "lv_uuid",
    "lv_attr",
    "lv_size",
    "segtype",
    "lv_dm_path",
    "devices",
    "pool_lv",
    "origin",
    "lv_role",
    "cache_mode",
    "cache_policy",
    "lv_health_status",
)
CACHE_FIELDS = (
    "lv_name",
    "vg_name",
    "segtype",
    "cache_mode",
    "cache_policy",
    "cache_dirty_blocks",
    "lv_attr",
    "lv_uuid",
    "lv_size",
    "pool_lv",
)
# Formats tried in order; the first one lvm2 accepts is remembered for the rest of the process,
# per lvm2 binary (pvs and lvs are links to the one lvm program).
FORMATS = ("json_std", "json")
_accepted: dict[str, str] = {}


codes({"lvm-report-unreadable": "{why}"})


class ReportError(Described, ValueError):
    """lvm2's report could not be read; the message names the command."""

    CODE = "lvm-report-unreadable"


def rows(text: str, key: str) -> list[dict[str, str]]:
    """The rows of report ``key`` ("pv", "lv", "vg") in lvm2's JSON (json or json_std), every
    value as a string ('' for undefined), bracketed hidden-LV names kept as lvm2 prints them."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReportError(f"lvm2's report is not JSON ({exc})") from None
    out: list[dict[str, str]] = []
    reports = data.get("report", []) if isinstance(data, dict) else []
    for report in reports if isinstance(reports, list) else []:
        for row in report.get(key, []) if isinstance(report, dict) else []:
            if isinstance(row, dict):
                out.append({str(k): _text(v) for k, v in row.items()})
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _refuses_format(exc: CommandFailed) -> bool:
    return bool(re.search(r"report ?format|json_std", exc.stderr, re.IGNORECASE))


def report(
    runner: CommandRunner, command: str, fields: tuple[str, ...], *extra: str, key: str, timeout: float = 60
) -> list[dict[str, str]]:
    """Run ``command`` (pvs, lvs) for ``fields`` in bytes and return its rows."""
    found = runner.which(command)
    tool = os.path.realpath(found) if found else command
    for fmt in FORMATS:
        if _accepted.get(tool, fmt) != fmt:
            continue
        argv = [command, *extra, "-o", ",".join(fields), "--reportformat", fmt, "--units", "b", "--nosuffix"]
        try:
            result = runner.run(argv, timeout=timeout)
        except CommandFailed as exc:
            if fmt != FORMATS[-1] and _refuses_format(exc):
                _accepted[tool] = FORMATS[-1]
                continue
            raise
        _accepted.setdefault(tool, fmt)
        return rows(result.stdout, key)
    raise ReportError(f"{command} accepted none of the report formats {', '.join(FORMATS)}")  # pragma: no cover


def pvs(runner: CommandRunner) -> list[dict[str, str]]:
    return report(runner, "pvs", PVS_FIELDS, key="pv")


def lvs(runner: CommandRunner, fields: tuple[str, ...] = LVS_FIELDS) -> list[dict[str, str]]:
    return report(runner, "lvs", fields, "-a", key="lv")


@dataclass(frozen=True)
class Lv:
    """One row of ``lvs -a``: a logical volume, or a hidden one ([data_corig], [pool_cdata])."""

    vg: str
    name: str  # without lvm2's brackets
    hidden: bool
    segtype: str
    cache_mode: str = ""
    cache_policy: str = ""
    cache_dirty_blocks: int | None = None
    size_bytes: int | None = None
    uuid: str = ""
    attr: str = ""  # lv_attr
    pool: str = ""  # pool_lv without brackets: a cached LV's cache pool (lvm2 2.03 names it POOL_cpool)

    @property
    def full_name(self) -> str:
        return f"{self.vg}/{self.name}"

    @property
    def partial(self) -> bool:
        """Some of its extents are on a physical volume lvm2 cannot find (lvs(8): lv_attr's ninth
        letter, (p)artial)."""
        return len(self.attr) > 8 and self.attr[8] == "p"

    @classmethod
    def from_row(cls, row: dict[str, str]) -> Lv:
        name = row.get("lv_name", "")
        return cls(
            vg=row.get("vg_name", ""),
            name=name.strip("[]"),
            hidden=name.startswith("["),
            segtype=row.get("segtype", ""),
            cache_mode=row.get("cache_mode", ""),
            cache_policy=row.get("cache_policy", ""),
            cache_dirty_blocks=_int(row.get("cache_dirty_blocks")),
            size_bytes=_int(row.get("lv_size")),
            uuid=row.get("lv_uuid", ""),
            attr=row.get("lv_attr", ""),
            pool=row.get("pool_lv", "").strip("[]"),
        )


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def parse_version(text: str) -> str | None:
    """`lvm version` -> '2.03.16'."""
    match = re.search(r"LVM version:\s*([0-9.]+)", text)
    return match[1] if match else None
