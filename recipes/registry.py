"""The recipes' registry: one descriptor per recipe, from which everything else is derived.

Each recipe module registers a :class:`Recipe`: its kind, its options as a typed dataclass whose
fields say how each option is given (:func:`option`), the builder that turns an inventory and
those options into a :class:`~advisor.plan.model.Plan`, whether it makes, changes or removes a
cache of which backend (:mod:`advisor.backends`), the step shapes of the plan language its
plans use with the role of each device in them, and how it takes a recommendation. From these:

- the ``plan`` subcommands of the CLI, their options and help (cachewise/cli/parser.py), and so
  the man page and the shell completions;
- the plan language's kinds, and the kernel modules a plan needs (advisor/plan/language.py);
- which recipe removes a cache discovery found, and which one sets up a recommendation.

tests/unit/test_registry.py fails when a recipe lacks any part, and adds a toy recipe through
this registry alone to see it everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from advisor.advice.config import CacheConfig
from advisor.backends import Backend
from advisor.disks.devices import Inventory
from advisor.plan import language
from advisor.plan.language import Use
from advisor.plan.model import Plan

OptionsT = TypeVar("OptionsT")
OptionKind = Literal["device", "lv", "name", "size", "number", "choice", "flag"]
Effect = Literal["makes", "changes", "removes"]


@dataclass(frozen=True)
class Opt:
    """How one option of a recipe is given: what it is, the kind of its value, and whether it
    may be given more than once."""

    help: str
    kind: OptionKind
    metavar: str | None = None
    choices: tuple[str | int, ...] = ()
    repeat: bool = False
    minimum: int = 1  # sizes: the range parse_size accepts
    maximum: int = 1 << 60


def option(
    help: str,
    kind: OptionKind,
    *,
    default: Any = dataclasses.MISSING,
    metavar: str | None = None,
    choices: Sequence[str | int] = (),
    repeat: bool = False,
    minimum: int = 1,
    maximum: int = 1 << 60,
) -> Any:
    """A field of a recipe's options: without ``default``, the option is required."""
    opt = Opt(help, kind, metavar, tuple(choices), repeat, minimum, maximum)
    if default is dataclasses.MISSING and kind == "flag":
        default = False
    return field(default=default, metadata={"option": opt})


def options_of(cls: type[Any]) -> list[tuple[dataclasses.Field[Any], Opt]]:
    """Each field of an options dataclass with how it is given."""
    return [(f, f.metadata["option"]) for f in dataclasses.fields(cls)]


def required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


@dataclass(frozen=True)
class Recipe(Generic[OptionsT]):
    """One recipe. ``uses``: the step shapes its plans take (empty for a recipe that only
    chooses another one, as ``remove`` does). ``slow``/``fast``: the options naming the slow and
    the fast device(s), so a recommendation for two devices becomes its options."""

    kind: str
    summary: str
    description: str
    options: type[OptionsT]
    build: Callable[[Inventory, OptionsT], Plan]
    effect: Effect
    backend: Backend | None
    uses: tuple[Use, ...] = ()
    slow: str = ""
    fast: str = ""
    adopt: Callable[[OptionsT, CacheConfig], OptionsT] | None = None  # fill the options from a recommendation
    adopts: str = ""  # what it takes from a recommendation, for the help
    reads_fs_block_size: bool = False  # the builder needs the slow device's file system block size
    remakes: bool = False  # it changes a cache by making it anew (a resize): recorded as made, for the watch

    def __post_init__(self) -> None:
        # A plan that makes or removes a cache may end by making the initramfs again, for a
        # device the boot needs (recipes/boot.py): every such recipe's plans may take the shape.
        if self.uses and self.backend is not None and self.effect in ("makes", "removes"):
            more = tuple(Use(s) for s in language.INITRAMFS_SHAPES if s not in {u.shape for u in self.uses})
            object.__setattr__(self, "uses", self.uses + more)

    @property
    def plan_kind(self) -> language.Kind | None:
        if not self.uses:
            return None
        makes = self.backend is not None and self.effect == "makes"
        return language.Kind(
            self.kind,
            self.uses,
            modules=self.backend.kernel_modules if makes and self.backend else (),
            progress=self.backend.progress if self.backend and self.effect != "makes" else "",
            segtype=(self.backend.lvm_segtype or "") if self.backend and self.effect != "makes" else "",
            makes=self.backend.id if makes and self.backend else "",
            backend=self.backend.id if self.backend else "",
            effect=self.effect,
            remakes=self.backend.id if self.remakes and self.backend else "",
        )

    def for_devices(self, slow: str, fast: Sequence[str]) -> OptionsT:
        """Options naming these devices, everything else at its default."""
        fast_field = next(f for f, _ in options_of(self.options) if f.name == self.fast)
        fast_value: Any = tuple(fast) if fast_field.metadata["option"].repeat else fast[0]
        return self.options(**{self.slow: slow, self.fast: fast_value})


_RECIPES: dict[str, Recipe[Any]] = {}


def register(recipe: Recipe[Any]) -> Recipe[Any]:
    """Add a recipe; it is checked to have every part, and its plan kind joins the plan language."""
    problems = missing_parts(recipe)
    if problems:
        raise ValueError(f"the recipe {recipe.kind} is incomplete: {'; '.join(problems)}")
    _RECIPES[recipe.kind] = recipe
    kind = recipe.plan_kind
    if kind is not None:
        language.register(kind)
    return recipe


def unregister(kind: str) -> None:
    """Take a recipe out again (for tests that add one)."""
    _RECIPES.pop(kind, None)
    language.unregister(kind)


def missing_parts(recipe: Recipe[Any]) -> list[str]:
    """What a recipe lacks, as sentences (empty: it is complete)."""
    out = []
    if not recipe.summary or not recipe.description:
        out.append("it has no help")
    if not dataclasses.is_dataclass(recipe.options):
        return [*out, "its options are not a dataclass"]
    for f in dataclasses.fields(recipe.options):
        if not isinstance(f.metadata.get("option"), Opt):
            out.append(f"its option {f.name} does not say how it is given")
    names = {f.name for f in dataclasses.fields(recipe.options)}
    if recipe.effect in ("makes", "changes", "removes") and recipe.backend is None and recipe.uses:
        out.append("it names no backend")
    if recipe.adopt is not None and not {recipe.slow, recipe.fast} <= names:
        out.append("it takes a recommendation but names no slow and fast device options")
    if not recipe.uses and recipe.effect != "removes":
        out.append("it declares no step shapes")
    if recipe.effect == "removes" and recipe.backend is not None and recipe.backend.remover != recipe.kind:
        out.append(f"it removes {recipe.backend.label}, whose remover is {recipe.backend.remover}")
    return out


def recipes() -> tuple[Recipe[Any], ...]:
    return tuple(_RECIPES.values())


def recipe(kind: str) -> Recipe[Any] | None:
    return _RECIPES.get(kind)


def remover(backend: Backend) -> Recipe[Any] | None:
    """The recipe that removes a cache of this backend."""
    return _RECIPES.get(backend.remover)


def maker(backend: Backend) -> Recipe[Any] | None:
    """The recipe that sets up a cache of this backend on existing data (from a recommendation)."""
    return next((r for r in _RECIPES.values() if r.effect == "makes" and r.backend == backend and r.adopt), None)


def makes_cache(kind: str) -> bool:
    """Whether plans of this kind make a cache (recorded with their prediction for the watch)."""
    r = _RECIPES.get(kind)
    return r is not None and (r.effect == "makes" or r.remakes)
