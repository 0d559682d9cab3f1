"""More of the ``torch`` namespace, each with the parameters PyTorch's own has there (which are
not always those of the ``nn.functional`` form: ``torch.embedding(weight, indices)``,
``torch.dropout(input, p, train)``, integer ``reduction`` codes 0 none, 1 mean, 2 sum, and
for the losses a default of 0, no reduction, as PyTorch's have):

- ``torch.<op>_(input, ...)``, the in-place functions: ``input.<op>_(...)``;
- the ``torch.*`` forms of layers and losses of ``nn.functional``;
- small ones: ``rsub``, ``range``, ``fill``, ``row_stack``, ``absolute``, ``constant_pad_nd``,
  ``promote_types``, ``can_cast``, ``typename``, ``qr``, ``split_with_sizes``, the real-tensor
  answers of the complex API (``conj``, ``isreal``, ``imag``, ...), ``asarray``, ``frombuffer``,
  ``empty_strided``, ``randint_like``.

>>> import tracegrad as tg
>>> x = tg.tensor([-1.0, 4.0])
>>> tg.sqrt_(tg.abs_(x)), x
(tensor([1., 2.]), tensor([1., 2.]))
>>> tg.rsub(tg.tensor([1.0]), 5), tg.promote_types(tg.uint8, tg.int8)
(tensor([4.]), tracegrad.int16)
"""
from __future__ import annotations

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from . import composites as _composites
from . import functional as F
from .. import linalg as _linalg
from ..nn import functional as _nnf
from ..core.tensor import Tensor
from ..core.device import check_device as _check_device

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}

# torch.<name>(input, ...) is input.<name>(...): the names defined below
IN_PLACE = """abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_
atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ exp2_
exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_
nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_
square_ tan_ tanh_ trunc_ xlogy_ zero_""".split()


def _in_place(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``: in place."
    return fn


# the in-place functions, by name (tracegrad/__init__.py imports each)
abs_ = _in_place("abs_")
acos_ = _in_place("acos_")
acosh_ = _in_place("acosh_")
addmv_ = _in_place("addmv_")
arccos_ = _in_place("arccos_")
arccosh_ = _in_place("arccosh_")
arcsin_ = _in_place("arcsin_")
arcsinh_ = _in_place("arcsinh_")
arctan_ = _in_place("arctan_")
arctanh_ = _in_place("arctanh_")
asin_ = _in_place("asin_")
asinh_ = _in_place("asinh_")
atan_ = _in_place("atan_")
atanh_ = _in_place("atanh_")
ceil_ = _in_place("ceil_")
clamp_ = _in_place("clamp_")
clamp_max_ = _in_place("clamp_max_")
clamp_min_ = _in_place("clamp_min_")
clip_ = _in_place("clip_")
cos_ = _in_place("cos_")
cosh_ = _in_place("cosh_")
deg2rad_ = _in_place("deg2rad_")
detach_ = _in_place("detach_")
erf_ = _in_place("erf_")
erfc_ = _in_place("erfc_")
exp2_ = _in_place("exp2_")
exp_ = _in_place("exp_")
expm1_ = _in_place("expm1_")
fill_ = _in_place("fill_")
fix_ = _in_place("fix_")
floor_ = _in_place("floor_")
frac_ = _in_place("frac_")
gcd_ = _in_place("gcd_")
i0_ = _in_place("i0_")
index_put_ = _in_place("index_put_")
lcm_ = _in_place("lcm_")
ldexp_ = _in_place("ldexp_")
log10_ = _in_place("log10_")
log1p_ = _in_place("log1p_")
log2_ = _in_place("log2_")
log_ = _in_place("log_")
logit_ = _in_place("logit_")
nan_to_num_ = _in_place("nan_to_num_")
neg_ = _in_place("neg_")
negative_ = _in_place("negative_")
rad2deg_ = _in_place("rad2deg_")
reciprocal_ = _in_place("reciprocal_")
relu_ = _in_place("relu_")
round_ = _in_place("round_")
rsqrt_ = _in_place("rsqrt_")
sigmoid_ = _in_place("sigmoid_")
sin_ = _in_place("sin_")
sinc_ = _in_place("sinc_")
sinh_ = _in_place("sinh_")
sqrt_ = _in_place("sqrt_")
square_ = _in_place("square_")
tan_ = _in_place("tan_")
tanh_ = _in_place("tanh_")
trunc_ = _in_place("trunc_")
xlogy_ = _in_place("xlogy_")
zero_ = _in_place("zero_")


def _reduction(code):
    return _REDUCTIONS[code] if isinstance(code, int) else code


def _stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


# ----------------------------------------------------------------------------- nn.functional forms
def dropout(input, p, train):
    return _nnf.dropout(input, p, training=train)


def alpha_dropout(input, p, train):
    return _nnf.alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input, p, train):
    return _nnf.feature_alpha_dropout(input, p, training=train)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _nnf.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _nnf.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _nnf.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _nnf.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _nnf.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq)


def threshold(input, threshold, value):
    return _nnf.threshold(input, threshold, value)


def celu(input, alpha=1.0):
    return _nnf.celu(input, alpha)


def selu(input):
    return _nnf.selu(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _nnf.rrelu(input, lower, upper, training)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _nnf.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _nnf.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _nnf.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return _nnf.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    return _nnf.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``(values, indices)``, as PyTorch's torch.adaptive_max_pool1d."""
    return _nnf.adaptive_max_pool1d(input, output_size, return_indices=True)


def bilinear(input1, input2, weight, bias=None):
    return _nnf.bilinear(input1, input2, weight, bias)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return _nnf.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def kl_div(input, target, reduction=0, log_target=False):
    return _nnf.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _nnf.rms_norm(input, normalized_shape, weight, eps)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return _nnf.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return _nnf.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _nnf.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _nnf.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=0):
    return _nnf.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def constant_pad_nd(input, pad, value=0):
    return _nnf.pad(input, pad, "constant", value)


# ----------------------------------------------------------------------------- small ones
def rsub(input, other, alpha=1):
    """``other - alpha * input``."""
    return F.sub(other, input, alpha=alpha)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False):
    """``start`` to ``end`` *inclusive* by ``step``, in the default float dtype (deprecated in
    PyTorch for ``arange``)."""
    if end is None:
        start, end = 0, start
    count = int(np.floor((end - start) / step)) + 1
    values = start + step * np.arange(max(count, 0), dtype=np.float64)
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    return creation.tensor(values.astype(dt.np), dtype=dt, requires_grad=requires_grad, device=device)


def fill(input, value):
    """A new tensor like ``input`` filled with ``value`` (a number, or a 0-dim tensor that then
    gets the gradient)."""
    if not isinstance(value, Tensor):
        return creation.full_like(input, value)
    if value.ndim:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    return F.add(creation.zeros_like(input), F.cast(value, input.dtype))


def row_stack(tensors, *, out=None):
    return F.write_out(_composites.vstack(tensors), out)


def absolute(input, *, out=None):
    return F.write_out(F.abs(input), out)


def promote_types(type1, type2):
    return _dt.promote(_dt.to_dtype(type1), _dt.to_dtype(type2))


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow ``from_`` into ``to`` in ops with ``out=``
    (dtypes.check_can_cast)."""
    try:
        _dt.check_can_cast(_dt.to_dtype(from_), _dt.to_dtype(to))
    except RuntimeError:
        return False
    return True


def typename(obj):
    if isinstance(obj, Tensor):
        return f"tracegrad.{obj.dtype.torch_name}Tensor"
    module = type(obj).__module__
    return type(obj).__qualname__ if module == "builtins" else f"{module}.{type(obj).__qualname__}"


def qr(input, some=True):
    return _linalg.qr(input, mode="reduced" if some else "complete")


def split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


# the complex API on real tensors
def conj(input):
    return input


resolve_conj = resolve_neg = conj


def is_conj(input):
    return False


def is_neg(input):
    return False


def isreal(input):
    return creation.ones_like(input, dtype=_dt.bool_)


def imag(input):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def is_inference(input):
    return bool(getattr(input, "_inference", False))


# ----------------------------------------------------------------------------- creation
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor of ``obj``, sharing a NumPy array's or a tensor's memory where the dtype allows
    and ``copy`` is not True; on ``device`` when given (a copy when it is elsewhere)."""
    if copy:
        return creation.tensor(obj, dtype=dtype, requires_grad=requires_grad, device=device)
    result = creation.as_tensor(obj, dtype=dtype)
    if device is not None:
        result = result.to(device)
    return result.requires_grad_() if requires_grad else result


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over ``buffer``'s bytes (any object with the buffer protocol), shared."""
    dt = _dt.to_dtype(dtype)
    array = np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset)
    result = creation.from_numpy(array)
    return result.requires_grad_() if requires_grad else result


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialized tensor of ``size`` whose elements lie at ``stride`` (a view of fresh storage)."""
    _check_device(device)  # (a device other than the CPU raises: core/device.py)
    size, stride = tuple(size), tuple(stride)
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    result = creation.empty(extent, dtype=dtype).as_strided(size, stride)
    return result.requires_grad_() if requires_grad else result


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None):
    """Integers in [low, high) of ``input``'s shape (and dtype unless given), on its device
    unless ``device`` is given."""
    from ..core.device import like_device

    if high is None:
        low, high = 0, low
    return creation.randint(low, high, tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                            device=like_device(input, device))


# every public function defined here
__all__ = sorted(n for n, v in list(globals().items()) if not n.startswith("_") and callable(v)
                 and getattr(v, "__module__", None) == __name__)
