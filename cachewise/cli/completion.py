"""Shell completion for bash and zsh, generated from the argparse definitions.

`cachewise completion bash` (or `zsh`) prints the script; the Debian package installs both.
Each option completes what it takes: its choices, a file for a path, a block device (from
lsblk) for a device, nothing for a size or a time. The scripts hold no knowledge of their
own, so a new option completes as soon as cli.py defines it.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cachewise.cli.manpage import subcommands
from cachewise.cli.parser import build_parser

# Metavars that name a block device, and ones that name a file, when the type does not say.
DEVICE_METAVARS = {"DEV", "DEVICE", "TARGET"}
FILE_METAVARS = {"FILE", "TRACE", "PLAN", "JOURNAL"}


@dataclass
class Node:
    """One parser: `cachewise`, `cachewise plan`, `cachewise plan lvmcache-attach`."""

    path: tuple[str, ...]
    help: str
    options: list[argparse.Action] = field(default_factory=list)
    positionals: list[argparse.Action] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)


def tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> Node:
    node = Node(path, help)
    node.children = [tree(sub, (*path, name), summary) for name, summary, sub in subcommands(parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        elif action.option_strings:
            node.options.append(action)
        else:
            node.positionals.append(action)
    return node


def walk(node: Node) -> list[Node]:
    return [node, *(n for child in node.children for n in walk(child))]


def value_kind(action: argparse.Action) -> str:
    """What an option's value (or a positional) is: "", "file", "device" or "choices"."""
    if action.option_strings and action.nargs == 0:
        return ""
    if action.choices is not None:
        return "choices"
    metavar = str(action.metavar or "")
    if metavar in DEVICE_METAVARS:
        return "device"
    if action.type is Path or metavar in FILE_METAVARS:
        return "file"
    return "value"


def _help_of(parser_help: str | None) -> str:
    return re.sub(r"\s+", " ", (parser_help or "").replace("%%", "%"))


def _bash_kind(action: argparse.Action) -> str:
    """value_kind, with the choices spelled out: `choices A B C`."""
    kind = value_kind(action)
    return "choices " + " ".join(map(str, action.choices or ())) if kind == "choices" else kind


# ---------------------------------------------------------------- bash


def bash(parser: argparse.ArgumentParser) -> str:
    root = tree(parser)
    prog = parser.prog
    fn = "_" + prog
    subs, opts, values, positional = [], [], [], []
    for node in walk(root):
        key = " ".join(node.path)
        if node.children:
            subs.append(f'    "{key}") echo "{" ".join(c.path[-1] for c in node.children)}" ;;')
        opts.append(f'    "{key}") echo "{" ".join(o for a in node.options for o in a.option_strings)}" ;;')
        for action in node.options:
            what = _bash_kind(action)
            if what:
                pattern = "|".join(f'"{key} {o}"' for o in action.option_strings)
                values.append(f'    {pattern}) echo "{what}" ;;')
        if node.positionals and not node.children:
            positional.append(f'    "{key}") echo "{_bash_kind(node.positionals[0])}" ;;')
    return f"""# bash completion for {prog}; generated from its argparse definitions by `{prog} completion bash`
{fn}_subcommands() {{
  case "$1" in
{chr(10).join(subs)}
  esac
}}
{fn}_options() {{
  case "$1" in
{chr(10).join(opts)}
  esac
}}
# What the option $2 of the command "$1" takes: file, device, value or "choices A B C"; nothing for a flag.
{fn}_value() {{
  case "$1 $2" in
{chr(10).join(values)}
  esac
}}
{fn}_positional() {{
  case "$1" in
{chr(10).join(positional)}
  esac
}}
{fn}_complete_kind() {{
  local kind=$1 cur=$2
  case "$kind" in
    file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
    device)
      if [[ $cur == /dev/disk/* || $cur == /dev/mapper/* ]]; then
        compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(lsblk -pnro NAME 2>/dev/null)" -- "$cur"))
      fi ;;
    choices\\ *) COMPREPLY=($(compgen -W "${{kind#choices }}" -- "$cur")) ;;
    *) COMPREPLY=() ;;
  esac
}}
{fn}() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev="" path="" word kind subs i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    if [[ $word == -* ]]; then
      if [[ ${{COMP_WORDS[i+1]}} == "=" ]]; then ((i += 2))  # bash splits --opt=value at "="
      elif [[ $word != *=* && -n "$({fn}_value "$path" "$word")" ]]; then ((i++)); fi
      continue
    fi
    subs=" $({fn}_subcommands "$path") "
    [[ $subs == *" $word "* ]] && path="${{path:+$path }}$word"
  done
  if [[ $cur == --*=* ]]; then
    kind=$({fn}_value "$path" "${{cur%%=*}}")
    {fn}_complete_kind "$kind" "${{cur#*=}}"
    return
  fi
  prev=${{COMP_WORDS[COMP_CWORD-1]}}
  # bash splits `--mode=wr` into --mode, =, wr: the option is the word before the "=".
  if [[ $cur == "=" ]]; then cur=""
  elif [[ $prev == "=" ]]; then prev=${{COMP_WORDS[COMP_CWORD-2]}}; fi
  if ((COMP_CWORD > 1)); then
    kind=$({fn}_value "$path" "$prev")
    if [[ -n $kind ]]; then {fn}_complete_kind "$kind" "$cur"; return; fi
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$({fn}_options "$path")" -- "$cur"))
    return
  fi
  subs=$({fn}_subcommands "$path")
  if [[ -n $subs ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  else
    {fn}_complete_kind "$({fn}_positional "$path")" "$cur"
  fi
}}
complete -F {fn} {prog}
"""


# ---------------------------------------------------------------- zsh


def _zq(text: str) -> str:
    """Single-quoted for zsh."""
    return "'" + text.replace("'", "'\\''") + "'"


def _zhelp(text: str | None) -> str:
    return _help_of(text).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def _zaction(action: argparse.Action) -> str:
    kind = value_kind(action)
    message = str(action.metavar or action.dest).replace(":", " ")
    if kind == "choices":
        return f":{message}:({' '.join(map(str, action.choices or ()))})"
    return f":{message}:" + {"file": "_files", "device": "_cachewise_devices"}.get(kind, " ")


def _zoption(action: argparse.Action) -> str:
    names = action.option_strings
    repeat = "*" if isinstance(action, argparse._AppendAction) else ""
    exclusive = "" if repeat else "(" + " ".join(names) + ")"
    if isinstance(action, argparse._HelpAction | argparse._VersionAction):
        exclusive = "(- *)"
    takes = "=" if action.nargs != 0 and any(n.startswith("--") for n in names) else ""
    value = _zaction(action) if action.nargs != 0 else ""
    spec = f"[{_zhelp(action.help)}]{value}"
    if len(names) == 1:
        return _zq(f"{exclusive}{repeat}{names[0]}{takes}{spec}")
    return (
        _zq(exclusive + repeat)
        + "{"
        + ",".join(f"{n}{takes if n.startswith('--') else ''}" for n in names)
        + "}"
        + _zq(spec)
    )


def _zname(path: tuple[str, ...]) -> str:
    return "_" + "__".join(re.sub(r"\W", "_", p) for p in ("cachewise", *path))


def _zfunction(node: Node) -> str:
    name = _zname(node.path)
    specs = [_zoption(a) for a in node.options]
    body: list[str] = []
    if node.children:
        specs += [_zq(f"1:{'recipe' if node.path else 'command'}:->sub"), _zq("*::arg:->args")]
        items = " ".join(_zq(f"{c.path[-1]}:{_help_of(c.help).replace(':', ' ')}") for c in node.children)
        cases = "\n".join(f"        {c.path[-1]}) {_zname(c.path)} ;;" for c in node.children)
        body = [
            "  case $state in",
            f"    sub) local -a subs; subs=({items}); _describe -t commands command subs ;;",
            "    args)",
            "      case $words[1] in",
            cases,
            "      esac ;;",
            "  esac",
        ]
    else:
        for action in node.positionals:
            many = action.nargs in ("+", "*")
            optional = action.nargs in ("?", "*")
            prefix = "*" if many else ""
            specs.append(_zq(prefix + (":" if optional and not many else "") + _zaction(action)))
    head = [
        f"{name}() {{",
        "  local context state state_descr line ret=1",
        "  typeset -A opt_args",
        "  _arguments -C -s \\",
        *(f"    {s} \\" for s in specs),
        "    && ret=0",
    ]
    return "\n".join([*head, *body, "  return ret", "}"])


def zsh(parser: argparse.ArgumentParser) -> str:
    root = tree(parser)
    functions = "\n\n".join(_zfunction(n) for n in walk(root))
    return f"""#compdef {parser.prog}
# zsh completion for {parser.prog}; generated from its argparse definitions by `{parser.prog} completion zsh`

_cachewise_devices() {{
  local -a devices
  devices=(${{(f)"$(lsblk -pnro NAME 2>/dev/null)"}})
  _alternative 'devices:block device:compadd -a devices' 'files:device path:_files'
}}

{functions}

_cachewise "$@"
"""


SHELLS = {"bash": bash, "zsh": zsh}


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(SHELLS[args.shell](build_parser()))
    return 0
