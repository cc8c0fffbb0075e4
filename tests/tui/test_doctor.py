"""The Doctor screen (d on the Disks screen): the findings with their severity, the highlighted
one's cause and fix, Enter on a finding whose fix is a plan opens that plan's preview, a fix
that is a command is shown to run; at 80x24 and 200x55, on the lab's saved snapshots."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TypeVar

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList, Static

import screens.doctor
from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.errors import CachewiseError
from advisor.health.doctor import examine
from advisor.health.look import CacheLook, Look
from cachewise.core import Core
from cachewise.core.doctor import Checkup
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.dialogs import ChooseDevice, ConfirmLoss
from screens.disks import DisksScreen
from screens.doctor import DoctorScreen
from screens.flows.save_plan import SavePlan
from tests.conftest import FIXTURES
from tests.tui.test_apply_screen import FakeExecutor
from tests.tui.test_disks_screen import FakeDiscovery
from tests.tui.test_fit import assert_fits

SIZES = [(80, 24), (200, 55)]
T = TypeVar("T")
DEGRADED = FIXTURES / "lab-caches" / "raw-degraded.json"  # labvg/data: a writeback pool's mirror missing an SSD
DEADSSD_F = FIXTURES / "lab-deadssd" / "f-pulled-raw.json"  # vgf/data's mirror lost an SSD; SSDF003 is free
LAYERS = FIXTURES / "lab-caches" / "raw-layers.json"  # two healthy lvmcaches
WRITECACHE = FIXTURES / "lab-caches" / "raw-writecache.json"  # labvg/data with a dm-writecache
# the writecache whose SSD the lab pulled: its status's first field, the error, is 1
WC_ERROR_LINE = next(line.split(": ", 1)[1] for line in (FIXTURES / "lab-deadssd" / "c-pulled-dmstatus.txt")
                     .read_text().splitlines() if line.startswith("vgc-data: "))


def text_of(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def notes(app: CachewiseApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def open_doctor(app: CachewiseApp, pilot: Pilot[None]) -> DoctorScreen:
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, DisksScreen)
    await pilot.press("d")
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, DoctorScreen)
    await assert_fits(app, pilot)  # no column cut off, every widget within the screen
    return app.screen


def rows(screen: DoctorScreen) -> list[list[str]]:
    table = screen.query_one("#findings", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.mark.parametrize("size", SIZES)
async def test_a_degraded_mirror_with_its_cause_and_the_repair_command(size: tuple[int, int], tmp_path: Path) -> None:
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(DEGRADED), tmp_path), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        screen = await open_doctor(app, pilot)
        found = rows(screen)
        assert found[0] == ["CRITICAL", "labvg/data", "cache degraded"]
        assert found[-1][:2] == ["INFO", "doctor"]  # a snapshot: no live status, said as a note
        pane = text_of(screen.query_one("#finding", Static).content, size[0])
        assert "Cause" in pane and "writeback" in pane
        assert "lvconvert --repair labvg/data_cache_cpool_cdata" in " ".join(pane.split())
        assert "choose the new SSD, then preview the plan (cache-repair)" in " ".join(pane.split())
        status = str(screen.query_one("#doctor-status", Static).content)
        assert status.startswith("1 critical, 1 info: 1 cache and 0 SSDs looked at (a saved snapshot")
        # the whole panel is on screen: nothing of the cause or the fix is cut off at 80 columns
        assert screen.query_one("#finding-pane").region.width <= size[0]
        await pilot.press("f")  # the fix is the repair plan: first, which new SSD
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ChooseDevice)
        await assert_fits(app, pilot)
        # this machine has no free SSD: each device greyed with why, and the dialog says so
        assert dialog.choices and all(why for *_, why in dialog.choices)
        assert dialog.query_one(OptionList).option_count == len(dialog.choices)
        assert "No device here can be used" in " ".join(str(w.content) for w in dialog.query(Static))
        await pilot.press("escape")  # nothing chosen, nothing planned
        await pilot.pause()
        assert isinstance(app.screen, DoctorScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_the_repair_of_a_degraded_mirror_onto_the_ssd_chosen_is_previewed(size: tuple[int, int], tmp_path: Path) -> None:
    """The lab's snapshot after one SSD of vgf/data's raid1 pool was pulled, with a third SSD free:
    f asks which new SSD, offers the free ones first, and the repair plan onto the one chosen is
    previewed (a snapshot's plan goes to the save preview)."""
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(DEADSSD_F), tmp_path), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        screen = await open_doctor(app, pilot)
        row = next(i for i, r in enumerate(rows(screen)) if r[1:] == ["vgf/data", "cache degraded"])
        screen.query_one("#findings", DataTable).move_cursor(row=row)
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ChooseDevice)
        await assert_fits(app, pilot)
        offered = [path for path, _, why in dialog.choices if why is None]
        assert "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SSDF003" in offered
        assert dialog.choices[: len(offered)] == [c for c in dialog.choices if c[2] is None]  # the free ones first
        option_list = dialog.query_one(OptionList)
        option_list.highlighted = offered.index("/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SSDF003")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        preview = app.screen
        assert isinstance(preview, SavePlan), preview
        assert preview.plan.kind == "cache-repair"
        assert any("SSDF003" in " ".join(s.argv) for s in preview.plan.steps)


@pytest.mark.parametrize("size", SIZES)
async def test_healthy_caches_and_moving_through_the_list(size: tuple[int, int], tmp_path: Path) -> None:
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(LAYERS), tmp_path), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        screen = await open_doctor(app, pilot)
        assert [r[:2] for r in rows(screen)] == [["INFO", "doctor"]]
        assert "run doctor on the machine itself" in text_of(screen.query_one("#finding", Static).content, size[0])
        assert str(screen.query_one("#doctor-status", Static).content).startswith("1 info: 2 caches")
        await pilot.press("r")  # look again
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [r[:2] for r in rows(screen)] == [["INFO", "doctor"]]


def failed_writecache(core: Core, request: object) -> Checkup:
    """What doctor says of the lab's writecache once its status carries an error number."""
    inv = build_inventory(RawSystem.load(WRITECACHE))
    device = next(d for d in inv.devices if d.lvm is not None and d.lvm.lv == "data")
    look = Look(1000.0, True, True, inv, (CacheLook("labvg/data", "dm-writecache", status_line=WC_ERROR_LINE,
                                                    device=device),))
    return Checkup(examine(look), look, (), inv)


@pytest.mark.parametrize("size", SIZES)
async def test_enter_on_a_failed_cache_opens_its_removal_plan(size: tuple[int, int], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screens.doctor, "doctor", failed_writecache)
    inv = build_inventory(RawSystem.load(WRITECACHE))
    core = Core(FakeDiscovery(inv), executor=FakeExecutor(), state_dir=tmp_path, live=False)
    app = CachewiseApp(core, watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        screen = await open_doctor(app, pilot)
        assert rows(screen)[0][:2] == ["CRITICAL", "labvg/data"]
        pane = " ".join(text_of(screen.query_one("#finding", Static).content, size[0]).split())
        assert "error 1" in pane and "preview the plan (remove)" in pane and rows(screen)[0][2] == "cache failed"
        screen.query_one("#findings", DataTable).focus()  # the list has the focus when the screen opens
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.02)
            if isinstance(app.screen, (ApplyScreen, SavePlan)):
                break
        assert isinstance(app.screen, (ApplyScreen, SavePlan)), (type(app.screen).__name__, notes(app))
        assert app.screen.plan.kind == "writecache-detach"  # what `plan remove` makes for a writecache


@pytest.mark.parametrize("size", SIZES)
async def test_doctor_that_cannot_look_says_so(size: tuple[int, int], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(core: Core, request: object) -> Checkup:
        raise CachewiseError("snapshot-only")

    monkeypatch.setattr(screens.doctor, "doctor", refuse)
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(LAYERS), tmp_path), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        screen = await open_doctor(app, pilot)
        pane = text_of(screen.query_one("#finding", Static).content, size[0])
        assert "Doctor could not look" in pane and "press r to try again" in " ".join(pane.split())
        assert rows(screen) == []


async def until(app: CachewiseApp, pilot: Pilot[None], kind: type[T]) -> T:
    """The screen of this kind once it is shown (within about 5 s)."""
    for _ in range(250):
        if isinstance(app.screen, kind):
            return app.screen
        await pilot.pause(0.02)
    raise AssertionError(f"no {kind.__name__}: {type(app.screen).__name__} is shown; {notes(app)}")


INACTIVE = FIXTURES / "lab-deadssd" / "j-inactive-raw.json"  # vge/data: lvm2 refused it, its SSD pulled


@pytest.mark.parametrize("mode", ["writethrough", "writeback"])
async def test_a_cached_lv_lvm2_refused_is_rescued_from_doctor_the_loss_asked_first(mode: str, tmp_path: Path) -> None:
    """The lab's snapshot of a cached LV lvm2 would not activate (no block device, so no row of the
    Disks screen): doctor names it, Enter previews its rescue; in writeback (the same capture with
    the mode changed) the loss is asked first, as the Remove flow asks, and named in the plan."""
    import json

    data = json.loads(INACTIVE.read_text())
    for row in data["lvs"]:
        if (row["vg_name"], row["lv_name"]) == ("vge", "data"):
            row["cache_mode"] = mode
    snapshot = tmp_path / "raw.json"
    snapshot.write_text(json.dumps(data))
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(snapshot), tmp_path), watch_hotplug=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_doctor(app, pilot)
        row = next(i for i, r in enumerate(rows(screen)) if r[:2] == ["CRITICAL", "vge/data"])
        screen.query_one("#findings", DataTable).move_cursor(row=row)
        await pilot.pause()
        await pilot.press("f")
        if mode == "writeback":  # the worker waits on the question: look for it, not for the worker's end
            dialog = await until(app, pilot, ConfirmLoss)
            assert "lacks the blocks that were dirty" in " ".join(str(dialog.question).split())
            await pilot.press("x")
        preview = await until(app, pilot, SavePlan)
        assert isinstance(preview, SavePlan), (type(preview).__name__, notes(app))
        assert preview.plan.title.startswith("Rescue vge/data")
        forced = ("lvconvert", "--yes", "--force", "--uncache", "vge/data")
        assert (preview.plan.steps[0].argv == forced) == (mode == "writeback")
