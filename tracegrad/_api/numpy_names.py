"""NumPy's argument names, as PyTorch's argument parser accepts them: ``axis`` for ``dim`` and
``keepdims`` for ``keepdim`` (``x.sum(axis=1, keepdims=True)``, ``torch.cumsum(x, axis=0)``).

Each theme module of ``_api`` ends with ``accept_numpy_names(globals())``: every function it
defines with a ``dim`` or ``keepdim`` parameter is wrapped once, so the methods bound from those
modules take the aliases too. The wrapper only renames when such a keyword is passed."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar, cast

_ALIASES = {"axis": "dim", "keepdims": "keepdim"}
_F = TypeVar("_F", bound=Callable[..., Any])  # (a decorated function keeps its signature for type checkers)


def _renamed(name, kwargs):
    kwargs = dict(kwargs)
    for alias, real in _ALIASES.items():
        if alias in kwargs:
            if real in kwargs:
                raise TypeError(f"{name}() received both {real}= and its alias {alias}=")
            kwargs[real] = kwargs.pop(alias)
    return kwargs


def numpy_names(fn: _F) -> _F:
    """``fn`` taking ``axis=``/``keepdims=`` for its ``dim=``/``keepdim=``."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if "axis" in kwargs or "keepdims" in kwargs:
            kwargs = _renamed(fn.__name__, kwargs)
        return fn(*args, **kwargs)

    call._numpy_names = True  # type: ignore[attr-defined]
    return cast(_F, call)


def accept_numpy_names(namespace):
    """Wrap, in a module's ``namespace`` (its globals()), each public function defined there
    whose signature has ``dim`` or ``keepdim`` (and no ``axis``/``keepdims`` of its own)."""
    module = namespace["__name__"]
    for name, fn in list(namespace.items()):
        if (name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module
                or getattr(fn, "_numpy_names", False)):
            continue
        params = inspect.signature(fn).parameters
        if ("dim" in params or "keepdim" in params) and not ("axis" in params or "keepdims" in params):
            namespace[name] = numpy_names(fn)
