"""SIGKILL after every step of every recipe that changes a cache (issue 29), then resume or roll
back, 0 bytes lost: lvmcache-uncache of a writeback cache, writecache-attach and -detach,
bcache-create, bcache-detach of a writeback bcache with dirty data (tests/vm/guest/crash_all.sh;
lvmcache-attach's are in apply_lvm.sh). Long: the soak run only (`CACHEWISE_SOAK=1`, the
README's soak command)."""

from __future__ import annotations

import pytest

from tests.vm.lab import GuestRun, LabDisk, LabPool, Scenario, soak

if not soak():
    pytest.skip("the soak run only (CACHEWISE_SOAK=1)", allow_module_level=True)

SCENARIO = Scenario(
    "crash-all",
    "crash_all.sh",
    (
        LabDisk("crhdd", "CRHDD01", "1G", rotation_rate=7200),
        LabDisk("crssd", "CRSSD01", "512M", rotation_rate=1),
        LabDisk("crbh", "CRBH01", "256M", rotation_rate=7200),
        LabDisk("crbs", "CRBS01", "384M", rotation_rate=1),
    ),
    timeout=7200,
    expected_s=3000,
    paired=True,  # one vCPU beside another soak or paired guest
)
LV_PLANS = ("uncache", "wc-attach", "wc-detach")


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def killed(run: GuestRun, tag: str) -> tuple[int, list[int]]:
    steps, *ks = run.read(f"{tag}-ks.txt").split()
    return int(steps), [int(k) for k in ks]


def outcome(run: GuestRun, tag: str, k: int) -> str:
    """How the resume or rollback after a kill after step k ended (its last line: "resume rc 0")."""
    return run.read(f"{tag}-{k}-after.txt").strip().splitlines()[-1]


@pytest.mark.parametrize("tag", LV_PLANS)
def test_a_kill_after_every_step_of_an_lvm_plan_loses_nothing(guest: GuestRun, tag: str) -> None:
    steps, ks = killed(guest, tag)
    assert ks == list(range(1, steps + 1)), "every step was killed after"
    for k in ks:
        print(f"{tag} killed after step {k}: {outcome(guest, tag, k)}")
        assert outcome(guest, tag, k).endswith("rc 0"), guest.read(f"{tag}-{k}-after.txt")
        data = guest.read(f"{tag}-{k}-data.txt")
        assert data.strip().endswith("ok"), f"{tag}: data changed after a kill after step {k}:\n{data}"


def test_a_kill_after_every_step_of_bcache_create_leaves_a_whole_bcache_or_blank_disks(guest: GuestRun) -> None:
    steps, ks = killed(guest, "bc-create")
    assert ks == list(range(1, steps + 1))
    for k in ks:
        action = outcome(guest, "bc-create", k)
        state, *signatures = guest.read(f"bc-create-{k}-data.txt").splitlines()
        print(f"bcache-create killed after step {k}: {action}; {state}; {signatures}")
        assert action.endswith("rc 0"), guest.read(f"bc-create-{k}-after.txt")
        if action.startswith(("resume", "completed")):
            assert state.startswith("bcache "), f"a resumed create left no bcache device: {state}"
            assert signatures == ["bcache", "bcache"]
        else:
            assert state == "none" and not signatures, f"a rolled-back create left {state} {signatures}"


def test_a_kill_after_every_step_of_bcache_detach_loses_nothing(guest: GuestRun) -> None:
    steps, ks = killed(guest, "bc-detach")
    assert ks == list(range(1, steps + 1))
    dirty = guest.read("bc-detach-dirty.txt").split()
    assert dirty and all(d != "0.0k" for d in dirty), f"every detach began with dirty data: {dirty}"
    for k in ks:
        assert outcome(guest, "bc-detach", k).endswith("rc 0"), guest.read(f"bc-detach-{k}-after.txt")
        data = guest.read(f"bc-detach-{k}-data.txt")
        assert data.strip().endswith("ok"), f"bcache-detach: data changed after a kill after step {k}:\n{data}"
