"""Hot loops compiled with numba: eagerly, cached where numba may write, with signals kept.

numba is imported only here and only when a loop is first needed: importing it costs every
command half a second, and most commands never analyse a trace.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_kept() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP while numba starts LLVM, then answer them as before.

    LLVM installs C-level handlers for these signals when its JIT starts (at the compile, or at
    the first call of code loaded from numba's cache); on SIGTERM they re-raise it with the
    default action, so the analysis died (exit 143) with no sentence, and a signal during
    the compile was lost until exit ("Exception ignored in threading._shutdown"). Both are in
    tests/unit/test_bad_inputs.py. So the signals are blocked while LLVM starts, the process's
    Python handlers are set again (sigaction replaces LLVM's), and a signal that came meanwhile
    is delivered to them as the block lifts. Only the main thread can do this; elsewhere (the
    TUI's workers) the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        for s, handler in saved.items():
            if handler is not None:
                signal.signal(s, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def compile_loop(func: Callable[..., Any], signature: str, warm: Callable[[Callable[..., Any]], object]) -> Any:
    """``func`` compiled for its one ``signature``. The machine code is cached beside the source
    where numba may write there (numba keys it by CPU); on a read-only install numba refuses to
    cache and it is compiled in memory. ``warm`` calls it once on a tiny input: code loaded
    from numba's cache starts LLVM's JIT at its first call, which must happen inside
    signals_kept()."""
    with signals_kept():
        from numba import njit

        try:
            compiled = njit(signature, cache=True, nogil=True)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            compiled = njit(signature, nogil=True)(func)
        warm(compiled)
    return compiled
