"""A saved snapshot is visibly a snapshot, and never touches this machine's devices (issue 30):
the header says so at every size, p on a snapshot's disk refuses with the reason instead of
probing this machine's device of the same name, and the use case refuses it as well."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from advisor.disks.collect import RawSystem
from advisor.errors import CachewiseError
from cachewise.core import Core
from cachewise.core.discover import scan
from cachewise.core.measure import probe
from screens.app import CachewiseApp
from screens.disks import DisksScreen
from tests.tui.test_same_recommendation import RAW


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_p_on_a_snapshot_refuses_and_probes_nothing(size: tuple[int, int], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[object] = []
    monkeypatch.setattr("cachewise.core.backends.LiveProber.probe", lambda *a, **k: ran.append(a))
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), tmp_path), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)
        assert "saved snapshot" in app.sub_title and "this machine" in app.sub_title
        assert app.screen.query_one("#devices", DataTable).row_count > 0
        await pilot.press("p")
        await pilot.pause()
        await app.workers.wait_for_complete()
        said = [str(n.message) for n in app._notifications]
        assert any("saved snapshot" in m and "Nothing was changed" in m for m in said), said
        assert ran == [] and not app.screen.probing


def test_the_probe_use_case_refuses_a_snapshots_device(tmp_path: Path) -> None:
    core = Core.for_snapshot(RawSystem.load(RAW), tmp_path)
    assert core.prober is None
    dev = next(d for d in scan(core).devices if d.name == "sda")
    with pytest.raises(CachewiseError) as err:
        probe(core, dev)
    assert err.value.code == "snapshot-only"
