"""``tg.nn.functional`` against ``torch.nn.functional``: values and gradients of every
composite, PyTorch's conventions (ties in max-pooling, padding_idx, ignore_index, label
smoothing, ceil mode), dropout's statistics and determinism, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
TF = torch.nn.functional

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402
import tracegrad.nn.functional as F  # noqa: E402
from tracegrad.ops import nn as N  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4))
Y = RNG.random((5, 4))
IMG = RNG.standard_normal((2, 4, 7, 6))


def both(fn_name, *args, **kwargs):
    """(tracegrad function, torch function) with the same extra arguments."""
    return (lambda *t: getattr(F, fn_name)(*t, *args, **kwargs),
            lambda *t: getattr(TF, fn_name)(*t, *args, **kwargs))


@pytest.mark.parametrize("name,kwargs", [
    ("relu", {}), ("sigmoid", {}), ("tanh", {}), ("silu", {}),
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("leaky_relu", {"negative_slope": 0.2}),
    ("softplus", {"beta": 2.0}), ("softmax", {"dim": 1}), ("softmax", {"dim": 0}),
    ("log_softmax", {"dim": 1}), ("log_softmax", {"dim": -2}),
])
def test_activations_match_torch(name, kwargs):
    oracle.compare_fn(*both(name, **kwargs), [X * 3])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_as_method_and_top_level_function(name):
    """``t.softmax(dim)``, ``tg.softmax(t, dim)`` (and log_softmax) as in torch."""
    oracle.compare_fn(lambda x: getattr(x, name)(1), lambda x: getattr(x, name)(1), [X])
    oracle.compare_fn(lambda x: getattr(tg, name)(x, -1, dtype=tg.float64),
                      lambda x: getattr(torch, name)(x, -1, dtype=torch.float64), [X])


def test_softmax_is_stable_for_large_inputs():
    big = np.array([[1000.0, 0.0, -1000.0], [5e3, 5e3, 5e3]])
    for name in ("softmax", "log_softmax"):
        oracle.compare_fn(*both(name, dim=1), [big])


def test_linear_matches_torch():
    w, b = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    oracle.compare_fn(F.linear, TF.linear, [X, w, b])
    oracle.compare_fn(lambda x, w: F.linear(x, w), lambda x, w: TF.linear(x, w), [X[0], w])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses_match_torch(reduction):
    oracle.compare_fn(*both("mse_loss", reduction=reduction), [X, Y])
    oracle.compare_fn(*both("l1_loss", reduction=reduction), [X, Y])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_integer_targets_match_torch(reduction, smoothing, weighted):
    target = np.array([0, 3, 1, 1, 2])
    target[1] = -100  # ignored
    w = RNG.uniform(0.5, 2, 4) if weighted else None

    def run(lib, x):
        m = F if lib == "tg" else TF
        make = tg.tensor if lib == "tg" else torch.tensor
        return m.cross_entropy(x, make(target), weight=None if w is None else make(w),
                               reduction=reduction, label_smoothing=smoothing)

    oracle.compare_fn(lambda x: run("tg", x), lambda x: run("torch", x), [X])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_probability_targets_match_torch(reduction, smoothing):
    probs = RNG.dirichlet(np.ones(4), 5)
    oracle.compare_fn(*both("cross_entropy", reduction=reduction, label_smoothing=smoothing),
                      [X, probs])


def test_cross_entropy_spatial_and_unbatched():
    x3, t3 = RNG.standard_normal((2, 3, 4)), RNG.integers(0, 3, (2, 4))
    oracle.compare_fn(lambda x: F.cross_entropy(x, tg.tensor(t3)),
                      lambda x: TF.cross_entropy(x, torch.tensor(t3)), [x3])
    oracle.compare_fn(lambda x: F.cross_entropy(x, tg.tensor(2)),
                      lambda x: TF.cross_entropy(x, torch.tensor(2)), [X[0]])
    oracle.compare_fn(lambda x: F.nll_loss(F.log_softmax(x, 1), tg.tensor([1, 0, 3, 3, 2]), reduction="sum"),
                      lambda x: TF.nll_loss(TF.log_softmax(x, 1), torch.tensor([1, 0, 3, 3, 2]),
                                            reduction="sum"), [X])


def test_cross_entropy_errors():
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(tg.tensor(X), tg.tensor([0, 1, 2, 3, 7]))
    with pytest.raises(ValueError, match="Expected target of shape"):
        F.cross_entropy(tg.tensor(X), tg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected scalar type Long"):
        F.nll_loss(tg.tensor(X), tg.tensor([0.0, 1.0, 2.0, 3.0, 1.0]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weights", [False, True])
def test_bce_with_logits_matches_torch(reduction, weights):
    w, pw = RNG.uniform(0.5, 2, 4), RNG.uniform(0.5, 2, 4)

    def run(lib, x, y):
        m = F if lib == "tg" else TF
        make = tg.tensor if lib == "tg" else torch.tensor
        kw = dict(weight=make(w), pos_weight=make(pw)) if weights else {}
        return m.binary_cross_entropy_with_logits(x * 30, y, reduction=reduction, **kw)

    oracle.compare_fn(lambda x, y: run("tg", x, y), lambda x, y: run("torch", x, y), [X, Y])


def test_layer_norm_matches_torch():
    x = RNG.standard_normal((2, 3, 4))
    w, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    oracle.compare_fn(lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
                      lambda x, w, b: TF.layer_norm(x, (3, 4), w, b), [x, w, b])
    oracle.compare_fn(lambda x: F.layer_norm(x, 4, eps=1e-3), lambda x: TF.layer_norm(x, (4,), eps=1e-3),
                      [x])
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 5\]"):
        F.layer_norm(tg.tensor(x), (5,))


def test_embedding_matches_torch_and_padding_row_gets_no_grad():
    weight, ids = RNG.standard_normal((6, 3)), np.array([[0, 2, 5], [2, 2, 1]])
    for pad in (None, 2, -1):
        oracle.compare_fn(lambda e: F.embedding(tg.tensor(ids), e, padding_idx=pad),
                          lambda e: TF.embedding(torch.tensor(ids), e, padding_idx=pad), [weight])
    e = tg.tensor(weight, requires_grad=True)
    F.embedding(tg.tensor(ids), e, padding_idx=2).sum().backward()
    assert not e.grad.numpy()[2].any() and e.grad.numpy()[0].all()
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(tg.tensor([6]), e)


def test_one_hot_matches_torch():
    t = np.array([0, 3, 1])
    oracle.assert_close(F.one_hot(tg.tensor(t)), TF.one_hot(torch.tensor(t)))
    oracle.assert_close(F.one_hot(tg.tensor(t), 5), TF.one_hot(torch.tensor(t), 5))


# ----------------------------------------------------------------------------- convolution and pooling
@pytest.mark.parametrize("kwargs", [
    {}, {"stride": 2}, {"padding": 1}, {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)},
    {"groups": 2}, {"groups": 4, "padding": "same"}, {"padding": "valid", "dilation": 2},
])
def test_conv2d_matches_torch(kwargs):
    groups = kwargs.get("groups", 1)
    w, b = RNG.standard_normal((4, 4 // groups, 3, 2)), RNG.standard_normal(4)
    oracle.compare_fn(lambda x, w, b: F.conv2d(x, w, b, **kwargs),
                      lambda x, w, b: TF.conv2d(x, w, b, **kwargs), [IMG, w, b])


def test_conv2d_unbatched_and_errors():
    w = RNG.standard_normal((3, 4, 2, 2))
    oracle.compare_fn(lambda x, w: F.conv2d(x, w), lambda x, w: TF.conv2d(x, w), [IMG[0], w])
    with pytest.raises(RuntimeError, match="to have 8 channels, but got 4 channels"):
        F.conv2d(tg.tensor(IMG), tg.tensor(RNG.standard_normal((4, 4, 2, 2))), groups=2)
    with pytest.raises(RuntimeError, match="Expected 3D .* or 4D"):
        F.conv2d(tg.tensor(X), tg.tensor(w))
    with pytest.raises(RuntimeError, match="too small"):
        F.conv2d(tg.tensor(IMG[:, :, :1]), tg.tensor(w))


POOLS = [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
         {"kernel_size": (2, 3), "stride": (2, 2), "padding": (1, 0)}, {"kernel_size": 3, "stride": 2}]


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kwargs", POOLS)
def test_max_pool2d_matches_torch(kwargs, ceil_mode):
    oracle.compare_fn(*both("max_pool2d", ceil_mode=ceil_mode, **kwargs), [IMG])
    ours = F.max_pool2d(tg.tensor(IMG), return_indices=True, ceil_mode=ceil_mode, **kwargs)[1]
    ref = TF.max_pool2d(torch.from_numpy(IMG), return_indices=True, ceil_mode=ceil_mode, **kwargs)[1]
    oracle.assert_close(ours, ref)


def test_max_pool2d_dilation_and_unbatched():
    oracle.compare_fn(*both("max_pool2d", (2, 3), stride=1, dilation=(2, 1), padding=(1, 1)), [IMG])
    oracle.compare_fn(*both("max_pool2d", 2), [IMG[0]])


def test_max_pool2d_ties_send_the_gradient_to_one_element():
    x = np.ones((1, 1, 4, 4))
    oracle.compare_fn(*both("max_pool2d", 2), [x])
    t = tg.tensor(x, requires_grad=True)
    F.max_pool2d(t, 2).sum().backward()
    assert t.grad.numpy().sum() == 4 and t.grad.numpy().max() == 1


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kwargs", POOLS)
def test_avg_pool2d_matches_torch(kwargs, ceil_mode, count_include_pad):
    oracle.compare_fn(*both("avg_pool2d", ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                            **kwargs), [IMG])


def test_avg_pool2d_divisor_override():
    oracle.compare_fn(*both("avg_pool2d", 3, stride=2, padding=1, divisor_override=5), [IMG])


def test_pool_padding_limit_like_torch():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(tg.tensor(IMG), 2, padding=2)


def test_unfold_fold_match_torch():
    x = RNG.standard_normal((2, 3, 5, 6))
    oracle.compare_fn(*both("unfold", (2, 3), padding=1, stride=2), [x])
    cols = RNG.standard_normal((2, 18, 9))
    oracle.compare_fn(*both("fold", (5, 6), (2, 3), padding=1, stride=2), [cols])


# ----------------------------------------------------------------------------- dropout
def test_dropout_scales_kept_elements_and_matches_mask_in_backward():
    tg.manual_seed(0)
    x = tg.ones(200, 50, dtype=tg.float64, requires_grad=True)
    y = F.dropout(x, p=0.3)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.7)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())


def test_dropout_is_reproducible_under_manual_seed_and_fresh_each_call():
    x = tg.ones(64)
    tg.manual_seed(3)
    a, b = F.dropout(x, 0.5), F.dropout(x, 0.5)
    tg.manual_seed(3)
    c = F.dropout(x, 0.5)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    assert (a.numpy() != b.numpy()).any()


def test_dropout_eval_identity_and_extremes():
    x = tg.tensor(X)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).numpy().any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


def test_dropout_mask_generator_is_uniform_and_counter_based():
    u = N.uniform_from_seed(12345, 100000)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.01
    # element i depends only on (seed, i): a prefix is the same whatever the total size
    np.testing.assert_array_equal(N.uniform_from_seed(12345, 10), u[:10])
    assert (N.uniform_from_seed(12346, 10) != u[:10]).all()


def test_dropout_inside_compile_takes_a_fresh_seed_each_call():
    f = tg.compile(lambda t: F.dropout(t, 0.5), backend="interpreter", fullgraph=True)
    x = tg.ones(256)
    a, b = f(x), f(x)
    assert (a.numpy() != b.numpy()).any()
    assert set(np.unique(a.numpy())) <= {0.0, 2.0}


def test_dropout_mask_is_a_random_op_with_a_seed_input():
    from tracegrad.ops.registry import REGISTRY

    op = REGISTRY["dropout_mask"]
    assert op.random and not op.differentiable and 0 in op.nondiff_inputs
    seed = tg.tensor(7)
    a = op(seed, shape=(4, 5), p=0.5, dtype=tg.float32)
    np.testing.assert_array_equal(a.numpy(), op(seed, shape=(4, 5), p=0.5, dtype=tg.float32).numpy())
    with pytest.raises(RuntimeError, match="seed must be a 0-dim int64 tensor"):
        op(tg.tensor([7]), shape=(2,), p=0.5, dtype=tg.float32)


# ----------------------------------------------------------------------------- tracing
def test_a_training_step_of_composites_traces_and_matches_eager():
    x = tg.tensor(RNG.standard_normal((2, 3, 6, 6)), requires_grad=True)
    w = tg.tensor(RNG.standard_normal((4, 3, 3, 3)), requires_grad=True)
    emb = tg.tensor(RNG.standard_normal((5, 4)), requires_grad=True)
    t = tg.tensor([1, 3])

    def step(x, w, emb, t):
        h = F.max_pool2d(F.conv2d(x, w, padding=1).relu(), 2)
        h = F.avg_pool2d(h, 2, ceil_mode=True).flatten(2).mean(-1) + F.embedding(t, emb, padding_idx=0)
        h = h[:, [1, 0, 3, 2]] + tg.sort(h, 1).values + F.gelu(h, approximate="tanh")
        loss = F.cross_entropy(F.layer_norm(h, (4,)), t, label_smoothing=0.1)
        loss.backward()
        return loss

    compiled = tg.compile(step, backend="interpreter", fullgraph=True)
    got = compiled(x, w, emb, t)
    grads = [p.grad.numpy().copy() for p in (x, w, emb)]
    for p in (x, w, emb):
        p.grad = None
    want = step(x, w, emb, t)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    for g, p in zip(grads, (x, w, emb)):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", [None, "c"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_a_batch_whose_targets_are_all_ignored(backend, weighted, smoothing):
    """PyTorch's mean loss is NaN (nothing to average) and the gradients are zeros, not NaN (a
    padding-only batch must not poison the parameters)."""
    rng = np.random.default_rng(3)
    x, target, weight = rng.standard_normal((4, 5)), np.full(4, -100), rng.random(5) + 0.5

    def loss_and_grad(lib, functional, grad):
        def step(xt, t):
            loss = functional.cross_entropy(xt, t, weight=lib.tensor(weight) if weighted else None,
                                            label_smoothing=smoothing)
            return loss.detach(), grad(loss, [xt])[0]
        return step

    step = loss_and_grad(tg, F, tg.autograd.grad)
    step = tg.compile(step, backend=backend) if backend else step
    loss, grad = step(tg.tensor(x, requires_grad=True), tg.tensor(target))
    want_loss, want_grad = loss_and_grad(torch, TF, torch.autograd.grad)(
        torch.tensor(x, requires_grad=True), torch.tensor(target))
    assert np.isnan(loss.numpy()) and np.isnan(want_loss.numpy())
    np.testing.assert_array_equal(grad.numpy(), want_grad.numpy())
