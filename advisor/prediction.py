"""What the recommendation behind a cache predicts of it: made by the advice, carried by the plan
and the history, compared with the kernel's counters by the watch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Prediction:
    """What the recommendation behind a cache predicted (advisor.advice.recommend: the hit ratio
    at its size and the warm-up model C-FILL-1), kept with the plan and the history."""

    hit_ratio: float | None
    hot_bytes: int | None  # the hot data the cache should come to hold
    # seconds until 63% / 95% of the hot data is cached: the smq replay's time to 63% of its read
    # hit ratio when the trace was replayed (an lvmcache), else the warm-up model's (C-FILL-1)
    seconds_63: float | None
    seconds_95: float | None
    promotion_probability: float | None = None
    applied_at: float | None = None  # when the cache was made (seconds since the epoch)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Prediction | None:
        """What a recommendation's configuration (its JSON "config") predicts of the cache: the
        hit ratio at its size and the warm-up model's hot data and times; None for neither."""

        def number(value: Any) -> float | None:
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

        w = cfg.get("warmup") if isinstance(cfg.get("warmup"), dict) else {}
        assert isinstance(w, dict)
        hot = number(w.get("hot_blocks"))
        effective = number(cfg.get("effective_bytes"))
        unit = number(w.get("block_bytes")) or 4096  # hot_blocks counts dm-cache's chunks for an lvmcache
        hot_bytes = int(min(hot * unit, effective or hot * unit)) if hot is not None else None
        hit = number(cfg.get("predicted_hit_ratio"))
        if hit is None and hot_bytes is None:
            return None
        return cls(
            hit,
            hot_bytes,
            replayed
            if (replayed := number(w.get("simulated_seconds_63"))) is not None
            else number(w.get("seconds_63")),
            number(w.get("seconds_95")),
            number(w.get("promotion_probability")),
        )
