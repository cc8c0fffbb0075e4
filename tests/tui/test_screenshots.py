"""The README's screenshots: the Disks screen, a recommendation with its reasons, and the plan
preview, drawn from the lab's inventory (the Warm-up screen's comes from its own test)."""

from __future__ import annotations

import re
from pathlib import Path

from cachewise.core import Core
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.recommend import RecommendScreen
from tests.tui import screenshots
from tests.tui.test_apply_screen import FakeExecutor, lab_inputs
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

README = Path(__file__).resolve().parents[2] / "README.md"


async def test_key_screens_are_exported_for_the_readme() -> None:
    inv = lab_inventory()
    inputs = lab_inputs(inv)
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=FakeExecutor(), live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        disks = screenshots.save(app, "disks")
        await app.push_screen(RecommendScreen(inputs, inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        recommend = screenshots.save(app, "recommend")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen)
        plan = screenshots.save(app, "plan-preview")
    assert "nvme0n1" in "\n".join(screenshots.svg_text(disks.read_text()))
    assert "lvmcache" in "\n".join(screenshots.svg_text(recommend.read_text()))
    assert "lvconvert" in "\n".join(screenshots.svg_text(plan.read_text()))


def test_readme_shows_only_screenshots_the_tests_write() -> None:
    shown = re.findall(r"\]\((docs/screens/[\w.-]+\.svg)\)", README.read_text())
    assert shown, "the README shows the key screens"
    root = README.parent
    for path in shown:
        assert (root / path).is_file(), f"{path} is not written by any test"
