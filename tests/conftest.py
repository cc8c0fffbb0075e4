from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import recipes  # noqa: F401 - registers every recipe, so plan files of each kind can be read
from advisor.disks.collect import RawSystem
from advisor.errors import CachewiseError
from cachewise.cli.phrases import word

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


def cli_words(error: BaseException) -> str:
    """An error as the command line words it (wording tests follow the CLI's phrasebook)."""
    assert isinstance(error, CachewiseError), error
    return word(error)


@contextmanager
def raises_worded(kind: type[BaseException], pattern: str) -> Iterator[Any]:
    """As pytest.raises(kind, match=pattern), matched against the CLI's wording of the error
    (where it names a flag or a command, the domain's own words do not)."""
    with pytest.raises(kind) as err:
        yield err
    assert re.search(pattern, cli_words(err.value)), cli_words(err.value)
