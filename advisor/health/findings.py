"""Findings: one thing ``doctor`` found, as facts, with its cause and the fix.

Each source of findings (boot readiness, cache state, tunables that drifted, SSD wear, dirty
data that does not flush) returns :class:`Finding` values. A finding's ``code`` is declared with
its sentence in :data:`SENTENCES` (``str.format`` fields name its facts), so a front end words it
from the facts alone and a script reads the code and the facts from the doctor's JSON. ``fix``
says what repairs it: a plan kind of the recipes' registry with its options (``plan`` and
``options``), or a command to run (``command``), each with a sentence for people.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["critical", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "warning", "info")

# Exit codes of `doctor` for scripts: the worst severity found.
EXIT_CODES: dict[str, int] = {"ok": 0, "info": 0, "warning": 1, "critical": 2}

SENTENCES: dict[str, str] = {}


def sentences(table: Mapping[str, str]) -> None:
    """Declare finding codes with their sentences (each source module declares its own)."""
    for code, text in table.items():
        if code in SENTENCES and SENTENCES[code] != text:
            raise ValueError(f"the finding {code} is declared twice with different sentences")
        SENTENCES[code] = text


@dataclass(frozen=True)
class Fix:
    """What repairs a finding: a plan (the recipe KIND with these options), a command,
    or only words (``how``) when the fix is the admin's to make."""

    how: str
    plan: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()  # the plan's options only the admin can choose ("ssd": a new SSD)

    def to_json(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "plan": self.plan or None,
            "options": dict(self.options),
            "needs": list(self.needs),
            "command": list(self.command),
        }


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    subject: str  # what it is about: "vg/lv", "bcache0", "/dev/sdb", "boot"
    facts: Mapping[str, Any] = field(default_factory=dict)
    cause: str = ""  # why it happens, in a sentence
    fix: Fix | None = None

    def __post_init__(self) -> None:
        if self.code not in SENTENCES:
            raise ValueError(f"unknown finding {self.code!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    @property
    def what(self) -> str:
        text = SENTENCES[self.code]
        try:
            return text.format_map({"subject": self.subject, **self.facts})
        except (KeyError, IndexError, ValueError):
            return text

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "subject": self.subject,
            "what": self.what,
            "facts": dict(self.facts),
            "cause": self.cause,
            "fix": self.fix.to_json() if self.fix else None,
        }


def worst(findings: Iterable[Finding]) -> str:
    """The worst severity among the findings, or "ok"."""
    found = {f.severity for f in findings}
    return next((s for s in SEVERITIES if s in found), "ok")


def exit_code(findings: Iterable[Finding]) -> int:
    return EXIT_CODES[worst(findings)]
