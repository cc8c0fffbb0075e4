"""The published findings recommendations rest on, loaded from advisor/data/findings.toml.

Reasons cite findings by id; :func:`finding` resolves one to its text and source so the CLI
and the TUI can show why, and where it comes from."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    setup: str


@dataclass(frozen=True)
class Finding:
    id: str
    text: str
    source: Source
    where: str
    topic: tuple[str, ...] = ()  # a reason citing it mentions one of these (lower case)

    @property
    def citation(self) -> str:
        where = f", {self.where}" if self.where else ""
        return f"[{self.source.key}] {self.source.title}{where}"


@cache
def findings() -> dict[str, Finding]:
    data = tomllib.loads(resources.files("advisor.advice").joinpath("data/findings.toml").read_text("utf-8"))
    sources = {key: Source(key, s["title"], s.get("setup", "")) for key, s in data["sources"].items()}
    return {
        fid: Finding(fid, f["text"], sources[f["source"]], f.get("where", ""), tuple(f.get("topic", ())))
        for fid, f in data["findings"].items()
    }


def finding(fid: str) -> Finding:
    """The finding with this id; KeyError names the unknown id."""
    try:
        return findings()[fid]
    except KeyError:
        raise KeyError(f"unknown finding id {fid!r}") from None
