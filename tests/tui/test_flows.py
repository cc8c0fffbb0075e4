"""The guided flows, headless and by keys only, on the lab's captured inventory: Add an SSD cache
from the start screen to the Warm-up screen, Remove a cache to its flush-and-detach plan, Plan
only to a saved plan file; the step bar on every step, Esc back, refusals with their reason,
the flows in the command palette, and every step fitting 80x24 and 200x55."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, Select, Static

from advisor.disks.devices import Device
from advisor.disks.probe import ProbeResult
from advisor.plan.model import Plan
from cachewise.core import Core
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.disks import DisksScreen
from screens.flows.measure import MeasureStep
from screens.flows.pick_cached import PickCached
from screens.flows.pick_fast import PickFast
from screens.flows.pick_slow import PickSlow
from screens.flows.save_plan import SavePlan
from screens.flows.start import StartScreen
from screens.flows.steps import StepBar
from screens.flows.workload import WorkloadStep
from screens.recommend import RecommendScreen
from screens.warmup import WarmupScreen
from screens.widgets import CurveChart
from tests.tui import screenshots
from tests.tui.test_apply_screen import FakeExecutor
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory
from tests.tui.test_fit import assert_fits
from tests.tui.test_probe_screen import FakeProber
from tests.tui.test_warmup_screen import BCACHE, LV, ScriptedSampler, sample
from tests.unit.test_ansible import load_book

SLOW_LV = "dm-1"  # labvg/data on the HDD


class LabProber(FakeProber):
    """The lab's fio results: the LV reads like the HDD under it, the others like the SSD."""

    def probe(self, device: Device, seconds: float, on_progress: object) -> ProbeResult:
        hdd = device.name == SLOW_LV
        return super().probe(replace(device, serial="HDD0001" if hdd else "SSD0001"), seconds,
                             on_progress)  # type: ignore[arg-type]


def make_app(tmp_path: Path, executor: FakeExecutor | None = None, sampler: ScriptedSampler | None = None,
             prober: LabProber | None = None) -> CachewiseApp:
    core = Core(FakeDiscovery(lab_inventory()), prober=prober or LabProber(), executor=executor or FakeExecutor(),
                state_dir=tmp_path, live=False, _sampler=sampler or ScriptedSampler(LV))
    return CachewiseApp(core, watch_hotplug=False, start=True)


def step_of(app: CachewiseApp) -> str:
    return str(app.screen.query_one(StepBar).step)


async def settle(app: CachewiseApp, pilot: Pilot[None]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def until(pilot: Pilot[None], done: object) -> None:
    """Pause until ``done()`` holds (a screen opened, a status came), at most 4 s."""
    for _ in range(200):
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.02)
    raise AssertionError("the screen did not get there")


async def at_top(pilot: Pilot[None], preview: ApplyScreen) -> None:
    """The preview as it opens: the focus back in the name box, the plan scrolled to its top
    (what it destroys first), settled before a picture is taken."""
    preview.query_one("#confirm-name", Input).focus()
    await pilot.pause()
    scroller = preview.query_one("#apply")
    scroller.scroll_home(animate=False)
    await until(pilot, lambda: scroller.scroll_y == 0)
    await pilot.pause()


async def highlight(pilot: Pilot[None], want: str) -> None:
    """Press Down until the step's 'Highlighted:' line names ``want``, as a user watching it would."""
    for _ in range(30):
        if want in str(pilot.app.screen.query_one("#pick-current", Static).content):
            return
        await pilot.press("down")
        await pilot.pause()
    raise AssertionError(f"{want} is not in the list")


async def to_measure(app: CachewiseApp, pilot: Pilot[None], slow: str, fast: str) -> None:
    """Start screen, Add, the slow device, the highlighted SSD (Enter without marking): the Measure step."""
    await settle(app, pilot)
    await pilot.press("enter")
    await settle(app, pilot)
    await highlight(pilot, slow)
    await pilot.press("enter")
    await pilot.pause()
    await highlight(pilot, fast)
    await pilot.press("enter")
    await settle(app, pilot)
    assert isinstance(app.screen, MeasureStep)


async def add_flow_to_recommendation(app: CachewiseApp, pilot: Pilot[None], size: tuple[int, int]) -> None:
    """Start screen, Add, the LV, the NVMe SSD, the probe, the database workload: each step fits."""
    await settle(app, pilot)
    assert isinstance(app.screen, StartScreen)
    await assert_fits(app, pilot)
    await pilot.press("enter")  # Add an SSD cache is the first choice
    await settle(app, pilot)
    assert isinstance(app.screen, PickSlow) and step_of(app) == "Slow device"
    await assert_fits(app, pilot)
    await highlight(pilot, "labvg/data (dm-1)")
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, PickFast) and step_of(app) == "Fast device"
    await assert_fits(app, pilot)
    await highlight(pilot, "nvme-QEMU")
    await pilot.press("space")
    await pilot.pause()
    assert app.screen.marked == ["nvme0n1"]
    await pilot.press("enter")
    await settle(app, pilot)
    assert isinstance(app.screen, MeasureStep) and step_of(app) == "Measure"
    listed = str(app.screen.query_one("#measure-list", Static).content)
    assert "hdd" in listed.lower() and "nvme" in listed.lower() or "ssd" in listed.lower(), listed
    await assert_fits(app, pilot)
    app.screen.query_one("#measure-go").focus()
    await pilot.press("enter")
    await settle(app, pilot)
    assert isinstance(app.screen, WorkloadStep) and step_of(app) == "Workload"
    await assert_fits(app, pilot)
    choices = app.screen.query_one("#workload-choices", OptionList)
    choices.focus()
    while "database (random I/O)" not in str(choices.get_option_at_index(choices.highlighted or 0).prompt):
        await pilot.press("down")
    await pilot.press("enter")
    await settle(app, pilot)
    assert isinstance(app.screen, RecommendScreen) and step_of(app) == "Recommendation"
    assert app.screen.recommendation is not None
    await assert_fits(app, pilot)


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_add_flow_from_the_start_screen_to_the_warm_up_screen(size: tuple[int, int], tmp_path: Path) -> None:
    executor, sampler = FakeExecutor(), ScriptedSampler(LV)
    app = make_app(tmp_path, executor, sampler)
    async with app.run_test(size=size) as pilot:
        await add_flow_to_recommendation(app, pilot, size)
        rec = app.screen
        assert isinstance(rec, RecommendScreen) and rec.recommendation is not None
        # The runner-ups are real choices: Enter on lvmcache writethrough makes it the cache to plan.
        why = rec.query_one("#why", OptionList)
        why.focus()
        index = next(i for i, o in rec._options.items() if o.config and o.config.backend == "lvmcache"
                     and o.config.mode == "writethrough")
        why.highlighted = index
        await pilot.press("enter")
        await pilot.pause()
        assert rec.choice is not None and rec.chosen is not None and rec.chosen.config is not None
        assert (rec.chosen.config.backend, rec.chosen.config.mode) == ("lvmcache", "writethrough")
        assert "Your choice instead" in str(rec.query_one("#rec-choice", Static).content)
        if size == (200, 55):
            screenshots.save(app, "flow-add-recommend")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen))
        preview = app.screen
        assert isinstance(preview, ApplyScreen) and step_of(app) == "Preview and apply"
        assert preview.plan.kind == "lvmcache-attach" and preview.query_one("#confirm-name", Input).value == ""
        await assert_fits(app, pilot)
        await at_top(pilot, preview)  # assert_fits moved the focus, and the preview, around
        if size == (200, 55):
            screenshots.save(app, "flow-add-preview")
        await pilot.press(*preview.target)
        await pilot.press("enter")
        for _ in range(200):  # the apply, then the landing on the Warm-up screen
            await pilot.pause(0.02)
            if isinstance(app.screen, WarmupScreen):
                break
        assert executor.applied and executor.applied[0][0].kind == "lvmcache-attach"
        warm = app.screen
        assert isinstance(warm, WarmupScreen) and step_of(app) == "Warm-up"
        assert [type(s).__name__ for s in app.screen_stack[1:]] == ["DisksScreen", "StartScreen", "WarmupScreen"]
        chart = warm.query_one("#warmup-curve", CurveChart)
        assert chart.curve is not None and chart.curve.mark is not None
        sampler.feed.put([sample(0, 10, 10, 90)])
        sampler.feed.put([sample(1, 30, 60, 130)])
        for _ in range(300):
            await pilot.pause(0.01)
            if len(warm.figures) >= 2:
                break
        assert chart.observed is not None and 0 < chart.observed <= 1
        await assert_fits(app, pilot)
        if size == (200, 55):
            assert "●" in str(chart.content) and "this cache:" in str(chart.content)
            screenshots.save(app, "flow-add-warmup")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)


async def test_back_goes_one_step_and_cached_or_busy_devices_are_refused(tmp_path: Path) -> None:
    sampler = ScriptedSampler(LV)
    sampler.feed.put([sample(0, 10, 10, 90)])  # for the Remove list's dirty column at the end
    app = make_app(tmp_path, sampler=sampler)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        await highlight(pilot, "(bcache0)")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PickSlow)  # a cached device is refused, with the reason
        assert any("already cached" in n.message and "Nothing was changed" in n.message for n in app._notifications)
        await pilot.press(*["up"] * 20)  # a refused device is listed greyed below the ones offered
        await highlight(pilot, "labvg/data (dm-1)")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PickFast)
        # The slow device, the disk under it and devices in a cache are not offered as the SSD.
        names = {d.name for d in app.screen.offered}
        assert "dm-1" not in names and "sdb" not in names and "sde" not in names and "nvme0n1" in names
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, PickSlow)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
        await pilot.press("escape")  # Browse the disks
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Guided: Add an SSD cache", "Guided: Remove a cache", "Guided: Plan only (no root needed)"} <= titles
        await app.start_flow("remove")
        await settle(app, pilot)
        assert isinstance(app.screen, PickCached)


async def test_remove_flow_shows_dirty_data_previews_the_flush_and_detach_and_runs_it(tmp_path: Path) -> None:
    executor, sampler = FakeExecutor(), ScriptedSampler(BCACHE)
    for _ in range(2):  # the list is read twice: when it opens, and again after the removal
        sampler.feed.put([replace(sample(0, 10, 10, 90, dirty_mib=3), target="bcache0", kind="bcache")])
    app = make_app(tmp_path, executor, sampler)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "enter")
        await settle(app, pilot)
        pick = app.screen
        assert isinstance(pick, PickCached) and step_of(app) == "Cached device"
        assert {d.name for d in pick.devices} == {"dm-1", "bcache0"} or pick.devices
        await assert_fits(app, pilot)
        table = pick.query_one("#pick", DataTable)
        assert table.row_count == len(pick.devices) >= 1
        await until(pilot, lambda: pick.dirty)  # the kernel's dirty data, read in a worker
        row = table.get_row_at(next(i for i, d in enumerate(pick.devices) if d.name == "bcache0"))
        assert row[-1] == "3.0 MiB", row
        await highlight(pilot, "(bcache0)")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen))
        preview = app.screen
        assert isinstance(preview, ApplyScreen) and step_of(app) == "Preview, flush and detach"
        assert preview.plan.kind == "bcache-detach"
        await assert_fits(app, pilot)
        await at_top(pilot, preview)
        screenshots.save(app, "flow-remove-preview")
        await pilot.press(*preview.target, "enter")
        await until(pilot, lambda: preview.outcome is not None)
        assert executor.applied and executor.applied[0][0].kind == "bcache-detach"
        assert "Esc goes back to the caches left" in str(preview.query_one("#apply-status", Static).content)
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, PickCached)


async def test_plan_only_saves_json_and_ansible_and_names_the_command(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    prober = LabProber()
    app = make_app(tmp_path, prober=prober)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "enter")
        await settle(app, pilot)
        await highlight(pilot, "labvg/data (dm-1)")
        await pilot.press("enter")
        await pilot.pause()
        await highlight(pilot, "nvme-QEMU")
        await pilot.press("enter")  # nothing marked: the highlighted SSD
        await settle(app, pilot)
        assert isinstance(app.screen, WorkloadStep) and prober.probed == []  # no root needed: nothing probed
        prompts = [str(app.screen.query_one(OptionList).get_option_at_index(i).prompt)
                   for i in range(app.screen.query_one(OptionList).option_count)]
        assert not any(p.startswith("Trace") for p in prompts)
        await pilot.press("down", "down", "enter")  # from Open…: very small files, database
        await settle(app, pilot)
        rec = app.screen
        assert isinstance(rec, RecommendScreen) and rec.recommendation is not None
        rec.choice = next(o for o in rec._options.values() if o.config and o.config.backend == "lvmcache")
        await pilot.press("a")
        await settle(app, pilot)
        save = app.screen
        assert isinstance(save, SavePlan) and step_of(app) == "Save the plan"
        await assert_fits(app, pilot)
        box = save.query_one("#save-path", Input)
        assert box.value.endswith("cachewise-plan-labvg-data.json")  # a name offered in the current folder
        box.value = "plan.json"  # relative: the current folder, tmp_path here
        box.focus()
        await pilot.press("enter")
        await pilot.pause()
        status = str(save.query_one("#save-status", Static).content)
        assert "Saved to plan.json. Run it with: sudo cachewise apply plan.json" in status
        screenshots.save(app, "flow-plan-saved")
        assert Plan.loads((tmp_path / "plan.json").read_text()).kind == "lvmcache-attach"
        await pilot.press("enter")  # again: the file exists now, and is not overwritten
        await pilot.pause()
        assert "already exists" in str(save.query_one("#save-status", Static).content)
        save.query_one("#save-format", Select).value = "ansible"
        await pilot.pause()
        assert box.value.endswith(".yml")
        box.focus()
        await pilot.press("enter")
        await pilot.pause()
        book = load_book((tmp_path / "plan.yml").read_text())
        assert isinstance(book, list) and book[0]["hosts"]
        assert "ansible-playbook" in str(save.query_one("#save-status", Static).content)
        json.loads((tmp_path / "plan.json").read_text())


async def test_a_saved_snapshot_is_measured_by_nobody_and_its_plan_is_saved_not_applied(tmp_path: Path) -> None:
    from advisor.disks.collect import RawSystem
    from screens.flows.start import CannotApply
    from tests.tui.test_same_recommendation import RAW

    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), tmp_path), watch_hotplug=False, start=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("enter")  # Add: first it says a plan made here cannot be applied here
        await until(pilot, lambda: isinstance(app.screen, CannotApply))
        assert "cannot be applied here" in str(app.screen.query_one("#cannot-apply-text", Static).content)
        app.screen.query_one("#go").focus()  # Go on with Add
        await pilot.press("enter")
        await settle(app, pilot)
        for name in ("sda", "nvme0n1"):  # the slow device, then the SSD, by their kernel names
            step = app.screen
            table = step.query_one("#pick", DataTable)
            table.move_cursor(row=next(i for i, d in enumerate(step.devices) if d.name == name))  # type: ignore[attr-defined]
            await pilot.pause()
            await pilot.press("enter")
            await settle(app, pilot)
        assert isinstance(app.screen, MeasureStep)
        assert "saved snapshot" in str(app.screen.query_one("#measure-list", Static).content)
        app.screen.query_one("#measure-go").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        choices = app.screen.query_one(OptionList)
        prompts = [str(choices.get_option_at_index(i).prompt) for i in range(choices.option_count)]
        assert not any(p.startswith("Trace") for p in prompts)  # the snapshot's disks are not here
        choices.focus()
        for _ in range(prompts.index("Type: database (random I/O)")):
            await pilot.press("down")
        assert "database (random I/O)" in str(app.screen.query_one("#workload-highlighted", Static).content)
        await pilot.press("enter")
        await settle(app, pilot)
        rec = app.screen
        assert isinstance(rec, RecommendScreen) and rec.recommendation is not None
        if rec.recommendation.config is None:
            await pilot.press("o")  # an alternative that sets up a cache
        await pilot.press("a")  # the preview cannot be applied here: it is saved, to apply on that machine
        await until(pilot, lambda: isinstance(app.screen, SavePlan))
        assert step_of(app) == "Preview and apply"
        assert "cannot be applied here" in str(app.screen.query_one("#save-note", Static).content)


async def test_tracing_from_the_workload_step_shows_progress_the_curve_so_far_and_the_measured_choice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace step's wiring, with the capture replaced by a copy of a fio iolog (the capture
    itself runs against the kernel in tests/lab/test_trace_lab.py)."""
    from tests.tui.test_fit import TRACE

    app = make_app(tmp_path)
    traced: list[tuple[str, float]] = []

    def fake_trace(device: str, output: Path, seconds: float, on_progress: object = None, **_: object) -> dict:
        traced.append((device, seconds))
        output.write_bytes(TRACE.read_bytes())
        for t in (1.0, 2.0):
            on_progress(type("P", (), {"events": int(1000 * t), "elapsed": t})())  # type: ignore[operator]
        return {}

    monkeypatch.setattr("cachewise.core.workload.trace", lambda _core, *a, **k: fake_trace(*a, **k))
    monkeypatch.setattr(WorkloadStep, "PREVIEW_SECONDS", 0.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await to_measure(app, pilot, "labvg/data (dm-1)", "(nvme0n1)")
        app.screen.query_one("#measure-go").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        step = app.screen
        assert isinstance(step, WorkloadStep)
        assert "Trace labvg/data (dm-1)" in str(step.query_one("#workload-highlighted", Static).content)
        await pilot.press("enter")  # Trace…: how long?
        await pilot.pause()
        app.screen.query_one("#trace-seconds", Input).value = "2"  # out of bounds: refused
        await pilot.press("enter")
        await pilot.pause()
        assert "Between 5 and 86400" in str(app.screen.query_one("#trace-window-error", Static).content)
        app.screen.query_one("#trace-seconds", Input).value = "30"
        await pilot.press("enter")
        await until(pilot, lambda: step.flow.analysis is not None)
        await settle(app, pilot)
        assert traced == [("/dev/dm-1", 30.0)]
        assert "Measured: 4,000 requests" in str(step.query_one("#workload-status", Static).content)
        assert step.query_one("#workload-curve", CurveChart).curve is not None
        assert list((tmp_path / "traces").glob("dm-1-*.trace"))
        assert "Use the measured workload" in str(step.query_one("#workload-highlighted", Static).content)
        # The trace recorded, the flow went on to the recommendation by itself.
        assert isinstance(app.screen, RecommendScreen) and app.screen.base.analysis is not None
