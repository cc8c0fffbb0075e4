"""``smartctl -j -a DEV`` output: how worn an SSD is.

Fixtures: tests/fixtures/lab-recommend/smartctl-sata.json and smartctl-nvme.json (smartmontools 7.3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Endurance:
    """What SMART says about an SSD's wear, and its rating if declared."""

    percentage_used: int | None = None
    data_written_bytes: int | None = None
    rating: Literal["enterprise", "consumer", "unknown"] = "unknown"
    power_on_hours: int | None = None  # how long it has been on: the lifetime average write rate's span


def parse_smartctl(text: str) -> Endurance | None:
    """NVMe percentage_used and data units written, or the ATA device statistics' "Percentage
    Used Endurance Indicator" and logical sectors written; None when SMART says neither."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    used: int | None = None
    written: int | None = None
    nvme = data.get("nvme_smart_health_information_log")
    if isinstance(nvme, dict):
        used = nvme.get("percentage_used")
        units = nvme.get("data_units_written")
        written = int(units) * 512_000 if isinstance(units, int) else None
    stats = data.get("ata_device_statistics", {})
    for page in stats.get("pages", []) if isinstance(stats, dict) else []:
        for entry in page.get("table", []):
            name = str(entry.get("name", ""))
            if name.startswith("Percentage Used Endurance Indicator"):
                used = entry.get("value")
            elif name == "Logical Sectors Written" and isinstance(entry.get("value"), int):
                written = entry["value"] * 512
    if used is None and written is None:
        return None
    hours = data.get("power_on_time", {}).get("hours") if isinstance(data.get("power_on_time"), dict) else None
    return Endurance(
        percentage_used=used, data_written_bytes=written, power_on_hours=hours if isinstance(hours, int) else None
    )
