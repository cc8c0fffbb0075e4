"""Plan and apply from the TUI: the preview comes first, a wrong name changes nothing, the
right name runs the plan with each command shown; an interrupted plan is offered at start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input, RichLog, Static

from advisor.advice import facts as sysfacts
from advisor.advice.model import Inputs, Versions
from advisor.apply.journal import Journal
from advisor.apply.run import Event
from advisor.disks.devices import Inventory
from advisor.plan.model import Plan
from advisor.units import GiB
from cachewise.core import Core
from recipes.lvmcache import CacheSpec, lvmcache_attach
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.dialogs import InterruptedPlan
from screens.recommend import RecommendScreen
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory


class FakeExecutor:
    def __init__(self, pending: list[Journal] | None = None) -> None:
        self.applied: list[tuple[Plan, Journal | None]] = []
        self.rolled_back: list[Journal] = []
        self._pending = pending or []

    def preflight(self, plan: Plan, resuming: bool = False) -> list[object]:
        return []

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str:
        for step in plan.steps:
            report(Event("run", step, step.command))
            report(Event("ok", step))
        self.applied.append((plan, journal))
        return "done"

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str:
        self.rolled_back.append(journal)
        return "rolled back"

    def pending(self) -> list[Journal]:
        return self._pending


def text(app: CachewiseApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def lab_inputs(inv: Inventory) -> Inputs:
    """The lab's LV labvg/data with its NVMe SSD, declared as mixed files on XFS."""
    lv, nvme = inv.by_name("dm-1"), inv.by_name("nvme0n1")
    assert lv is not None and nvme is not None
    facts = [sysfacts.device_facts(inv, d, lambda _d: None, part=p) for d, p in ((lv, "slow"), (nvme, "fast"))]
    return Inputs(slow=facts[0], fast=(facts[1],), workload="mixed-files", filesystem="xfs", data_bytes=100 * GiB,
                  versions=Versions(kernel="6.1.0"))


async def test_recommended_lvmcache_is_previewed_then_applied_after_typing_the_name() -> None:
    inv = lab_inventory()
    inputs = lab_inputs(inv)
    executor = FakeExecutor()
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=executor, live=False), watch_hotplug=False)
    async with app.run_test(size=(170, 60)) as pilot:
        await app.workers.wait_for_complete()
        await app.push_screen(RecommendScreen(inputs, inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.recommendation is not None  # type: ignore[attr-defined]
        assert app.screen.recommendation.config.backend == "lvmcache"  # type: ignore[attr-defined]
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ApplyScreen)
        assert [s.id for s in screen.plan.steps][-1] == "attach"
        assert "Nothing has run yet" in text(app, "#confirm-hint")
        screen.query_one("#confirm-name", Input).value = "sdb"
        await pilot.press("enter")
        await pilot.pause()
        assert "did not match" in text(app, "#apply-status") and executor.applied == []
        screen.query_one("#confirm-name", Input).value = screen.target
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(executor.applied) == 1 and screen.outcome == "done"
        log = "\n".join(str(line.text) for line in screen.query_one("#apply-log", RichLog).lines)
        assert "lvconvert --yes --type cache --cachepool labvg/data_cache labvg/data" in log
        assert "done" in text(app, "#apply-status")


async def test_interrupted_plan_is_offered_at_start_and_can_be_rolled_back(tmp_path: Path) -> None:
    inv = lab_inventory()
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    journal = Journal(tmp_path / "j.jsonl")
    journal.write("plan", plan=plan.to_json())
    journal.write("step-begin", step="pvcreate")
    journal.write("step-end", step="pvcreate", returncode=0)
    executor = FakeExecutor([journal])
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=executor, live=False), watch_hotplug=False)
    async with app.run_test(size=(170, 60)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, InterruptedPlan)
        assert "pvcreate" in str(app.screen.query_one(Static).content)
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen) and app.screen.verb == "roll back"
        app.screen.query_one("#confirm-name", Input).value = app.screen.target
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert executor.rolled_back == [journal]


async def test_u_on_a_cache_previews_its_safe_removal_and_refuses_what_is_not_a_cache() -> None:
    from tests.tui.test_probe_screen import select

    executor = FakeExecutor()
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), executor=executor, live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await select(pilot, app, "dm-1")  # a linear LV: nothing to remove
        await pilot.press("u")
        await pilot.pause()
        assert not isinstance(app.screen, ApplyScreen)
        assert any("is part of no cache. Nothing was changed." in n.message for n in app._notifications)
        await select(pilot, app, "bcache0")
        await pilot.press("u")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ApplyScreen) and screen.plan.kind == "bcache-detach"
        ids = [s.id for s in screen.plan.steps]
        assert ids.index("writeback-percent-0") < ids.index("detach"), "the flush comes before the detach"
        assert executor.applied == [], "nothing runs before the name is typed"


async def test_u_refuses_layers_cachewise_does_not_remove_and_the_detail_pane_says_why() -> None:
    from advisor.disks.collect import RawSystem
    from advisor.disks.discovery import build_inventory
    from tests.conftest import FIXTURES
    from tests.tui.test_disks_screen import detail_text
    from tests.tui.test_probe_screen import select

    inv = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))
    zfs = next(d for d in inv.devices if d.fs_type == "zfs_member")
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=FakeExecutor(), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.workers.wait_for_complete()
        await select(pilot, app, zfs.name)
        text = detail_text(app)
        assert "zfs: member of ZFS pool tank" in text and "L2ARC" in text
        await pilot.press("u")
        await pilot.pause()
        assert not isinstance(app.screen, ApplyScreen)
        assert any("not a cache cachewise can remove" in n.message and "ZFS" in n.message for n in app._notifications)
        await select(pilot, app, next(d.name for d in inv.devices if d.lvm and d.lvm.lv == "data"))
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen) and app.screen.plan.kind == "lvmcache-uncache"


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_f2_saves_the_previewed_plan_instead_of_running_it(size: tuple[int, int], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30, "save from every preview": the apply preview (root, this machine) can save the
    plan to a file instead of running it; nothing is applied."""
    from screens.flows.save_plan import SavePlan

    monkeypatch.chdir(tmp_path)
    inv = lab_inventory()
    executor = FakeExecutor()
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=executor, live=False), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await app.push_screen(RecommendScreen(lab_inputs(inv), inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen)
        await pilot.press("f2")
        await pilot.pause()
        save = app.screen
        assert isinstance(save, SavePlan)
        assert "Save the plan instead" in str(save.query_one("#save-note", Static).content)  # not "Plan only"
        box = save.query_one("#save-path", Input)
        box.value = "attach.json"
        box.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert Plan.loads((tmp_path / "attach.json").read_text()).kind == "lvmcache-attach"
        assert executor.applied == []
