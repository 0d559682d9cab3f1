"""The composite functions of tracegrad/composites.py against PyTorch: values, the first
gradient of every floating input, and the compiled (C) program against eager."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

INF, NAN = float("inf"), float("nan")
RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))
SPECIAL = np.array([[1.0, NAN, -2.5, INF, 0.0], [-INF, 0.5, -0.0, 3.0, NAN]])
MASK = RNG.random((4, 5)) > 0.5
NANNY = np.where(RNG.random((4, 5)) < 0.3, NAN, RNG.standard_normal((4, 5)))
NANNY[3] = NAN

# name: (function of the library module and its inputs, inputs)
CASES = {
    "isnan": (lambda m, x: m.isnan(x), [SPECIAL]),
    "isinf": (lambda m, x: m.isinf(x), [SPECIAL]),
    "isposinf": (lambda m, x: m.isposinf(x), [SPECIAL]),
    "isneginf": (lambda m, x: m.isneginf(x), [SPECIAL]),
    "isfinite": (lambda m, x: m.isfinite(x), [SPECIAL]),
    "nan_to_num": (lambda m, x: m.nan_to_num(x), [SPECIAL]),
    "nan_to_num-values": (lambda m, x: m.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0), [SPECIAL]),
    "masked_fill": (lambda m, x, k: x.masked_fill(k, -1.25), [X, MASK]),
    "masked_fill-row": (lambda m, x, k: x.masked_fill(k[0], 2.0), [X, MASK]),
    "all": (lambda m, x: m.all(x > -1.0), [X]),
    "all-dim": (lambda m, x: (x > -1.0).all(1), [X]),
    "any-dim-keepdim": (lambda m, x: m.any(x > 1.0, 0, keepdim=True), [X]),
    "lerp-scalar": (lambda m, x, y: m.lerp(x, y, 0.3), [X, Y]),
    "lerp-scalar-high": (lambda m, x, y: m.lerp(x, y, 0.8), [X, Y]),
    "lerp-tensor": (lambda m, x, y: m.lerp(x, y, y.abs() / 3), [X, Y]),
    "addcmul": (lambda m, x, y: m.addcmul(x, x, y, value=0.5), [X, Y]),
    "addcdiv": (lambda m, x, y: m.addcdiv(x, x, y.abs() + 1, value=-2), [X, Y]),
    "logaddexp": (lambda m, x, y: m.logaddexp(x, y * 30), [X, Y]),
    "logaddexp-inf": (lambda m, x, y: m.logaddexp(x, y), [SPECIAL[:, [0, 2, 3, 4]], np.full((2, 4), -INF)]),
    "frac": (lambda m, x: m.frac(x * 3), [X]),
    "deg2rad": (lambda m, x: m.deg2rad(x), [X]),
    "rad2deg": (lambda m, x: m.rad2deg(x), [X]),
    "norm": (lambda m, x: m.norm(x), [X]),
    "norm-dim": (lambda m, x: x.norm(dim=1, keepdim=True), [X]),
    "norm-1": (lambda m, x: m.norm(x, p=1, dim=0), [X]),
    "norm-3": (lambda m, x: m.norm(x, p=3), [X]),
    "norm-inf": (lambda m, x: m.norm(x, p=INF, dim=1), [X]),
    "norm-zero-rows": (lambda m, x: m.norm(x * (x > 10.0), dim=1), [X]),
    "norm-nan-inf": (lambda m, x: m.norm(x.detach(), dim=1) + m.norm(x.detach(), 3, dim=1), [SPECIAL]),
    "tril": (lambda m, x: m.tril(x), [X]),
    "triu-1": (lambda m, x: m.triu(x, 1), [X]),
    "tril-neg": (lambda m, x: x.tril(-2), [X]),
    "movedim": (lambda m, x: m.movedim(x.reshape(2, 2, 5), 0, -1) * 1, [X]),
    "movedim-many": (lambda m, x: m.movedim(x.reshape(2, 2, 5), (0, 2), (2, 0)) * 1, [X]),
    "roll": (lambda m, x: m.roll(x, 2, 1), [X]),
    "roll-many": (lambda m, x: m.roll(x, (-1, 7), (0, 1)), [X]),
    "roll-flat": (lambda m, x: m.roll(x, 3), [X]),
    "remainder-op": (lambda m, x, y: (x * 5) % (y + 0.1), [X, Y]),
    "remainder-int": (lambda m, x: (x * 7).to(m.int64) % -3 + m.fmod((x * 7).to(m.int32), 4), [X]),
    "cumsum-bool": (lambda m, x: m.cumsum(x > 0, 1), [X]),
    "cumsum-dtype": (lambda m, x: m.cumsum(x, -2, dtype=m.float32), [X]),
    "cumsum-0d": (lambda m, x: m.cumsum(x.sum(), 0), [X]),
    "scatter-value": (lambda m, x: x.scatter(1, m.tensor([[0, 2], [4, 1], [3, 3], [1, 0]]), 2.5), [X]),
    "scatter-src": (lambda m, x, y: m.scatter(x, 0, m.tensor([[2, 0, 1, 3, 0]]), y[:1] * 3), [X, Y]),
    # (PyTorch has no derivative for scatter with reduce=)
    "scatter-reduce-arg": (lambda m, x, y: x.detach().scatter(1, m.tensor([[0, 0], [1, 1], [2, 0], [4, 4]]),
                                                              y[:, :2].detach(), reduce="multiply")
                           + x.detach().scatter(1, m.tensor([[0, 0], [1, 1], [2, 0], [4, 4]]),
                                                y[:, :2].detach(), reduce="add"), [X, Y]),
    **{f"scatter_reduce-{r}-{s}": (lambda m, x, y, r=r, s=s: x.scatter_reduce(
        0, m.tensor([[0, 1, 1, 0, 2], [0, 1, 3, 0, 2], [1, 1, 3, 0, 0]]), y[:3], r, include_self=s), [X, Y])
       for r in ("sum", "prod", "mean", "amax", "amin") for s in (True, False)},
    "scatter_reduce-int-mean": (lambda m, x: (x * 5).to(m.int64).scatter_reduce(
        1, m.tensor([[0, 0, 1], [2, 2, 2], [0, 1, 0], [3, 3, 3]]), (x[:, :3] * 7).to(m.int64), "mean",
        include_self=False), [X]),
    "scatter_reduce-int-amax": (lambda m, x: (x * 5).to(m.int32).scatter_reduce(
        1, m.tensor([[0, 0, 1], [2, 2, 2], [0, 1, 0], [3, 3, 3]]), (x[:, :3] * 7).to(m.int32), "amax",
        include_self=False), [X]),
    "unfold": (lambda m, x: x.unfold(1, 2, 2) * 2 + x.unfold(0, 3, 1).sum(), [X]),
    "unfold-last": (lambda m, x: x.unfold(-1, 3, 1), [X]),
    "masked_select": (lambda m, x, y: m.masked_select(x, y[0] > 0), [X, Y]),
    "masked_scatter": (lambda m, x, y: x.masked_scatter(y > 0.2, y * 3), [X, Y]),
    "index_copy": (lambda m, x, y: x.index_copy(1, m.tensor([4, 0]), y[:, :2]), [X, Y]),
    "index_fill": (lambda m, x: x.index_fill(0, m.tensor([3, 1]), -2.0), [X]),
    "index_put": (lambda m, x, y: x.index_put((m.tensor([0, 2]), m.tensor([1, 3])), y[0, :2]), [X, Y]),
    "index_put-accumulate": (lambda m, x, y: m.index_put(x, (m.tensor([0, 2, 0]),), y[:3], accumulate=True), [X, Y]),
    "index_put-accumulate-2d": (lambda m, x, y: x.index_put(
        (m.tensor([0, 2, 0, -1]), m.tensor([1, 1, 1, 4])), y[0, :4], accumulate=True), [X, Y]),
    "diagonal_scatter": (lambda m, x, y: m.diagonal_scatter(x, y[0, :4] * 2, 1), [X, Y]),
    "diagonal_scatter-3d": (lambda m, x, y: m.diagonal_scatter(x.reshape(2, 2, 5), y[:2, :2], -1, 2, 0), [X, Y]),
    "select_scatter": (lambda m, x, y: m.select_scatter(x, y[1], 0, 2), [X, Y]),
    "slice_scatter": (lambda m, x, y: m.slice_scatter(x, y[:, :2], 1, 1, 5, 2), [X, Y]),
    "aminmax": (lambda m, x: m.aminmax(x, dim=1).min[:, None] + x.aminmax(dim=0, keepdim=True).max, [X]),
    "aminmax-all": (lambda m, x: m.aminmax(x).max - m.aminmax(x, keepdim=True).min, [X]),
    "histc": (lambda m, x: m.histc(x, bins=7) + x.histc(4, min=-1, max=1).sum(), [X]),
    "lgamma-digamma": (lambda m, x: m.lgamma(x.abs() + 0.1) + x.digamma() * 0.01 + m.polygamma(2, x.abs() + 1), [X]),
    "polygamma-method": (lambda m, x: (x.abs() + 0.5).polygamma(1) + m.polygamma(0, x.abs() + 1), [X]),
    "mvlgamma": (lambda m, x: m.mvlgamma(x.abs() + 2, 3) + x.abs().add(1).mvlgamma(1), [X]),
    "erfinv": (lambda m, x: m.erfinv(m.tanh(x)) + (x * 0.1).erfinv(), [X]),
    "special-ndtr": (lambda m, x: m.special.ndtr(x * 3) + m.special.expit(x) + m.special.xlog1py(x, x.abs()), [X]),
    "special-log_ndtr": (lambda m, x: m.special.log_ndtr(x * 40), [X]),
    # (at 0 PyTorch's derivative is +inf, ours 0: no gradient is compared there)
    "special-entr": (lambda m, x: m.special.entr(x.abs()) + m.special.entr(m.tensor([-1.0, 0.0])).sum(), [X]),
    "special-names": (lambda m, x: m.special.gammaln(x.abs() + 1) + m.special.psi(x.abs() + 1)
                      + m.special.multigammaln(x.abs() + 2, 2) + m.special.xlogy(x.abs(), x.abs() + 1), [X]),
    "normal-icdf": (lambda m, x: m.distributions.Normal(x, x.abs() + 1).icdf(m.sigmoid(x * 2)), [X]),
    "erfinv-edges": (lambda m, x: m.erfinv(m.tensor([-1.0, 1.0, 1.5, -0.999999999, 1 - 1e-15, 0.0])), [X]),
    "signbit-copysign": (lambda m, x: m.copysign(x, -x) + m.signbit(x).to(x.dtype) + m.copysign(x, -0.0), [X]),
    "signbit-zero": (lambda m, x: m.signbit(x.detach() * 0 - 0.0).to(m.float64) + m.signbit(m.tensor([-0.0, 0.0])).sum(), [X]),
    "logaddexp2": (lambda m, x, y: m.logaddexp2(x * 40, y), [X, Y]),
    # (integer exponents >= 0: PyTorch raises 2 to a negative integer tensor in integers, giving 0)
    "ldexp": (lambda m, x: m.ldexp(x, m.tensor([1, 2, 3, 0, 5])) + x.ldexp(m.tensor([-1.5, 2.0, 0.0, -3.0, 1.0])), [X]),
    "cumprod": (lambda m, x: m.cumprod(x, 1), [X]),
    "cumprod-zeros": (lambda m, x: (x * (x.abs() > 0.6)).cumprod(0), [X]),
    "cumprod-int": (lambda m, x: m.cumprod((x * 3).to(m.int32), 1) + m.cumprod(x > 0, 0), [X]),
    "cumprod-0d": (lambda m, x: m.cumprod(x.sum(), -1), [X]),
    "cummax": (lambda m, x: m.cummax(x, 1).values + m.cummax(x, 1).indices, [X]),
    "cummin-ties": (lambda m, x: m.cummin(m.clamp(x, -0.5, 0.5), 0)[0] * m.cummin(x.clamp(-0.5, 0.5), 0)[1], [X]),
    "cummax-nan": (lambda m, x: x.cummax(-1).values - x.cummax(1).indices, [SPECIAL]),
    "cummin-int": (lambda m, x: m.cummin((x * 3).to(m.int64), 1).values * 10 + m.cummin(x > 0, 1)[1], [X]),
    "cummax-0d": (lambda m, x: m.cummax(x.sum(), 0).values + m.cummax(x.sum(), 0).indices, [X]),
    "logcumsumexp": (lambda m, x: m.logcumsumexp(x * 30, 1), [X]),
    "logcumsumexp-inf": (lambda m, x: x.logcumsumexp(1), [np.array([[-INF, -INF, 1.0, 2.0], [3.0, -INF, INF, 0.0]])]),
    "diag-matrix": (lambda m, x: m.diag(x, 1), [X]),
    "diag-vector": (lambda m, x: m.diag(x[0], -2) + 0, [X]),
    "diagonal": (lambda m, x: m.diagonal(x.reshape(2, 2, 5), 1, 0, 2), [X]),
    "trace": (lambda m, x: m.trace(x), [X]),
    "hstack": (lambda m, x, y: m.hstack([x, y[:, :2]]), [X, Y]),
    "vstack": (lambda m, x, y: m.vstack([x[0], y]), [X, Y]),
    "column_stack": (lambda m, x, y: m.column_stack([x[:, 0], y]), [X, Y]),
    "var_mean": (lambda m, x: m.var_mean(x, 1)[0] * 2 + m.var_mean(x, 1)[1], [X]),
    "std_mean": (lambda m, x: m.std_mean(x, 0, keepdim=True)[0] - m.std_mean(x)[1], [X]),
    "diff": (lambda m, x: m.diff(x, 2, 0), [X]),
    "repeat_interleave": (lambda m, x: m.repeat_interleave(x, 3, 1), [X]),
    "repeat_interleave-flat": (lambda m, x: x.repeat_interleave(2), [X]),
    "repeat_interleave-counts": (lambda m, x, r: m.repeat_interleave(x, r, dim=-1), [X, np.array([1, 0, 3, 1, 2])]),
    "repeat_interleave-constant-counts": (lambda m, x: m.repeat_interleave(x, m.tensor([1, 0, 3, 1, 2]), dim=-1), [X]),
    "cross": (lambda m, x, y: m.cross(x[:3], y[1:4], dim=0), [X, Y]),
    "erfc-large": (lambda m, x: m.erfc(x * 3), [X]),
    "round-decimals": (lambda m, x: m.round(x * 100, decimals=-1) + m.round(x, decimals=2), [X]),
    # contractions (tracegrad/einsum.py)
    "einsum-matmul": (lambda m, x, y: m.einsum("ij,kj->ik", x, y), [X, Y]),
    "einsum-batch-ellipsis": (lambda m, x, y: m.einsum("...i,...i->...", x.reshape(2, 2, 5), y[:2]), [X, Y]),
    "einsum-diagonal-implicit": (lambda m, x: m.einsum("ii", x[:, :4]) + m.einsum("ij", x).sum(), [X]),
    "einsum-three": (lambda m, x, y: m.einsum("ab,bc,cd->ad", x, y.T, x), [X, Y]),
    "einsum-outer-broadcast": (lambda m, x, y: m.einsum("ij,ik->ijk", x[:, :1], y), [X, Y]),
    "tensordot": (lambda m, x, y: m.tensordot(x.reshape(2, 2, 5), y.reshape(5, 2, 2), dims=([0, 2], [2, 0])), [X, Y]),
    "tensordot-int": (lambda m, x, y: m.tensordot(x, y.T, dims=1), [X, Y]),
    "kron": (lambda m, x, y: m.kron(x[:2, :3], y[:3]), [X, Y]),
    # math_extras.py
    "isclose": (lambda m, x, y: m.isclose(x, x + y * 1e-6, rtol=1e-6, atol=1e-7), [X, Y]),
    "isclose-special": (lambda m, x: m.isclose(x, x.flip(0), equal_nan=True), [SPECIAL]),
    "count_nonzero": (lambda m, x: m.count_nonzero(x, dim=1), [SPECIAL]),
    "logical_xor": (lambda m, x, y: m.logical_xor(x > 0, y), [X, Y]),
    "floor_divide": (lambda m, x, y: m.floor_divide(x.detach() * 4, y.detach()), [X, Y]),  # (no derivative in torch)
    "nansum": (lambda m, x, y: m.nansum(x * y[:2], dim=1) + m.nansum(y), [SPECIAL, Y[:2]]),
    "nanmean": (lambda m, x: m.nanmean(m.where(x > 1.0, float("nan"), x), dim=0, keepdim=True), [X]),
    "fmax": (lambda m, x, y: m.fmax(m.where(x > 1, float("nan"), x), m.where(x > 0.5, x, y)), [X, Y]),
    "fmin": (lambda m, x, y: m.fmin(m.where(y > 1, float("nan"), x), m.where(x > 0.5, x, y)), [X, Y]),
    "xlogy": (lambda m, x, y: m.xlogy(m.where(x > 0.5, 0.0, x), y.abs() + 0.1), [X, Y]),
    "logit": (lambda m, x: m.logit(x.sigmoid()) + m.logit(x, eps=0.2), [X]),
    "sinc": (lambda m, x: m.sinc(m.where(x > 1.0, 0.0, x)), [X]),
    "heaviside": (lambda m, x, y: m.heaviside(m.where(x > 1.0, 0.0, x).detach(), y.detach()), [X, Y]),
    "float_power": (lambda m, x: m.float_power(x.abs(), 1.5), [X]),
    "clamp_min_max": (lambda m, x: x.clamp_min(-0.5) + x.clamp_max(0.3), [X]),
    "addmm": (lambda m, x, y: m.addmm(x[:, :4], x, y.T[:, :4], beta=0.5, alpha=2.0), [X, Y]),
    "dist": (lambda m, x, y: m.dist(x, y, 3), [X, Y]),
    # layout.py
    "repeat": (lambda m, x: x[:2, :3].repeat(2, 1, 3), [X]),
    "tile": (lambda m, x: m.tile(x, (2,)), [X]),
    "select": (lambda m, x: m.select(x, 1, -2) * 2, [X]),
    "rot90": (lambda m, x: m.rot90(x, 1) + m.rot90(x, 3, (1, 0)).flip(0, 1) + m.rot90(x, 2).rot90(2), [X[:4, :4]]),
    "fliplr_flipud": (lambda m, x: m.fliplr(x) + m.flipud(x), [X]),
    "meshgrid-xy": (lambda m, x, y: sum(g * (k + 1) for k, g in enumerate(m.meshgrid(x[0], y[1, :3], x[2, :2], indexing="xy"))), [X, Y]),
    "meshgrid-ij": (lambda m, x, y: m.stack(m.meshgrid(x[0], y[1, :3], indexing="ij")), [X, Y]),
    "tensor_split": (lambda m, x: m.cat([p * (k + 1) for k, p in enumerate(m.tensor_split(x, 3, dim=1))], 1), [X]),
    "tensor_split-indices": (lambda m, x: m.cat([p.sum(0) * (k + 1) for k, p in enumerate(m.tensor_split(x, [1, -1, 9], dim=0))]), [X]),
    "take": (lambda m, x: m.take(x, m.tensor([[0, -1], [7, 3]])), [X]),
    "ravel": (lambda m, x: x.T.ravel(), [X]),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, m.tensor([[0, 2, 1, 4, 3]] * 4), dim=1)
                       + m.take_along_dim(x, m.tensor([[1], [0], [2], [4]]), dim=-1), [X]),
    "take_along_dim-flat": (lambda m, x: m.take_along_dim(x, m.tensor([[0, 7], [19, 3]])), [X]),
    "hsplit_vsplit_dsplit": (lambda m, x: m.stack(m.hsplit(x[:, :4], 2)).sum(0) + m.cat(m.vsplit(x, [1, 3]))[:, :2]
                             + m.dsplit(x.reshape(2, 2, 5), [2])[0].reshape(4, 2), [X]),
    "diag_embed": (lambda m, x: m.diag_embed(x) + 0, [X]),
    "diag_embed-offset-dims": (lambda m, x: m.diag_embed(x, offset=-1, dim1=0, dim2=2), [X]),
    "diagflat": (lambda m, x: m.diagflat(x[:2, :3], 2), [X]),
    "addmv_addr": (lambda m, x, y: m.addmv(x[:, 0], x, y[0]) + m.addr(x, x[:, 0], y[0], beta=0.5, alpha=2)[:, 0], [X, Y]),
    "baddbmm_addbmm": (lambda m, x, y: m.baddbmm(x[:2, :2].reshape(1, 2, 2), x.reshape(2, 2, 5), y.reshape(2, 5, 2))
                       + m.addbmm(x[:2, :2], x.reshape(2, 2, 5), y.reshape(2, 5, 2), beta=0), [X, Y]),
    "inner_vdot": (lambda m, x, y: m.inner(x, y) + m.vdot(x[0], y[0]), [X, Y]),
    "logdet": (lambda m, x: m.logdet(x[:, :4] @ x[:, :4].T + m.eye(4, dtype=x.dtype)), [X]),
    "cov_corrcoef": (lambda m, x, y: m.cov(x) + m.cov(x, correction=0) + m.corrcoef(y), [X, Y]),
    # statistics.py
    "median": (lambda m, x: m.median(x) + m.median(x, 1).values.sum(), [X]),
    "median-indices-nan": (lambda m, x: m.median(x, 0, keepdim=True).indices, [SPECIAL]),
    "median-nan": (lambda m, x: m.median(x, 1).values, [SPECIAL]),
    "quantile": (lambda m, x: m.quantile(x, 0.3) + m.quantile(x, 0.8, dim=0).sum(), [X]),
    "quantile-many": (lambda m, x: m.quantile(x, m.tensor([0.1, 0.5, 0.9], dtype=m.float64), dim=1, keepdim=True), [X]),
    "quantile-modes": (lambda m, x: sum(m.quantile(x, 0.55, dim=1, interpolation=k) for k in
                                        ("lower", "higher", "midpoint", "nearest")), [X]),
    "kthvalue": (lambda m, x: m.kthvalue(x, 3, 1).values + x.kthvalue(2, 1).indices, [X]),
    # (rows with NaN, one without numbers: its index, so its gradient, is unspecified)
    "nanmedian": (lambda m, x: m.nanmedian(x[:3], 1).values + x[:1].nanmedian(1).indices + x.nanmedian(), [NANNY]),
    "nanmedian-no-numbers": (lambda m, x: m.nanmedian(x.detach(), 1).values, [NANNY]),
    "nanmedian-dim0": (lambda m, x: m.nanmedian(x, 0, keepdim=True)[0], [NANNY]),
    "nanquantile": (lambda m, x: m.nanquantile(x[:3], m.tensor([0.2, 0.5, 0.9], dtype=x.dtype), dim=1), [NANNY]),
    "nanquantile-no-numbers": (lambda m, x: m.nanquantile(x.detach(), 0.4, dim=1), [NANNY]),
    "nanquantile-flat": (lambda m, x: m.nanquantile(x, 0.3) + m.nanquantile(x, 0.6, dim=0, keepdim=True,
                                                                            interpolation="midpoint"), [NANNY]),
}

# PyTorch differentiates cumsum(x, dtype=float32) in x's dtype (float64); here the cast is its
# own node, so the running sum of the gradient is taken in float32
# the output's shape is read from an input tensor (a constant made in the function is read
# while tracing, as torch.compile does)
DATA_DEPENDENT_SHAPES = {"repeat_interleave-counts", "masked_select"}
# (PyTorch's trigamma, in digamma's and polygamma's gradients, is good to ~1e-9 relative)
GRAD_RTOL = {"cumsum-dtype": 1e-6, "lgamma-digamma": 1e-7, "polygamma-method": 1e-7, "special-names": 1e-7}
VALUE_RTOL = {"polygamma-method": 1e-8}


def _run(lib, name, arrays, float_grad):
    fn, _ = CASES[name]
    make = (lambda a: tg.tensor(a, requires_grad=float_grad and a.dtype.kind == "f")) if lib is tg else \
        (lambda a: torch.tensor(a, requires_grad=float_grad and a.dtype.kind == "f"))
    inputs = [make(a) for a in arrays]
    return fn(lib, *inputs), inputs


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_matches_torch(name):
    _, arrays = CASES[name]
    ours, ours_in = _run(tg, name, arrays, True)
    theirs, theirs_in = _run(torch, name, arrays, True)
    rtol = VALUE_RTOL.get(name, 1e-10)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    if not theirs.requires_grad:
        return
    cot = np.random.default_rng(2).standard_normal(tuple(theirs.shape))
    ours.backward(tg.tensor(cot))
    theirs.backward(torch.tensor(cot))
    for a, b in zip(ours_in, theirs_in):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=GRAD_RTOL.get(name, rtol),
                                       atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_compiles_to_eager_values(name):
    fn, arrays = CASES[name]
    args = [tg.tensor(a.astype(np.float32) if a.dtype.kind == "f" else a) for a in arrays]
    eager = fn(tg, *args)
    if name in DATA_DEPENDENT_SHAPES:  # a graph break, said (as torch.compile's), then eager
        with pytest.warns(RuntimeWarning, match="graph break"):
            compiled = tg.compile(lambda *a: fn(tg, *a), backend="c")(*args)
    else:
        compiled = tg.compile(lambda *a: fn(tg, *a), backend="c", fullgraph=True)(*args)
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), rtol=2e-6, atol=1e-6)


def test_inplace_variants_bump_the_version():
    x = tg.tensor(SPECIAL.copy())
    x.nan_to_num_()
    x.masked_fill_(tg.tensor(MASK[:2]), 0.5)
    x.tril_()
    assert x._version == 3
    want = torch.tensor(SPECIAL).nan_to_num_().masked_fill_(torch.tensor(MASK[:2]), 0.5).tril_()
    np.testing.assert_array_equal(x.numpy(), want.numpy())


def test_bad_arguments_are_named():
    with pytest.raises(RuntimeError, match="boolean masks"):
        tg.zeros(3).masked_fill(tg.tensor([1, 0, 1]), 1.0)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        tg.zeros(3).masked_fill(tg.ones(2, 3) > 0, 1.0)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.tril(tg.ones(3))
    with pytest.raises(ZeroDivisionError):
        tg.tensor([5, 3]) % tg.tensor([2, 0])
    with pytest.raises(RuntimeError, match="same number of dims"):
        tg.movedim(tg.ones(2, 3), (0, 1), 0)


def test_tensor_helpers_match_torch():
    """new_* constructors, view_as, is_contiguous, equal, and the random fills' ranges."""
    for lib in (tg, torch):
        x = lib.tensor(X)
        made = (x.new_zeros(2, 3), x.new_ones((2,)), x.new_full((2, 2), 1.5), x.new_tensor([1, 2]),
                x.new_empty(4))
        got = [(tuple(t.shape), str(t.dtype).split(".")[-1]) for t in made]
        if lib is tg:
            ours = got
            ours_flags = (x.view_as(x.T.contiguous()).shape, x.is_contiguous(), x.T.is_contiguous(),
                          lib.equal(x, x + 0), lib.equal(x, x[:2]))
        else:
            assert ours == got
            assert ours_flags == (x.view_as(x.T.contiguous()).shape, x.is_contiguous(), x.T.is_contiguous(),
                                  lib.equal(x, x + 0), lib.equal(x, x[:2]))
    tg.manual_seed(0)
    u = tg.empty(1000).uniform_(-2.0, 3.0)
    n = tg.empty(1000).normal_(5.0, 0.1)
    assert -2.0 <= u.min().item() and u.max().item() <= 3.0 and abs(n.mean().item() - 5.0) < 0.05


@pytest.mark.parametrize("expr", [
    "x.eq_(1.0)", "x.gt_(y)", "x.tan_()", "x.clamp_min_(0.2)", "x.cumsum_(1)", "x.cumprod_(0)", "x.scatter_(1, x.argsort(1), 0.5)", "x.scatter_reduce_(0, x.argsort(0), y, 'amax')", "x.floor_divide_(0.7)", "x.index_fill_(1, x.argmax(1), 9.0)", "x.fill_diagonal_(7.0)", "x.T.fill_diagonal_(2.0, wrap=True)",
    "x.divide_(2)", "x.abs().logit_(0.1)", "x.logical_xor_(y)", "x.heaviside_(y)", "x.sgn_()",
    "x.float_power_(2)", "x.swapdims(0, 1)", "(x > 0) & (y < 1)", "(x > 0) | (y < 1)", "(x > 0) ^ (y < 1)",
    "~(x > 0)", "x.to(m.int64) & 3", "5 ^ x.to(m.int32)", "~x.to(m.int64)", "x.abs().to(m.int64) << 2",
    "x.to(m.int64).bitwise_right_shift(1)", "(x > 0).bitwise_not_()", "x.to(m.int64).bitwise_or_(4)", "x.msort()", "x.reshape_as(x.T)", "x[0].ger(x[1])"])
def test_more_tensor_methods_match_torch(expr):
    arrays = [np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]])]
    arrays.append(arrays[0][::-1].copy())
    results = []
    for lib in (tg, torch):
        x, y = (lib.tensor(a) for a in arrays)
        r = eval(expr, {"x": x, "y": y, "m": lib})
        results.append((r.numpy(), str(r.dtype).split(".")[-1]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    assert results[0][1] == results[1][1]


def test_tensor_predicates_match_torch():
    answers = []
    for lib in (tg, torch):
        t = lib.ones(2, 3)
        answers.append((t.is_complex(), t.is_signed(), lib.tensor([True]).is_signed(), t.is_same_size(lib.ones(2, 3)),
                        t.get_device(), t.is_cpu, t.is_cuda, t.itemsize, t.nbytes, t.ndimension(),
                        lib.tensor([2.0]).is_nonzero()))
    assert answers[0] == answers[1]


def test_data_dependent_selections_match_torch():
    ints = np.array([3, 1, 1, 0, 7, 3, 3, 2])
    grid = np.array([[1, 2], [1, 2], [3, 4], [1, 2], [1, 2]])
    outs = []
    for lib in (tg, torch):
        i, g = lib.tensor(ints), lib.tensor(grid)
        res = [lib.bincount(i), lib.bincount(i, minlength=10), lib.bincount(i, lib.tensor(ints * 0.5)),
               *lib.unique(i, return_inverse=True, return_counts=True), lib.unique(g, dim=0),
               *lib.unique_consecutive(i, return_inverse=True, return_counts=True),
               *lib.unique_consecutive(g, return_counts=True, dim=0), lib.broadcast_tensors(i[:1], g)[0],
               lib.tensor(list(lib.broadcast_shapes((2, 1), (3,))))]
        outs.append([(r.numpy(), str(r.dtype).split(".")[-1]) for r in res])
    for (a, da), (b, db) in zip(*outs):
        np.testing.assert_array_equal(a, b)
        assert da == db
    with pytest.warns(RuntimeWarning, match="graph break"):
        tg.compile(lambda t: tg.unique(t) * 2)(tg.tensor(ints))
    with pytest.raises(RuntimeError, match="at least 3 elements"):
        tg.zeros(3).masked_scatter(tg.ones(3, dtype=tg.bool), tg.ones(2))


def test_diagonal_is_a_view_as_in_torch():
    """Writing into x.diagonal() writes into x (diag() gives a copy), eagerly, through
    autograd and compiled."""
    results = []
    for lib in (tg, torch):
        x = lib.zeros(3, 4)
        x.diagonal(1).fill_(1.0)
        y = lib.zeros(2, 3, 3)
        y.diagonal(0, 1, 2).add_(lib.arange(6.0).reshape(2, 3))
        z = lib.zeros(3, 3)
        lib.diag(z).fill_(5.0)
        w = lib.ones(3, 3, requires_grad=True)
        v = w * 2
        v.diagonal().mul_(5)
        v.sum().backward()
        results.append([t.detach().numpy() for t in (x, y, z, w.grad)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)

    def zero_diagonal(a):
        b = a * 1
        b.diagonal().zero_()
        return b

    np.testing.assert_array_equal(tg.compile(zero_diagonal, fullgraph=True)(tg.ones(3, 3)).numpy(), 1 - np.eye(3))


def test_in_place_view_ops_match_torch():
    """t_, squeeze_, unsqueeze_, transpose_, swapdims_: the tensor itself changes shape (same
    memory), keeps its autograd history, refuses a leaf that requires grad."""
    results = []
    for lib in (tg, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        y.t_()
        y.unsqueeze_(0).transpose_(0, 2).squeeze_()
        (y * lib.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        base = lib.zeros(2, 3)
        row = base[1]
        row.unsqueeze_(1)
        row[2, 0] = 5.0  # (writes through the reshaped view into the base)
        base.swapdims_(0, 1)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib.ones(2, requires_grad=True).unsqueeze_(0)
        results.append([t.detach().numpy().copy() for t in (y, x.grad, base, row)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
