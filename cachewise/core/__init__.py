"""The application core: every use case the command line and the terminal UI offer, once, one
module each (discover, measure, advise, plans, apply, watch) over the backends a
:class:`Core` holds. The front ends parse input, call these, and word the results and the
errors in their own terms (cachewise/cli/phrases.py, screens/phrases.py)."""

from cachewise.core.backends import LiveDiscovery, LiveExecutor, LiveProber, ReplayDiscovery
from cachewise.core.context import Core, Refused, is_root, load_snapshot

__all__ = [
    "Core",
    "LiveDiscovery",
    "LiveExecutor",
    "LiveProber",
    "Refused",
    "ReplayDiscovery",
    "is_root",
    "load_snapshot",
]
