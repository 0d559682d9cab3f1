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
from .core.creation import (arange, as_tensor, bernoulli, empty, empty_like, eye, from_dlpack, from_numpy,
                            full, full_like, linspace, manual_seed, multinomial, normal, ones, ones_like,
                            poisson, rand, rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                            zeros_like)
from .core import random  # (tg.random, as torch.random)
from .core.random import (Generator, default_generator, fork_rng, get_rng_state, initial_seed, seed,
                          set_rng_state)
from ._api.functional import (add, sub, mul, div, true_divide, divide, pow, neg, maximum, minimum, eq, ne, lt,
                              le, gt, ge, greater, less, greater_equal, less_equal, not_equal, logical_and,
                              logical_or, logical_not, bitwise_and, bitwise_or, bitwise_xor,
                              bitwise_left_shift, bitwise_right_shift, bitwise_not, where, clamp, clip, exp,
                              log, log1p, expm1, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid, relu, erf, floor,
                              abs, sign, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, exp2, ceil, trunc,
                              erfc, arcsin, arccos, arctan, arcsinh, arccosh, arctanh, fix, round, atan2,
                              arctan2, hypot, fmod, remainder, square, reciprocal, log2, log10, sum, cumsum,
                              cumprod, cummax, cummin, logcumsumexp, mean, var, std, prod, amax, amin, argmax,
                              argmin, max, min, logsumexp, reshape, view, flatten, unflatten, unsqueeze,
                              squeeze, permute, transpose, swapaxes, t, expand, expand_as, broadcast_to,
                              contiguous, clone, flip, narrow, cat, concat, concatenate, stack, split, chunk,
                              unbind, matmul, mm, bmm, mv, dot, outer, argsort, argwhere, gather, index_add,
                              index_select, nonzero, scatter_add, sort, topk, scatter, scatter_reduce,
                              allclose)
from .core.creation import logspace, scalar_tensor
from ._api.composites import (isnan, isinf, isposinf, isneginf, isfinite, nan_to_num, masked_fill, all, any,
                              lerp, addcmul, addcdiv, logaddexp, frac, deg2rad, rad2deg, sgn, norm, tril,
                              triu, movedim, moveaxis, roll, diag, diagonal, trace, hstack, vstack,
                              column_stack, var_mean, std_mean, diff, repeat_interleave, cross)
from ._api.contractions import einsum, kron, tensordot
from ._api.rearrange import (tile, select, rot90, fliplr, flipud, meshgrid, tensor_split, take, ravel,
                             take_along_dim, hsplit, vsplit, dsplit, diag_embed, diagflat, broadcast_tensors,
                             broadcast_shapes, cartesian_prod, combinations, block_diag, atleast_1d,
                             atleast_2d, atleast_3d, dstack, tril_indices, triu_indices, vander)
from ._api.arithmetic import (isclose, equal, count_nonzero, logical_xor, floor_divide, nansum, nanmean, fmax,
                              fmin, xlogy, logit, sinc, heaviside, float_power, positive, clamp_min,
                              clamp_max, addmm, dist, addmv, addr, baddbmm, addbmm, inner, vdot, logdet, cov,
                              corrcoef, lgamma, digamma, polygamma, mvlgamma, erfinv, igamma, igammac,
                              signbit, copysign, logaddexp2, ldexp)
from ._api.statistics import (median, quantile, kthvalue, nanmedian, nanquantile)
from ._api.selection import (masked_select, masked_scatter, index_copy, index_fill, index_put,
                             diagonal_scatter, select_scatter, slice_scatter, unique, unique_consecutive,
                             bincount, histc, aminmax)
from ._api.numerics import (cdist, trapezoid, trapz, cumulative_trapezoid, gradient, renorm, frexp,
                            chain_matmul, hardshrink, angle, gcd, lcm, nextafter, histogram)
from .core.settings import (use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                            is_deterministic_algorithms_warn_only_enabled, set_num_threads, get_num_threads)
from .core.printing import set_printoptions
from ._api.searching import (searchsorted, bucketize, isin, msort, mode, nonzero_static)
from ._api.strided import (as_strided, as_strided_scatter)
from .linalg.legacy import lu, triangular_solve
from . import linalg
from .linalg import (cholesky, cholesky_inverse, cholesky_solve, det, inv as inverse, pinverse, slogdet,
                     legacy_svd as svd)
from .linalg.lu import lu_unpack
from ._api.aliases import (multiply, subtract, negative, swapdims, detach, real, is_floating_point,
                           is_complex, is_nonzero, is_same_size, is_signed, matrix_exp, matrix_power, conv1d,
                           conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
                           pixel_shuffle, pixel_unshuffle, channel_shuffle, pdist, cosine_similarity,
                           pairwise_distance, prelu, unravel_index, hann_window, hamming_window,
                           blackman_window, bartlett_window, kaiser_window)
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
from ._api.torch_functions import (absolute, adaptive_avg_pool1d, adaptive_max_pool1d, alpha_dropout, asarray,
                                   avg_pool1d, batch_norm, bilinear, binary_cross_entropy_with_logits,
                                   can_cast, celu, conj, constant_pad_nd, cosine_embedding_loss, dropout,
                                   embedding, empty_strided, feature_alpha_dropout, fill, frombuffer,
                                   group_norm, hinge_embedding_loss, imag, instance_norm, is_conj,
                                   is_inference, is_neg, isreal, kl_div, layer_norm, margin_ranking_loss,
                                   max_pool1d, max_pool2d, max_pool3d, poisson_nll_loss, promote_types, qr,
                                   randint_like, range, resolve_conj, resolve_neg, rms_norm, row_stack, rrelu,
                                   rsub, selu, split_with_sizes, threshold, triplet_margin_loss, typename,
                                   unsafe_chunk, unsafe_split)
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
