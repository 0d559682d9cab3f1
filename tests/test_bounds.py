"""Every index a program reads through is checked: eagerly, in the interpreter, in compiled C
(static and dynamic batch) and in an exported library. Out of range raises PyTorch's exception
with PyTorch's message (a return of 2 and a message from an exported function), and a failed
call writes nothing into the user's tensors, parameters or optimizer state.

The ops come from two places: the registry (every primitive that reads through an integer index
input, on its own samples with one index made bad) and a table of the public functions, which
differ in what they accept (``x[idx]`` takes -1, ``index_select`` does not) and in what they
say; both are compared with eager tracegrad, and the table with PyTorch when it is installed.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops import samples
from tracegrad.ops.registry import REGISTRY

F = tg.nn.functional
BACKENDS = ("interpreter", "c")
BAD = (-1, 5, 10 ** 12, -6, -(10 ** 12))  # for a dimension of size 5
GOOD = (0, 4)


def _outcome(fn, *args):
    """("ok", values) or (exception type name, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(*args)
        except (IndexError, RuntimeError) as e:
            return type(e).__name__, str(e)
    return "ok", np.asarray(r.detach().numpy() if hasattr(r, "detach") else r).tolist()


# ----------------------------------------------------------------------------- public functions
# name -> (tracegrad function of (lib, x, i) with x of shape (5, 2) and i a 1-element index).
# ``lib`` is tracegrad or torch, so one definition serves both.
def _nn(lib):
    return lib.nn.functional


PUBLIC = {
    "index_select": lambda L, x, i: L.index_select(x, 0, i),
    "embedding": lambda L, x, i: _nn(L).embedding(i, x),
    "embedding_bag": lambda L, x, i: _nn(L).embedding_bag(i, x, L.tensor([0])),
    "gather": lambda L, x, i: L.gather(x, 0, i.reshape(-1, 1).expand(-1, 2)),
    "getitem": lambda L, x, i: x[i],
    "getitem_two": lambda L, x, i: x[i, i * 0],  # (merged into one linear index)
    "take": lambda L, x, i: L.take(x, i),
    "nll_loss": lambda L, x, i: _nn(L).nll_loss(_nn(L).log_softmax(x[:1], 1), i),
    "cross_entropy": lambda L, x, i: _nn(L).cross_entropy(x[:1], i),
    "scatter": lambda L, x, i: x.clone().scatter_(0, i.reshape(-1, 1).expand(-1, 2), L.ones(1, 2)),
    "scatter_add": lambda L, x, i: x.clone().scatter_add_(0, i.reshape(-1, 1).expand(-1, 2), L.ones(1, 2)),
    "scatter_reduce": lambda L, x, i: x.clone().scatter_reduce_(0, i.reshape(-1, 1).expand(-1, 2),
                                                                L.ones(1, 2), "amax"),
    "index_add": lambda L, x, i: x.clone().index_add_(0, i, L.ones(1, 2)),
    "index_copy": lambda L, x, i: x.clone().index_copy_(0, i, L.ones(1, 2)),
    "index_fill": lambda L, x, i: x.clone().index_fill_(0, i, 3.0),
    "index_put": lambda L, x, i: x.clone().index_put_((i,), L.ones(1, 2)),
    "index_put_accumulate": lambda L, x, i: x.clone().index_put_((i,), L.ones(1, 2), accumulate=True),
    "setitem": lambda L, x, i: _set(x.clone(), i),
    "one_hot": lambda L, x, i: _nn(L).one_hot(i, 5),
    "put": lambda L, x, i: x.clone().put_(i, L.ones(1)),
    "index_reduce": lambda L, x, i: x.clone().index_reduce_(0, i, L.ones(1, 2), "prod"),
}
# PyTorch reads past the end without a word here (undefined behaviour): tracegrad raises gather's
# error; compared with eager tracegrad only
TORCH_UNCHECKED = {"take_along_dim"}
PUBLIC["take_along_dim"] = lambda L, x, i: L.take_along_dim(x, i.reshape(-1, 1), dim=0)


def _set(x, i):
    x[i] = 1.0
    return x


def _x(lib=tg):
    return lib.arange(10.0).reshape(5, 2)


@pytest.mark.parametrize("value", BAD + GOOD)
@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_function_raises_like_torch(name, value):
    torch = pytest.importorskip("torch")
    if name in TORCH_UNCHECKED:
        pytest.skip("PyTorch does not check this function's indices")
    if name == "index_reduce":
        warnings.filterwarnings("ignore", message="index_reduce")
    want = _outcome(lambda: PUBLIC[name](torch, _x(torch), torch.tensor([value])))
    got = _outcome(lambda: PUBLIC[name](tg, _x(), tg.tensor([value])))
    assert got == want


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_function_compiled_raises_as_eager(name, backend):
    fn = PUBLIC[name]
    compiled = tg.compile(lambda x, i: fn(tg, x, i), backend=backend)
    for value in BAD + GOOD:  # one program for every value (the index is data, not a guard)
        want = _outcome(lambda: fn(tg, _x(), tg.tensor([value])))
        got = _outcome(compiled, _x(), tg.tensor([value]))
        assert got == want, (value, got, want)


# ----------------------------------------------------------------------------- the registry
def _index_positions(op, specs):
    """Input positions of ``op`` that it reads through (an integer index into another input)."""
    if not (op.kind == "index" or op.name == "check_index"):
        return []
    return [p for p, s in enumerate(specs) if samples.parse(s)[0] in ("index", "unique_index")]


REGISTRY_CASES = [(name, k, p) for name in sorted(REGISTRY) if REGISTRY[name].sample is not None
                  for k, (specs, _) in enumerate(REGISTRY[name].sample())
                  for p in _index_positions(REGISTRY[name], specs)]


def test_registry_cases_cover_the_index_primitives():
    names = {n for n, _, _ in REGISTRY_CASES}
    assert {"index", "index_add", "index_put", "gather", "scatter_add", "scatter", "scatter_reduce",
            "check_index"} <= names


@pytest.mark.parametrize("bad", [10 ** 12, -(10 ** 12), 2 ** 31])
@pytest.mark.parametrize("name,k,pos", REGISTRY_CASES, ids=[f"{n}-{k}-{p}" for n, k, p in REGISTRY_CASES])
def test_registry_op_out_of_bounds_raises_in_every_backend(name, k, pos, bad):
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op)[k]
    arrays[pos] = arrays[pos].copy()
    arrays[pos].flat[arrays[pos].size - 1] = bad  # (the last one: a kernel may have written before)
    want = _outcome(lambda: op(*[tg.tensor(a) for a in arrays], **attrs))
    assert want[0] in ("IndexError", "RuntimeError"), want
    for backend in BACKENDS:
        f = tg.compile(lambda *xs: op(*xs, **attrs), backend=backend)
        assert _outcome(f, *[tg.tensor(a) for a in arrays]) == want, backend


# ----------------------------------------------------------------------------- nothing written
@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_call_leaves_an_argument_written_in_place_unchanged(backend):
    def f(x, i, j):
        x.mul_(2)  # written in place (the C backend writes straight into x's storage)
        return x[j].sum() + tg.index_select(x, 0, i).sum()

    c = tg.compile(f, backend=backend)
    x = tg.arange(6.0).reshape(3, 2)
    c(x, tg.tensor([0]), tg.tensor([1]))
    before = x.numpy().copy()
    version = x._version
    with pytest.raises(IndexError, match="index out of range in self"):
        c(x, tg.tensor([-1]), tg.tensor([1]))
    np.testing.assert_array_equal(x.numpy(), before)
    assert x._version == version
    c(x, tg.tensor([2]), tg.tensor([1]))
    np.testing.assert_array_equal(x.numpy(), before * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_in_place_scatter_writes_nothing(backend):
    """The scatter kernel checks each index as it goes: its writes into the argument are held
    back until nothing can fail any more."""
    c = tg.compile(lambda x, i, s: x.scatter_(0, i, s), backend=backend)
    x = tg.zeros(4, 3)
    c(x, tg.tensor([[0, 1, 2]]), tg.ones(1, 3))
    before = x.numpy().copy()
    bad = tg.tensor([[0, 1, 2], [3, 3, 9]])
    with pytest.raises(RuntimeError, match="index 9 is out of bounds for dimension 0 with size 4"):
        c(x, bad, tg.full((2, 3), 7.0))
    np.testing.assert_array_equal(x.numpy(), before)


def _training(seed=0):
    tg.manual_seed(seed)
    emb, lin = tg.nn.Embedding(7, 4), tg.nn.Linear(4, 3)
    params = list(emb.parameters()) + list(lin.parameters())
    opt = tg.optim.SGD(params, lr=0.1, momentum=0.9)

    def step(ids, y):
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(lin(emb(ids)), y)
        loss.backward()
        opt.step()
        return loss

    def state():
        return ([p.detach().numpy().copy() for p in params] + [p.grad.numpy().copy() for p in params]
                + [opt.state[p]["momentum_buffer"].numpy().copy() for p in params])

    return step, state


BAD_BATCHES = [((1, 7, 3), (0, 1, 2), IndexError, "index out of range in self"),
               ((-1, 0, 0), (0, 1, 2), IndexError, "index out of range in self"),
               ((1, 2, 3), (0, 3, 1), IndexError, "Target 3 is out of bounds."),
               ((1, 2, 3), (0, -5, 1), IndexError, "Target -5 is out of bounds.")]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_training_step_leaves_parameters_and_state_unchanged(backend, dynamic):
    step, state = _training()
    c = tg.compile(step, backend=backend, dynamic=dynamic)
    for n in (3, 5, 3):  # (dynamic: a few batch sizes before the bad ones)
        c(tg.tensor(list(range(n))), tg.tensor([k % 3 for k in range(n)]))
    before = state()
    for ids, y, exc, message in BAD_BATCHES:
        with pytest.raises(exc, match=message.replace(".", r"\.")):
            c(tg.tensor(list(ids)), tg.tensor(list(y)))
        for a, b in zip(before, state()):
            np.testing.assert_array_equal(a, b)
    c(tg.tensor([1, 2, 3]), tg.tensor([0, 1, 2]))  # and it still trains
    assert any(not np.array_equal(a, b) for a, b in zip(before, state()))


def test_training_step_with_index_checks_writes_parameters_in_place():
    """The checks cost no copy: the update still lands straight in the parameters (the checks
    come first in the program, so no write needs deferring)."""
    step, _ = _training()
    c = tg.compile(step, backend="c")
    c(tg.tensor([1, 2, 3]), tg.tensor([0, 1, 2]))
    exe = c.programs[-1].executable
    assert exe.inplace and not exe.deferred


# ----------------------------------------------------------------------------- export
needs_cc = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None or shutil.which("make") is None,
                              reason="needs a C compiler and make")


@needs_cc
def test_exported_function_returns_2_and_leaves_aliased_state_unchanged(tmp_path):
    from test_export import build

    w = tg.tensor(np.arange(10.0, dtype=np.float32).reshape(5, 2))

    def fn(i):
        w.add_(1.0)
        return tg.index_select(w, 0, i).sum()

    ep = tg.export(fn, tg.tensor([0, 1]), name="bounds")
    build(ep, tmp_path)
    lib = ctypes.CDLL(os.path.join(str(tmp_path), "libbounds.so"))

    class Tensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("shape", ctypes.POINTER(ctypes.c_int64))]

    enum = {"TG_FLOAT32": 0, "TG_FLOAT64": 1, "TG_INT64": 2, "TG_INT32": 3, "TG_BOOL": 4}
    keep = []

    def tensors(specs, arrays):
        ts = (Tensor * len(specs))()
        for k, (t, a) in enumerate(zip(specs, arrays)):
            shape = (ctypes.c_int64 * max(len(t.shape), 1))(*t.shape)
            keep.append(shape)
            ts[k] = Tensor(a.ctypes.data, enum[t.enum], len(t.shape), shape)
        return ts

    assert [t.role for t in ep.outputs][-1] == "updated"
    state = w.numpy().copy()  # (its buffer is passed as the input and as its "updated" output)
    result = np.zeros((), np.float32)
    error = lib.bounds_last_error
    error.restype = ctypes.c_char_p

    def call(ids):
        ids = np.array(ids, np.int64)
        return lib.bounds(tensors(ep.inputs, [ids, state]), 2, tensors(ep.outputs, [result, state]), 2)

    assert call([0, 1]) == 0, error()
    np.testing.assert_array_equal(state, w.numpy() + 1)
    for bad in ([-1, 0], [0, 5], [10 ** 12, 0]):
        before = state.copy()
        assert call(bad) == 2
        assert error().decode() == "bounds: an index input is out of bounds (outputs are unspecified)"
        np.testing.assert_array_equal(state, before)
