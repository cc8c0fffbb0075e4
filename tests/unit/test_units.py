"""Sizes as people read them."""

from __future__ import annotations

import pytest

from advisor.units import human_size


def test_human_size() -> None:
    assert [human_size(n) for n in (0, 512, 1 << 30, (1 << 30) - 8192, 3 * (1 << 40))] == [
        "0 B", "512 B", "1.0 GiB", "1.0 GiB", "3.0 TiB"]


@pytest.mark.parametrize(("ms", "text"), [(4.16, "4.16 ms"), (12.5, "12.50 ms"), (1.0, "1.00 ms"),
                                          (0.057, "57 µs"), (0.02, "20 µs"), (0.0085, "8.5 µs")])
def test_a_latency_is_shown_in_the_unit_that_fits_it(ms: float, text: str) -> None:
    """Flash reads in tens of microseconds: never '0.00 ms' (issue 30)."""
    from advisor.units import latency

    assert latency(ms) == text
