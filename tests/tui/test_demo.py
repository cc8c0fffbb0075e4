"""`cachewise demo` (issue 30): the Warm-up screen, a flush counting down and a stall explained,
played from the lab's recordings, at 80x24 and 200x55; nothing of this machine is read."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual.widgets import Static

from cachewise.core import demo
from screens.app import CachewiseApp
from screens.warmup import WarmupScreen

SIZES = [(80, 24), (200, 55)]


def text(widget: Static) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


async def play(name: str, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> tuple[CachewiseApp, list[str]]:
    """The scene played to its end (fast), and the texts of the glance seen on the way."""
    monkeypatch.setattr("cachewise.core.backends.LiveProber.probe", lambda *a, **k: pytest.fail("probed"))
    monkeypatch.setattr("advisor.watch.sampler.Sampler.sample", lambda *a, **k: pytest.fail("read the kernel"))
    scene = demo.scene(name)
    app = CachewiseApp(scene.core, watch_hotplug=False, watch=scene.watch, watch_interval=0.01)
    seen: list[str] = []
    # Every glance the screen shows, not only those a poll happens to see (a loaded machine
    # polled past the few samples of one stage of the flush)
    update = Static.update

    def spy(self: Static, content: object = "", *args: object, **kwargs: object) -> None:
        if self.id in ("glance", "stall-text"):  # the stall's text is set only while it shows
            console = Console(width=400, record=True, file=io.StringIO())
            console.print(content)
            seen.append(("STALL:" if self.id == "stall-text" else "") + console.export_text())
        update(self, content, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Static, "update", spy)
    async with app.run_test(size=size) as pilot:
        for _ in range(400):
            await pilot.pause(0.02)
            screen = app.screen
            assert isinstance(screen, WarmupScreen)
            seen.append(text(screen.query_one("#glance", Static)))
            if screen.query_one("#stall").display:
                seen.append("STALL:" + text(screen.query_one("#stall-text", Static)))
            if demo.ended(scene.core, scene.watch) and screen.gone:
                break
        screen = app.screen
        assert isinstance(screen, WarmupScreen)
        assert "played back" in screen.sub_title
        assert "ends here" in text(screen.query_one("#warmup-note", Static))
    return app, seen


@pytest.mark.parametrize("size", SIZES)
async def test_the_warmup_scene_shows_the_prediction_against_what_the_kernel_counted(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, seen = await play("warmup", size, monkeypatch)
    assert any("predicted of reads 86.2%" in s for s in seen), seen[-1]
    assert any("dm-cache, writeback" in s for s in seen)
    assert any("this interval" in s and "reads" in s for s in seen)


@pytest.mark.parametrize("size", SIZES)
async def test_the_flush_scene_shows_a_stall_then_the_countdown(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, seen = await play("flush", size, monkeypatch)
    assert any("not falling" in s for s in seen)  # the stall: dirty data that does not go down
    assert any("flushing" in s and "left" in s for s in seen)  # the countdown
    assert any("none, though bcache still says dirty" in s for s in seen)  # written back; the state lags
    assert any("ago" in s for s in seen)  # bcache's last known hit ratio, with its age
    assert any(s.startswith("STALL:") and "writeback_percent" in s for s in seen)  # and why
