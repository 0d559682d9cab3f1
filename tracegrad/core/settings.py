"""Process-wide switches of the ``torch`` namespace: ``set_num_threads``/``get_num_threads``
(see ``backends/c/threads.py``), and ``use_deterministic_algorithms`` with its queries:
tracegrad's ops are deterministic already (NumPy eagerly; compiled loops and reductions split
the same way on every call), so that flag is recorded for code that reads it back and changes
nothing else.

>>> import tracegrad as tg
>>> tg.use_deterministic_algorithms(True)
>>> tg.are_deterministic_algorithms_enabled()
True
>>> tg.use_deterministic_algorithms(False)
"""
from __future__ import annotations


__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_num_threads", "get_num_threads"]

# The thread settings live with the C backend (backends/c/threads.py); importing it loads the
# whole backend package (~50 ms of start-up that a program which never compiles does not need),
# so these two import it when called.
def set_num_threads(n):
    from ..compiler.backends.c.threads import set_num_threads as set_threads

    set_threads(n)


def get_num_threads():
    from ..compiler.backends.c.threads import get_num_threads as get_threads  # (lazy: as above)

    return get_threads()


_deterministic = False
_warn_only = False


def use_deterministic_algorithms(mode, *, warn_only=False):
    global _deterministic, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool for mode, got {type(mode).__name__}")
    _deterministic, _warn_only = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _warn_only
