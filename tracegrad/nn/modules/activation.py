"""Activation modules beyond the basic ones of layers.py, each calling one function of
``tracegrad.nn.functional`` with PyTorch's arguments.

>>> import tracegrad as tg
>>> tg.nn.LeakyReLU(0.1)(tg.tensor([-1.0, 2.0]))
tensor([-0.1000,  2.0000])
"""
from __future__ import annotations

import inspect
import warnings

from .. import functional as F
from .module import Module


class _Elementwise(Module):
    """An activation ``fn(input, **args)`` whose constructor arguments are its ``args``."""

    fn = None
    arg_names = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        values = dict(zip(self.arg_names, args), **kwargs)
        for name in values:
            if name not in self.arg_names:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
        for name, default in zip(self.arg_names, self.defaults):
            setattr(self, name, values.get(name, default))

    defaults = ()

    def forward(self, input):
        return type(self).fn(input, **{n: getattr(self, n) for n in self.arg_names})

    def extra_repr(self):
        return ", ".join(f"{n}={getattr(self, n)}" for n in self.arg_names if n != "inplace"
                         or getattr(self, n))


def _activation(name, fn, arg_names=(), defaults=(), extra_repr=None):
    """A module class calling ``fn`` with its constructor arguments; ``extra_repr`` replaces
    the default ``name=value`` listing where PyTorch prints them otherwise."""
    def __init__(self, *args, **kwargs):
        _Elementwise.__init__(self, *args, **kwargs)

    # (what inspect.signature and help() show: PyTorch's constructor arguments)
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
           for n, d in zip(arg_names, defaults)])
    body = {"fn": staticmethod(fn), "arg_names": arg_names, "defaults": defaults, "__init__": __init__,
            "__doc__": f"``F.{fn.__name__}``.", "__module__": __name__}
    if extra_repr is not None:
        body["extra_repr"] = extra_repr
    return type(name, (_Elementwise,), body)


SiLU = _activation("SiLU", F.silu, ("inplace",), (False,))
Softplus = _activation("Softplus", F.softplus, ("beta", "threshold"), (1.0, 20.0))
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, ("negative_slope", "inplace"), (0.01, False))
ELU = _activation("ELU", F.elu, ("alpha", "inplace"), (1.0, False))
Mish = _activation("Mish", F.mish, ("inplace",), (False,))
class Hardtanh(_activation("Hardtanh", F.hardtanh, ("min_val", "max_val", "inplace"), (-1.0, 1.0, False))):
    """``F.hardtanh``; ``min_value``/``max_value`` are PyTorch's deprecated names (a
    FutureWarning)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        for old, new in (("min_value", "min_val"), ("max_value", "max_val")):
            if locals()[old] is not None:
                warnings.warn(f"keyword argument `{old}` is deprecated and rename to `{new}`", FutureWarning,
                              stacklevel=2)
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        super().__init__(min_val, max_val, inplace)
LogSigmoid = _activation("LogSigmoid", F.logsigmoid)
Softsign = _activation("Softsign", F.softsign)
GLU = _activation("GLU", F.glu, ("dim",), (-1,))
