"""lvm2's configuration as ``lvmconfig --typeconfig full`` prints it: the settings that decide
how lvm2 checks a cache's (or a thin pool's) metadata before it activates it.

``--typeconfig full`` is the configuration lvm2 acts on: lvm.conf and lvmlocal.conf over the
defaults lvm2 was built with. Each setting asked for is printed as ``name=value``: a string in
double quotes (``"`` and ``\\`` escaped with a backslash), a number, or an array ``[v,v]``;
lvm2 prints an array of one string as that string. An empty executable ("") tells lvm2 to skip
the check (lib/activate/dev_manager.c, ``_pool_callback``). Fixtures:
tests/fixtures/host-boot/lvmconfig-*.txt (lvm2 2.03.16, Debian 12).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.errors import Described, codes
from advisor.runner import CommandRunner

# The checkers, by what they check: (the executable's setting, its options' setting).
CHECKERS = {
    "cache": ("cache_check_executable", "cache_check_options"),
    "thin": ("thin_check_executable", "thin_check_options"),
}
# What lvm2 2.03.16's `lvmconfig --typeconfig full` says when no lvm.conf exists at all.
NO_CONFIG_FILE = "Cannot clone NULL config node"

SETTINGS = tuple(f"global/{s}" for pair in CHECKERS.values() for s in pair)

Value = str | int | float | tuple[str | int | float, ...]

codes({"lvmconfig-unreadable": "{why}"})


class LvmConfigError(Described, ValueError):
    """lvm2's configuration could not be read; the message says why."""

    CODE = "lvmconfig-unreadable"


def _string(text: str, at: int) -> tuple[str, int]:
    """The double-quoted string starting at ``text[at]``, and the index after it."""
    out: list[str] = []
    i = at + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise LvmConfigError(f"lvmconfig printed an unterminated string: {text[at : at + 80]!r}")


def _scalar(text: str, at: int) -> tuple[str | int | float, int]:
    if text[at] == '"':
        return _string(text, at)
    end = at
    while end < len(text) and text[end] not in ",]":
        end += 1
    word = text[at:end].strip()
    try:
        return (float(word) if "." in word else int(word)), end
    except ValueError:
        raise LvmConfigError(f"lvmconfig printed a value that is no string or number: {word[:80]!r}") from None


def value(text: str) -> Value:
    """One printed value: a string, a number or an array of them."""
    text = text.strip()
    if not text:
        raise LvmConfigError("lvmconfig printed a setting without a value")
    if text[0] != "[":
        v, end = _scalar(text, 0)
        if text[end:].strip():
            raise LvmConfigError(f"lvmconfig printed more than one value: {text[:80]!r}")
        return v
    items: list[str | int | float] = []
    i = 1
    while i < len(text):
        while i < len(text) and text[i] in " ,":
            i += 1
        if i < len(text) and text[i] == "]":
            if text[i + 1 :].strip():
                break
            return tuple(items)
        if i >= len(text):
            break
        v, i = _scalar(text, i)
        items.append(v)
    raise LvmConfigError(f"lvmconfig printed an array it did not close: {text[:80]!r}")


def parse(text: str) -> dict[str, Value]:
    """Every ``name=value`` line lvmconfig printed, by name."""
    out: dict[str, Value] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, rest = line.partition("=")
        if not sep or not name.strip() or not name.strip().replace("_", "").isalnum():
            raise LvmConfigError(f"lvmconfig printed a line that is no setting: {line[:80]!r}")
        out[name.strip()] = value(rest)
    return out


@dataclass(frozen=True)
class Checker:
    """How lvm2 runs one metadata checker at activation, as configured."""

    what: str  # "cache" or "thin"
    setting: str  # "cache_check_executable"
    executable: str  # "" = lvm2 skips the check
    options: tuple[str, ...]

    @property
    def disabled(self) -> bool:
        return self.executable == ""


def checkers(settings: dict[str, Value]) -> dict[str, Checker]:
    """The metadata checkers lvm2 would run, from the settings lvmconfig printed."""
    out: dict[str, Checker] = {}
    for what, (exe_name, opts_name) in CHECKERS.items():
        if exe_name not in settings:
            continue
        exe = settings[exe_name]
        if not isinstance(exe, str):
            raise LvmConfigError(f"lvm2's global/{exe_name} is {exe!r}, not the path of a program")
        opts = settings.get(opts_name, ())
        out[what] = Checker(what, exe_name, exe, tuple(map(str, opts if isinstance(opts, tuple) else (opts,))))
    return out


def read(runner: CommandRunner) -> dict[str, Checker]:
    """The checkers as this machine's lvm2 is configured to run them; LvmConfigError (with
    lvm2's own words) when lvmconfig fails; the runner's CommandError when it cannot run."""
    argv = ["lvmconfig", "--typeconfig", "full", *SETTINGS]
    result = runner.run(argv, timeout=30, check=False)
    if result.returncode != 0 and NO_CONFIG_FILE in result.stderr:
        # No lvm.conf at all (seen in the lab's guest): lvm2 runs on its built-in defaults, and
        # `--typeconfig full` fails instead of printing them; `default` prints them commented out.
        result = runner.run(["lvmconfig", "--typeconfig", "default", *SETTINGS], timeout=30, check=False)
        if result.returncode == 0:
            return checkers(parse(re.sub(r"(?m)^#\s*", "", result.stdout)))
    if result.returncode != 0:
        words = " ".join(result.stderr.split())[:300] or f"exit code {result.returncode}"
        raise LvmConfigError(f"lvmconfig could not read lvm2's configuration: {words}")
    return checkers(parse(result.stdout))
