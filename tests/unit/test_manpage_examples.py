"""The man page's EXAMPLES and ARGUMENTS sections (issue 30): every example is a command line the
parser takes, and every positional argument of every subcommand is documented with its command."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from cachewise.cli import build_parser
from cachewise.cli.manpage import EXAMPLES, escape, positionals, render


def _section(page: str, heading: str) -> str:
    start = page.index(f".SH {heading}\n")
    return page[start:page.index("\n.SH ", start + 1)]


@pytest.mark.parametrize(("command", "what"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_every_example_parses(command: str, what: str) -> None:
    words = shlex.split(command.split(" > ")[0])
    assert "cachewise" in words[:2]
    args = build_parser().parse_args(words[words.index("cachewise") + 1:])
    assert args.command == words[words.index("cachewise") + 1] and what


def test_examples_and_arguments_are_in_the_page(tmp_path: Path) -> None:
    page = render(build_parser())
    examples = _section(page, "EXAMPLES")
    for command, what in EXAMPLES:
        assert f".B {escape(command)}\n{escape(what)}" in examples
    arguments = _section(page, "ARGUMENTS")
    found = list(positionals(build_parser()))
    commands = {c for c, _ in found}
    assert {"cachewise probe", "cachewise watch", "cachewise history show", "cachewise history diff",
            "cachewise analyze", "cachewise apply"} <= commands
    for command, action in found:
        assert action.help, (command, action.dest)  # none undocumented
        assert f"\\fB{escape(command)}\\fR \\fI{escape(str(action.metavar))}\\fR\n{escape(action.help)}" in arguments
    if shutil.which("man") is None:
        pytest.fail("man is missing: packaging/test.sh installs man-db (packaging/deb-packages.txt)")
    (tmp_path / "cachewise.8").write_text(page)
    shown = subprocess.run(["man", "--warnings", "-l", "-P", "cat", str(tmp_path / "cachewise.8")], check=True,
                           capture_output=True, text=True, env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin",
                                                                "LC_ALL": "C.UTF-8"})
    assert shown.stderr == ""
    text = shown.stdout
    assert "EXAMPLES" in text and "cachewise history diff 12" in text and "cachewise watch TARGET" in text
