"""PyTorch's ``out=`` keyword for the functions of the ``tracegrad`` namespace that take it in
``torch``: the result is computed as without it, then written into ``out`` (or, for functions
with several results, into each tensor of the tuple ``out``), which is returned.

As in PyTorch: ``out`` keeps its dtype (a result of a higher category, float into an integer
tensor, is an error); a creation function (``zeros``, ``arange``, ...) without a ``dtype``
makes ``out``'s; an ``out`` of another shape is resized, with a warning unless it was empty; and
``out=`` refuses tensors that require grad (arguments or ``out``) while grad mode is on.

>>> import tracegrad as tg
>>> buffer = tg.empty(3)
>>> tg.add(tg.ones(3), 2, out=buffer) is buffer, buffer
(True, tensor([3., 3., 3.]))
>>> values, indices = tg.empty(2), tg.empty(2, dtype=tg.int64)
>>> _ = tg.sort(tg.tensor([3.0, 1.0]), out=(values, indices))
>>> values, indices
(tensor([1., 3.]), tensor([1, 0]))
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, TypeVar, cast

from ..autograd import grad_mode
from ..core.dtypes import check_can_cast
from ..core.tensor import Tensor

# creation functions: without a dtype they make out's (torch.zeros(2, out=long_tensor))
CREATION = {"arange", "empty", "eye", "full", "linspace", "logspace", "ones", "rand", "randint", "randn",
            "randperm", "range", "zeros"}


def _parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


_F = TypeVar("_F", bound=Callable[..., Any])


def with_out(fn: _F, name: str) -> _F:
    """``fn`` (the function ``tracegrad.<name>``) taking ``out=`` as well; ``fn`` itself when it
    has an ``out`` parameter of its own. The wrapper keeps ``fn``'s name, docstring and source
    (``functools.wraps``: ``__wrapped__`` is ``fn``)."""
    if "out" in _parameters(fn):
        return fn

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if grad_mode.is_grad_enabled() and any(t.requires_grad for t in _tensors(args, kwargs, out)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if name in CREATION and kwargs.get("dtype") is None and isinstance(out, Tensor):
            kwargs["dtype"] = out.dtype
        return write_results(fn(*args, **kwargs), out, name)

    params = list(_parameters(fn).values())
    if params and params[-1].kind is not inspect.Parameter.VAR_KEYWORD:
        out_param = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
        call.__signature__ = inspect.signature(fn).replace(parameters=params + [out_param])
    return cast(_F, call)  # (fn's signature, plus out=)


def _tensors(args, kwargs, out):
    for a in list(args) + list(kwargs.values()) + [out]:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):  # cat, stack: a sequence of tensors
            yield from (t for t in a if isinstance(t, Tensor))  # (and a tuple out)


def write_results(result, out, name):
    """``result`` (a tensor, or a tuple of them) written into ``out``; returns ``out``'s."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} Tensors, "
                            f"got {type(out).__name__}")
        written = [write_one(r, o, name) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    return write_one(result, out, name)


def write_one(result, out, name):
    check_can_cast(result.dtype, out.dtype)
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() > 0:
            warnings.warn(f"{name}(): an output with one or more elements was resized since it had shape "
                          f"{list(out.shape)}, which does not match the required output shape "
                          f"{list(result.shape)}. This behavior is deprecated (as in PyTorch); resize the "
                          "out tensor to zero elements first with t.resize_(0).", UserWarning, stacklevel=4)
        out.resize_(tuple(result.shape))
    out.copy_(result)
    return out
