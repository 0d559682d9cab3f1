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
from .core.tensor import Size
from .core.device import device, get_default_device, set_default_device
from ._api.tensor import Tensor  # (the public class: its methods are declared there)
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
from ._api.torch_functions import (abs_, acos_, acosh_, addmv_, arccos_, arccosh_, arcsin_, arcsinh_, arctan_,
                                   arctanh_, asin_, asinh_, atan_, atanh_, ceil_, clamp_, clamp_max_,
                                   clamp_min_, clip_, cos_, cosh_, deg2rad_, detach_, erf_, erfc_, exp2_,
                                   exp_, expm1_, fill_, fix_, floor_, frac_, gcd_, i0_, index_put_, lcm_,
                                   ldexp_, log10_, log1p_, log2_, log_, logit_, nan_to_num_, neg_, negative_,
                                   rad2deg_, reciprocal_, relu_, round_, rsqrt_, sigmoid_, sin_, sinc_, sinh_,
                                   sqrt_, square_, tan_, tanh_, trunc_, xlogy_, zero_)  # tg.exp_(x) is x.exp_()
from ._api.out_arguments import with_out as _out

# PyTorch's out= keyword, on the functions that take it in torch (_api/out_arguments.py): each is
# its definition wrapped (functools.wraps: tg.tanh.__wrapped__ is the function defined in _api/).
# This is the one list: the functions whose torch documentation (2.13) gives out=, and those that
# take it undocumented, such as sum (test_out_arguments checks it against torch's namespace).
# Wrapped here, at the public edge, not where each is defined: internal callers (backward rules,
# Tensor's methods, nn.functional) call the definitions without the wrapper's cost, and
# nn.functional.softmax or ops.index.gather, which torch gives no out=, get none.
abs = _out(abs, "abs")
acos = _out(acos, "acos")
acosh = _out(acosh, "acosh")
add = _out(add, "add")
addbmm = _out(addbmm, "addbmm")
addcdiv = _out(addcdiv, "addcdiv")
addcmul = _out(addcmul, "addcmul")
addmm = _out(addmm, "addmm")
addmv = _out(addmv, "addmv")
addr = _out(addr, "addr")
all = _out(all, "all")
amax = _out(amax, "amax")
amin = _out(amin, "amin")
aminmax = _out(aminmax, "aminmax")
angle = _out(angle, "angle")
any = _out(any, "any")
arange = _out(arange, "arange")
arccos = _out(arccos, "arccos")
arccosh = _out(arccosh, "arccosh")
arcsin = _out(arcsin, "arcsin")
arcsinh = _out(arcsinh, "arcsinh")
arctan = _out(arctan, "arctan")
arctan2 = _out(arctan2, "arctan2")
arctanh = _out(arctanh, "arctanh")
argmax = _out(argmax, "argmax")
argmin = _out(argmin, "argmin")
asin = _out(asin, "asin")
asinh = _out(asinh, "asinh")
atan = _out(atan, "atan")
atan2 = _out(atan2, "atan2")
atanh = _out(atanh, "atanh")
baddbmm = _out(baddbmm, "baddbmm")
bernoulli = _out(bernoulli, "bernoulli")
bitwise_and = _out(bitwise_and, "bitwise_and")
bitwise_left_shift = _out(bitwise_left_shift, "bitwise_left_shift")
bitwise_not = _out(bitwise_not, "bitwise_not")
bitwise_or = _out(bitwise_or, "bitwise_or")
bitwise_right_shift = _out(bitwise_right_shift, "bitwise_right_shift")
bitwise_xor = _out(bitwise_xor, "bitwise_xor")
bmm = _out(bmm, "bmm")
cat = _out(cat, "cat")
ceil = _out(ceil, "ceil")
cholesky = _out(cholesky, "cholesky")
cholesky_inverse = _out(cholesky_inverse, "cholesky_inverse")
cholesky_solve = _out(cholesky_solve, "cholesky_solve")
clamp = _out(clamp, "clamp")
clamp_max = _out(clamp_max, "clamp_max")
clamp_min = _out(clamp_min, "clamp_min")
clip = _out(clip, "clip")
column_stack = _out(column_stack, "column_stack")
concat = _out(concat, "concat")
concatenate = _out(concatenate, "concatenate")
copysign = _out(copysign, "copysign")
cos = _out(cos, "cos")
cosh = _out(cosh, "cosh")
cross = _out(cross, "cross")
cummax = _out(cummax, "cummax")
cummin = _out(cummin, "cummin")
cumprod = _out(cumprod, "cumprod")
cumsum = _out(cumsum, "cumsum")
deg2rad = _out(deg2rad, "deg2rad")
diag = _out(diag, "diag")
diff = _out(diff, "diff")
digamma = _out(digamma, "digamma")
div = _out(div, "div")
divide = _out(divide, "divide")
dot = _out(dot, "dot")
dstack = _out(dstack, "dstack")
empty = _out(empty, "empty")
eq = _out(eq, "eq")
erf = _out(erf, "erf")
erfc = _out(erfc, "erfc")
erfinv = _out(erfinv, "erfinv")
exp = _out(exp, "exp")
exp2 = _out(exp2, "exp2")
expm1 = _out(expm1, "expm1")
eye = _out(eye, "eye")
fix = _out(fix, "fix")
float_power = _out(float_power, "float_power")
floor = _out(floor, "floor")
floor_divide = _out(floor_divide, "floor_divide")
fmax = _out(fmax, "fmax")
fmin = _out(fmin, "fmin")
fmod = _out(fmod, "fmod")
frac = _out(frac, "frac")
frexp = _out(frexp, "frexp")
full = _out(full, "full")
gather = _out(gather, "gather")
gcd = _out(gcd, "gcd")
ge = _out(ge, "ge")
greater = _out(greater, "greater")
greater_equal = _out(greater_equal, "greater_equal")
gt = _out(gt, "gt")
heaviside = _out(heaviside, "heaviside")
histc = _out(histc, "histc")
histogram = _out(histogram, "histogram")
hstack = _out(hstack, "hstack")
hypot = _out(hypot, "hypot")
i0 = _out(i0, "i0")
igamma = _out(igamma, "igamma")
igammac = _out(igammac, "igammac")
index_copy = _out(index_copy, "index_copy")
index_select = _out(index_select, "index_select")
inner = _out(inner, "inner")
inverse = _out(inverse, "inverse")
isin = _out(isin, "isin")
isneginf = _out(isneginf, "isneginf")
isposinf = _out(isposinf, "isposinf")
kron = _out(kron, "kron")
kthvalue = _out(kthvalue, "kthvalue")
lcm = _out(lcm, "lcm")
ldexp = _out(ldexp, "ldexp")
le = _out(le, "le")
lerp = _out(lerp, "lerp")
less = _out(less, "less")
less_equal = _out(less_equal, "less_equal")
lgamma = _out(lgamma, "lgamma")
linspace = _out(linspace, "linspace")
log = _out(log, "log")
log10 = _out(log10, "log10")
log1p = _out(log1p, "log1p")
log2 = _out(log2, "log2")
log_softmax = _out(log_softmax, "log_softmax")
logaddexp = _out(logaddexp, "logaddexp")
logaddexp2 = _out(logaddexp2, "logaddexp2")
logcumsumexp = _out(logcumsumexp, "logcumsumexp")
logical_and = _out(logical_and, "logical_and")
logical_not = _out(logical_not, "logical_not")
logical_or = _out(logical_or, "logical_or")
logical_xor = _out(logical_xor, "logical_xor")
logit = _out(logit, "logit")
logspace = _out(logspace, "logspace")
logsumexp = _out(logsumexp, "logsumexp")
lt = _out(lt, "lt")
lu_unpack = _out(lu_unpack, "lu_unpack")
masked_select = _out(masked_select, "masked_select")
matmul = _out(matmul, "matmul")
matrix_power = _out(matrix_power, "matrix_power")
max = _out(max, "max")
maximum = _out(maximum, "maximum")
mean = _out(mean, "mean")
median = _out(median, "median")
min = _out(min, "min")
minimum = _out(minimum, "minimum")
mm = _out(mm, "mm")
mode = _out(mode, "mode")
msort = _out(msort, "msort")
mul = _out(mul, "mul")
multinomial = _out(multinomial, "multinomial")
multiply = _out(multiply, "multiply")
mv = _out(mv, "mv")
mvlgamma = _out(mvlgamma, "mvlgamma")
nan_to_num = _out(nan_to_num, "nan_to_num")
nanmean = _out(nanmean, "nanmean")
nanmedian = _out(nanmedian, "nanmedian")
nanquantile = _out(nanquantile, "nanquantile")
nansum = _out(nansum, "nansum")
ne = _out(ne, "ne")
neg = _out(neg, "neg")
negative = _out(negative, "negative")
nextafter = _out(nextafter, "nextafter")
nonzero = _out(nonzero, "nonzero")
normal = _out(normal, "normal")
not_equal = _out(not_equal, "not_equal")
ones = _out(ones, "ones")
outer = _out(outer, "outer")
polygamma = _out(polygamma, "polygamma")
pow = _out(pow, "pow")
prod = _out(prod, "prod")
qr = _out(qr, "qr")
quantile = _out(quantile, "quantile")
rad2deg = _out(rad2deg, "rad2deg")
rand = _out(rand, "rand")
randint = _out(randint, "randint")
randn = _out(randn, "randn")
randperm = _out(randperm, "randperm")
range = _out(range, "range")
reciprocal = _out(reciprocal, "reciprocal")
remainder = _out(remainder, "remainder")
renorm = _out(renorm, "renorm")
round = _out(round, "round")
rsqrt = _out(rsqrt, "rsqrt")
sgn = _out(sgn, "sgn")
sigmoid = _out(sigmoid, "sigmoid")
sign = _out(sign, "sign")
signbit = _out(signbit, "signbit")
sin = _out(sin, "sin")
sinc = _out(sinc, "sinc")
sinh = _out(sinh, "sinh")
slice_scatter = _out(slice_scatter, "slice_scatter")
softmax = _out(softmax, "softmax")
sort = _out(sort, "sort")
sqrt = _out(sqrt, "sqrt")
square = _out(square, "square")
stack = _out(stack, "stack")
std = _out(std, "std")
std_mean = _out(std_mean, "std_mean")
sub = _out(sub, "sub")
subtract = _out(subtract, "subtract")
sum = _out(sum, "sum")
svd = _out(svd, "svd")
take = _out(take, "take")
take_along_dim = _out(take_along_dim, "take_along_dim")
tan = _out(tan, "tan")
tanh = _out(tanh, "tanh")
topk = _out(topk, "topk")
tril = _out(tril, "tril")
triu = _out(triu, "triu")
true_divide = _out(true_divide, "true_divide")
trunc = _out(trunc, "trunc")
var = _out(var, "var")
var_mean = _out(var_mean, "var_mean")
vdot = _out(vdot, "vdot")
vstack = _out(vstack, "vstack")
where = _out(where, "where")
xlogy = _out(xlogy, "xlogy")
zeros = _out(zeros, "zeros")
del _out

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
    import importlib  # (here, not at the top: tracegrad's namespace is the API; no tg.importlib)

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
