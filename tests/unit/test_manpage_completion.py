"""The man page and the shell completions are generated from the argparse definitions: every
option appears in them, the page renders without groff warnings, and real shells complete
commands, options and their choices with them."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cachewise.cli import build_parser, main
from cachewise.cli.completion import bash, subparsers, zsh
from cachewise.cli.manpage import escape, render


@dataclass
class Node:
    """One parser: `cachewise`, `cachewise plan`, `cachewise plan lvmcache-attach`."""

    path: tuple[str, ...]
    options: list[argparse.Action] = field(default_factory=list)
    positionals: list[argparse.Action] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)


def tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Node:
    node = Node(path, children=[tree(sub, (*path, name)) for name, sub in subparsers(parser)])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        (node.options if action.option_strings else node.positionals).append(action)
    return node


def walk(node: Node) -> list[Node]:
    return [node, *(n for child in node.children for n in walk(child))]


def _all_nodes() -> list[Node]:
    return walk(tree(build_parser()))


def test_man_page_names_every_command_and_option() -> None:
    page = render(build_parser())
    for node in _all_nodes():
        if node.path:
            assert escape(" ".join(("cachewise", *node.path))) in page
        for action in node.options:
            for name in action.option_strings:
                assert f"\\fB{escape(name)}\\fR" in page, (node.path, name)
        for action in node.positionals:
            assert f"\\fI{escape(str(action.metavar or action.dest))}\\fR" in page, (node.path, action.dest)


def test_man_page_renders_without_warnings(tmp_path: Path) -> None:
    if shutil.which("man") is None:
        pytest.fail("man is missing: packaging/test.sh installs man-db (packaging/deb-packages.txt)")
    page = tmp_path / "cachewise.8"
    page.write_text(render(build_parser()))
    proc = subprocess.run(["man", "--warnings", "-l", "-P", "cat", str(page)], check=False, capture_output=True, text=True,
                          env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "CACHEWISE(8)" in proc.stdout and "EXIT STATUS" in proc.stdout


def test_completion_subcommand_prints_both_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    assert "complete -F _cachewise cachewise" in capsys.readouterr().out
    assert main(["completion", "zsh"]) == 0
    assert capsys.readouterr().out.startswith("#compdef cachewise")


def _bash_complete(script: Path, words: list[str]) -> list[str]:
    """COMPREPLY for `words` (the last one being completed), as bash's Tab would compute it."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _cachewise; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True, check=True)
    return [line for line in proc.stdout.splitlines() if line]


def test_bash_completes_every_command_option_and_choice(tmp_path: Path) -> None:
    script = tmp_path / "cachewise.bash"
    script.write_text(bash(build_parser()))
    for node in _all_nodes():
        words = ["cachewise", *node.path]
        for child in node.children:
            name = child.path[-1]
            assert name in _bash_complete(script, [*words, name[:3]]), child.path
        if node.children:
            continue
        offered = set(_bash_complete(script, [*words, "-"]))
        assert offered == {o for a in node.options for o in a.option_strings}, node.path
        for action in node.options:
            if action.choices is not None:
                for spelled in ([action.option_strings[-1], ""], [action.option_strings[-1], "=", ""]):
                    assert set(_bash_complete(script, [*words, *spelled])) == set(map(str, action.choices))
    # A value is skipped when finding the command, so the recipe's options follow it.
    assert "--lv" in _bash_complete(script, ["cachewise", "--state-dir", "/tmp", "plan", "lvmcache-attach", "--l"])
    assert _bash_complete(script, ["cachewise", "completion", "z"]) == ["zsh"]


def test_zsh_completes_in_a_real_shell(tmp_path: Path) -> None:
    """Drives zsh through tmux: Tab after a prefix, as a user presses it."""
    if shutil.which("zsh") is None or shutil.which("tmux") is None:
        pytest.fail("zsh and tmux are needed: packaging/test.sh installs them (packaging/deb-packages.txt)")
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "_cachewise").write_text(zsh(build_parser()))
    session = f"cwzsh-{uuid.uuid4().hex[:8]}"
    zshrc = tmp_path / ".zshrc"
    zshrc.write_text(f"fpath=({functions} $fpath)\nautoload -U compinit\ncompinit -u -D\nPS1='$ '\n")

    def screen() -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], check=False, capture_output=True,
                              text=True).stdout

    def typed(keys: str, expect: str) -> str:
        subprocess.run(["tmux", "send-keys", "-t", session, *([keys] if keys else []), "Tab"], check=True)
        deadline = time.monotonic() + 10
        while expect not in screen() and time.monotonic() < deadline:
            time.sleep(0.1)
        return screen()

    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "40",
                    f"env -i HOME={tmp_path} ZDOTDIR={tmp_path} TERM=xterm PATH=/usr/bin:/bin zsh"], check=True)
    try:
        assert "cachewise plan lvmcache-attach" in typed("cachewise plan lvmcache-at", "lvmcache-attach")
        assert "--mode" in typed(" --mo", "--mode")
        assert "--mode=write" in typed("=", "--mode=write")  # the choices' common prefix
        shown = typed("", "writethrough")  # a second Tab lists them
        assert "writethrough" in shown and "writeback" in shown, shown
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)


def test_value_kinds_follow_the_parser() -> None:
    from cachewise.cli.completion import value_kind

    p = argparse.ArgumentParser()
    flag = p.add_argument("--yes", action="store_true")
    path = p.add_argument("--out", type=Path)
    dev = p.add_argument("--ssd", metavar="DEV")
    choice = p.add_argument("--mode", choices=["a", "b"])
    size = p.add_argument("--size", metavar="SIZE")
    assert [value_kind(a) for a in (flag, path, dev, choice, size)] == ["", "file", "device", "choices", "value"]


def test_readme_cli_reference_is_the_generated_table() -> None:
    """The README's command table is `python -m cachewise.cli.manpage --markdown`, kept current."""
    from cachewise.cli.manpage import reference_table

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("<!-- cli-reference")
    block = readme[readme.index("\n", start) + 1:readme.index("<!-- /cli-reference -->")]
    assert block == reference_table(build_parser()), "regenerate it: python -m cachewise.cli.manpage --markdown"


def test_no_doubled_percent_sign_reaches_a_reader() -> None:
    """argparse expands %% in option help, not in descriptions: help, man page and README show one %."""
    import argparse
    import subprocess
    import sys

    from cachewise.cli.parser import build_parser

    def helps(parser: argparse.ArgumentParser) -> list[str]:
        """The help of the parser and of every subcommand under it, at any depth (plan lvmcache-new,
        history show ...), as `--help` prints each."""
        out = [parser.format_help()]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):  # an alias names the same parser
                    out += helps(sub)
        return out

    texts = helps(build_parser())
    usages = {t.split("[", 1)[0].strip() for t in texts}
    assert {"usage: cachewise plan bcache-create", "usage: cachewise history show"} <= usages, usages
    man = subprocess.run([sys.executable, "-m", "cachewise.cli.manpage"], capture_output=True, text=True, check=True)
    texts.append(man.stdout)
    assert not [t for t in texts if "%%" in t]
    assert any("0.1% to 100%" in t for t in texts)
