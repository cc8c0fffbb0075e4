"""The lab tier: real kernel, real dm/bcache/lvm2 in a qemu guest (tests/vm/lab.py).

When the lab cannot run here, the tier fails with the list of what is missing, unless
CACHEWISE_SKIP_LAB=1 says to skip it (never set in CI: the README's test command runs it).
"""

from __future__ import annotations

import os

import pytest

from tests.vm.lab import missing_prerequisites


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/lab/" in str(item.fspath):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="session")
def lab_ready() -> None:
    missing = missing_prerequisites()
    if missing:
        message = "the lab tier needs: " + "; ".join(missing) + ". Run packaging/test.sh as root to install them."
        if os.environ.get("CACHEWISE_SKIP_LAB") == "1":
            pytest.skip(message)
        pytest.fail(message)
