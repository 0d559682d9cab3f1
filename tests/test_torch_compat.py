"""What real PyTorch programs met when run on tracegrad (issue 25), each against PyTorch: wrong
numbers first (layouts, integer resampling, infinities), then the API that programs use as
PyTorch accepts it (numpy-style argument names, factory arguments, the legacy constructor,
indexing forms, formatting, grad_fn names) and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
TF = torch.nn.functional

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402
import tracegrad.nn.functional as F  # noqa: E402

RNG = np.random.default_rng(0)


# ----------------------------------------------------------------------------- wrong numbers
def test_contiguous_of_a_transpose_is_c_contiguous_and_views():
    """nanoGPT's ``y.transpose(1, 2).contiguous().view(B, T, C)``."""
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x, tx = oracle.to_tg(a, True), oracle.to_torch(a, True)
    y, ty = x.transpose(1, 2).contiguous(), tx.transpose(1, 2).contiguous()
    assert y.is_contiguous() and ty.is_contiguous()
    assert y.stride() == ty.stride()
    out, ref = y.view(2, 4, 15), ty.view(2, 4, 15)
    oracle.assert_close(out, ref, "value")
    g = RNG.standard_normal((2, 4, 15)).astype(np.float32)
    out.backward(oracle.to_tg(g))
    ref.backward(oracle.to_torch(g))
    oracle.assert_close(x.grad, tx.grad, "grad")
    # clone keeps the layout, as PyTorch's (preserve_format)
    assert x.transpose(1, 2).clone().is_contiguous() == tx.transpose(1, 2).clone().is_contiguous()


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kwargs", [{"scale_factor": 2}, {"size": (5, 13)}, {"scale_factor": 0.5}])
def test_interpolate_of_uint8(mode, align_corners, kwargs):
    """(PyTorch resamples uint8 alone of the integer dtypes; tracegrad the others too.)"""
    a = RNG.integers(0, 256, (2, 3, 7, 9)).astype(np.uint8)
    out = F.interpolate(oracle.to_tg(a), mode=mode, align_corners=align_corners, **kwargs)
    ref = TF.interpolate(oracle.to_torch(a), mode=mode, align_corners=align_corners, **kwargs)
    assert out.dtype == tg.tensor(a).dtype
    diff = np.abs(oracle.np_of(out).astype(np.int64) - oracle.np_of(ref).astype(np.int64))
    # PyTorch's uint8 kernels weigh in fixed point: a few bicubic values round the other way
    assert diff.max() <= (1 if mode == "bicubic" else 0)
    assert np.count_nonzero(diff) <= diff.size // 100


@pytest.mark.parametrize("kernel,stride", [(2, 2), (3, 1), (3, 2)])
def test_max_unpool2d_of_infinite_maxima(kernel, stride):
    a = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    a[0, 0, 1, 1], a[1, 2, 3, 3] = np.inf, -np.inf

    def run(lib, fn, x):
        out, idx = fn.max_pool2d(x, kernel, stride, return_indices=True)
        return fn.max_unpool2d(out, idx, kernel, stride, output_size=(6, 6))

    oracle.compare_fn(lambda x: run(tg, F, x), lambda x: run(torch, TF, x), [a])
