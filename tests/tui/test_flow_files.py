"""The guided flows finished (issue 30): a trace opened on the Workload step moves the flow on by
itself; every box that asks for a file completes the path from the file system and opens a picker
that lists only the files that fit (and survives a folder it cannot read); every plan preview saves,
with the save box and its result in view without scrolling at 80x24, 120x35 and 200x55; and Add
or Remove says at its start when the plan cannot be applied from here, offering Plan only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Input, OptionList, Static

from advisor.disks.collect import RawSystem
from advisor.plan.model import Plan
from cachewise.core import Core
from screens.app import CachewiseApp
from screens.files import PLANS, TRACES, FilePicker, PickerTree, complete
from screens.flows.pick_cached import PickCached
from screens.flows.pick_slow import PickSlow
from screens.flows.save_plan import SavePlan
from screens.flows.start import CannotApply
from screens.flows.workload import WorkloadStep
from screens.recommend import RecommendScreen
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory
from tests.tui.test_fit import TRACE, assert_fits
from tests.tui.test_flows import make_app, settle, step_of, until
from tests.tui.test_same_recommendation import RAW


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder as a user keeps one: two traces, a note, a plan, a hidden trace, a sub-folder."""
    root = tmp_path / "work"
    (root / "runs").mkdir(parents=True)
    shutil.copy(TRACE, root / "db-monday.iolog")
    (root / "db-notes.md").write_text("not a trace\n")
    (root / "old-plan.json").write_text("{}\n")
    (root / ".hidden.trace").write_text("")
    (root / "runs" / "tuesday.csv").write_text("")
    return root


def test_completion_offers_folders_and_the_files_that_fit(folder: Path) -> None:
    head = f"{folder}/"
    assert complete(head + "db-", TRACES) == head + "db-monday.iolog"  # the note does not fit a trace
    assert complete(head + "r", TRACES) == head + "runs/"
    assert complete(head + "runs/t", TRACES) == head + "runs/tuesday.csv"
    assert complete(head + "o", TRACES) is None and complete(head + "o", PLANS) == head + "old-plan.json"
    assert complete(head + "o", PLANS, folders_only=True) is None  # a folder to save into: folders only
    assert complete(head + "d", TRACES) == head + "db-monday.iolog"  # one match: the whole name
    assert complete(head + ".h", TRACES) == head + ".hidden.trace"  # hidden only when asked for
    assert complete(head, TRACES) == head + "db-monday.iolog"  # no hidden one offered first
    assert complete(head + "db-monday.iolog", TRACES) is None  # complete already
    assert complete(head + "nothing-here", TRACES) is None


def test_an_unreadable_folder_completes_nothing_and_raises_nothing(folder: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.scandir
    locked = folder / "runs"

    def scandir(path: object) -> object:
        if Path(str(path)) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    assert complete(f"{locked}/t", TRACES) is None
    assert complete(f"{folder}/r", TRACES) == f"{folder}/runs/"  # the folder itself is still offered


async def pick(app: CachewiseApp, pilot: Pilot[None], *kernel_names: str) -> None:
    """On each pick list in turn, Enter on the device of this kernel name."""
    for name in kernel_names:
        step = app.screen
        table = step.query_one("#pick", DataTable)
        table.move_cursor(row=next(i for i, d in enumerate(step.devices) if d.name == name))  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)


async def open_workload_step(app: CachewiseApp, pilot: Pilot[None]) -> WorkloadStep:
    """Plan only, the LV, the NVMe SSD: the Workload step."""
    await settle(app, pilot)
    await pilot.press("down", "down", "enter")
    await settle(app, pilot)
    await pick(app, pilot, "dm-1", "nvme0n1")
    step = app.screen
    assert isinstance(step, WorkloadStep)
    return step


async def choose_open(step: WorkloadStep, pilot: Pilot[None]) -> Input:
    choices = step.query_one("#workload-choices", OptionList)
    choices.focus()
    while "Open a trace" not in str(choices.get_option_at_index(choices.highlighted or 0).prompt):
        await pilot.press("down")
    await pilot.press("enter")
    await until(pilot, lambda: step.query("#workload-trace-path"))
    await pilot.pause()
    box = step.query_one("#workload-trace-path", Input)
    assert box.has_focus
    return box


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_a_trace_typed_with_completion_opens_and_the_flow_moves_on(
        size: tuple[int, int], tmp_path: Path, folder: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        step = await open_workload_step(app, pilot)
        box = await choose_open(step, pilot)
        await assert_fits(app, pilot)
        box.focus()
        await pilot.press(*f"{folder}/db-m")  # typed as far as it is unique, then Tab completes it
        await until(pilot, lambda: box._suggestion == f"{folder}/db-monday.iolog")
        await pilot.press("tab")
        assert box.value == f"{folder}/db-monday.iolog" and box.has_focus
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RecommendScreen))
        await settle(app, pilot)
        rec = app.screen
        assert isinstance(rec, RecommendScreen) and step_of(app) == "Recommendation"
        assert rec.base.analysis is not None and rec.base.analysis.requests > 0
        assert step.flow.analysis is rec.base.analysis
        await pilot.press("escape")  # back: the measured workload is the first choice now
        await pilot.pause()
        assert "measured workload" in str(step.query_one("#workload-choices", OptionList).get_option_at_index(0).prompt)


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_the_picker_lists_only_traces_and_its_choice_opens_the_trace(
        size: tuple[int, int], tmp_path: Path, folder: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        step = await open_workload_step(app, pilot)
        box = await choose_open(step, pilot)
        box.value = f"{folder}/db"  # the picker opens in the folder the box names
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, FilePicker))
        picker = app.screen
        tree = picker.query_one(PickerTree)
        await until(pilot, lambda: len(tree.root.children) >= 2)
        listed = [str(n.label) for n in tree.root.children]
        assert listed == ["runs", "db-monday.iolog"], listed  # no note, no plan, nothing hidden
        await assert_fits(app, pilot)
        tree.focus()
        await pilot.press("down", "down")  # the root, runs, then the trace
        await pilot.pause()
        assert "db-monday.iolog" in str(picker.query_one("#picker-current", Static).content)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RecommendScreen))
        assert box.value == str(folder / "db-monday.iolog")  # the choice came back into the box
        await settle(app, pilot)
        assert isinstance(app.screen, RecommendScreen) and app.screen.base.analysis is not None


async def test_a_file_that_is_not_there_is_refused_in_place(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        step = await open_workload_step(app, pilot)
        box = await choose_open(step, pilot)
        box.value = str(tmp_path / "missing.trace")
        await pilot.press("enter")
        await pilot.pause()
        status = str(step.query_one("#workload-status", Static).content)
        assert "is not a readable file" in status and "nothing was opened" in status
        assert app.screen is step


async def test_the_picker_walks_up_a_folder_and_lives_with_one_it_cannot_read(
        tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path.iterdir
    locked = folder / "runs"

    def iterdir(self: Path) -> object:
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await app.push_screen(FilePicker(locked, TRACES))
        await pilot.pause()
        picker = app.screen
        tree = picker.query_one(PickerTree)
        await pilot.pause(0.3)
        assert not tree.root.children  # nothing to list, and no crash
        await pilot.press("backspace")  # up a folder
        await until(pilot, lambda: len(tree.root.children) >= 2)
        assert Path(tree.path) == folder
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, FilePicker)


def visible(screen: object, widget: Widget) -> bool:
    region = widget.region
    return region.area > 0 and screen.region.contains_region(region)  # type: ignore[attr-defined]


async def plan_only_on_a_snapshot_to_its_preview(app: CachewiseApp, pilot: Pilot[None]) -> SavePlan:
    """Plan only on the lab's snapshot: sda, the NVMe SSD, the database type, the plan's preview."""
    await settle(app, pilot)
    await pilot.press("down", "down", "enter")  # Plan only: no notice, it applies nothing
    await settle(app, pilot)
    assert isinstance(app.screen, PickSlow) and app.screen.flow.kind == "plan"
    await pick(app, pilot, "sda", "nvme0n1")
    choices = app.screen.query_one("#workload-choices", OptionList)
    choices.focus()
    while "database (random I/O)" not in str(choices.get_option_at_index(choices.highlighted or 0).prompt):
        await pilot.press("down")
    await pilot.press("enter")
    await settle(app, pilot)
    rec = app.screen
    assert isinstance(rec, RecommendScreen) and rec.recommendation is not None
    if rec.recommendation.config is None:
        await pilot.press("o")
    await pilot.press("a")
    await until(pilot, lambda: isinstance(app.screen, SavePlan))
    save = app.screen
    assert isinstance(save, SavePlan)
    await pilot.pause()
    return save


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 55)])
async def test_plan_only_on_a_snapshot_saves_with_the_box_and_the_result_in_view(
        size: tuple[int, int], tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), tmp_path), watch_hotplug=False, start=True)
    async with app.run_test(size=size) as pilot:
        save = await plan_only_on_a_snapshot_to_its_preview(app, pilot)
        assert step_of(app) == "Save the plan"
        scroller = save.query_one("#save-plan")
        assert scroller.scroll_y == 0  # the preview opens at its top, what it destroys first
        for part in ("#save-format", "#save-path", "#save-path-browse", "#save-status"):
            assert visible(save, save.query_one(part)), f"{part} is not in view at {size}"
        # The picker chooses the folder; the file's name stays.
        box = save.query_one("#save-path", Input)
        name = Path(box.value).name
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, FilePicker))
        picker = app.screen
        tree = picker.query_one(PickerTree)
        await until(pilot, lambda: tree.root.children)
        assert "db-monday.iolog" not in [str(n.label) for n in tree.root.children]  # folders only
        await until(pilot, lambda: any(str(n.label) == "work" for n in tree.root.children))
        while "work" not in str(picker.query_one("#picker-current", Static).content).rsplit("/", 1)[-1]:
            await pilot.press("down")
            await pilot.pause()
        await pilot.press("ctrl+s")  # this folder
        await until(pilot, lambda: app.screen is save)
        assert box.value == str(folder / name)
        await pilot.press("enter")
        await pilot.pause()
        status = save.query_one("#save-status", Static)
        assert f"Saved to {folder / name}" in str(status.content) and "sudo cachewise apply" in str(status.content)
        assert visible(save, status) and scroller.scroll_y == 0  # the result shows where it was asked
        assert any("Saved to" in n.message for n in app._notifications)
        assert Plan.loads((folder / name).read_text()).from_snapshot


async def test_add_on_a_snapshot_says_it_cannot_be_applied_here_and_plan_only_is_one_key_away(tmp_path: Path) -> None:
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), tmp_path), watch_hotplug=False, start=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("enter")  # Add
        await until(pilot, lambda: isinstance(app.screen, CannotApply))
        notice = app.screen
        said = str(notice.query_one("#cannot-apply-text", Static).content)
        assert "saved snapshot" in said and "cannot be applied here" in said
        await assert_fits(app, pilot)
        notice.query_one("#plan").focus()
        await pilot.press("enter")  # Plan only
        await settle(app, pilot)
        assert isinstance(app.screen, PickSlow) and app.screen.flow.kind == "plan"
        assert step_of(app) == "Slow device"


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_add_and_remove_warn_a_user_who_is_not_root(size: tuple[int, int], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("screens.flows.start.is_root", lambda: False)
    # This machine's core (live) without root; its disks are the lab's, read from the fake.
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), state_dir=tmp_path, live=True),
                       watch_hotplug=False, start=True)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("enter")  # Add
        await until(pilot, lambda: isinstance(app.screen, CannotApply))
        said = str(app.screen.query_one("#cannot-apply-text", Static).content)
        assert "not root" in said and "Planning works" in said and "sudo cachewise" in said
        await assert_fits(app, pilot)
        await pilot.press("escape")  # back to the start screen: nothing began
        await pilot.pause()
        assert type(app.screen).__name__ == "StartScreen"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CannotApply))
        app.screen.query_one("#plan").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, PickSlow) and app.screen.flow.kind == "plan"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("down", "enter")  # Remove
        await until(pilot, lambda: isinstance(app.screen, CannotApply))
        said = str(app.screen.query_one("#cannot-apply-text", Static).content)
        assert "removing a cache" in said and "needs root" in said
        assert not app.screen.query("#plan")  # Plan only makes caches; this goes on to save the removal
        app.screen.query_one("#go").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, PickCached)


async def test_the_remove_preview_of_a_user_who_is_not_root_saves_the_plan(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("screens.flows.start.is_root", lambda: False)
    monkeypatch.chdir(tmp_path)
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), state_dir=tmp_path, live=True),
                       watch_hotplug=False, start=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "enter")
        await until(pilot, lambda: isinstance(app.screen, CannotApply))
        app.screen.query_one("#go").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        table = app.screen.query_one("#pick", DataTable)
        table.move_cursor(row=next(i for i, d in enumerate(app.screen.devices) if d.name == "bcache0"))  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SavePlan))
        save = app.screen
        assert step_of(app) == "Preview, flush and detach" and save.plan.kind == "bcache-detach"
        assert "needs root" in str(save.query_one("#save-note", Static).content)
        save.query_one("#save-path", Input).value = "remove.json"
        save.query_one("#save-path", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert visible(save, save.query_one("#save-status"))
        assert Plan.loads((tmp_path / "remove.json").read_text()).kind == "bcache-detach"


@pytest.mark.parametrize("typed", ["~nosuchuser-cw/plan.json", "/", "."])
async def test_odd_paths_in_the_save_box_are_refused_in_a_sentence_not_a_traceback(
        typed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path a user can type (~ of no such user, the root, the current folder) with either format
    chosen: the box keeps it or says why it cannot save there; the app keeps running."""
    from textual.widgets import Select

    from screens.files import user_path

    assert user_path(" ~nosuchuser-cw/x ") == Path("~nosuchuser-cw/x")  # no such user: left as typed
    monkeypatch.chdir(tmp_path)
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), tmp_path), watch_hotplug=False, start=True)
    async with app.run_test(size=(80, 24)) as pilot:
        save = await plan_only_on_a_snapshot_to_its_preview(app, pilot)
        box = save.query_one("#save-path", Input)
        box.value = typed
        save.query_one("#save-format", Select).value = "ansible"
        await pilot.pause()
        assert app.is_running and box.value in (typed, typed.replace(".json", ".yml"))
        box.focus()
        await pilot.press("enter")
        await pilot.pause()
        status = str(save.query_one("#save-status", Static).content)
        assert app.is_running and status and "Traceback" not in status
