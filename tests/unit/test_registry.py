"""The recipes' registry: every recipe has every part, the plan language's shapes are all in use,
and a recipe added through the registry alone shows up everywhere (the CLI, its help, the plan
language, the man page and both shells' completion)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.backends import BACKENDS, LVMCACHE, Mode
from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.plan import language
from advisor.plan.checks import CacheMode, Segtype
from advisor.plan.language import SHAPES, PlanError, Use
from advisor.plan.model import Plan, Step
from cachewise.cli import build_parser, main
from cachewise.cli.completion import bash, zsh
from cachewise.cli.manpage import escape, render
from recipes import registry
from recipes.common import bind
from recipes.lvm import find_lv
from recipes.lvmcache import CacheSpec, lvmcache_attach
from recipes.registry import Recipe, missing_parts, option, options_of
from tests.conftest import FIXTURES

RAW = FIXTURES / "lab-caches" / "raw-layers.json"  # labvg/data is an lvmcache here
NVME = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"


def test_every_recipe_has_every_part() -> None:
    recipes = registry.recipes()
    assert {r.kind for r in recipes} >= {"lvmcache-attach", "lvmcache-uncache", "lvmcache-new", "lvmcache-mode",
                                          "bcache-create", "bcache-detach", "writecache-attach", "writecache-detach",
                                          "remove"}
    for r in recipes:
        assert missing_parts(r) == [], r.kind
        assert all(f.metadata["option"].help for f, _ in options_of(r.options)), r.kind
        if r.plan_kind is not None:
            assert language.kind_of(r.kind) == r.plan_kind, "its plan kind is the plan language's"


def test_every_backend_has_its_remover_and_every_maker_takes_a_recommendation_whole() -> None:
    for backend in BACKENDS:
        remover = registry.remover(backend)
        assert remover is not None and remover.effect == "removes" and remover.backend == backend
        maker = registry.maker(backend)
        assert maker is not None and maker.adopt is not None and maker.backend == backend
        names = {f.name for f in dataclasses.fields(maker.options)}
        assert {maker.slow, maker.fast, "wipe"} <= names, "the recommended plan may be allowed to wipe"


def test_every_step_shape_of_the_plan_language_is_used_by_a_recipe() -> None:
    used = {u.shape for r in registry.recipes() for u in r.uses}
    assert used == set(SHAPES), f"shapes no recipe uses: {set(SHAPES) - used}"


def test_an_incomplete_recipe_is_refused_at_registration() -> None:
    @dataclass(frozen=True)
    class Bare:
        lv: str  # no option(): the CLI could not say how it is given

    broken = Recipe("broken", "", "", Bare, lambda inv, o: Plan("broken", "", (), ()), "changes", LVMCACHE)
    with pytest.raises(ValueError, match="has no help.*does not say how it is given.*declares no step shapes"):
        registry.register(broken)
    assert registry.recipe("broken") is None
    with pytest.raises(ValueError, match="does not have"):
        language.register(language.Kind("nope", (Use("rm -rf"),)))


def test_a_step_naming_a_device_in_another_role_is_refused() -> None:
    """Steps are bound to roles: the attach's pvcreate may name the SSD, never the origin."""
    inv = build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    Plan.loads(plan.dumps())
    data = plan.to_json()
    origin = next(d["path"] for d in data["devices"] if d["role"] == "origin")
    data["steps"][0]["argv"] = ["pvcreate", "--yes", origin]
    with pytest.raises(PlanError, match="not bound to in that role"):
        Plan.from_json(data)
    data = plan.to_json()
    data["kind"] = "lvmcache-mode"  # the same steps under another recipe's name
    with pytest.raises(PlanError, match="lvmcache-mode plan"):
        Plan.from_json(data)


# --- a toy recipe, added through the registry alone ------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ToyOptions:
    lv: str = option("the cached LV, as VG/LV", "lv")
    mode: Mode = option("the mode to switch to", "choice", choices=("writethrough", "writeback"))
    toy_budget: int | None = option("how much dirty data may wait (a toy)", "size", default=None)


def toy_plan(inv: Inventory, o: ToyOptions) -> Plan:
    lv = find_lv(inv, o.lv)
    assert lv.lvm is not None
    vglv = f"{lv.lvm.vg}/{lv.lvm.lv}"
    step = Step("toy-mode", ("lvchange", "--yes", "--cachemode", o.mode, vglv),
                pre=(Segtype(lv=vglv, segtype="cache"),), post=(CacheMode(lv=vglv, mode=o.mode),))
    return Plan("toy-mode", f"Toy: {vglv} to {o.mode}", (bind(lv, "origin"),), (step,))


@pytest.fixture
def toy() -> Iterator[Recipe[ToyOptions]]:
    recipe = Recipe("toy-mode", "switch a cache's mode, as a toy", "A toy recipe that exists only in this test.",
                    ToyOptions, toy_plan, "changes", LVMCACHE, uses=(Use("cachemode"),))
    registry.register(recipe)
    try:
        yield recipe
    finally:
        registry.unregister(recipe.kind)


def test_a_toy_recipe_added_through_the_registry_alone_is_everywhere(
    toy: Recipe[ToyOptions], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = capsys.readouterr().out
    assert "toy-mode" in out and "switch a cache's mode, as a toy" in out
    with pytest.raises(SystemExit):
        main(["plan", "toy-mode", "--help"])
    help_text = capsys.readouterr().out
    assert "--toy-budget" in help_text and "--mode {writethrough,writeback}" in help_text and "--lv" in help_text

    assert main(["plan", "toy-mode", "--lv", "labvg/data", "--mode", "writeback", "--toy-budget", "1g",
                 "--from-raw", str(RAW), "--json"]) == 0
    plan = Plan.loads(capsys.readouterr().out)  # the plan language knows the kind, and reads it back
    assert "toy-mode" in language.kinds()
    assert plan.kind == "toy-mode" and plan.steps[0].argv == ("lvchange", "--yes", "--cachemode", "writeback",
                                                              "labvg/data")
    assert plan.kernel_modules == ()

    page = render(build_parser())
    assert escape("cachewise plan toy-mode") in page and f"\\fB{escape('--toy-budget')}\\fR" in page
    assert "toy-mode" in bash(build_parser()) and "--toy-budget" in bash(build_parser())
    assert "toy-mode" in zsh(build_parser()) and "--toy-budget" in zsh(build_parser())

    saved = tmp_path / "toy.json"
    assert main(["plan", "toy-mode", "--lv", "labvg/data", "--mode", "writethrough", "--from-raw", str(RAW),
                 "-o", str(saved)]) == 0
    assert json.loads(saved.read_text())["kind"] == "toy-mode"


def test_the_toy_recipe_is_gone_once_unregistered(capsys: pytest.CaptureFixture[str]) -> None:
    assert registry.recipe("toy-mode") is None and "toy-mode" not in language.kinds()
    with pytest.raises(SystemExit):
        main(["plan", "toy-mode", "--lv", "labvg/data"])
    assert "invalid choice: 'toy-mode'" in capsys.readouterr().err
