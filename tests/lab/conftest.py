"""The lab tier: real kernel, real dm/bcache/lvm2 in a qemu guest (tests/vm/lab.py).

Each module declares its guest as ``SCENARIO`` (a tests.vm.lab.Scenario). The session's pool
boots the scenarios of every selected module at the first request, in the background, so a
module's fixture waits only for its own guest. Scenarios marked ``paired`` run two at a time
with one vCPU each (``CACHEWISE_LAB_PARALLEL``, default 2); the others one by one with two vCPUs
(those that measure time last).

When the lab cannot run here, the tier fails with the list of what is missing, unless
CACHEWISE_SKIP_LAB=1 says to skip it (never set in CI: the README's test command runs it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.vm.lab import LabPool, Scenario, missing_prerequisites

_SCENARIOS: dict[str, Scenario] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/lab/" in str(item.fspath):
            item.add_marker(pytest.mark.lab)
            scenario = getattr(item.module, "SCENARIO", None)  # type: ignore[attr-defined]
            if isinstance(scenario, Scenario):
                _SCENARIOS[scenario.name] = scenario


@pytest.fixture(scope="session")
def lab_ready() -> None:
    missing = missing_prerequisites()
    if missing:
        message = "the lab tier needs: " + "; ".join(missing) + ". Run packaging/test.sh as root to install them."
        if os.environ.get("CACHEWISE_SKIP_LAB") == "1":
            pytest.skip(message)
        pytest.fail(message)


@pytest.fixture(scope="session")
def lab_pool(lab_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabPool]:
    workdirs = {name: tmp_path_factory.mktemp(f"lab-{name}") for name in _SCENARIOS}
    pool = LabPool(list(_SCENARIOS.values()), workdirs, int(os.environ.get("CACHEWISE_LAB_PARALLEL", "2")))
    pool.start()
    yield pool
    print("\nlab boots: " + "; ".join(pool.log))
