"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local).

Each works as a context manager and as a decorator (also of generator functions);
``no_grad``, ``enable_grad`` and ``inference_mode`` decorate without parentheses too, and
``set_grad_enabled(False)`` also works as a plain statement.

>>> import tracegrad as tg
>>> x = tg.ones(2, requires_grad=True)
>>> with tg.no_grad():
...     y = x * 2
>>> y.requires_grad
False
>>> @tg.no_grad
... def double(t):
...     return t * 2
>>> double(x).requires_grad
False
"""
from __future__ import annotations

import functools
import inspect

# The state itself is core's (the Tensor and the registry read it on every op); these are the
# same objects, re-exported under their public path.
from ..core.grad_state import _set_grad, _state, is_grad_enabled, is_inference_mode_enabled


class _DecoratorContextManager:
    """A context manager that can also decorate functions and generator functions; each call
    of the decorated function runs in a fresh copy of the manager."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn):
        # the mode holds while the generator body runs, not while the caller runs between
        # resumptions (PyTorch's behaviour)
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:  # (forwarded into the generator)
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return wrapper

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording: results of ops do not require grad."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(False)

    def __exit__(self, *exc):
        _set_grad(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording (inside no_grad, say)."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(True)

    def __exit__(self, *exc):
        _set_grad(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode immediately (so a plain call works) and restores it on exit.

    >>> import tracegrad as tg
    >>> _ = tg.set_grad_enabled(False)
    >>> tg.is_grad_enabled()
    False
    >>> _ = tg.set_grad_enabled(True)
    """

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

    def __repr__(self):
        return f"tracegrad.set_grad_enabled(mode={self.mode})"


class inference_mode(_DecoratorContextManager):
    """Like no_grad; tensors created inside are inference tensors: they can never require
    grad, be saved for backward or be modified in place outside inference mode."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

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
