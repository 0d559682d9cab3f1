"""tracegrad: PyTorch-style autograd on NumPy with a graph-capture compiler.

>>> import tracegrad as tg
>>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""
from .core import dtypes
from .core.dtypes import (bool_ as bool, bfloat16, float16, float32, float64, int32, int64, int16, int8,
                          uint8, get_default_dtype, set_default_dtype, result_type, DType as dtype)
from .core.dtypes import (float32 as float, float64 as double, float16 as half, int64 as long, int32 as int,
                          int16 as short)
from .core.dtypes import finfo, iinfo
from .core.tensor import Size, Tensor
from .core.device import device, get_default_device, set_default_device
from ._api import tensor_methods as _methods  # (binds methods onto Tensor)
from .ops import registry as _registry

_registry._bind()
from .autograd import engine as _engine

_engine._bind()
from .core.creation import (arange, as_tensor, bernoulli, empty, empty_like, eye, from_dlpack, from_numpy,
                            full, full_like, linspace, manual_seed, multinomial, normal, ones, ones_like,
                            poisson, rand, rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                            zeros_like)
from .core import random  # (tg.random, as torch.random)
from .core.random import (Generator, default_generator, fork_rng, get_rng_state, initial_seed, seed,
                          set_rng_state)
from ._api.functional import *
from ._api.functional import abs, max, min, pow, round, sum  # (shadow builtins like torch)
from .core.creation import (logspace, scalar_tensor)  # (after functional's *: its own scalar_tensor is internal)
from ._api.composites import *
from ._api.composites import all, any
from ._api.contractions import einsum, kron, tensordot
from ._api.rearrange import *
from ._api.arithmetic import *
from ._api.statistics import *
from ._api.selection import *
from ._api.numerics import *
from .core.settings import *
from .core.printing import set_printoptions
from ._api.searching import *
from ._api.strided import *
from .linalg.legacy import lu, triangular_solve
from . import linalg
from .linalg import (cholesky, cholesky_inverse, cholesky_solve, det, inv as inverse, pinverse, slogdet,
                     legacy_svd as svd)
from .linalg.lu import lu_unpack
from ._api.aliases import *
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                                 no_grad, set_grad_enabled)
from . import autograd
from . import ops

__version__ = "0.1.0"

is_tensor = lambda obj: isinstance(obj, Tensor)
from . import nn
from . import special  # (tg.special, as torch.special)
from .special import i0  # (torch.i0: an alias of special.i0)
from ._api import namespace_methods as _methods_extra  # (binds more Tensor methods)
from .nn.functional import log_softmax, softmax  # tg.softmax(x, dim), as torch.softmax
from .serialization import load, load_checkpoint, save, save_checkpoint
from . import amp  # (tg.amp: autocast, GradScaler)
from .amp import (autocast, get_autocast_cpu_dtype, get_autocast_dtype, is_autocast_cpu_enabled,
                  is_autocast_enabled)
from ._api.torch_functions import *
from ._api.torch_functions import in_place_functions as _in_place_functions
from ._api import out_arguments as _out_arguments

globals().update(_in_place_functions())  # tg.exp_(x) is x.exp_(), as torch.exp_

_out_arguments.install(globals())  # (last: every function of the namespace is defined by now)
from . import backends, cuda  # (torch.backends, torch.cuda: answers of a CPU build)

# Start-up time (docs/performance.md): these namespaces are imported on first use, not by
# ``import tracegrad``. Together they are about 40% of the import (the compiler and its C
# backend, distributions, optim, func, testing, distributed), and a program that never compiles
# or samples a distribution does not need them. ``tg.compile``, ``import tracegrad.optim`` and
# ``from tracegrad import distributions`` all work as before (PEP 562).
_lazy_modules = {"compiler": ".compiler", "distributions": ".distributions", "optim": ".optim",
                 "utils": ".utils", "func": ".func", "testing": ".testing", "distributed": ".distributed"}
_lazy_attributes = {"compile": (".compiler.api", "compile"), "explain": (".compiler.api", "explain"),
                    "export": (".compiler.export.library", "export")}  # (tg.export: a standalone C library)


def __getattr__(name):
    import importlib

    if name in _lazy_modules:
        return importlib.import_module(_lazy_modules[name], __name__)  # (binds it on the package)
    if name in _lazy_attributes:
        module, attribute = _lazy_attributes[name]
        value = getattr(importlib.import_module(module, __name__), attribute)
        globals()[name] = value  # (once: later lookups do not come here)
        return value
    raise AttributeError(f"module 'tracegrad' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_lazy_modules) | set(_lazy_attributes))
