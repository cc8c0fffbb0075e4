"""Errors as facts: one root error with a code, the facts, whether anything changed and what the
user can do next; each front end words them in its own terms.

Every error cachewise raises is a :class:`CachewiseError`. Its ``code`` names what happened
(``"ssd-holds-data"``), its ``facts`` are the values that matter (the device, the size, the
step), ``changed`` says whether anything on the system was changed, and ``next`` lists the
next steps as :class:`Next` actions (``Next("allow-wipe", device=...)``), never as prose with
a command line in it: the CLI words "allow-wipe" with its flag, the TUI with the checkbox that
allows it. Modules declare their codes with :func:`codes`, each with the sentence that states
the fact in the domain's own words; a front end's :class:`Phrasebook` words every next-step
action and may word any code differently. ``str(error)`` is the domain's wording, for logs and
for messages composed from an earlier error.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NOTHING = "Nothing was changed."

# What the user can do next, as actions each front end words in its own terms, with the facts
# it names. The sentences here are the domain's wording (str() of an error); the CLI's and the
# TUI's phrasebooks word every one of them (tests/unit/test_errors.py holds them to it).
ACTIONS: dict[str, str] = {
    "see-devices": "see the list of devices",
    "see-caches": "see the list of caches",
    "name-cache": "name an lvmcache LV as VG/LV or a bcache device as bcacheN",
    "name-disk": "name a disk such as /dev/sdb or a /dev/disk/by-id/ path",
    "move-history-aside": "move it aside to start a new history",
    "upgrade": "upgrade cachewise",
    "record-samples": "record the cache's samples, as JSON lines, into a file",
    "reinstall": "reinstall cachewise",
    "larger-block-size": "analyse with a larger block size",
    "sample-the-curve": "analyse it by sampling, or with a larger block size",
    "name-lv": "name the logical volume as VG/LV",
    "allow-wipe": "if its data can go, allow the plan to destroy it",
    "allow-partition": "allow a partition of the SSD to be used",
    "smaller-size": "choose a smaller cache size",
    "give-size": "give the cache size, or a recommendation to take it from",
    "writecache-block-512": "choose a writecache block size of 512",
    "remove-cache": "to replace it, remove the cache of {device} first ({recipe}), then ask again",
    "plan-instead": "plan {recipe} instead",
    "free-pv": "take {device} out of VG {vg} first",
    "keep-data-with-lvmcache": "keep the data in place with an lvmcache on LVM",
    "detach-others-first": "detach the other devices of the cache set first; the last detach may free the SSD",
    "restore-after": "back it up, allow the wipe, and restore it onto the bcache device afterwards",
    "move-into-lvm": "back the data up, make an LV for it, restore it there, and ask again with the LV",
    "use-native-tier": "use that system's own SSD tier instead",
    "name-both-ssds": "name both SSDs of the mirrored pair",
    "writethrough": "choose writethrough for one SSD",
    "accept-writeback-risk": "accept the risk of losing written data with the SSD, or choose writethrough",
    "other-name": "choose another name",
    "run-doctor": "ask doctor what is wrong with it",
    "free-ssd": "name a free SSD",
    "name-ssd": "name the SSD (or both of a mirrored pool) the resized cache goes on",
    "remove-first": "remove that cache first",
    "choose-partition": "choose the partition that holds the data",
    "watch": "follow {target} live",
    "change-mode": "switch the mode of {target}",
    "remove": "remove the cache of {target} (dirty data is flushed first)",
    "free-bcache-cache": "detach it from its bcache devices and wipe it, with the removal of one of them",
    "rescue": "take the failed cache off {target}, so that its origin runs on its own (the plan says what the "
    "origin lacks)",
    "activate-lv": "activate {target} (lvm2 says why if it cannot), then remove its cache",
    "repair-mirror": "put a new SSD in and rebuild the missing leg of the mirrored cache of {target} onto it",
    "accept-data-loss": "accept that the blocks only the dead SSD held are lost, and rescue the origin",
    "free-ssd-instead": "give the SSD back with the removal itself, which wipes a bcache cache device",
    "resume": "finish the interrupted plan",
    "rollback": "undo the steps of the interrupted plan",
    "fix-and-resume": "once the cause is fixed, resume the plan from here",
    "rollback-again": "roll back again to finish",
    "fix-and-rollback": "fix the cause and roll back again",
    "free-space-and-resume": "free space in the state directory, then finish the plan",
    "free-space-and-rollback": "free space in the state directory, then roll back again to finish",
    "fix-state-dir": "free space or fix the state directory, then apply again",
    "wait-for-it": "wait for it to end",
    "free-space": "free space on that disk, then try again",
    "abandon": "set the journal {journal} aside (the steps it ran stay as they are)",
    "apply-on-machine": "apply the plan on the machine itself, as root",
    "apply-on-each-host": "apply the plan on each host instead",
    "run-on-machine": "run this on the machine itself",
    "plan-again": "make a new plan if the disks changed",
    "name-plan": "name the plan file to apply",
    "secure-plan-file": "make {path} root's and writable by no one else, after reading it",
    "accept-elsewhere": "check that it names this machine's disks, then accept a plan made elsewhere",
    "become-root": "run it as root",
    "choose-state-dir": "choose a writable state directory",
    "choose-output": "choose another file name or place",
    "install": "install the {package} package (apt-get install {package})",
    "start-udev": "start udev (it makes the stable /dev/disk/by-id links) and plan again",
    "record-trace": "record a trace of the slow device's workload",
    "record-longer": "record the workload again over its whole cycle (a day, or a week with its nightly and weekly "
    "jobs)",
    "probe-device": "probe {device} (a few seconds of read-only fio) to measure its class",
    "choose-workload": "choose the workload type",
    "declare-hot-fraction": "declare the hot fraction of a Zipf-like random workload",
    "name-fast": "name the SSD to cache with",
    "give-data-size": "give the size of the data",
    "trace-format": "name the trace's format",
    "capture-elsewhere": "move the finished capture away (or analyse it), or capture into another folder",
    "trace-columns": "describe the CSV columns",
    "scratch-only": "replay writes only onto a scratch device that holds nothing (named twice), or replay the reads "
    "only",
}


@dataclass(frozen=True)
class Next:
    """A next step: an action of :data:`ACTIONS` and the facts it names."""

    action: str
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown next step {self.action!r}")


def next_step(action: str, **facts: Any) -> Next:
    return Next(action, facts)


@dataclass(frozen=True)
class Code:
    """A code and the sentence that states it (``str.format`` fields name its facts). A front
    end's own code (``front_end``) may name its own flags; the other front end never meets it."""

    code: str
    sentence: str
    front_end: bool = False

    @property
    def facts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(self.sentence) if f))


CODES: dict[str, Code] = {}


def codes(sentences: Mapping[str, str], front_end: bool = False) -> dict[str, Code]:
    """Declare a module's codes with their sentences (a code is declared once in the product)."""
    out = {}
    for code, sentence in sentences.items():
        if code in CODES and CODES[code].sentence != sentence:
            raise ValueError(f"the error code {code!r} is declared twice")
        out[code] = CODES[code] = Code(code, sentence, front_end)
    return out


class CachewiseError(Exception):
    """What went wrong, as facts: ``code``, ``facts``, ``changed`` (False: nothing on the system
    was changed) and ``next`` (what the user can do). Subclasses keep the names callers catch."""

    def __init__(self, code: str, /, *, changed: bool = False, next: Sequence[Next] = (), **facts: Any) -> None:
        if code not in CODES:
            raise ValueError(f"undeclared error code {code!r}")
        self.code, self.facts, self.changed, self.next = code, dict(facts), changed, tuple(next)
        super().__init__(DOMAIN.word(self))

    @property
    def what(self) -> str:
        """What happened, in the domain's words, without the rest: for an error that names this one."""
        return DOMAIN.sentence(self).removesuffix(".")


def what_of(exc: BaseException) -> str:
    """What an error says happened: a CachewiseError's sentence alone, any other's text."""
    return exc.what if isinstance(exc, CachewiseError) else str(exc)


class Described(CachewiseError):
    """An error whose one fact is a sentence the domain composes (a parser's finding, a tool's
    refusal): subclasses name their ``CODE``, declared with the sentence "{why}" or around it."""

    CODE = ""

    def __init__(
        self,
        why: object = "",
        *,
        code: str = "",
        changed: bool = False,
        next: Sequence[Next] = (),
        **facts: Any,
    ) -> None:
        """``code`` (with its own facts) when the error is one of the class's other codes."""
        super().__init__(code or self.CODE, changed=changed, next=next, why=why, **facts)


_PLAIN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def shown(name: object) -> str:
    """A name (a device, a path, an LV) as a person should see it: as it is when it is plain
    printable ASCII; otherwise quoted, with every other character escaped, so that a newline, a
    trailing space or a Cyrillic letter that looks Latin cannot pass for something else."""
    text = str(name)
    if _PLAIN.fullmatch(text):
        return text
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif "\x20" <= c <= "\x7e":
            out.append(c)
        else:
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "'" + "".join(out) + "'"


# The facts that are names (a device, a path, an LV): shown quoted when they hold odd characters.
NAME_FACTS = frozenset(
    "device path name lv vg target folder backing cache partition disk journal dir ssd other origin tool lock "
    "file trace disposable vglv".split()
)


class _Facts(dict[str, Any]):
    """Facts for a sentence: an error given as a fact says only what happened (its own next steps
    and "Nothing was changed." are the outer error's to say); a name is shown quoted when it
    holds odd characters (:func:`shown`); a fact the error does not carry reads as '?' rather
    than failing."""

    def __init__(self, facts: Mapping[str, Any]) -> None:
        super().__init__(
            {
                k: v.what
                if isinstance(v, CachewiseError)
                else shown(v)
                if k in NAME_FACTS and isinstance(v, str | os.PathLike)
                else v
                for k, v in facts.items()
            }
        )

    def __missing__(self, key: str) -> str:
        return "?"


@dataclass(frozen=True)
class Phrasebook:
    """How one front end words errors: a sentence for every next-step action, and its own
    sentence for any code it words differently from the domain."""

    actions: Mapping[str, str]
    sentences: Mapping[str, str] = field(default_factory=dict)
    joiner: str = "; or "

    def sentence(self, error: CachewiseError) -> str:
        template = self.sentences.get(error.code) or CODES[error.code].sentence
        return _sentence(template.format_map(_Facts(error.facts)), capital=False)

    def next_steps(self, steps: Sequence[Next]) -> str:
        said = [self.actions.get(s.action, ACTIONS[s.action]).format_map(_Facts(s.facts)) for s in steps]
        said = list(dict.fromkeys(s for s in said if s))
        return _sentence(self.joiner.join(said), capital=True) if said else ""

    def what_can_be_done(self, advice: str, steps: Sequence[Next]) -> str:
        """A sentence of the domain's advice (``advice``, which names no command) and the next
        steps this front end words (a device's ``Caching.can`` and ``Caching.next``)."""
        return " ".join(p for p in (_sentence(advice, capital=True), self.next_steps(steps)) if p)

    def word(self, error: CachewiseError) -> str:
        """What happened, what to do, and "Nothing was changed." when nothing was."""
        parts = [self.sentence(error), self.next_steps(error.next), "" if error.changed else NOTHING]
        return " ".join(p for p in parts if p)


def _sentence(text: str, capital: bool) -> str:
    """``text`` as a sentence: a full stop at its end, a capital at its start when it begins with
    our own words (never a device or VG name, which keep their case)."""
    text = text.strip()
    if not text:
        return ""
    if capital:
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


DOMAIN = Phrasebook(ACTIONS)
