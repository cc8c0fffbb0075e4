"""Hot loops compiled with numba: eagerly, cached where numba may write, with signals kept.

numba is imported only here and only when a loop is first needed: importing it costs every
command half a second, and most commands never analyse a trace.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
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
    tests/unit/test_bad_inputs.py. So, while LLVM starts, the main thread blocks the signals and
    the process's Python handlers only note them: a signal sent to the process is taken by any
    thread that does not block it (a timer's, a library's), and Python then runs its handler in
    the main thread, in the middle of the compile, if the handler raises ("Exception ignored on
    calling ctypes callback function", seen one run in five). Afterwards the handlers are set
    again (sigaction replaces LLVM's), the block lifts, and each signal noted is raised again,
    now answered by the handler it was meant for. Only the main thread can do this; elsewhere
    (the TUI's workers) the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: h for s in STOP_SIGNALS if (h := signal.getsignal(s)) is not None}
    noted: list[int] = []

    def note(signum: int, _frame: object) -> None:
        noted.append(signum)

    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        for s in saved:
            signal.signal(s, note)
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off, then as it was: importing numba and loading
    its cached code make a few hundred thousand objects, and the collections they set off cost
    0.1 to 0.2 s of a warm analysis's start (measured beside the CLI's imports)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@functools.cache
def _frozen_at_exit() -> None:
    """At exit, the objects numba made are moved out of the collector's sight (gc.freeze) before
    the interpreter's last collection, which otherwise walks them all: 0.15 s of every analysis's
    end. The memory goes back to the system with the process either way."""
    atexit.register(gc.freeze)


def compile_loop(func: Callable[..., Any], signature: str, warm: Callable[[Callable[..., Any]], object]) -> Any:
    """``func`` compiled for its one ``signature``. The machine code is cached beside the source
    where numba may write there (numba keys it by CPU); on a read-only install numba refuses to
    cache and it is compiled in memory. ``warm`` calls it once on a tiny input: code loaded
    from numba's cache starts LLVM's JIT at its first call, which must happen inside
    signals_kept()."""
    _frozen_at_exit()
    with signals_kept(), collection_paused():
        from numba import njit

        try:
            compiled = njit(signature, cache=True, nogil=True)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            compiled = njit(signature, nogil=True)(func)
        warm(compiled)
    return compiled
