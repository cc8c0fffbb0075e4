"""Sizes as people read them."""

from __future__ import annotations

from advisor.units import human_size


def test_human_size() -> None:
    assert [human_size(n) for n in (0, 512, 1 << 30, (1 << 30) - 8192, 3 * (1 << 40))] == [
        "0 B", "512 B", "1.0 GiB", "1.0 GiB", "3.0 TiB"]
