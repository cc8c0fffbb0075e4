"""The advice in stages (issue 26): the thesis's tables are data checked when they load, the
choice is codes and numbers read through the backends' traits (never a backend's name), the
explanation words it, and the next steps are actions each front end words in its own terms."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from advisor.advice import choice, profile, thesis, traits
from advisor.advice.choice import decide
from advisor.advice.explain import explain
from advisor.advice.model import DeviceFacts, Inputs, Recommendation
from advisor.advice.recommend import recommend
from advisor.backends import BACKENDS
from cachewise.cli import main
from tests.conftest import LAB_SCAN

HDD = DeviceFacts("/dev/vg0/data", 8 * 10**12, "hdd", "probe", 8.0, vg="vg0", is_lv=True, has_data=True,
                  fs_type="ext4")
SSD = DeviceFacts("/dev/disk/by-id/ata-SSD500", 500 * 10**9, "ssd", "probe", 0.08)
DATA = Path(thesis.__file__).parent / "data" / "thesis.toml"


def test_the_thesis_tables_load_from_data_and_every_row_cites_a_finding() -> None:
    t = thesis.tables()
    assert t.gains[("database", "xfs", "bcache", "writeback")].factor == 21.0
    assert t.space_overhead["lvmcache"] == 3.5 and set(t.space_overhead) == {b.id for b in BACKENDS}
    assert (t.promotion["lvmcache"].free, t.promotion["lvmcache"].full) == (0.37, 0.065)
    assert "lvmcache-writecache" not in t.promotion, "a cache of writes promotes no read"
    assert all(g.findings for g in t.gains.values())


@pytest.mark.parametrize(("old", "new", "error"), [
    ('findings = ["T-DB-1"]\nnote = "reads 44x"', 'findings = ["T-NOPE-9"]', KeyError),
    ('findings = ["T-DB-1"]\nnote = "reads 44x"', "findings = []", ValueError),
    ('fs = "xfs"\nbackend = "bcache"\nmode = "writeback"\nfactor = 21.0', 'fs = "xfs"\nbackend = "flashcache"\n'
     'mode = "writeback"\nfactor = 21.0', ValueError),
    ('fs = "xfs"\nbackend = "bcache"\nmode = "writeback"\nfactor = 21.0', 'fs = "ext4"\nbackend = "bcache"\n'
     'mode = "writeback"\nfactor = 21.0', ValueError),  # the ext4 row twice
    ("factor = 21.0", "factor = -1", ValueError),
    ("lvmcache = 3.5", "lvmcache = 0.5", ValueError),
    ("free = 0.37\nfull = 0.065", "free = 0.065\nfull = 0.37", ValueError),
    ("[promotion.bcache]", "[promotion.bcache_gone]", ValueError),  # bcache caches reads: it needs a row
])
def test_a_wrong_thesis_table_is_refused_when_it_loads(old: str, new: str, error: type[Exception]) -> None:
    text = DATA.read_text()
    assert old in text
    with pytest.raises(error):
        thesis.parse(text.replace(old, new, 1))


def _backend_names(module: object) -> list[str]:
    """String constants in a module's code that name a backend (its docstrings aside)."""
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
    ids = {b.id for b in BACKENDS}
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in ids and id(n) not in docs]


@pytest.mark.parametrize("module", [choice, profile])
def test_the_choice_reads_traits_never_a_backends_name(module: object) -> None:
    assert _backend_names(module) == []


def test_traits_extend_each_backend_of_the_registry() -> None:
    assert {t.backend for t in traits.TRAITS} == set(BACKENDS)
    for t in traits.TRAITS:
        assert (t.promotion is None) == (not t.backend.caches_reads)
        assert t.limit(500 * 10**9) > 400 * 10**9 and t.space(1 << 30) >= 1 << 30


def test_the_choice_is_codes_and_numbers_and_the_explanation_words_it() -> None:
    blank = dataclasses.replace(HDD, path="/dev/sdb", is_lv=False, vg=None, has_data=False, fs_type=None)
    inp = Inputs(slow=blank, fast=(SSD,), workload="database", filesystem="xfs")
    d = decide(inp)
    assert (d.verdict, d.cause) == ("cache", "") and d.chosen is not None
    assert d.chosen.config.speedup_basis == "", "the choice holds the basis as a code, not words"
    assert d.chosen.speedup.basis == "thesis-elsewhere" and d.chosen.speedup.measured > 1
    assert all(b.code and not b.code[0].isupper() for c in d.candidates for b in c.blockers)
    r = explain(d)
    assert r == recommend(inp)
    assert r.config is not None and "8 disks in RAID 10" in r.config.speedup_basis
    lvm_wb = next(c for c in d.candidates if (c.config.backend, c.config.mode) == ("lvmcache", "writeback"))
    assert (lvm_wb.speedup.basis, lvm_wb.speedup.measured_mode) == ("thesis-cap", "writethrough"), \
        "dm-cache's writeback does the disk work of the writethrough the thesis measured at 0.982x"


def test_a_changed_trait_changes_the_choice_without_touching_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """bcache's write cutoff is a trait: halving it doubles the cache its write bursts need."""
    import numpy as np

    from advisor.advice.profile import Profile

    prof = Profile(None, 0.5, 0.0, np.array([1e9]), np.array([0.5]), "trace", 1 << 30, 1 << 33, 100.0, (),
                   write_backlog=([1e5, 1e6, 1e7], [8 << 30, 4 << 30, 1 << 30]))
    s = dataclasses.replace(choice.situation(Inputs(slow=HDD, fast=(SSD,), workload="database")), prof=prof)
    before = choice.write_need(s, traits.BCACHE_TRAITS, "writeback")
    halved = dataclasses.replace(traits.BCACHE_TRAITS, dirty_share=traits.BCACHE_WRITE_CUTOFF / 2)
    assert choice.write_need(s, halved, "writeback") == pytest.approx(2 * before, rel=1e-6) and before > 0
    assert choice.write_need(s, traits.LVMCACHE_TRAITS, "writeback") == 0, "dm-cache writes dirty chunks to the disk"


def _next(r: Recommendation) -> list[str]:
    return [n.action for n in r.next]


def test_next_steps_are_actions_not_commands() -> None:
    model = recommend(Inputs(slow=dataclasses.replace(HDD, class_source="kernel flag", latency_ms=None),
                             fast=(SSD,), workload="database"))
    assert _next(model) == ["record-trace", "probe-device"] and model.next[1].facts == {"device": HDD.path}
    assert not any("cachewise" in x.text or "--" in x.text for x in (*model.reasons, *model.warnings))
    assert model.to_json()["next"] == [{"action": "record-trace"}, {"action": "probe-device", "device": HDD.path}]
    # Where the devices decide (flash behind flash), a trace would change nothing: none is asked for.
    flash = recommend(Inputs(slow=dataclasses.replace(HDD, device_class="ssd", latency_ms=0.08), fast=(SSD,),
                             workload="database"))
    assert (flash.cause, _next(flash)) == ("already-flash", [])


def test_the_cli_words_the_next_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """The lab snapshot's disks were never probed and no trace is given: the table's Next names
    the commands, one step a line; the JSON keeps the actions and their facts."""
    raw = str(LAB_SCAN / "raw-udev.json")
    args = ["recommend", "--slow", "/dev/sda", "--fast", "/dev/nvme0n1", "--workload", "database", "--from-raw", raw]
    assert main(args) == 0
    out = capsys.readouterr().out
    steps = out[out.index("\nNext\n"):out.index("\nSources\n")]
    assert "• Give --trace FILE (see `cachewise trace`)" in steps
    assert steps.count("• Measure /dev/disk/by-id/") == 2 and "`cachewise" in steps, "a line for each device"
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["action"] for n in data["next"]] == ["record-trace", "probe-device", "probe-device"]


def test_the_chart_at_the_mark_reads_the_predicted_hit_ratio() -> None:
    """Every home scenario that caches reads: the curve the CLI and the TUI draw for a
    configuration (its backend's, by SSD bytes) gives, at the size marked, the predicted hit
    ratio the text states, for the recommendation and each alternative."""
    import numpy as np

    from cachewise.render import prediction_curve
    from tests.unit import test_home_scenarios as home

    checked = 0
    for s in home.SCENARIOS:
        r = recommend(Inputs(slow=s.slow(), fast=s.fast, analysis=s.analysis(), versions=home.KERNEL,
                             memory_bytes=16 << 30, **s.declared))
        for cfg in (r.config, *(o.config for o in r.runner_ups)):
            if cfg is None or cfg.predicted_hit_ratio is None:
                continue
            shown = prediction_curve(r, cfg)
            assert shown is not None
            view, mark = shown
            assert mark == cfg.size_bytes and "hit ratio of a full cache" in view.label
            at = float(np.interp(mark, [0, *view.sizes_bytes], [0, *view.hit_ratio]))
            assert at == pytest.approx(cfg.predicted_hit_ratio, abs=0.01), (s.name, cfg.label, view.label)
            checked += 1
    assert checked >= 20
