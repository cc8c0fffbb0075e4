"""Errors as facts: every code is declared once with its sentence, both front ends' phrasebooks
word every code and every next step, "Nothing was changed." is said once, and no message of the
domain (advisor/ outside the advice's reasons, recipes/) names a CLI flag or a `cachewise`
command, which only the CLI's phrasebook may."""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import re
import string
from pathlib import Path

import pytest

import advisor
import cachewise
import recipes
import screens
from advisor.errors import ACTIONS, CODES, DOMAIN, NOTHING, CachewiseError, Next
from cachewise.cli.parser import build_parser
from cachewise.cli.phrases import CLI
from screens.phrases import TUI

ROOT = Path(__file__).resolve().parents[2]
# advisor/advice/'s reasons and notes are the advice issue's to reword; its errors are codes too.
DOMAIN_DIRS = [ROOT / "advisor", ROOT / "recipes"]
EXEMPT = [ROOT / "advisor" / "advice" / "recommend.py", ROOT / "advisor" / "advice" / "workloads.py"]


def _import_everything() -> None:
    """Every product module, so that every code is declared."""
    for package in (advisor, recipes, cachewise, screens):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)


_import_everything()


def option_strings() -> set[str]:
    found: set[str] = set()

    def walk(p: argparse.ArgumentParser) -> None:
        for a in p._actions:
            found.update(o for o in a.option_strings if o.startswith("--"))
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    walk(sub)

    walk(build_parser())
    return found


OPTIONS = option_strings()
FLAG = re.compile("|".join(rf"(?<![\w-]){re.escape(o)}(?![\w-])" for o in sorted(OPTIONS, key=len, reverse=True)))


def cli_words_in(text: str) -> list[str]:
    return FLAG.findall(text) + re.findall(r"`cachewise [a-z]", text)


def sample(code: str, changed: bool = False) -> CachewiseError:
    """An error of this code with a value for each fact its sentence names."""
    facts: dict[str, object] = {}
    for _, name, spec, _ in string.Formatter().parse(CODES[code].sentence):
        if name:
            facts[name] = 1.5 if spec else f"<{name}>"
    nexts = [Next(a, {"target": "<t>", "device": "<d>", "recipe": "<r>", "vg": "<vg>", "journal": "<j>",
                      "package": "<p>"}) for a in list(ACTIONS)[:2]]
    return CachewiseError(code, changed=changed, next=nexts, **facts)


def test_every_next_step_has_an_entry_in_both_phrasebooks() -> None:
    assert set(CLI.actions) == set(ACTIONS), set(ACTIONS) ^ set(CLI.actions)
    assert set(TUI.actions) == set(ACTIONS), set(ACTIONS) ^ set(TUI.actions)
    assert set(CLI.sentences) <= set(CODES) and set(TUI.sentences) <= set(CODES)


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_is_worded_by_both_phrasebooks_saying_nothing_changed_once(code: str) -> None:
    for book in (DOMAIN, CLI, TUI):
        said = book.word(sample(code))
        assert said.count(NOTHING) == 1 and said.endswith(NOTHING), said
        assert "?" not in said.replace("(?", ""), f"a fact the sentence names is missing: {said}"
        assert NOTHING not in book.word(sample(code, changed=True))
    if not CODES[code].front_end:
        assert not cli_words_in(DOMAIN.word(sample(code))), "the domain's wording names no CLI flag"


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_the_tui_names_a_cli_flag_only_for_what_it_cannot_do_itself(action: str) -> None:
    said = TUI.actions[action]
    assert not cli_words_in(ACTIONS[action])
    if cli_words_in(said):
        assert "in a shell" in said, f"{action}: {said}"


def test_the_tui_and_the_cli_word_the_same_refusal_in_their_own_terms() -> None:
    error = CachewiseError("holds-data", device="/dev/sdc", signature="xfs", use="making it a cache",
                           next=[Next("allow-wipe", {"device": "/dev/sdc"})])
    assert "pass --wipe" in CLI.word(error)
    assert "tick 'Wipe what they hold'" in TUI.word(error) and "--wipe" not in TUI.word(error)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings, argv tokens (one word) or the
    plan language's step shapes, with their line."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    shapes = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
              and getattr(node.func, "id", "") == "Shape" for arg in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | shapes:
            if " " in node.value.strip():
                out.append((node.lineno, node.value))
    return out


def test_no_message_of_the_domain_names_a_cli_flag_or_command() -> None:
    found = []
    for folder in DOMAIN_DIRS:
        for path in folder.rglob("*.py"):
            if path in EXEMPT:
                continue
            for line, text in _strings(ast.parse(path.read_text())):
                words = cli_words_in(text)
                if words:
                    found.append(f"{path.relative_to(ROOT)}:{line}: {words} in {text!r}")
    assert not found, "\n".join(found)


def test_every_code_raised_is_declared() -> None:
    """A code in a raise (or a returned error) that nothing declares would fail only when it
    happens; every literal code in the product is checked here instead."""
    raised = []
    for folder in (ROOT / "advisor", ROOT / "recipes", ROOT / "cachewise", ROOT / "screens"):
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if not re.search(r"(Error|Refused|Ineligible|Barrier)$", name):
                    continue
                code = next((k.value for k in node.keywords if k.arg == "code"), None)
                if code is None and node.args and isinstance(node.args[0], ast.Constant):
                    code = node.args[0]
                if isinstance(code, ast.Constant) and isinstance(code.value, str) and \
                        re.fullmatch(r"[a-z]+(-[a-z0-9]+)+", code.value):
                    raised.append((path.relative_to(ROOT), code.value))
    assert len(raised) > 100
    undeclared = [(p, c) for p, c in raised if c not in CODES]
    assert not undeclared, undeclared
