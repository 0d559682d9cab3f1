"""The C backend against the interpreter (its oracle): every registry op through its samples,
forward values and gradients captured in one graph (``tg.autograd.grad`` inside the compiled
function), plus fusion, views, BLAS, workspace reuse, fallback and hand-written training steps.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CASES = [(name, k) for name in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[name])))
         if name != "nonzero"]  # nonzero's shape depends on data: it never appears in a graph


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def _step_fn(op, attrs, diff):
    """out = op(*xs); grads of sum(out * cot) wrt the differentiable inputs, in one graph."""
    def step(*xs):
        out = op(*xs, **attrs)
        if not diff:
            return out
        cot = tg.ones(out.shape, dtype=out.dtype) + tg.arange(out.numel(), dtype=out.dtype).reshape(out.shape) * 0.01
        loss = (out * cot).sum()
        grads = tg.autograd.grad(loss, [xs[i] for i in diff], allow_unused=True)
        return out.detach(), grads
    return step


def _run(backend, op, arrays, attrs, diff):
    xs = [tg.tensor(a.copy(), requires_grad=i in diff) for i, a in enumerate(arrays)]
    f = tg.compile(_step_fn(op, attrs, diff), backend=backend, fullgraph=True)
    res = f(*xs)
    prog = f.programs[0]
    flat = [res] if not diff else [res[0]] + [g for g in res[1]]
    return [None if r is None else r.numpy() for r in flat], prog


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_registry_op_matches_interpreter(name, k, dtype):
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op, dtype)[k]
    diff = samples.differentiable_positions(op, arrays) if op.differentiable else []
    want, _ = _run("interpreter", op, arrays, attrs, diff)
    got, prog = _run("c", op, arrays, attrs, diff)
    assert type(prog.executable).__name__ == "CExecutable", f"{name} fell back to the interpreter"
    for w, g in zip(want, got):
        if w is None:
            assert g is None
            continue
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **_tol(dtype))


# ----------------------------------------------------------------------------- structure and kernels
def _c_and_interp(fn, *arrays, **kw):
    outs = []
    for backend in ("c", "interpreter"):
        ts = [tg.tensor(a) for a in arrays]
        f = tg.compile(fn, backend=backend, **kw)
        r = f(*ts)
        outs.append((r, f))
    return outs


def test_elementwise_chain_and_its_reduction_fuse_into_one_loop():
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    (rc, fc), (ri, _) = _c_and_interp(lambda x: ((x * 2 + 1).tanh() * x.sigmoid()).sum(), x)
    np.testing.assert_allclose(rc.numpy(), ri.numpy(), rtol=1e-5)
    kernels = [k for k in fc.programs[0].executable.source.split("/* kernel ")[1:]]
    assert len(kernels) == 1 and kernels[0].startswith("0: loop")


def test_broadcasting_views_and_non_contiguous_inputs():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 1, 5))
    b = rng.standard_normal((4, 1))
    big = rng.standard_normal((6, 8))

    def fn(a, b, t):
        s = t.t()[::2, 1:5]  # strided view of an input
        return (a + b).exp().sum(dim=(0, 2)), s * 2 + s.flip(0), a.permute(2, 0, 1).reshape(5, 3)

    outs = []
    for backend in ("c", "interpreter"):
        t = tg.tensor(big).t()  # a non-contiguous argument: the executable copies it
        f = tg.compile(fn, backend=backend)
        outs.append([o.numpy() for o in f(tg.tensor(a), tg.tensor(b), t)])
    for c_out, i_out in zip(*outs):
        np.testing.assert_allclose(c_out, i_out, rtol=1e-12)


def test_size_zero_shapes():
    x = np.zeros((0, 3))
    (rc, _), (ri, _) = _c_and_interp(lambda x: (x.exp().sum(dim=0), x * 2, x.sum()), x)
    for c_out, i_out in zip(rc, ri):
        assert c_out.shape == i_out.shape
        np.testing.assert_array_equal(c_out.numpy(), i_out.numpy())


def test_reduction_over_batch_dim_and_transposed_matmul():
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((32, 7)), rng.standard_normal((32, 5))
    fn = lambda x, g: (g.sum(dim=0), g.amax(dim=0, keepdim=True), (x.t() @ g).t() * 1.5)
    (rc, fc), (ri, _) = _c_and_interp(fn, x, g)
    for c_out, i_out in zip(rc, ri):
        np.testing.assert_allclose(c_out.numpy(), i_out.numpy(), rtol=1e-12)


def test_returned_weight_gradient_is_written_by_its_product():
    """A weight gradient that is both returned (W.grad) and read transposed (the update) is
    computed straight into its output buffer, with no copy out at the end, and holds the same
    values as the interpreter's. Values checked for a held result too: the buffer is the
    caller's once returned."""
    rng = np.random.default_rng(4)
    x, g, w = rng.standard_normal((32, 7)), rng.standard_normal((32, 5)), rng.standard_normal((5, 7))

    def fn(x, g, w):
        grad = (x.t() @ g).t()
        return grad, w - 0.1 * grad

    (rc, fc), (ri, _) = _c_and_interp(fn, x, g, w)
    for c_out, i_out in zip(rc, ri):
        np.testing.assert_allclose(c_out.numpy(), i_out.numpy(), rtol=1e-12)
    source = fc.programs[0].executable.source
    calls = [line.strip() for line in source.split("\n") if line.strip().startswith("tg_gemm_double(")]
    assert len(calls) == 1 and calls[0].split(",")[-1].strip().startswith("out"), calls  # C = an output
    assert source.count("/* kernel") == 2, source  # the product and the update, nothing more
    held = rc[0].numpy().copy()
    fc(tg.tensor(x * 2), tg.tensor(g), tg.tensor(w))
    np.testing.assert_array_equal(rc[0].numpy(), held)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_max_and_min_reductions_propagate_nan(dtype):
    """amax/amin over rows, columns and everything, as NumPy: a NaN anywhere in what is reduced
    (first, middle, last) gives NaN, infinities and all-equal rows stay exact. The C code keeps
    NaN apart from the vectorized comparison (lower.py: Lowerer._emit_loop)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((7, 301)) * 100).astype(dtype)
    if dtype != np.int64:
        x[0, 0] = x[1, 150] = x[2, 300] = np.nan
        x[3] = -np.inf
        x[4] = np.inf
    x[5] = 3
    fn = lambda t: (t.amax(dim=1), t.amin(dim=1), t.amax(), t.amin(), t.amax(dim=0), t.amin(dim=0))
    want = (x.max(1), x.min(1), x.max(), x.min(), x.max(0), x.min(0))
    for got, w in zip(tg.compile(fn, backend="c")(tg.tensor(x)), want):
        np.testing.assert_array_equal(got.numpy(), w)
    # large enough for OpenMP threads: their partial maxima and NaN flags are combined
    big = np.tile(x, (32, 1))
    for got, w in zip(tg.compile(fn, backend="c", options={"openmp": True})(tg.tensor(big)),
                      (big.max(1), big.min(1), big.max(), big.min(), big.max(0), big.min(0))):
        np.testing.assert_array_equal(got.numpy(), w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_arg_reductions_first_nan_then_first_extremum(dtype):
    """argmax/argmin over an outer, a middle and the last dim and over everything, as NumPy:
    the first NaN wins, else the first of equal extrema. Over a dim with others inside it the C
    code walks the inner dim in a vectorized select (kernels.arg_reduce)."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((5, 7, 33)) * 3).astype(dtype)
    if dtype != np.int64:
        x[1, 0, 3] = x[2, 4, 5] = x[2, 6, 5] = np.nan
        x[3, :, 7] = np.nan
    x[4] = 1  # all equal
    fn = lambda t: (t.argmax(dim=1), t.argmin(dim=1), t.argmax(dim=0), t.argmin(dim=2), t.argmax())
    want = (x.argmax(1), x.argmin(1), x.argmax(0), x.argmin(2), x.argmax())
    for got, w in zip(tg.compile(fn, backend="c")(tg.tensor(x)), want):
        np.testing.assert_array_equal(got.numpy(), w)


def test_uniform_constants_are_read_broadcast():
    """A captured constant of one value throughout (the zeros a backward formula starts from) is
    read from its first element: a writable copy of it is a fill, and a product with it still
    right. Values as the interpreter's."""
    x = np.random.default_rng(7).standard_normal((64, 40)).astype(np.float32)

    def fn(t):
        zeros = tg.zeros(64, 40)
        signed = tg.tensor([0.0, -0.0, 0.0])  # equal values, not equal bits: not uniform
        return zeros.index_add(0, tg.tensor([0, 2]), t[:2]), t @ tg.ones(40, 3), 1 / (signed * t[0, :3].abs())

    (rc, fc), (ri, _) = _c_and_interp(fn, x)
    for c_out, i_out in zip(rc, ri):
        # the product sums 40 terms of size ~1 in an order that depends on the BLAS kernel
        np.testing.assert_allclose(c_out.numpy(), i_out.numpy(), rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(rc[2].numpy(), [np.inf, -np.inf, np.inf])
    exe = fc.programs[0].executable
    big = [k for k, c in enumerate(exe.graph.constants()) if c.shape == (64, 40)]
    assert big, [c.shape for c in exe.graph.constants()]
    slot = len(exe.graph.inputs) + big[0]  # constants follow the inputs in args[]
    name = re.search(rf"\*(\w+) = \([^)]*\)args\[{slot}\];", exe.source).group(1)
    body = exe.source.split("int tg_run(")[1]
    assert f"{name}[0]" in body and f"{name}[i0]" not in body, body


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [0, 1, 2, 3, 4, -1, 0.5, -0.5, 1.5])
def test_pow_by_a_literal_exponent(p, dtype):
    """``x ** p`` as NumPy's np.power within 4 ulp, edges included (+-0, +-inf, NaN); the
    exponents with a cheaper exact form (lower._pow_by_literal) make no libm ``pow`` call,
    which would keep the loop scalar."""
    x = np.concatenate([np.random.default_rng(8).standard_normal(1001) * 10,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e30, 1e20]]).astype(dtype)
    f = tg.compile(lambda t: t ** p, backend="c")
    got = f(tg.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x, dtype(p))
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    np.testing.assert_array_equal(np.signbit(got[np.isinf(want)]), np.signbit(want[np.isinf(want)]))
    assert ("pow(" in f.programs[0].source.split("int tg_run(")[1]) == (p == 1.5)


@pytest.mark.parametrize("blas", [True, False])
def test_matmul_blas_and_loop_fallback(blas):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    f = tg.compile(lambda a, b: a @ b, backend="c", options={"blas": blas})
    out = f(tg.tensor(a), tg.tensor(b)).numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    assert (f.programs[0].executable.blas is not None) == (blas and f.programs[0].executable.blas is not None)


@pytest.mark.parametrize("n", [1, 5, 16, 37])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loop_fallback_packs_a_transposed_operand(n, dtype):
    """Without BLAS, x @ W.T packs W row-major first (16-column blocks plus a remainder)."""
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal((6, 9)).astype(dtype), rng.standard_normal((n, 9)).astype(dtype)
    f = tg.compile(lambda x, w: x @ w.T, backend="c", options={"blas": False})
    np.testing.assert_allclose(f(tg.tensor(x), tg.tensor(w)).numpy(), x @ w.T, rtol=1e-5, atol=1e-5)


def test_index_out_of_bounds_raises_the_interpreters_error():
    f = tg.compile(lambda x, i: x[i], backend="c")
    x = tg.arange(5.0)
    assert f(x, tg.tensor([4, 0])).tolist() == [4.0, 0.0]
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, tg.tensor([7, 0]))


def test_op_without_lowering_falls_back_to_interpreter_with_warning(monkeypatch):
    from tracegrad.compiler.backends.c.rules import RULES
    from tracegrad.ops.index import GATHER

    monkeypatch.delitem(RULES._rules, GATHER)  # (gather without its C rule)
    x, i = tg.arange(6.0).reshape(2, 3), tg.tensor([[0, 2, 1]])
    f = tg.compile(lambda x, i: x.gather(1, i) * 2, backend="c")
    with pytest.warns(RuntimeWarning, match="gather"):
        out = f(x, i)
    assert out.tolist() == [[0.0, 4.0, 2.0]]
    assert type(f.programs[0].executable).__name__ == "InterpreterExecutable"
    g = tg.compile(lambda x, i: x.gather(1, i) * 2, backend="c", fullgraph=True)
    with pytest.raises(tg.CompileError if hasattr(tg, "CompileError") else Exception, match="gather"):
        g(x, i)


def test_shipped_cffi_module_matches_the_declarations(tmp_path):
    """The package's out-of-line cffi module (_cffi_abi.py, imported in ~2 ms instead of
    pycparser's ~40 ms) is what cffi generates from FFI_CDEF today (its format version aside),
    and it is the one in use."""
    from pathlib import Path

    from tracegrad.compiler.backends.c import _cffi_abi, _ffi_instance, generate_cffi_module

    drop_version = lambda text: [ln for ln in text.splitlines() if "_version" not in ln]
    fresh = Path(generate_cffi_module(tmp_path)).read_text()
    assert drop_version(Path(_cffi_abi.__file__).read_text()) == drop_version(fresh)
    assert _ffi_instance() is _cffi_abi.ffi


def test_fast_math_accuracy():
    """tg_expf within 3 float32 ulp of the exact exp from -87.3 up to the largest float whose exp
    is finite (88.72283, where adding to the exponent field is at its edge); tg_tanhf within 2e-7
    absolute; tg_erff within 4 ulp and 3e-7 absolute; tg_logf and tg_log1pf within 2 ulp."""
    x = np.concatenate([np.linspace(-87.3, 88.72283, 200001), np.linspace(88.3, 88.72283, 10001),
                        np.linspace(-3, 3, 100001)]).astype(np.float32)
    e = tg.compile(lambda x: x.exp(), backend="c")(tg.tensor(x)).numpy()
    want = np.exp(x.astype(np.float64))
    ulp = np.abs(e.astype(np.float64) - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert ulp.max() <= 3.0, ulp.max()
    t = tg.compile(lambda x: x.tanh(), backend="c")(tg.tensor(x)).numpy()
    assert np.abs(t.astype(np.float64) - np.tanh(x.astype(np.float64))).max() <= 2e-7
    # erf: within 4 ulp and 3e-7 absolute of the exact value (math.erf in float64)
    from math import erf

    xe = np.concatenate([np.linspace(-6, 6, 600001), np.geomspace(1e-30, 1, 10001)]).astype(np.float32)
    got = tg.compile(lambda x: x.erf(), backend="c")(tg.tensor(xe)).numpy().astype(np.float64)
    want = np.vectorize(erf)(xe.astype(np.float64))
    assert np.abs(got - want).max() <= 3e-7
    assert (np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32))).max() <= 4.0
    special_erf = np.array([np.nan, np.inf, -np.inf, 0.0, 3.92, -10.0], np.float32)
    np.testing.assert_array_equal(tg.compile(lambda x: x.erf(), backend="c")(tg.tensor(special_erf)).numpy(),
                                  np.array([np.nan, 1, -1, 0, 1, -1], np.float32))
    # log within 2 ulp over all positive floats (subnormals too), log1p likewise above -1
    xl = np.concatenate([np.geomspace(1e-45, 3e38, 200001), np.linspace(0.5, 2, 100001)]).astype(np.float32)
    yl = np.concatenate([xl, -np.geomspace(1e-45, 0.999999, 100001)]).astype(np.float32)
    for name, arg, ref in (("log", xl, np.log), ("log1p", yl, np.log1p)):
        got = tg.compile(lambda x: getattr(x, name)(), backend="c")(tg.tensor(arg)).numpy().astype(np.float64)
        want = ref(arg.astype(np.float64))
        nz = want != 0
        assert (np.abs(got - want)[nz] / np.spacing(np.abs(want[nz]).astype(np.float32))).max() <= 2.0, name
    special_log = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0, -2.0, 1e-45], np.float32)
    with np.errstate(all="ignore"):
        for name, ref in (("log", np.log), ("log1p", np.log1p)):
            got = tg.compile(lambda x: getattr(x, name)(), backend="c")(tg.tensor(special_log)).numpy()
            np.testing.assert_array_equal(got, ref(special_log))
            assert np.signbit(got[4]) == np.signbit(ref(special_log)[4])  # -0 kept where NumPy keeps it
    # options={"fast_math": False}: libm's functions instead (docs/guide.md)
    exact = tg.compile(lambda x: (x.exp(), x.tanh(), x.erf(), x.log(), x.log1p()), backend="c",
                       options={"fast_math": False})
    exact(tg.tensor(xe[:100]))
    body = exact.programs[0].source.split("int tg_run(")[1]
    assert not any(f"{name}(" in body for name in ("tg_expf", "tg_tanhf", "tg_erff", "tg_logf", "tg_log1pf")), body
    special = np.array([np.nan, np.inf, -np.inf, 100.0, -100.0, 0.0, 88.72284], np.float32)
    np.testing.assert_array_equal(tg.compile(lambda x: x.exp(), backend="c")(tg.tensor(special)).numpy(),
                                  np.array([np.nan, np.inf, 0, np.inf, 0, 1, np.inf], np.float32))
    np.testing.assert_array_equal(tg.compile(lambda x: x.tanh(), backend="c")(tg.tensor(special)).numpy(),
                                  np.array([np.nan, 1, -1, 1, -1, 0, 1], np.float32))


@pytest.mark.parametrize("seed", range(8))
def test_unfold_and_fold_geometries(seed):
    """im2col and its transpose split each row at the image's edges (kernels.py: _window_rows):
    random kernels, strides, paddings (rows wholly in the padding included) and dilations give
    the interpreter's values."""
    from tracegrad.ops import nn as N

    rng = np.random.default_rng(seed)
    kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
    stride = tuple(int(k) for k in rng.integers(1, 4, 2))
    dilation = tuple(int(k) for k in rng.integers(1, 3, 2))
    padding = tuple(tuple(int(p) for p in rng.integers(0, 4, 2)) for _ in range(2))
    h, w = (int(v) for v in rng.integers(4, 9, 2))
    geo = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    x = rng.standard_normal((2, 3, h, w)).astype(np.float32)

    def fn(t):
        cols = N.UNFOLD2D(t, pad_value=-2.0, **geo)
        return cols, N.FOLD2D(cols * 0.5, output_size=(h, w), **geo)

    (rc, _), (ri, _) = _c_and_interp(fn, x)
    np.testing.assert_array_equal(rc[0].numpy(), ri[0].numpy())
    np.testing.assert_allclose(rc[1].numpy(), ri[1].numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sin", "cos", "tan", "expm1", "pow", "asin", "acos", "atan", "sinh",
                                  "cosh", "asinh", "acosh", "atanh", "exp2", "atan2", "hypot"])
def test_libm_vector_forms(name, dtype):
    """Functions with no tracegrad-own fast form call libm; where glibc's libmvec has their
    vector forms (toolchain.MVEC_FUNCTIONS) the loop vectorizes through them: within 4 ulp of
    the exact value (glibc's bound) over the whole range, large arguments included, and NumPy's
    values at the edges, signed zeros included. fast_math=False keeps libm's scalar calls."""
    from tracegrad.compiler.backends.c import toolchain

    rng = np.random.default_rng(3)
    big = float(np.finfo(dtype).max)
    x = np.concatenate([rng.uniform(-10, 10, 20000), np.geomspace(1e-30, big, 20000),
                        -np.geomspace(1e-30, big, 20000), rng.uniform(-1e6, 1e6, 20000)]).astype(dtype)
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 88.8, -104.0], dtype)
    if name in ("pow", "atan2", "hypot"):
        base = np.abs(x[::4]) if name == "pow" else x[::4]
        x, y = np.meshgrid(np.concatenate([base, edges]), np.concatenate([edges, [0.5, 2.5, -3.0]]))
        x, y = x.ravel().astype(dtype), y.ravel().astype(dtype)
        exact = {"pow": np.power, "atan2": np.arctan2, "hypot": np.hypot}[name]
        fn, args = (lambda a, b: getattr(tg, name)(a, b)), (x, y)
    else:
        x = np.concatenate([x, edges])
        exact = getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                             "acosh": "arccosh", "atanh": "arctanh"}.get(name, name))
        fn, args = (lambda a: getattr(a, name)()), (x,)
    f = tg.compile(fn, backend="c")
    got = f(*map(tg.tensor, args)).numpy()
    with np.errstate(all="ignore"):
        want = exact(*(a.astype(np.longdouble) for a in args)).astype(np.float64)
        same_as_numpy = exact(*args)
    finite = np.isfinite(want) & (np.abs(want) <= big)
    ulp = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]).astype(dtype))
    assert ulp.max() <= 4.0, (ulp.max(), args[0][finite][ulp.argmax()])
    rest = ~finite | (want == 0)
    np.testing.assert_array_equal(got[rest], same_as_numpy[rest])
    assert (np.signbit(got[rest]) == np.signbit(same_as_numpy[rest]))[~np.isnan(got[rest])].all()
    if toolchain.MVEC_FLAG in toolchain.toolchain(openmp=False)[1]:
        assert b"_ZGV" in Path(f.programs[0].executable.path).read_bytes()  # the vector form
    exact_build = tg.compile(fn, backend="c", options={"fast_math": False})
    exact_build(*map(tg.tensor, args))
    assert "simd(" not in exact_build.programs[0].source
    assert b"_ZGV" not in Path(exact_build.programs[0].executable.path).read_bytes()


# ----------------------------------------------------------------------------- training steps
@pytest.mark.parametrize("name", ["tiny", "custom", "chain", "cnn"])
def test_training_steps_match_interpreter(name):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import workloads

    kw = {"n": 4096} if name == "chain" else {}
    results = {}
    for backend in ("interpreter", "c"):
        step, args = workloads.WORKLOADS[name](backend, **kw)
        outs = [step(*args) for _ in range(3)]
        flat = [o for r in outs for o in (r if isinstance(r, (tuple, list)) else [r])]
        results[backend] = ([o.detach().numpy() for o in flat], [p.detach().numpy().copy() for p in step.params],
                            type(step.programs[0].executable).__name__)
    assert results["c"][2] == "CExecutable"
    assert ("omp parallel" in step.programs[0].source) == (name == "cnn")  # openmp="auto" (chain: small here)
    for want, got in zip(results["interpreter"][0] + results["interpreter"][1], results["c"][0] + results["c"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_openmp_auto_parallelizes_large_programs_without_blas_threaded_products():
    from tracegrad.compiler.backends.c import resolve_openmp

    def graph(fn, *shapes):
        return tg.compile(fn, backend="interpreter").inspect(*[tg.ones(*s) for s in shapes]).graph

    big = graph(lambda x: (x * 2).tanh(), (1 << 20,))
    small = graph(lambda x: (x * 2).tanh(), (1000,))
    with_matmul = graph(lambda x, w: (x * 2).tanh() @ w, (1 << 14, 64), (64, 2))
    assert resolve_openmp(big, {}) and resolve_openmp(big, {"openmp": "auto"})
    assert not resolve_openmp(small, {}) and not resolve_openmp(with_matmul, {})
    assert resolve_openmp(small, {"openmp": True}) and not resolve_openmp(big, {"openmp": False})
    # one-thread products (a convolution's, per sample) adding up to 2^24 multiply-adds or more
    per_sample = graph(lambda w, x: w @ x, (32, 144), (64, 144, 196))
    few_samples = graph(lambda w, x: w @ x, (32, 144), (8, 144, 196))
    assert resolve_openmp(per_sample, {}) and not resolve_openmp(few_samples, {})


def test_openmp_per_sample_products_and_im2col_match_interpreter():
    """With OpenMP, a convolution's per-sample products (forward, and both gradients), its
    unfold and the fold of its backward each run a sample per thread: the pragmas are there
    and the values and gradients are the interpreter's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 3, 24, 24)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)

    def step(x, w):
        y = tg.nn.functional.conv2d(x, w, padding=1, stride=(1, 2)).relu()
        return (y, *tg.autograd.grad(y.square().mean(), (x, w)))

    got, compiled = {}, {}
    for backend, options in (("c", {"openmp": True}), ("interpreter", None)):
        compiled[backend] = tg.compile(step, backend=backend, options=options)
        outs = compiled[backend](tg.tensor(x, requires_grad=True), tg.tensor(w, requires_grad=True))
        got[backend] = [t.detach().numpy() for t in outs]
    per_sample = re.findall(r"schedule\(dynamic, 1\)[^\n]*\n\s*for \(int64_t (\w+) = 0",
                            compiled["c"].programs[0].source)
    assert sorted(per_sample) == ["b0", "b0", "b0", "n", "n"], per_sample
    for c_out, i_out in zip(got["c"], got["interpreter"]):
        np.testing.assert_allclose(c_out, i_out, rtol=1e-4, atol=1e-4)


def test_openmp_loops_match_interpreter():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 1024)).astype(np.float32)  # above the parallel threshold
    fn = lambda x: ((x * 0.5).tanh().sum(), (x.exp() * x).sum(dim=1), x.sigmoid() * 2)
    got = tg.compile(fn, backend="c", options={"openmp": True})(tg.tensor(x))
    want = tg.compile(fn, backend="interpreter")(tg.tensor(x))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-3)


OPENMP_EXIT_SCRIPT = r"""
import numpy as np, tracegrad as tg
f = tg.compile(lambda x: (x * 0.5).tanh().sum(), backend="c", options={"openmp": True})
x = tg.tensor(np.ones((64, 1024), np.float32))
for _ in range(3):
    f(x)
assert "omp parallel" in f.programs[0].source
del f  # the program's library unloaded before the interpreter exits: its runtime must stay
import gc; gc.collect()
print("ok")
"""


def test_openmp_threads_spinning_at_exit_do_not_crash(tmp_path):
    """Under OMP_WAIT_POLICY=active the OpenMP threads spin in their runtime between parallel
    loops; when cffi unloaded the last program that brought the runtime in, the process died
    with SIGSEGV (status 139) at exit. backends/c._pin_openmp_runtime keeps it mapped."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_WAIT_POLICY="active", TRACEGRAD_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", OPENMP_EXIT_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])


@pytest.mark.parametrize("case", ["select", "bool_to_float", "max_reduction"])
def test_elementwise_loops_vectorize_without_avx512(case, tmp_path):
    """Elementwise loops must vectorize with the toolchain's flags also on an AVX2-only CPU
    (GCC's own report of the loops it vectorized, for -march=x86-64-v3). Both cases were found
    scalar on a Zen 3 machine: ``select``, a float select (tg_expf, tg_tanhf, relu), which GCC
    turns into a blend only with -fno-trapping-math (tiny's tanh loops, 1.6x slower);
    ``bool_to_float``, a comparison widened to a float (``g * (x > 0)``, ReLU's backward), which
    GCC vectorizes only when the bool is not held in a byte (lower.local_ctype);
    ``max_reduction``, a row max (softmax, cross-entropy), which vectorizes as an OpenMP simd max
    reduction once NaN is tracked apart from the comparison."""
    import platform
    import subprocess

    from tracegrad.compiler.backends.c import toolchain

    cc = toolchain.compiler()
    version = subprocess.run([cc, "-v"], capture_output=True, text=True).stderr.splitlines()[-1:]
    if platform.machine() not in ("x86_64", "AMD64") or not version or "gcc version" not in version[0]:
        pytest.skip(f"needs GCC on x86-64 (have {platform.machine()}, {version})")
    fn, marker = {"select": (lambda x, g: (x.tanh() + x.exp()).relu() * g, "tg_tanhf("),
                  "bool_to_float": (lambda x, g: g * (x > 0).float(), "> ((float)0.0))"),
                  "max_reduction": (lambda x, g: (x * g).amax(dim=1), "_nan |=")}[case]
    f = tg.compile(fn, backend="c")
    f(tg.tensor(np.ones((64, 256), np.float32)), tg.tensor(np.ones((64, 256), np.float32)))
    src = tmp_path / "program.c"
    src.write_text(f.programs[0].source)
    flags = [fl for fl in toolchain.toolchain()[1] if fl != "-march=native"]
    r = subprocess.run([cc, *flags, "-march=x86-64-v3", "-fopt-info-vec-optimized", str(src), "-o",
                        str(tmp_path / "program.so")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = src.read_text().split("\n")  # (as the compiler counts lines)
    loops = [n for n, line in enumerate(lines, 1)  # innermost loops holding the case's expression
             if line.lstrip().startswith("for (int64_t i") and "for (" not in "".join(lines[n:n + 8])
             and marker in "".join(lines[n:n + 8])]
    assert loops, f"no loop with {marker!r} in the generated code:\n{f.programs[0].source[-1500:]}"
    # GCC names a vectorized loop by its header or by the first statement of its body
    vectorized = {int(m) for m in re.findall(r"program\.c:(\d+):\d+: optimized: loop vectorized", r.stderr)}
    for n in loops:
        assert vectorized & set(range(n, n + 3)), f"loop at line {n} not vectorized:\n{r.stderr[-2000:]}"
