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


# ----------------------------------------------------------------------------- API as PyTorch's
REDUCTIONS = ["sum", "mean", "nansum", "nanmean", "var", "std", "prod", "amax", "amin", "argmax", "argmin",
              "logsumexp", "all", "any", "median", "var_mean", "std_mean", "max", "min"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("method", [False, True])
def test_reductions_take_numpy_names(name, method):
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    if name in ("all", "any"):
        a = a > 0
    x, tx = oracle.to_tg(a), oracle.to_torch(a)
    if method and not hasattr(tx, name):
        pytest.skip(f"torch.Tensor has no {name} method")
    for kwargs in ({"axis": 1}, {"axis": 1, "keepdims": True}, {"dim": 2, "keepdims": True}):
        out = getattr(x, name)(**kwargs) if method else getattr(tg, name)(x, **kwargs)
        ref = getattr(tx, name)(**kwargs) if method else getattr(torch, name)(tx, **kwargs)
        for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
            oracle.assert_close(o, r, f"{name} {kwargs}")
    with pytest.raises(TypeError):
        getattr(tg, name)(x, dim=1, axis=1)


def test_dim_functions_take_axis():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    x, tx = oracle.to_tg(a), oracle.to_torch(a)
    oracle.assert_close(tg.cumsum(x, axis=1), torch.cumsum(tx, axis=1), "cumsum")
    oracle.assert_close(x.unsqueeze(axis=0), tx.unsqueeze(axis=0), "unsqueeze")
    oracle.assert_close(tg.quantile(x, 0.5, axis=1, keepdims=True), torch.quantile(tx, 0.5, axis=1, keepdims=True),
                        "quantile")


def test_randint_overloads_and_requires_grad():
    for args, kwargs in [((5, (3, 4)), {}), ((2, 5, (3,)), {}), ((5,), {"size": (2,)}),
                         ((0, 5, (3,)), {"requires_grad": False}), ((3, (2,)), {"dtype": tg.int32})]:
        out = tg.randint(*args, **kwargs)
        ref = torch.randint(*args, **{k: (torch.int32 if k == "dtype" else v) for k, v in kwargs.items()})
        assert tuple(out.shape) == tuple(ref.shape) and str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
        assert not out.requires_grad
    low, high = (5, (1000,))
    assert 0 <= int(tg.randint(low, high).min()) and int(tg.randint(low, high).max()) < 5
    with pytest.raises(RuntimeError):
        tg.randint(0, 5, (3,), requires_grad=True)


@pytest.mark.parametrize("args", [(), (2, 3), (4,), ([1, 2, 3],), ([[1, 2], [3, 4]],), ((1.5, 2),),
                                  (np.array([1, 2], np.int64),)])
def test_legacy_tensor_constructor(args):
    out, ref = tg.Tensor(*args), torch.Tensor(*args)
    assert out.dtype == tg.float32 and tuple(out.shape) == tuple(ref.shape)
    if args and not isinstance(args[0], int):
        oracle.assert_close(out, ref, "Tensor()")
    assert type(out) is tg.Tensor and isinstance(out, tg.Tensor)


def test_legacy_tensor_of_a_tensor_shares_storage():
    t = tg.tensor([1.0, 2.0])
    alias = tg.Tensor(t)
    alias.add_(1.0)
    assert t.tolist() == [2.0, 3.0]
    with pytest.raises(TypeError):
        tg.Tensor(tg.tensor([1, 2]))


@pytest.mark.parametrize("index", [
    lambda b: ((0,),), lambda b: ((0,), b, b, b, slice(None)), lambda b: (((0, 1), (1, 0)),),
    lambda b: (0, (1, 2)), lambda b: ((1, 0), slice(None), (2, 3)), lambda b: (Ellipsis, (4, 0)),
])
def test_indexing_with_nested_tuples(index):
    a = RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    idx = [0, 1]
    oracle.compare_fn(lambda x: x[index(tg.tensor(idx))], lambda x: x[index(torch.tensor(idx))], [a])
    x, tx = oracle.to_tg(a), oracle.to_torch(a)
    x[index(tg.tensor(idx))] = 7.0
    tx[index(torch.tensor(idx))] = 7.0
    oracle.assert_close(x, tx, "setitem")


def test_copysign_gradient_of_other_is_zeros():
    a = np.array([1.0, -2.0, 3.0, 0.0])
    b = np.array([[-1.0, 2.0, np.inf, -0.0], [1.0, -np.inf, 0.0, 5.0]])
    oracle.compare_fn(tg.copysign, torch.copysign, [a, b])
    y = oracle.to_tg(b, True)
    tg.copysign(oracle.to_tg(a, True), y).sum().backward()
    assert y.grad is not None and not np.any(y.grad.numpy())


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8", "float64", "bfloat16", "float32", "int64"])
def test_view_dtype_reinterprets_bits(dtype):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    out = oracle.to_tg(a).view(getattr(tg, dtype))
    ref = oracle.to_torch(a).view(getattr(torch, dtype))
    if dtype == "bfloat16":
        out, ref = out.float(), ref.float()
    oracle.assert_close(out, ref, f"view({dtype})")
    with pytest.raises(RuntimeError):
        oracle.to_tg(a[:, :3]).view(tg.float64)  # (3 float32s are no whole number of float64s)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_max_pool2d_of_integers_with_padding(dtype):
    a = np.arange(-8, 17).reshape(1, 1, 5, 5) % 256
    out = F.max_pool2d(oracle.to_tg(a).to(getattr(tg, dtype)), 3, 2, padding=1, return_indices=True)
    ref = TF.max_pool2d(oracle.to_torch(a).to(getattr(torch, dtype)), 3, 2, padding=1, return_indices=True)
    oracle.assert_close(out[0], ref[0], "values")
    oracle.assert_close(out[1], ref[1], "indices")


@pytest.mark.parametrize("value", [1.23456, 3, -0.5, True])
@pytest.mark.parametrize("spec", ["", ".4f", ">10", ".2e"])
def test_format_of_0d_tensors(value, spec):
    if spec and isinstance(value, bool):
        spec = ""  # (format(True, ".4f") is 1.0000 in both; kept to the plain form)
    assert format(tg.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{tg.tensor([1.0, 2.0])}" == str(tg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        format(tg.tensor([1.0, 2.0]), ".4f")


GRAD_FN_CASES = {
    "nll_loss": lambda L, f, x: f.nll_loss(x.log_softmax(-1), L.tensor([0, 1, 2, 3])),
    "cross_entropy": lambda L, f, x: f.cross_entropy(x, L.tensor([0, 1, 2, 3])),
    "mse_loss": lambda L, f, x: f.mse_loss(x, x.detach() * 2),
    "bce_with_logits": lambda L, f, x: f.binary_cross_entropy_with_logits(x, x.detach().sigmoid()),
    "softmax": lambda L, f, x: f.softmax(x, -1), "log_softmax": lambda L, f, x: f.log_softmax(x, -1),
    "gelu": lambda L, f, x: f.gelu(x), "silu": lambda L, f, x: f.silu(x),
    "layer_norm": lambda L, f, x: f.layer_norm(x, (5,)), "embedding": lambda L, f, x: f.embedding(L.tensor([0, 1]), x),
    "mean": lambda L, f, x: x.mean(), "mean_dim": lambda L, f, x: x.mean(1), "std": lambda L, f, x: x.std(),
    "copysign": lambda L, f, x: L.copysign(x, x.detach()), "masked_fill": lambda L, f, x: x.masked_fill(x > 0, 0.0),
    "tril": lambda L, f, x: x.tril(), "mul": lambda L, f, x: x * 2,
}


@pytest.mark.parametrize("name", sorted(GRAD_FN_CASES))
def test_grad_fn_names(name):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    fn = GRAD_FN_CASES[name]
    out = fn(tg, F, oracle.to_tg(a, True))
    ref = fn(torch, TF, oracle.to_torch(a, True))
    assert out.grad_fn.name() == ref.grad_fn.name()


# ----------------------------------------------------------------------------- errors as PyTorch's
@pytest.mark.parametrize("call", ["sum(1)", "squeeze(10)", "mean(-2)", "amax(1)", "softmax(1)", "max(1)",
                                  "argmax(1)", "transpose(0, 1)", "cumsum(1)", "logsumexp(2)"])
def test_dims_out_of_range_on_0d_tensors(call):
    for x in (tg.tensor(1.5), torch.tensor(1.5)):
        with pytest.raises(IndexError):
            eval("x." + call)
    ok = call.replace("(1)", "(0)").replace("(10)", "(-1)").replace("(-2)", "(-1)").replace("(2)", "(0)")
    ok = ok.replace("(0, 1)", "(0, -1)")
    out, ref = eval("tg.tensor(1.5)." + ok), eval("torch.tensor(1.5)." + ok)
    oracle.assert_close(out[0] if isinstance(out, tuple) else out, ref[0] if isinstance(ref, tuple) else ref, ok)



# PyTorch's two conventions for a dim on a 0-d tensor: most ops take it as 1-d (dims 0 and -1,
# anything else an IndexError, even where nothing is computed); the ops that split, slice or
# difference along a dim need a real one (a RuntimeError with the op's message, whatever dim).
ZERO_D_DIM_CALLS = {
    "sort": lambda L, x, d: L.sort(x, dim=d),
    "argsort": lambda L, x, d: L.argsort(x, dim=d),
    "topk": lambda L, x, d: L.topk(x, 1, dim=d),
    "mode": lambda L, x, d: L.mode(x, dim=d),
    "kthvalue": lambda L, x, d: L.kthvalue(x, 1, dim=d),
    "median": lambda L, x, d: L.median(x, d),
    "flatten(start)": lambda L, x, d: L.flatten(x, d),
    "flatten(end)": lambda L, x, d: L.flatten(x, 0, d),
    "gather": lambda L, x, d: L.gather(x, d, L.tensor(0)),
    "index_select": lambda L, x, d: L.index_select(x, d, L.tensor([0])),
    "scatter": lambda L, x, d: L.scatter(x, d, L.tensor(0), L.tensor(1.0)),
    "scatter_add": lambda L, x, d: L.scatter_add(x, d, L.tensor(0), L.tensor(1.0)),
    "index_add": lambda L, x, d: L.index_add(x, d, L.tensor([0]), L.tensor([1.0])),
    "movedim": lambda L, x, d: L.movedim(x, d, 0),
    "unflatten": lambda L, x, d: L.unflatten(x, d, (1,)),
    "unbind": lambda L, x, d: L.unbind(x, d),
    "narrow": lambda L, x, d: L.narrow(x, d, 0, 1),
    "chunk": lambda L, x, d: L.chunk(x, 2, dim=d),
    "split": lambda L, x, d: L.split(x, 1, dim=d),
    "tensor_split": lambda L, x, d: L.tensor_split(x, 2, dim=d),
    "diff": lambda L, x, d: L.diff(x, dim=d),
    "renorm": lambda L, x, d: L.renorm(x, 2, d, 1.0),
    "glu": lambda L, x, d: L.nn.functional.glu(x, d),
}


@pytest.mark.parametrize("name", sorted(ZERO_D_DIM_CALLS))
def test_dims_of_0d_tensors_follow_pytorchs_convention_per_op(name):
    call = ZERO_D_DIM_CALLS[name]

    def outcome(L, d):
        try:
            out = call(L, L.tensor(1.5), d)
        except (IndexError, RuntimeError) as e:
            return type(e), str(e).splitlines()[0]
        return None, out[0] if isinstance(out, tuple) else out

    for d in (-2, -1, 0, 1, 2):
        (err, out), (ref_err, ref) = outcome(tg, d), outcome(torch, d)
        assert err is ref_err, (name, d, out, ref)
        if err is None:
            oracle.assert_close(out, ref, f"{name} dim={d}")
        elif err is RuntimeError and name != "unflatten":  # (torch's unflatten adds its C++ trace)
            assert out == ref, (name, d)


def test_range_factories_of_bool_raise():
    for lib in (tg, torch):
        with pytest.raises(NotImplementedError):
            lib.linspace(0, 1, 5, dtype=lib.bool)
        with pytest.raises(NotImplementedError):
            lib.logspace(0, 1, 5, dtype=lib.bool)


def test_bad_modes_raise_runtime_error_with_pytorchs_message():
    def message(fn):
        with pytest.raises(RuntimeError) as e:
            fn()
        return str(e.value)

    for make in (lambda L: L.meshgrid(L.arange(3), L.arange(2), indexing="yx"),
                 lambda L: L.div(L.ones(2), L.ones(2), rounding_mode="round")):
        assert message(lambda: make(tg)) == message(lambda: make(torch))


def test_compiled_float16_products_are_as_accurate_as_pytorchs():
    """A compiled float16 matrix product accumulates in float32 and rounds once, as eager and
    PyTorch do (it was once less accurate: 4 of 4096 elements off by up to 0.008)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    theirs = (torch.from_numpy(a) @ torch.from_numpy(b)).float().numpy()
    eager = (tg.tensor(a) @ tg.tensor(b)).float().numpy()
    compiled = tg.compile(lambda x, y: x @ y)(tg.tensor(a), tg.tensor(b)).float().numpy()
    np.testing.assert_array_equal(compiled, eager)
    assert np.abs(compiled - exact).mean() <= 1.01 * np.abs(theirs - exact).mean()


def test_torch_imported_first_leaves_compiled_openmp_programs_alone():
    """torch's libgomp loaded before tracegrad: an OpenMP program still runs right and OpenBLAS
    prints no 'Detect OpenMP Loop' warning (how fast it runs is benchmarks' business)."""
    import subprocess
    import sys

    script = ("import torch, tracegrad as tg\n"
              "f = tg.compile(lambda x: (x @ x).tanh().sum(1), options={'openmp': True})\n"
              "print(f(tg.ones(128, 128)).tolist()[:2])\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[128.0, 128.0]" and "OpenMP Loop" not in r.stderr, r.stderr[-2000:]
