"""Shared helpers for comparing tracegrad with PyTorch (the oracle).

- ``TWINS``: registry op name -> a function of torch tensors and the op's attrs computing the
  same thing in PyTorch. Every op with a sample must have a twin or be listed in ``NO_TWIN``
  with the reason and the test that covers it.
- ``to_tg`` / ``to_torch``: ndarrays to tensors of either library (floats require grad on demand).
- ``assert_close``: value comparison with dtype-aware tolerances and a readable message.
- ``compare_fn``: run the same function on both libraries and compare values and gradients.
"""
from __future__ import annotations

import numpy as np

import tracegrad as tg
import tracegrad.nn.functional  # (registers the nn primitives)
from tracegrad.ops import index as I  # noqa: F401  (registers the index primitives)

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # tests importorskip torch before using the oracle
    torch = TF = None

TG_TO_TORCH_DTYPE = {}
if torch is not None:
    TG_TO_TORCH_DTYPE = {tg.float32: torch.float32, tg.float64: torch.float64, tg.float16: torch.float16,
                         tg.bfloat16: torch.bfloat16,
                         tg.int64: torch.int64, tg.int32: torch.int32, tg.int16: torch.int16,
                         tg.int8: torch.int8, tg.uint8: torch.uint8, tg.bool: torch.bool}


# ----------------------------------------------------------------------------- conversions
def to_tg(a, requires_grad=False):
    t = tg.tensor(np.array(a, copy=True))
    return t.requires_grad_(True) if requires_grad and t.dtype.is_floating_point else t


def to_torch(a, requires_grad=False):
    t = torch.from_numpy(np.array(a, copy=True))
    return t.requires_grad_(True) if requires_grad and t.is_floating_point() else t


def np_of(t):
    """ndarray of a tracegrad or torch tensor (None stays None)."""
    if t is None or isinstance(t, np.ndarray):
        return t
    if isinstance(t, tg.Tensor):
        return np.array(t.detach().numpy())
    return t.detach().numpy(force=True)  # force: torch ZeroTensors (zero grads)


def tolerance(dtype):
    return (1e-5, 1e-5) if np.dtype(dtype) == np.float32 else (1e-10, 1e-9)


# ops whose PyTorch values are less precise than float64: (relative tolerance). PyTorch's
# trigamma (polygamma(1), also digamma's and lgamma's higher derivatives) is good to ~1e-9.
TORCH_PRECISION = {"polygamma": 1e-8, "digamma": 1e-8, "lgamma": 1e-8}


def assert_close(actual, expected, what="", rtol=None, atol=None):
    a, e = np_of(actual), np_of(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != torch {e.shape}"
    if a.dtype.kind == "f" or e.dtype.kind == "f":
        r, t = tolerance(e.dtype)
        looser = TORCH_PRECISION.get(what.split(" ")[0].rstrip(":"), 0.0)
        r, t = max(r, looser), max(t, looser)
        np.testing.assert_allclose(a, e, rtol=rtol or r, atol=atol or t, err_msg=what)
    else:
        np.testing.assert_array_equal(a, e, err_msg=what)


def compare_fn(tg_fn, torch_fn, arrays, grad=True, seed=0, rtol=None, atol=None):
    """Run both functions on the same arrays; compare outputs and (when ``grad``) the
    gradients of every floating input for a random cotangent."""
    a = [to_tg(x, grad) for x in arrays]
    b = [to_torch(x, grad) for x in arrays]
    out, ref = tg_fn(*a), torch_fn(*b)
    assert_close(out, ref, "value", rtol, atol)
    if not grad or not ref.requires_grad:
        return out
    cot = np.random.default_rng(seed).standard_normal(tuple(ref.shape)).astype(np_of(ref).dtype)
    diff = [i for i, x in enumerate(b) if x.requires_grad]
    got = tg.autograd.grad(out, [a[i] for i in diff], to_tg(cot), allow_unused=True)
    want = torch.autograd.grad(ref, [b[i] for i in diff], to_torch(cot), allow_unused=True)
    for i, g, w in zip(diff, got, want):
        if w is None:
            assert g is None or not np.any(np_of(g)), f"grad of input {i}: torch has none"
            continue
        assert g is not None, f"grad of input {i} missing"
        assert_close(g, w, f"grad of input {i}", rtol, atol)
    return out


# ----------------------------------------------------------------------------- registry twins
def _slices(index):
    return tuple(slice(a, b, c) for a, b, c in index)


def _taken_shape(x_shape, idx_shape, dim):
    return tuple(x_shape[:dim]) + tuple(idx_shape) + tuple(x_shape[dim + 1:])


def _unslice(g, shape, index):
    out = torch.zeros(shape, dtype=g.dtype)
    out[_slices(index)] = g
    return out


def _reduce_dims(fn):
    """A torch reduction over a tuple of dims, one dim at a time (highest first);
    ``dim=()`` reduces nothing, like our primitives (torch would reduce everything)."""
    def twin(x, dim, keepdim):
        for d in sorted(dim, reverse=True):
            x = fn(x, d, keepdim)
        return x.clone() if not dim else x

    return twin


def _along(x_shape, dim):
    return lambda src: src.reshape(tuple(x_shape[:dim]) + (-1,) + tuple(x_shape[dim + 1:]))


def _unfold(x, kernel, stride, padding, dilation, pad_value=0.0):
    (pt, pb), (pl, pr) = padding
    xp = TF.pad(x, (pl, pr, pt, pb), value=pad_value)
    return TF.unfold(xp, kernel, dilation=dilation, padding=0, stride=stride)


def _fold(cols, output_size, kernel, stride, padding, dilation):
    (pt, pb), (pl, pr) = padding
    assert pt == pb and pl == pr, "torch's fold pads symmetrically"
    return TF.fold(cols, output_size, kernel, dilation=dilation, padding=(pt, pl), stride=stride)


def _sign_fixed(vecs):
    """``vecs`` with each column flipped as tracegrad fixes eigen/singular vector signs (its first
    component within ``SIGN_TIE`` of the largest magnitude positive; ops/decompositions.py), where
    PyTorch keeps LAPACK's: the flip is locally constant, so values and gradients compare."""
    return vecs * _flips(vecs)


def _flips(vecs):
    from tracegrad.ops.decompositions import SIGN_TIE

    mag = vecs.abs()
    near = (mag >= mag.amax(-2, keepdim=True) * (1 - SIGN_TIE)).to(torch.int8)
    lead = torch.gather(vecs, -2, near.argmax(-2, keepdim=True))
    return torch.where(lead < 0, -1.0, 1.0).to(vecs.dtype)


def _svd_packed(a):
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    flip = _flips(u)
    return torch.cat([u * flip, s.unsqueeze(-2), vh.mT * flip], -2)


def _eigh_packed(a):
    vals, vecs = torch.linalg.eigh((a + a.mT) / 2)
    return torch.cat([vals.unsqueeze(-2), _sign_fixed(vecs)], -2)


def _qr_packed(a, complete):
    q, r = torch.linalg.qr(a, mode="complete" if complete else "reduced")
    width = max(q.shape[-1], r.shape[-1])
    pad = lambda x: TF.pad(x, (0, width - x.shape[-1]))
    return torch.cat([pad(q), pad(r)], -2)


def _lu_packed(a, check):
    lu, pivots = torch.linalg.lu_factor_ex(a)[:2]
    row = TF.pad(pivots.to(a.dtype), (0, a.shape[-1] - pivots.shape[-1])).unsqueeze(-2)
    return torch.cat([lu, row], -2)


def _ldl_packed(a, hermitian):
    ld, pivots = torch.linalg.ldl_factor(a, hermitian=hermitian)
    return torch.cat([ld, pivots.to(a.dtype).unsqueeze(-2)], -2)


def _ldl_solve(ld, pivots, b, hermitian):
    # (PyTorch's ldl_solve fails when the batches must broadcast: they are expanded first)
    batch = torch.broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    return torch.linalg.ldl_solve(ld.expand(batch + ld.shape[-2:]).contiguous(),
                                  pivots.expand(batch + pivots.shape[-1:]).contiguous(),
                                  b.expand(batch + b.shape[-2:]).contiguous(), hermitian=hermitian)


def _lu_permutation(pivots, m):
    """The permutation (``P[perm[i], i] = 1``) of torch.lu_unpack's ``P``."""
    shell = torch.zeros(tuple(pivots.shape[:-1]) + (m, pivots.shape[-1]))
    return torch.lu_unpack(shell, pivots, unpack_data=False).P.argmax(-2)


def _twins():
    t = torch
    twins = {name: getattr(t, name) for name in (
        "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tan",
        "tanh", "sigmoid", "erf", "relu", "floor", "logical_not", "add", "sub", "mul", "div",
        "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
        "logical_or", "where", "matmul", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
        "atanh", "exp2", "ceil", "trunc", "round", "atan2", "hypot", "fmod", "remainder", "erfc",
        "gcd", "lcm", "nextafter")}
    twins.update({
        "clamp": lambda x, min=None, max=None: t.clamp(x, min, max),
        "cast": lambda x, dtype: x.to(TG_TO_TORCH_DTYPE[dtype]),
        "sum": _reduce_dims(lambda x, d, k: t.sum(x, d, keepdim=k)),
        "prod": _reduce_dims(lambda x, d, k: t.prod(x, d, keepdim=k)),
        "amax": _reduce_dims(lambda x, d, k: t.amax(x, d, keepdim=k)),
        "amin": _reduce_dims(lambda x, d, k: t.amin(x, d, keepdim=k)),
        "argmax": lambda x, dim, keepdim: t.argmax(x, dim, keepdim=keepdim),
        "cumsum": lambda x, dim: t.cumsum(x, dim),
        "cumprod": lambda x, dim: t.cumprod(x, dim),
        "bitwise_and": t.bitwise_and,
        "bitwise_or": t.bitwise_or,
        "bitwise_xor": t.bitwise_xor,
        "bitwise_left_shift": t.bitwise_left_shift,
        "bitwise_right_shift": t.bitwise_right_shift,
        "lgamma": t.lgamma,
        "erfinv": t.erfinv,
        **{name: getattr(t.special, name) for name in (
            "ndtri", "erfcx", "i0", "i0e", "i1", "i1e", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "zeta",
            "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
            "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
            "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
            "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
            "legendre_polynomial_p", "airy_ai")},
        "digamma": t.digamma,
        "polygamma": lambda x, n: t.polygamma(n, x),
        "igamma": t.igamma,
        "igammac": t.igammac,
        "standard_gamma_grad": t._standard_gamma_grad,
        "dirichlet_grad": t._dirichlet_grad,
        "cummax": lambda x, dim: t.cummax(x, dim).values,
        "cummin": lambda x, dim: t.cummin(x, dim).values,
        "logcumsumexp": lambda x, dim: t.logcumsumexp(x, dim),
        "linalg_inv": t.linalg.inv,
        "linalg_det": t.linalg.det,
        "linalg_solve": t.linalg.solve,
        # (tracegrad reads the symmetric part; PyTorch the lower triangle: equal on symmetric input)
        "linalg_cholesky": lambda a, check=True: t.linalg.cholesky((a + a.mT) / 2),
        "linalg_eigh": _eigh_packed,  # (the packed (n + 1, n) layout: eigenvalues, then vectors)
        "linalg_svd": _svd_packed,  # (packed (m + 1 + n, k): U, S, V)
        "linalg_qr": _qr_packed,  # (packed (m + kq, max(kq, n)): Q, then R)
        # (hermitian: tracegrad reads the symmetric part, as eigh)
        "linalg_pinv": lambda a, atol, rtol, hermitian: t.linalg.pinv(
            (a + a.mT) / 2 if hermitian else a, atol=atol, rtol=rtol, hermitian=hermitian),
        # (the gradient of det, PyTorch's; torch.func.grad: differentiable again, also under
        # torch.func.jvp, by PyTorch's twice-differentiable SVD formula)
        "linalg_cofactor": lambda a: t.func.grad(lambda x: t.linalg.det(x).sum())(a),
        "linalg_slogdet": lambda a: t.stack(t.linalg.slogdet(a), -1),
        "linalg_lu_factor": _lu_packed,  # (packed (m + 1, n): LU, then the pivots as floats)
        "lu_permutation": _lu_permutation,
        "linalg_ldl_factor": _ldl_packed,  # (packed (n + 1, n): LD, then the pivots as floats)
        "linalg_ldl_solve": _ldl_solve,
        "floor_divide": lambda a, b: t.div(a, b, rounding_mode="floor"),
        "trunc_divide": lambda a, b: t.div(a, b, rounding_mode="trunc"),
        "argmin": lambda x, dim, keepdim: t.argmin(x, dim, keepdim=keepdim),
        "reshape": lambda x, shape: x.reshape(shape),
        "permute": lambda x, dims: x.permute(dims),
        "expand": lambda x, shape: x.expand(shape),
        "slice": lambda x, index: x[_slices(index)],
        "unslice": _unslice,
        "flip": lambda x, dims: t.flip(x, dims),
        "cat": lambda *xs, dim: t.cat(xs, dim),
        "copy": lambda x: x.clone(),
        "index": lambda x, idx, dim: t.index_select(x, dim, idx.reshape(-1)).reshape(
            _taken_shape(x.shape, idx.shape, dim)),
        "index_add": lambda x, idx, src, dim: x.index_add(dim, idx.reshape(-1),
                                                          _along(x.shape, dim)(src)),
        "index_put": lambda x, idx, src, dim: x.index_copy(dim, idx.reshape(-1),
                                                           _along(x.shape, dim)(src)),
        "gather": lambda x, idx, dim: t.gather(x, dim, idx),
        "scatter_add": lambda x, idx, src, dim: t.scatter_add(x, dim, idx, src),
        "scatter": lambda x, idx, src, dim: t.scatter(x, dim, idx, src),
        "scatter_reduce": lambda x, idx, src, dim, reduce: t.scatter_reduce(x, dim, idx, src, reduce),
        "argsort": lambda x, dim, descending, stable: t.sort(x, dim=dim, descending=descending,
                                                              stable=True).indices,
        "nonzero": lambda x: t.nonzero(x),
        "unfold2d": _unfold,
        "fold2d": _fold,
    })
    return twins


TWINS = _twins() if torch is not None else {}

# ops whose results no PyTorch function reproduces, and the test that covers each
NO_TWIN = {
    "dropout_mask": "random by design (its own counter-based generator); "
                    "tests/test_nn_functional.py checks its statistics, scaling and determinism",
    "uniform_noise": "random by design (dropout_mask's generator); tests/test_nn_extras.py checks "
                     "rrelu's and gumbel_softmax's statistics and compiled values",
    "check_index": "a bounds check with no value of its own (PyTorch checks inside each indexing "
                   "op); tests/test_bounds.py compares its errors with torch's per function",
}
