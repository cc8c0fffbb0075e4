"""What every cachewise screen shares: the application core it calls."""

from __future__ import annotations

from textual.screen import Screen

from cachewise.core import Core


class CoreScreen(Screen[None]):
    @property
    def core(self) -> Core:
        return self.app.core  # type: ignore[attr-defined, no-any-return]
