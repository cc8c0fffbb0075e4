from __future__ import annotations

from pathlib import Path

import pytest

from advisor.disks.collect import RawSystem

FIXTURES = Path(__file__).parent / "fixtures"
LAB_SCAN = FIXTURES / "lab-scan"


@pytest.fixture
def raw_udev() -> RawSystem:
    """The lab guest with udev running, as `cachewise scan --save-raw` captured it."""
    return RawSystem.load(LAB_SCAN / "raw-udev.json")


@pytest.fixture
def raw_noudev() -> RawSystem:
    """The same guest with udev stopped and its database and links removed."""
    return RawSystem.load(LAB_SCAN / "raw-noudev.json")
