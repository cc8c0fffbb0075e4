"""The TUI words a refusal in its own terms: the checkbox that allows what was refused, never the
CLI's flag; and ticking it lets the plan through."""

from __future__ import annotations

import dataclasses

from textual.widgets import Checkbox

from cachewise.core import Core
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.phrases import WIPE
from screens.recommend import RecommendScreen
from tests.tui.test_apply_screen import FakeExecutor, lab_inputs
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

NVME = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"


async def test_an_ssd_holding_data_is_refused_with_the_tui_checkbox_that_allows_it() -> None:
    base = lab_inventory()
    inv = dataclasses.replace(base, devices=tuple(
        dataclasses.replace(d, fs_type="xfs") if d.name == "nvme0n1" else d for d in base.devices))
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=FakeExecutor(), live=False), watch_hotplug=False)
    async with app.run_test(size=(170, 60)) as pilot:
        await app.workers.wait_for_complete()
        await app.push_screen(RecommendScreen(lab_inputs(inv), inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RecommendScreen) and screen.recommendation is not None
        assert screen.recommendation.config is not None
        await pilot.press("a")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        refusal = next(m for m in said if "holds data (xfs)" in m)
        assert f"tick '{WIPE}' on the Recommend screen" in refusal and refusal.endswith("Nothing was changed.")
        assert "--wipe" not in refusal and "cachewise" not in refusal
        assert isinstance(app.screen, RecommendScreen), "nothing was planned"

        screen.query_one("#wipe", Checkbox).value = True
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen)
        assert app.screen.plan.destroys == (f"{NVME}: xfs",)
