"""The lab tier: real kernel, real dm/bcache/lvm2 in a qemu guest (tests/vm/lab.py).

Each module declares its guest as ``SCENARIO`` (a tests.vm.lab.Scenario). The session's pool
boots the scenarios of every selected module in the background, so a module's fixture waits
only for its own guest: from the end of collection, one paired guest at a time while the other
tiers run, and fully at the first lab test. Scenarios marked ``paired`` run two at a time
with one vCPU each (``CACHEWISE_LAB_PARALLEL``, default 2); the others one by one with two vCPUs
(those that measure time last).

When the lab cannot run here, the tier fails with the list of what is missing, unless
CACHEWISE_SKIP_LAB=1 says to skip it (never set in CI: the README's test command runs it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.vm.lab import LabPool, Scenario, kill_guests, missing_prerequisites

_SCENARIOS: dict[str, Scenario] = {}
_POOL: list[LabPool] = []  # the session's pool, once started


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/lab/" in str(item.fspath):
            item.add_marker(pytest.mark.lab)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The scenarios of the lab tests this session runs (after any deselection); when other tiers
    run first, the pool starts now with one guest beside them (LabPool's ``early``), so the lab
    tier does not wait for the unit and TUI tests to end before its first boot."""
    _SCENARIOS.clear()
    lab_items = [item for item in session.items if "tests/lab/" in str(item.fspath)]
    for item in lab_items:
        scenario = getattr(item.module, "SCENARIO", None)  # type: ignore[attr-defined]
        if isinstance(scenario, Scenario):
            _SCENARIOS[scenario.name] = scenario
    others = len(session.items) > len(lab_items)
    if _SCENARIOS and others and not session.config.option.collectonly and not missing_prerequisites():
        _start_pool(session.config._tmp_path_factory, early=True)  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A guest still running when the session ends (it stopped early: -x, Ctrl-C, a failure
    before the lab tier) is stopped, with its qemu, rather than left to run on its own."""
    stopped = kill_guests()
    if stopped:
        print(f"\nlab: stopped {stopped} guest(s) still running at the end of the session")


def _start_pool(factory: pytest.TempPathFactory, early: bool) -> LabPool:
    if not _POOL:
        workdirs = {name: factory.mktemp(f"lab-{name}") for name in _SCENARIOS}
        parallel = int(os.environ.get("CACHEWISE_LAB_PARALLEL", "2"))
        _POOL.append(LabPool(list(_SCENARIOS.values()), workdirs, parallel, early=early))
        _POOL[0].start()
    return _POOL[0]


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
    pool = _start_pool(tmp_path_factory, early=False)
    pool.widen()  # the lab tier has begun: the host is the lab's
    yield pool


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each guest's wall time in the session's summary (also in CI's log, where the fixtures'
    own prints are captured), to see which boot grew when the lab tier gets slower."""
    if _POOL and _POOL[0].log:
        terminalreporter.write_line("lab boots: " + "; ".join(_POOL[0].log))
