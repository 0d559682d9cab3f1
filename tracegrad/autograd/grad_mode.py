"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local).

>>> import tracegrad as tg
>>> x = tg.ones(2, requires_grad=True)
>>> with tg.no_grad():
...     y = x * 2
>>> y.requires_grad
False
"""
from __future__ import annotations

import functools
import threading

_state = threading.local()


def _get(name, default):
    return getattr(_state, name, default)


def is_grad_enabled():
    return _get("grad", True)


def is_inference_mode_enabled():
    return _get("inference", False)


def _set_grad(flag):
    _state.grad = bool(flag)


class _DecoratorContextManager:
    """A context manager that can also decorate functions (and generator-free callables)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(False)

    def __exit__(self, *exc):
        _set_grad(self.prev)


class enable_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(True)

    def __exit__(self, *exc):
        _set_grad(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode immediately (so a plain call works) and restores it on exit."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_grad(self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set_grad(self.prev)

    def __call__(self, fn):
        _set_grad(self.prev)  # used as a decorator: the call above must not leak
        return super().__call__(fn)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad; tensors created inside are inference tensors that can never require grad."""

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = (is_grad_enabled(), is_inference_mode_enabled())
        if self.mode:
            _set_grad(False)
            _state.inference = True
        else:
            _state.inference = False

    def __exit__(self, *exc):
        _set_grad(self.prev[0])
        _state.inference = self.prev[1]

    def clone(self):
        return self.__class__(self.mode)
