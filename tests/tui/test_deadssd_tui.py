"""A dead cache SSD in the terminal UI (issue 29), on the lab's snapshots taken after the SSD was
pulled (tests/fixtures/lab-deadssd/): the Remove flow offers a mirror that lost one SSD only after
its repair, says why on its Highlighted line, and asks before a rescue that loses data, naming the
loss, then previews the rescue; the Warm-up screen says a cache failed at the top, at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from advisor.watch.figures import Figures
from advisor.watch.sampler import CacheRef
from screens.apply import ApplyScreen
from screens.dialogs import ConfirmLoss
from screens.flows.save_plan import SavePlan
from screens.warmup import Sampled, WarmupScreen
from tests.conftest import FIXTURES
from tests.tui.test_issue30 import SIZES, plain, previewing_app, remove_flow, rows, said, settle, until

DEAD = FIXTURES / "lab-deadssd"


@pytest.mark.parametrize("size", SIZES)
async def test_a_mirror_on_one_leg_is_not_offered_for_removal_and_the_repair_is_named(
    size: tuple[int, int], tmp_path: Path
) -> None:
    app = previewing_app(DEAD / "f-pulled-raw.json", tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        pick = await remove_flow(app, pilot)
        await settle(app, pilot)
        (mirror,) = [d for d in pick.devices if d.lvm is not None and d.lvm.vg == "vgf"]
        assert mirror.name in pick.why_not
        row = next(r for r in rows(pick) if "vgf/data" in r[0].replace("\n", ""))
        assert row[-1] == "not offered", row
        while pick.current is not mirror:
            await pilot.press("down")
            await pilot.pause()
        line = " ".join(plain(pick.query_one("#pick-current", Static).content, width=size[0]).split())
        assert "repair the mirror" in line and "cache-repair" in line, line
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ApplyScreen | SavePlan), "no removal was planned"
        assert any("repair" in s for s in said(app))


@pytest.mark.parametrize("size", SIZES)
async def test_a_writeback_rescue_is_asked_with_the_loss_then_previewed(size: tuple[int, int], tmp_path: Path) -> None:
    app = previewing_app(DEAD / "b-pulled-raw.json", tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        pick = await remove_flow(app, pilot)
        await settle(app, pilot)
        while pick.current is None or pick.current.lvm is None or pick.current.lvm.vg != "vgb":
            await pilot.press("down")
            await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmLoss), "the question")
        question = " ".join(plain(app.screen.query_one("#question", Static).content, width=size[0]).split())
        assert "lacks the blocks that were dirty on the SSD" in question, question
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen), "the rescue's preview")
        plan = app.screen.plan  # type: ignore[attr-defined]
        assert plan.steps[0].argv == ("lvconvert", "--yes", "--force", "--uncache", "vgb/data")
        assert "lacks the blocks" in plan.layout_after[0]


@pytest.mark.parametrize("size", SIZES)
async def test_declining_the_loss_plans_nothing(size: tuple[int, int], tmp_path: Path) -> None:
    app = previewing_app(DEAD / "b-pulled-raw.json", tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        pick = await remove_flow(app, pilot)
        await settle(app, pilot)
        while pick.current is None or pick.current.lvm is None or pick.current.lvm.vg != "vgb":
            await pilot.press("down")
            await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmLoss), "the question")
        await pilot.press("n")
        await until(pilot, lambda: app.screen is pick, "the Remove list")
        await pilot.pause(0.2)
        assert app.screen is pick and not any(isinstance(s, ApplyScreen) for s in app.screen_stack), (
            "declining the loss planned nothing: no preview was opened"
        )


def failed_figures(name: str, trouble: str) -> Figures:
    return Figures(
        1000.0, name, "dm-cache", "writethrough", "failed", None, None, None, None, None, None, None, None,
        None, None, None, None, None, None, None, None, None, "unknown", None, None, None, trouble=trouble,
    )  # fmt: skip


@pytest.mark.parametrize("size", SIZES)
async def test_the_warmup_screen_says_a_cache_failed_at_the_top(size: tuple[int, int], tmp_path: Path) -> None:
    app = previewing_app(DEAD / "a-pulled-raw.json", tmp_path)
    trouble = "the SSD of vga/data is gone (sdb); dm-cache is in fail mode (the kernel says Fail)"
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        screen = WarmupScreen(CacheRef("dm-cache", "vga/data", "dm-0", "dm-3", "dm-1", dm_name="vga-data"))
        screen._sample = lambda: None  # type: ignore[method-assign]  # figures are posted by the test
        await app.push_screen(screen)
        await pilot.pause()
        screen.post_message(Sampled([failed_figures("vga/data", trouble)]))
        await pilot.pause()
        panel = screen.query_one("#trouble", Static)
        assert panel.display and panel.border_title == "vga/data: failed"
        assert "The SSD of vga/data is gone (sdb)" in " ".join(plain(panel.content, width=size[0]).split())
