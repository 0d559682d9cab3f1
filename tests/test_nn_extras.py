"""The activations, losses, normalisation, padding, containers and gradient clipping added to
``tg.nn`` beyond the API contract's list, against PyTorch: values and gradients eagerly, and a
compiled training step (BatchNorm's running statistics written back) against torch's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(4)
X = RNG.standard_normal((4, 6))
P = 1 / (1 + np.exp(-RNG.standard_normal((4, 6))))
Y01 = (RNG.random((4, 6)) > 0.5).astype(np.float64)
W24 = RNG.standard_normal((4, 6))
BAG_IDX, BAG_OFF = np.array([1, 2, 3, 0, 3, 2, 1, 1]), np.array([0, 3, 3, 5])
EDGES = np.array([[-4.0, -3.0, -2.5, -1.0, -0.0, 0.0], [0.5, 1.0, 2.0, 3.0, 3.5, 6.0],
                  [7.0, -7.0, 0.25, -0.25, 5.9, 6.1], [1e-3, -1e-3, 2.9, 3.1, -2.9, -3.1]])

# name: (call on the functional module, inputs; the first input is differentiated)
FUNCTIONAL = {
    "elu": (lambda F, x: F.elu(x, alpha=0.7), [X]),
    "mish": (lambda F, x: F.mish(x), [X]),
    "hardtanh": (lambda F, x: F.hardtanh(x * 2, -1.5, 1.0), [X]),
    "logsigmoid": (lambda F, x: F.logsigmoid(x * 40), [X]),
    "softsign": (lambda F, x: F.softsign(x), [X]),
    "glu": (lambda F, x: F.glu(x, 1), [X]),
    "binary_cross_entropy": (lambda F, p, y: F.binary_cross_entropy(p, y), [P, Y01]),
    "binary_cross_entropy-edges": (lambda F, p, y: F.binary_cross_entropy(p * y, y, reduction="sum"), [P, Y01]),
    "smooth_l1_loss": (lambda F, x, y: F.smooth_l1_loss(x, y, beta=0.5), [X, Y01]),
    "huber_loss": (lambda F, x, y: F.huber_loss(x * 3, y, reduction="none", delta=2.0), [X, Y01]),
    "normalize": (lambda F, x: F.normalize(x, dim=0), [X]),
    "normalize-p1": (lambda F, x: F.normalize(x, p=1.0, dim=1), [X]),
    "cosine_similarity": (lambda F, x, y: F.cosine_similarity(x, y + x), [X, Y01]),
    "pad": (lambda F, x: F.pad(x, (1, 2)), [X]),
    "pad-crop-value": (lambda F, x: F.pad(x.reshape(2, 2, 6), (-1, 1, 2, 0), value=0.5), [X]),
    "pad-reflect": (lambda F, x: F.pad(x.reshape(1, 4, 6), (5, 2), mode="reflect"), [X]),
    "pad-reflect-2d": (lambda F, x: F.pad(x.reshape(1, 1, 4, 6), (2, -1, 3, 1), mode="reflect"), [X]),
    "pad-replicate-2d": (lambda F, x: F.pad(x.reshape(2, 2, 6), (7, 1, 0, 3), mode="replicate"), [X]),
    "pad-replicate-3d": (lambda F, x: F.pad(x.reshape(1, 2, 2, 6), (1, 1, 1, 0, 2, 2), mode="replicate"), [X]),
    "pad-circular": (lambda F, x: F.pad(x.reshape(1, 4, 6), (-2, 4), mode="circular"), [X]),
    "pad-circular-2d": (lambda F, x: F.pad(x.reshape(1, 1, 4, 6), (6, 0, 1, 3), mode="circular"), [X]),
    "attention": (lambda F, q, k: F.scaled_dot_product_attention(q, k, k * 2), [X.reshape(2, 3, 4), Y01.reshape(2, 3, 4)]),
    "attention-causal-scale": (lambda F, q, k: F.scaled_dot_product_attention(q, k, k, is_causal=True, scale=0.7),
                               [X.reshape(2, 3, 4), Y01.reshape(2, 3, 4)]),
    "attention-bool-mask": (lambda F, q, k: F.scaled_dot_product_attention(q, k, k, attn_mask=k[0, :, :3] > 0.5),
                            [X.reshape(2, 3, 4), Y01.reshape(2, 3, 4) + np.eye(3, 4)]),
    "attention-float-mask": (lambda F, q, k: F.scaled_dot_product_attention(q, k, k, attn_mask=k[1, :, :3]),
                             [X.reshape(2, 3, 4), Y01.reshape(2, 3, 4)]),
    "attention-gqa": (lambda F, q, k: F.scaled_dot_product_attention(q.reshape(1, 4, 2, 3), k[:2].reshape(1, 2, 2, 3),
                                                                      k[2:].reshape(1, 2, 2, 3), enable_gqa=True),
                      [X[:, :6], Y01[:, :6]]),
    # functional_more.py (EDGES holds each activation's branch points, where the gradient's
    # side is PyTorch's convention)
    "relu6": (lambda F, x: F.relu6(x * 4) + F.relu6(x), [EDGES]),
    "selu": (lambda F, x: F.selu(x), [EDGES]),
    "celu": (lambda F, x: F.celu(x, alpha=0.7), [EDGES]),
    "hardswish": (lambda F, x: F.hardswish(x), [EDGES]),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x), [EDGES]),
    "softmin": (lambda F, x: F.softmin(x, dim=0), [X]),
    "tanhshrink": (lambda F, x: F.tanhshrink(x), [X]),
    "softshrink": (lambda F, x: F.softshrink(x, 0.5), [EDGES / 6]),
    "hardshrink": (lambda F, x: F.hardshrink(x, 0.5), [EDGES / 6]),
    "threshold": (lambda F, x: F.threshold(x, 1.0, -2.0), [EDGES]),
    "prelu": (lambda F, x, w: F.prelu(x.reshape(2, 3, 4), w[0, :3]), [X, Y01]),
    "prelu-one": (lambda F, x, w: F.prelu(x, w[0, :1]), [X, Y01]),
    "kl_div-batchmean": (lambda F, x, p: F.kl_div(F.log_softmax(x, 1), p * (p > 0.3), reduction="batchmean"), [X, P]),
    "kl_div-log_target": (lambda F, x, p: F.kl_div(x, p.log(), reduction="sum", log_target=True), [X, P]),
    "adaptive_avg_pool2d": (lambda F, x: F.adaptive_avg_pool2d(x.reshape(1, 2, 3, 4), (2, 3)), [X]),
    "adaptive_avg_pool1d": (lambda F, x: F.adaptive_avg_pool1d(x.reshape(2, 2, 6), 4), [X]),
    "interpolate-nearest": (lambda F, x: F.interpolate(x.reshape(1, 2, 3, 4), size=(5, 7)), [X]),
    "interpolate-nearest-exact": (lambda F, x: F.interpolate(x.reshape(1, 2, 3, 4), scale_factor=1.5, mode="nearest-exact"), [X]),
    "interpolate-linear": (lambda F, x: F.interpolate(x.reshape(2, 2, 6), size=9, mode="linear"), [X]),
    "interpolate-bilinear": (lambda F, x: F.interpolate(x.reshape(1, 2, 3, 4), scale_factor=(2, 0.6), mode="bilinear"), [X]),
    "interpolate-bilinear-corners": (lambda F, x: F.interpolate(x.reshape(1, 2, 3, 4), size=(4, 7), mode="bilinear", align_corners=True), [X]),
    "interpolate-trilinear": (lambda F, x: F.interpolate(x.reshape(1, 1, 2, 3, 4), scale_factor=2, mode="trilinear"), [X]),
    "interpolate-bicubic": (lambda F, x: F.interpolate(x.reshape(1, 2, 3, 4), size=(5, 9), mode="bicubic"), [X]),
    "interpolate-bicubic-corners": (lambda F, x: F.interpolate(x.reshape(1, 2, 3, 4), scale_factor=(0.7, 2.5),
                                                               mode="bicubic", align_corners=True), [X]),
    "pixel_shuffle": (lambda F, x: F.pixel_shuffle(x.reshape(1, 4, 2, 3), 2), [X]),
    "pixel_unshuffle": (lambda F, x: F.pixel_unshuffle(x.reshape(1, 1, 4, 6), 2), [X]),
    "group_norm": (lambda F, x, y: F.group_norm(x.reshape(2, 4, 3), 2, y[0, :4], y[1, :4]), [X, Y01]),
    "batch_norm-train": (lambda F, x: F.batch_norm(x, None, None, training=True), [X]),
    "batch_norm-eval": (lambda F, x, y: F.batch_norm(x, y[0], y[1].abs() + 0.5, y[2], y[3]), [X, Y01]),
    # functional_extra.py (these also compile: COMPILED below)
    "rms_norm": (lambda F, x, w: F.rms_norm(x.reshape(2, 2, 6), (2, 6), w[:2] + 0.5), [X, Y01]),
    "rms_norm-eps": (lambda F, x: F.rms_norm(x, (6,), eps=0.1), [X]),
    "local_response_norm": (lambda F, x: F.local_response_norm(x.reshape(2, 3, 4), 3, 0.5, 0.6, 1.5), [X]),
    "local_response_norm-4d": (lambda F, x: F.local_response_norm(x.reshape(1, 4, 2, 3), 2, 0.3), [X]),
    "bilinear": (lambda F, x, y, w: F.bilinear(x[:, :2], y[:, :3] + x[:, 3:], w.reshape(4, 2, 3), w[0, :4]),
                 [X, Y01, W24]),
    "channel_shuffle": (lambda F, x: F.channel_shuffle(x.reshape(1, 6, 4), 3), [X]),
    "pdist": (lambda F, x: F.pdist(x), [X]),
    "pdist-p1.5": (lambda F, x: F.pdist(x.reshape(6, 4), 1.5), [X]),
    "embedding_bag-mean": (lambda F, w, i, o: F.embedding_bag(i, w, o), [X, BAG_IDX, BAG_OFF]),
    "embedding_bag-sum-weights": (lambda F, w, i, o: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=w[0, :2].repeat(4)),
                                  [X, BAG_IDX, BAG_OFF]),
    "embedding_bag-max-padding": (lambda F, w, i, o: F.embedding_bag(i, w, o, mode="max", padding_idx=3), [X, BAG_IDX, BAG_OFF]),
    "embedding_bag-last-offset": (lambda F, w, i, o: F.embedding_bag(i, w, o, mode="mean", include_last_offset=True, padding_idx=0),
                                  [X, BAG_IDX, np.append(BAG_OFF, 8)]),
    "embedding_bag-2d": (lambda F, w, i: F.embedding_bag(i.reshape(2, 4), w, mode="max"), [X, BAG_IDX]),
    "adaptive_max_pool2d": (lambda F, x: F.adaptive_max_pool2d(x.reshape(1, 2, 3, 4), (2, 3)), [X]),
    "adaptive_max_pool1d": (lambda F, x: F.adaptive_max_pool1d(x.reshape(2, 2, 6), 4), [X]),
    "adaptive_max_pool3d": (lambda F, x: F.adaptive_max_pool3d(x.reshape(1, 2, 3, 4), (2, None, 3)), [X]),
    "adaptive_avg_pool3d": (lambda F, x: F.adaptive_avg_pool3d(x.reshape(1, 2, 3, 4), (2, 3, 3)), [X]),
    "lp_pool2d": (lambda F, x: F.lp_pool2d(x.reshape(1, 2, 3, 4), 2.0, 2, stride=1), [X]),
    "lp_pool1d": (lambda F, x: F.lp_pool1d(x.reshape(2, 2, 6) ** 2 + 0.1, 1.5, 3, 2, ceil_mode=True), [X]),
    "conv_transpose1d": (lambda F, x, w: F.conv_transpose1d(x.reshape(2, 2, 6), w.reshape(2, 3, 4), w[0, :3], stride=2,
                                                            padding=1, output_padding=1), [X, W24]),
    "conv_transpose1d-groups": (lambda F, x, w: F.conv_transpose1d(x.reshape(2, 12), w.reshape(2, 3, 4), groups=2,
                                                                   dilation=2), [X, W24]),
    "conv_transpose3d": (lambda F, x, w: F.conv_transpose3d(x.reshape(1, 2, 3, 2, 2), w.reshape(2, 3, 2, 2, 1), w[0, :3],
                                                            stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2)),
                         [X, W24]),
    "conv_transpose3d-groups": (lambda F, x, w: F.conv_transpose3d(x.reshape(2, 2, 1, 3, 2), w.reshape(2, 1, 3, 2, 2),
                                                                   groups=2, dilation=(2, 1, 2), padding=1), [X, W24]),
    "conv_transpose3d-unbatched": (lambda F, x, w: F.conv_transpose3d(x.reshape(2, 3, 2, 2), w.reshape(2, 3, 1, 2, 2),
                                                                      stride=3, padding=2, output_padding=2,
                                                                      dilation=2), [X, W24]),
    "unfold-unbatched": (lambda F, x: F.unfold(x.reshape(1, 4, 6), (2, 3), padding=1, stride=(1, 2)), [X]),
    "fold-unbatched": (lambda F, x: F.fold(x.reshape(6, 4), (3, 4), (2, 3)), [X]),
    "rrelu-eval": (lambda F, x: F.rrelu(x, 0.1, 0.3), [EDGES]),
    "upsample_bilinear": (lambda F, x: F.upsample_bilinear(x.reshape(1, 2, 3, 4), scale_factor=2), [X]),
    "upsample_nearest": (lambda F, x: F.upsample_nearest(x.reshape(1, 2, 3, 4), size=(5, 7)), [X]),
    # losses_more.py: margins exactly at their hinge (no gradient there, as torch's kernels)
    "multi_margin_loss-hinge": (lambda F, x, t: F.multi_margin_loss(x, t, reduction="none"),
                                [np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 1.0]]), np.array([0, 1])]),
    "multi_margin_loss-p2-weight": (lambda F, x, t, w: F.multi_margin_loss(x, t, p=2, margin=0.5, weight=w[0]),
                                    [X, np.array([0, 3, 5, 1]), P]),
    "multilabel_margin_loss-hinge": (lambda F, x, t: F.multilabel_margin_loss(x, t, reduction="sum"),
                                     [np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 1.0]]), np.array([[0, -1, 2], [1, 1, -1]])]),
    "multilabel_margin_loss-1d": (lambda F, x, t: F.multilabel_margin_loss(x[0], t), [X, np.array([4, 0, 2, -1, 1, 1])]),
    "triplet_margin_with_distance_loss": (lambda F, a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v), margin=0.5, swap=True), [X, P, Y01]),
}
# the rows from functional_extra.py on: compiled (fullgraph, float32) against eager as well
COMPILED = [name for name in FUNCTIONAL][list(FUNCTIONAL).index("rms_norm"):]

# PyTorch's backward of these uses float32 constants (1/6; celu's 1/alpha) also for float64
GRAD_RTOL = {"hardsigmoid": 1e-6, "hardswish": 1e-6, "celu": 1e-6}
# in float32, compiled against eager (sums in another order)
COMPILED_RTOL = {"pdist-p1.5": 1e-4, "lp_pool1d": 1e-4}


def _tensors(lib, arrays):
    return [lib.tensor(a, requires_grad=(i == 0)) for i, a in enumerate(arrays)]


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_matches_torch(name):
    fn, arrays = FUNCTIONAL[name]
    ours_in, theirs_in = _tensors(tg, arrays), _tensors(torch, arrays)
    ours, theirs = fn(tg.nn.functional, *ours_in), fn(torch.nn.functional, *theirs_in)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = np.random.default_rng(1).standard_normal(tuple(theirs.shape))
    ours.backward(tg.tensor(cot))
    theirs.backward(torch.tensor(cot))
    np.testing.assert_allclose(ours_in[0].grad.numpy(), theirs_in[0].grad.numpy(),
                               rtol=GRAD_RTOL.get(name, 1e-9), atol=1e-12)


@pytest.mark.parametrize("name", COMPILED)
def test_functional_compiles_to_eager_values(name):
    fn, arrays = FUNCTIONAL[name]
    inputs = [tg.tensor(a.astype(np.float32) if a.dtype == np.float64 else a) for a in arrays]
    compiled = tg.compile(lambda *xs: fn(tg.nn.functional, *xs), backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(*inputs).numpy(), fn(tg.nn.functional, *inputs).numpy(),
                               rtol=COMPILED_RTOL.get(name, 1e-5), atol=1e-6)


@pytest.mark.parametrize("name, args", [("SiLU", ()), ("Softplus", (2.0, 5.0)), ("LeakyReLU", (0.2,)),
                                        ("ELU", (0.5,)), ("Mish", ()), ("Hardtanh", (-0.5, 0.5)),
                                        ("LogSigmoid", ()), ("Softsign", ()), ("GLU", (0,))])
def test_activation_modules_match_torch(name, args):
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ours(tg.tensor(X)).numpy(), theirs(torch.tensor(X)).numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, kwargs, inputs", [
    ("L1Loss", {}, [X, Y01]), ("SmoothL1Loss", {"beta": 0.3}, [X, Y01]),
    ("HuberLoss", {"delta": 0.4, "reduction": "sum"}, [X, Y01]), ("BCELoss", {}, [P, Y01]),
    ("NLLLoss", {"reduction": "sum"}, [np.log(P / P.sum(1, keepdims=True)), np.array([0, 5, 2, 1])])])
def test_loss_modules_match_torch(name, kwargs, inputs):
    ours = getattr(tg.nn, name)(**kwargs)(*[tg.tensor(a) for a in inputs])
    theirs = getattr(torch.nn, name)(**kwargs)(*[torch.tensor(a) for a in inputs])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def _net(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.SiLU(), nn.AvgPool2d(2),
                         nn.Flatten(), nn.Linear(16, 8), nn.BatchNorm1d(8), nn.LeakyReLU(0.1),
                         nn.Linear(8, 3))


@pytest.mark.parametrize("backend", [None, "c"])
def test_batchnorm_training_step_with_clipping_matches_torch(backend):
    """Three SGD steps with BatchNorm1d/2d and clip_grad_norm_, eagerly and as one compiled
    program (fullgraph: no fallback): losses, parameters and running statistics as torch's."""
    ours, theirs = _net(tg), _net(torch)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    opt, topt = tg.optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = tg.nn.functional.cross_entropy(ours(x), y)
        loss.backward()
        norm = tg.nn.utils.clip_grad_norm_(ours.parameters(), 0.5)
        opt.step()
        return loss, norm

    run = tg.compile(step, backend=backend, fullgraph=True) if backend else step
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, y = rng.standard_normal((8, 1, 4, 4)).astype(np.float32), rng.integers(0, 3, 8)
        loss, norm = run(tg.tensor(x), tg.tensor(y))
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        tloss.backward()
        tnorm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
        topt.step()
        np.testing.assert_allclose([loss.item(), norm.item()], [tloss.item(), tnorm.item()], rtol=1e-5)
    want = theirs.state_dict()
    for k, v in ours.state_dict().items():
        np.testing.assert_allclose(v.numpy(), want[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    if backend:
        assert len(run.programs) == 1
    ours.eval()
    theirs.eval()
    x = rng.standard_normal((2, 1, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_clip_grad_value_and_parameter_vectors():
    w, tw = tg.nn.Parameter(tg.tensor(X)), torch.nn.Parameter(torch.tensor(X))
    (w * w).sum().backward()
    (tw * tw).sum().backward()
    tg.nn.utils.clip_grad_value_([w], 0.8)
    torch.nn.utils.clip_grad_value_([tw], 0.8)
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
    vec = tg.nn.utils.parameters_to_vector([w, w[:1]])
    assert vec.shape == (30,)
    tg.nn.utils.vector_to_parameters(tg.zeros(24), [w])
    assert not w.detach().numpy().any()


def test_containers_register_what_they_hold():
    ours = tg.nn.ModuleDict({"enc": tg.nn.Linear(2, 3), "dec": tg.nn.Linear(3, 2)})
    ours["act"] = tg.nn.ReLU()
    assert list(ours.keys()) == ["enc", "dec", "act"] and "dec" in ours and len(ours) == 3
    theirs = torch.nn.ModuleDict({"enc": torch.nn.Linear(2, 3), "dec": torch.nn.Linear(3, 2)})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    plist = tg.nn.ParameterList([tg.ones(2), tg.nn.Parameter(tg.zeros(3))])
    assert [tuple(p.shape) for p in plist.parameters()] == [(2,), (3,)]
    assert list(plist.state_dict()) == ["0", "1"]
    assert tg.nn.Unflatten(1, (2, 3))(tg.ones(4, 6)).shape == (4, 2, 3)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="expected 4D input"):
        tg.nn.BatchNorm2d(3)(tg.ones(2, 3))
    with pytest.raises(ValueError, match="expected 3 channels"):
        tg.nn.BatchNorm1d(3)(tg.ones(2, 4))
    with pytest.raises(NotImplementedError, match="unknown mode 'mirror'"):
        tg.nn.functional.pad(tg.ones(2, 2), (1, 1), mode="mirror")
    with pytest.raises(ValueError, match="doesn't take in value"):
        tg.nn.functional.pad(tg.ones(2, 2), (1, 1), mode="reflect", value=1.0)
    with pytest.raises(RuntimeError, match="should be less than the corresponding input dimension"):
        tg.nn.functional.pad(tg.ones(2, 2), (2, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        tg.nn.functional.pad(tg.ones(1, 2, 3), (-1, 3), mode="circular")
    with pytest.raises(NotImplementedError, match="last 1 to 3 dims"):
        tg.nn.functional.pad(tg.ones(3), (1, 1), mode="replicate")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        tg.nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding must be an int or 4 ints"):
        tg.nn.ReflectionPad2d((1, 2))
    with pytest.raises(RuntimeError, match="multiple of key heads"):
        tg.nn.functional.scaled_dot_product_attention(tg.ones(1, 3, 2, 4), tg.ones(1, 2, 2, 4),
                                                      tg.ones(1, 2, 2, 4), enable_gqa=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'slope'"):
        tg.nn.LeakyReLU(slope=0.1)
    F = tg.nn.functional
    with pytest.raises(RuntimeError, match="Got 5 channels and 2 groups"):
        F.channel_shuffle(tg.ones(1, 5, 2), 2)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(tg.tensor([[0, 1]]), tg.ones(3, 2), tg.tensor([0]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum' \\(got mode='mean'\\)"):
        F.embedding_bag(tg.tensor([0, 1]), tg.ones(3, 2), tg.tensor([0]), per_sample_weights=tg.ones(2))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(tg.tensor([0, 1]), tg.ones(3, 2), tg.tensor([1]))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(tg.ones(2, 3, 4))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        tg.nn.Softmax2d()(tg.ones(2, 3))
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality input \\(got 2 dimensions\\)"):
        F.local_response_norm(tg.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="input sizes 2 and 3 do not match weight of size \\[4, 2, 2\\]"):
        F.bilinear(tg.ones(5, 2), tg.ones(5, 3), tg.ones(4, 2, 2))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.alpha_dropout(tg.ones(3), 1.5, True)


def test_binary_cross_entropy_differentiates_twice_and_compiles():
    p = tg.tensor(P, requires_grad=True)
    y = tg.tensor(Y01 * 0.8 + 0.1, requires_grad=True)
    bce = lambda p, y: tg.nn.functional.binary_cross_entropy(p, y)
    assert tg.autograd.gradcheck(bce, (p, y)) and tg.autograd.gradgradcheck(bce, (p, y))
    p32 = tg.tensor(P.astype(np.float32), requires_grad=True)
    y32 = tg.tensor(Y01.astype(np.float32))
    grad_p = lambda p, y: tg.autograd.grad(bce(p, y), p)[0]
    compiled = tg.compile(grad_p, backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(p32, y32).numpy(), grad_p(p32, y32).numpy(), rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 2, "dilation": 2, "groups": 2},
                                    {"padding": "same", "bias": False}], ids=str)
def test_conv1d_and_1d_pooling_match_torch(kwargs):
    tg.manual_seed(0)
    ours = tg.nn.Conv1d(4, 6, 5 if "dilation" in kwargs else 3, **kwargs)
    theirs = torch.nn.Conv1d(4, 6, 5 if "dilation" in kwargs else 3, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = RNG.standard_normal((3, 4, 17)).astype(np.float32)
    pool, tpool = tg.nn.MaxPool1d(3, 2, 1), torch.nn.MaxPool1d(3, 2, 1)
    avg, tavg = tg.nn.AvgPool1d(2), torch.nn.AvgPool1d(2)
    assert repr(avg) == repr(tavg) and repr(pool) == repr(tpool)
    xt, tt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours_y, theirs_y = avg(pool(ours(xt))), tavg(tpool(theirs(tt)))
    np.testing.assert_allclose(ours_y.detach().numpy(), theirs_y.detach().numpy(), rtol=1e-5, atol=1e-6)
    ours_y.sum().backward()
    theirs_y.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-5)
    unbatched = tg.nn.functional.conv1d(tg.tensor(x[0]), ours.weight.detach(), stride=ours.stride,
                                        padding=ours.padding, dilation=ours.dilation, groups=ours.groups)
    np.testing.assert_allclose(unbatched.numpy(), ours(tg.tensor(x[:1]))[0].detach().numpy()
                               - (0 if ours.bias is None else ours.bias.detach().numpy()[:, None]),
                               rtol=1e-5, atol=1e-5)


def test_attention_block_compiles_to_eager_values():
    """A small self-attention block with GroupNorm, trained one step: compiled (fullgraph)
    against eager, and the module reprs as torch's."""
    assert repr(tg.nn.GroupNorm(2, 4)) == repr(torch.nn.GroupNorm(2, 4))
    tg.manual_seed(0)
    qkv, norm = tg.nn.Linear(8, 24), tg.nn.GroupNorm(2, 8)
    opt = tg.optim.SGD(list(qkv.parameters()) + list(norm.parameters()), lr=0.1, momentum=0.9)
    state = [p.detach().clone() for p in opt.param_groups[0]["params"]]

    def step(x):
        opt.zero_grad()
        q, k, v = qkv(x).chunk(3, dim=-1)
        out = tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        loss = norm(out.transpose(1, 2)).square().mean()
        loss.backward()
        opt.step()
        return loss

    x = tg.tensor(RNG.standard_normal((2, 5, 8)).astype(np.float32))
    eager = [step(x).item() for _ in range(2)]
    after_eager = [p.detach().numpy().copy() for p in opt.param_groups[0]["params"]]
    with tg.no_grad():
        for p, s in zip(opt.param_groups[0]["params"], state):
            p.copy_(s)
    for st in opt.state.values():
        for t in st.values():
            t.zero_()
    compiled = tg.compile(step, backend="c", fullgraph=True)
    np.testing.assert_allclose([compiled(x).item() for _ in range(2)], eager, rtol=1e-5)
    for p, want in zip(opt.param_groups[0]["params"], after_eager):
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1, "output_padding": 1},
                                    {"stride": (2, 3), "padding": (0, 1), "output_padding": (1, 2),
                                     "dilation": (1, 2)},
                                    {"groups": 2, "stride": 3, "output_padding": 2, "bias": False}], ids=str)
def test_conv_transpose2d_matches_torch_and_compiles(kwargs):
    tg.manual_seed(0)
    ours, theirs = tg.nn.ConvTranspose2d(4, 6, (3, 2), **kwargs), torch.nn.ConvTranspose2d(4, 6, (3, 2), **kwargs)
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = RNG.standard_normal((2, 4, 5, 6)).astype(np.float32)
    xt, tt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = ours(xt), theirs(tt)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    y.square().sum().backward()
    ty.square().sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    compiled = tg.compile(lambda v: ours(v).tanh(), backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(tg.tensor(x)).detach().numpy(), ours(tg.tensor(x)).tanh().detach().numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, padding, shape", [
    ("ZeroPad2d", (1, 0, 2, 1), (2, 3, 4)), ("ConstantPad1d", 2, (2, 3, 4)),
    ("ConstantPad3d", (1, 0, 0, 1, 1, 1), (1, 2, 3, 4)), ("ReflectionPad1d", (3, 1), (2, 3, 4)),
    ("ReflectionPad2d", 1, (1, 2, 3, 4)), ("ReplicationPad2d", (0, 5, 1, 2), (2, 3, 4)),
    ("ReplicationPad3d", 1, (1, 2, 3, 4)), ("CircularPad1d", (3, -1), (2, 3, 4)),
    ("CircularPad2d", (1, 2, 3, 0), (1, 2, 3, 4))])
def test_padding_modules_match_torch(name, padding, shape):
    args = (padding, 3.5) if name.startswith("Constant") else (padding,)
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    x = RNG.standard_normal(shape)
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_array_equal(yo.detach().numpy(), yt.detach().numpy())
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("conv, kwargs", [("Conv2d", {"padding": (1, 2)}), ("Conv2d", {"padding": "same", "kernel_size": 4}),
                                          ("Conv1d", {"padding": 2, "stride": 2}), ("Conv1d", {"padding": "same", "dilation": 2})],
                         ids=str)
def test_conv_padding_modes_match_torch_and_compile(mode, conv, kwargs):
    kwargs = dict({"kernel_size": 3}, **kwargs)
    tg.manual_seed(0)
    ours = getattr(tg.nn, conv)(2, 3, padding_mode=mode, **kwargs)
    theirs = getattr(torch.nn, conv)(2, 3, padding_mode=mode, **kwargs)
    assert repr(ours) == repr(theirs)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = RNG.standard_normal((2, 2, 6, 7)[:4 if conv == "Conv2d" else 3]).astype(np.float32)
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    yo.square().sum().backward()
    yt.square().sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    grad_x = lambda x: tg.autograd.grad(ours(x).square().sum(), x)[0]
    compiled = tg.compile(grad_x, backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(xo).numpy(), grad_x(xo).numpy(), rtol=1e-4, atol=1e-4)


def test_attention_dropout_zeroes_weights_as_dropout_does():
    """dropout_p drops attention weights (torch applies it whatever the module's mode): the
    same seed gives ``dropout(softmax(scores)) @ v``, eagerly and compiled."""
    F = tg.nn.functional
    q, k, v = (tg.tensor(RNG.standard_normal((2, 5, 4)).astype(np.float32)) for _ in range(3))

    def by_hand(q, k, v):
        return F.dropout(F.softmax(q @ k.transpose(-2, -1) / 2.0, -1), 0.4) @ v

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)

    tg.manual_seed(3)
    want = by_hand(q, k, v).numpy()
    tg.manual_seed(3)
    got = sdpa(q, k, v).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.allclose(got, F.scaled_dot_product_attention(q, k, v).numpy())
    compiled = tg.compile(sdpa, backend="c", fullgraph=True)
    tg.manual_seed(3)
    np.testing.assert_allclose(compiled(q, k, v).numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, args", [
    ("ReLU6", ()), ("SELU", ()), ("CELU", (0.5,)), ("Hardswish", ()), ("Hardsigmoid", ()),
    ("Softmin", (1,)), ("Tanhshrink", ()), ("Softshrink", (0.3,)), ("Hardshrink", ()),
    ("Threshold", (0.1, 20.0)), ("PReLU", ()), ("KLDivLoss", ()), ("AdaptiveAvgPool1d", (3,)),
    ("AdaptiveAvgPool2d", ((2, None),)), ("Upsample", (None, 2)), ("PixelShuffle", (2,)),
    ("PixelUnshuffle", (2,)), ("Dropout2d", (0.2,)),
    ("RMSNorm", (8,)), ("RMSNorm", ((2, 3), 1e-3, False)), ("LocalResponseNorm", (3,)),
    ("Bilinear", (3, 4, 5)), ("Dropout1d", (0.3,)), ("AlphaDropout", (0.2,)), ("Softmax2d", ()),
    ("ChannelShuffle", (2,)), ("Unfold", (3, 1, 1)), ("Fold", ((4, 5), 2)),
    ("UpsamplingNearest2d", (None, 2)), ("UpsamplingBilinear2d", ((3, 4),)), ("AdaptiveMaxPool1d", (3,)),
    ("AdaptiveMaxPool2d", ((2, None), True)), ("LPPool1d", (2, 3)), ("LPPool2d", (1.5, (2, 3), 1, True)),
    ("ConvTranspose1d", (2, 3, 4, 2)), ("ConvTranspose1d", (2, 4, 3, 1, 1, 0, 2, False, 2)),
    ("ConvTranspose3d", (2, 3, 4, 2)), ("ConvTranspose3d", (2, 4, (3, 1, 2), 1, (1, 0, 0), 0, 2, False, 2)),
    ("EmbeddingBag", (10, 3)), ("RReLU", ()), ("RReLU", (0.1, 0.2, True)), ("BatchNorm3d", (3,)),
    ("BatchNorm1d", (3, 1e-3, None, True, False)), ("InstanceNorm3d", (3,)), ("AdaptiveAvgPool3d", ((2, None, 3),)),
    ("AdaptiveMaxPool3d", (2,)), ("MaxUnpool2d", (2,)), ("FeatureAlphaDropout", ()), ("Dropout3d", ())])
def test_more_layers_have_torchs_repr(name, args):
    assert repr(getattr(tg.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


def test_resampling_network_trains_compiled_as_eager_and_as_torch():
    """Upsample (bilinear), AdaptiveAvgPool2d, Hardswish, PReLU and PixelShuffle in a model:
    one SGD step eagerly matches torch's, and the compiled step (fullgraph) matches eager."""
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.Hardswish(), nn.PixelShuffle(2),
                             nn.Upsample(scale_factor=0.5, mode="bilinear"), nn.PReLU(2),
                             nn.AdaptiveAvgPool2d((3, 2)), nn.Flatten(), nn.Linear(12, 3))

    tg.manual_seed(0)
    ours, theirs = build(tg), build(torch)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = RNG.standard_normal((4, 2, 6, 5)).astype(np.float32)
    y = np.array([0, 2, 1, 2])

    def step(model, lib, opt, x, y):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1)
    want = step(theirs, torch, opt_t, torch.tensor(x), torch.tensor(y)).item()
    opt = tg.optim.SGD(ours.parameters(), lr=0.1)
    state = [p.detach().clone() for p in ours.parameters()]
    got = step(ours, tg, opt, tg.tensor(x), tg.tensor(y)).item()
    assert abs(got - want) < 1e-5
    after = [p.detach().numpy().copy() for p in ours.parameters()]
    for a, b in zip(after, theirs.parameters()):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-4, atol=1e-5)
    with tg.no_grad():
        for p, s in zip(ours.parameters(), state):
            p.copy_(s)
    compiled = tg.compile(lambda x, y: step(ours, tg, opt, x, y), backend="c", fullgraph=True)
    assert abs(compiled(tg.tensor(x), tg.tensor(y)).item() - got) < 1e-5
    for a, p in zip(after, ours.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), a, rtol=1e-4, atol=1e-5)


LOSSES = {  # name: (constructor args, input arrays; targets as the torch module expects them)
    "MarginRankingLoss": ((0.3,), [X[:, 0], Y01[:, 0] * 2 - 0.5, np.sign(X[:, 1])]),
    "HingeEmbeddingLoss": ((0.7,), [X, np.sign(P - 0.5)]),
    "SoftMarginLoss": ((), [X, np.sign(P - 0.5)]),
    "CosineEmbeddingLoss": ((0.1,), [X, P, np.sign(X[:, 0])]),
    "TripletMarginLoss": ((2.0, 3.0), [X, P, Y01]),
    "GaussianNLLLoss": ((), [X, Y01, P + 0.1]),
    "PoissonNLLLoss": ((True, True), [X, Y01 * 3]),
    "MultiLabelSoftMarginLoss": ((), [X, Y01]),
    "PairwiseDistance": ((1.5,), [X, P]),
    "CosineSimilarity": ((0,), [X, P]),
    "InstanceNorm1d": ((2, 1e-4), [X.reshape(2, 2, 6)]),
    "MultiMarginLoss": ((2, 0.7), [X, np.array([5, 0, 2, 2])]),
    "MultiLabelMarginLoss": ((), [X, np.array([[0, 1, -1, 2, 3, 4], [5, 4, 3, 2, 1, 0], [-1, 0, 0, 0, 0, 0], [2, 2, 3, -1, -1, 0]])]),
    "TripletMarginWithDistanceLoss": ((), [X, P, Y01]),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_more_losses_and_distances_match_torch(name):
    args, arrays = LOSSES[name]
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    oi, ti = _tensors(tg, arrays), _tensors(torch, arrays)
    yo, yt = ours(*oi), theirs(*ti)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    np.testing.assert_allclose(oi[0].grad.numpy(), ti[0].grad.numpy(), rtol=1e-9, atol=1e-12)
    compiled = tg.compile(lambda *xs: ours(*xs), backend="c", fullgraph=True)
    f32 = [tg.tensor(a.astype(np.float32) if a.dtype == np.float64 else a) for a in arrays]
    np.testing.assert_allclose(compiled(*f32).numpy(), ours(*f32).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, args", [("ReLU6", ()), ("SELU", ()), ("CELU", (0.5,)), ("Hardswish", ()),
                                        ("Hardsigmoid", ()), ("Threshold", (0.0, -1.0))])
def test_inplace_activations_write_their_input_as_torch(name, args):
    values = [-4.0, -3.0, -1.0, 0.0, 0.5, 3.0, 7.0]
    ours, theirs = tg.tensor(values), torch.tensor(values)
    mod_o, mod_t = getattr(tg.nn, name)(*args, inplace=True), getattr(torch.nn, name)(*args, inplace=True)
    assert repr(mod_o) == repr(mod_t)
    assert mod_o(ours) is ours and mod_t(theirs) is theirs
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


# layers of layers_extra.py and others: (constructor args, input builder from the library);
# torch's layer is loaded with ours' state dict, then outputs and gradients of the first input
# compared
EXTRA_LAYERS = {
    "RMSNorm": ((6,), lambda L: [L.tensor(X)]),
    "Bilinear": ((2, 3, 4), lambda L: [L.tensor(X[:, :2], requires_grad=True), L.tensor(Y01[:, :3])]),
    "ConvTranspose1d": ((2, 4, 3, 2, 1, 1), lambda L: [L.tensor(X.reshape(2, 2, 6), requires_grad=True)]),
    "ConvTranspose3d": ((2, 4, (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 0), 2, True, (1, 1, 2)),
                        lambda L: [L.tensor(X.reshape(2, 2, 3, 2, 1), requires_grad=True)]),
    "EmbeddingBag": ((5, 3, None, 2.0, False, "max", False, None, False, 2),
                     lambda L: [L.tensor(BAG_IDX), L.tensor(BAG_OFF)]),
    "Softmax2d": ((), lambda L: [L.tensor(X.reshape(2, 3, 4), requires_grad=True)]),
    "UpsamplingBilinear2d": ((None, 2), lambda L: [L.tensor(X.reshape(1, 2, 3, 4), requires_grad=True)]),
    "UpsamplingNearest2d": (((4, 7),), lambda L: [L.tensor(X.reshape(1, 2, 3, 4), requires_grad=True)]),
    "Fold": (((3, 4), (2, 3)), lambda L: [L.tensor(X.reshape(1, 6, 4), requires_grad=True)]),
    "Unfold": (((2, 3), 1, 1, 2), lambda L: [L.tensor(X.reshape(1, 1, 4, 6), requires_grad=True)]),
    "LocalResponseNorm": ((2,), lambda L: [L.tensor(X.reshape(2, 3, 4), requires_grad=True)]),
    "RReLU": ((0.2, 0.4), lambda L: [L.tensor(EDGES, requires_grad=True)]),  # (eval mode)
}


@pytest.mark.parametrize("name", sorted(EXTRA_LAYERS))
def test_extra_layers_match_torch_with_loaded_state(name):
    args, inputs = EXTRA_LAYERS[name]
    tg.manual_seed(0)
    ours, theirs = getattr(tg.nn, name)(*args).double().eval(), getattr(torch.nn, name)(*args).double().eval()
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    oi, ti = inputs(tg), inputs(torch)
    yo, yt = ours(*oi), theirs(*ti)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    for a, b in [(p, q) for p, q in zip(ours.parameters(), theirs.parameters())] + \
            [(a, b) for a, b in zip(oi, ti) if b.requires_grad]:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_embedding_bag_from_pretrained_as_torchs():
    ours = tg.nn.EmbeddingBag.from_pretrained(tg.tensor(X), mode="sum", padding_idx=1)
    theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(X), mode="sum", padding_idx=1)
    assert repr(ours) == repr(theirs) and not ours.weight.requires_grad
    np.testing.assert_allclose(ours(tg.tensor(BAG_IDX), tg.tensor(BAG_OFF)).numpy(),
                               theirs(torch.tensor(BAG_IDX), torch.tensor(BAG_OFF)).numpy(), rtol=1e-12)


def test_adaptive_max_pool_indices_match_torch():
    x = RNG.standard_normal((2, 3, 7, 5))
    x[0, 0, :2, :2] = 9.0  # ties: the first maximum's index, as torch's
    three = RNG.standard_normal((2, 3, 5, 7, 4))
    three[0, 0, :2, :2, :2] = 9.0
    for size in [(2, 3, 2), (5, None, 1), 1]:
        ours = tg.nn.functional.adaptive_max_pool3d_with_indices(tg.tensor(three), size)
        theirs = torch.nn.functional.adaptive_max_pool3d_with_indices(torch.tensor(three), size)
        np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    for size in [(3, 2), (4, None), 1, (7, 5)]:
        ours = tg.nn.AdaptiveMaxPool2d(size, return_indices=True)(tg.tensor(x))
        theirs = torch.nn.AdaptiveMaxPool2d(size, return_indices=True)(torch.tensor(x))
        np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    ours = tg.nn.functional.adaptive_max_pool1d(tg.tensor(x[0, :, :, 0]), 3, return_indices=True)
    theirs = torch.nn.functional.adaptive_max_pool1d(torch.tensor(x[0, :, :, 0]), 3, return_indices=True)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        tg.nn.functional.adaptive_max_pool2d(tg.ones(4, 4), 2)


@pytest.mark.parametrize("name, args", [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)),
                                        ("hardtanh_", (-0.5, 2.0)), ("selu_", ()), ("celu_", (0.7,)),
                                        ("threshold_", (0.5, -3.0)), ("rrelu_", (0.1, 0.3))])
def test_inplace_functional_activations_write_their_input_as_torch(name, args):
    ours, theirs = tg.tensor(EDGES), torch.tensor(EDGES)
    assert getattr(tg.nn.functional, name)(ours, *args) is ours
    assert getattr(torch.nn.functional, name)(theirs, *args) is theirs
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_parameter_dict_registers_and_loads_as_torchs():
    ours = tg.nn.ParameterDict({"a": tg.ones(2), "b": tg.nn.Parameter(tg.zeros(2, 3, dtype=tg.float64))})
    theirs = torch.nn.ParameterDict({"a": torch.ones(2), "b": torch.nn.Parameter(torch.zeros(2, 3, dtype=torch.float64))})
    assert repr(ours) == repr(theirs)
    assert isinstance(ours["a"], tg.nn.Parameter) and "b" in ours and len(ours) == 2
    holder = tg.nn.Module()
    holder.params = ours
    assert [n for n, _ in holder.named_parameters()] == ["params.a", "params.b"]
    theirs.load_state_dict({k: torch.tensor(v.numpy()) + 1 for k, v in ours.state_dict().items()})
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(ours["b"].detach().numpy(), np.ones((2, 3)))
    del ours["a"]
    assert list(ours.keys()) == ["b"]


def _same_seed(fn, *args):
    tg.manual_seed(5)
    return fn(*args).numpy()


@pytest.mark.parametrize("name, shape, channels", [
    ("dropout1d", (6, 40, 3), 2), ("dropout1d", (40, 3), 1), ("dropout2d", (6, 40, 2, 3), 2),
    ("dropout2d", (6, 40, 3), 2), ("dropout3d", (3, 40, 2, 2, 3), 2), ("dropout3d", (40, 2, 2, 3), 1)], ids=str)
def test_channel_dropouts_draw_per_channel_as_torchs(name, shape, channels):
    """The leading dims each mask covers, as torch's (dropout2d reads a 3-D input as
    (N, C, L), with its warning): the same values within a channel, about p of the channels
    zeroed, the rest scaled by 1/(1-p); compiled (fullgraph) as eager under the same seed."""
    F = tg.nn.functional
    tg.manual_seed(0)
    x = tg.ones(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (dropout2d's note on 3-D inputs)
        y = getattr(F, name)(x, 0.4).numpy()
        fn = lambda x: getattr(F, name)(x, 0.4) * 2
        compiled = tg.compile(fn, backend="c", fullgraph=True)
        np.testing.assert_array_equal(_same_seed(compiled, x), _same_seed(fn, x))
    per_channel = y.reshape(*shape[:channels], -1)
    assert (per_channel == per_channel[..., :1]).all()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.6)} and 0.3 < (per_channel[..., 0] > 0).mean() < 0.9
    assert getattr(F, name)(x, 0.4, training=False) is x


def test_feature_alpha_dropout_keeps_statistics_per_channel():
    F = tg.nn.functional
    tg.manual_seed(0)
    x = tg.tensor(np.random.default_rng(0).standard_normal((400, 50, 10)).astype(np.float32))
    y = F.feature_alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    alpha = 1.7580993408473766
    dropped = np.isclose(y, -alpha * 0.7 / np.sqrt((alpha ** 2 * 0.3 + 1) * 0.7), rtol=1e-6)
    assert (dropped == dropped[:, :, :1]).all() and 0.28 < dropped[:, :, 0].mean() < 0.32
    assert F.feature_alpha_dropout(x, 0.3) is x
    assert repr(tg.nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))
    assert repr(tg.nn.Dropout3d(0.2)) == repr(torch.nn.Dropout3d(0.2))


@pytest.mark.parametrize("name", ["dropout1d", "alpha_dropout"])
def test_channel_and_alpha_dropout(name):
    """dropout1d zeroes whole channels (the rest scaled by 1/(1-p)); alpha_dropout keeps a
    standard normal input's mean and variance, dropped elements all at one value; both
    compile (fullgraph) to the eager values under the same seed."""
    F = tg.nn.functional
    if name == "dropout1d":
        x = tg.ones(8, 50, 3)
        y = F.dropout1d(x, 0.4).numpy()
        assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.6)} and (y == y[:, :, :1]).all()
        assert 0.45 < (y[:, :, 0] > 0).mean() < 0.75
        assert F.dropout1d(x, 0.4, training=False) is x
        with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
            F.dropout1d(tg.ones(2, 3, 4, 5), 0.5)
        fn = lambda x: F.dropout1d(x, 0.4) * 2
    else:
        x = tg.tensor(np.random.default_rng(0).standard_normal(200_000).astype(np.float32))
        y = F.alpha_dropout(x, 0.3, training=True).numpy()
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
        alpha = 1.7580993408473766  # dropped elements: -alpha a (1 - p), a = 1/sqrt((alpha^2 p + 1)(1 - p))
        dropped = -alpha * (1 - 0.3) / np.sqrt((alpha ** 2 * 0.3 + 1) * (1 - 0.3))
        assert 0.29 < np.isclose(y, dropped, rtol=1e-6).mean() < 0.31
        assert F.alpha_dropout(x, 0.3) is x  # (training=False by default, as torch's)
        fn = lambda x: F.alpha_dropout(x, 0.3, True) * 2
    compiled = tg.compile(fn, backend="c", fullgraph=True)
    np.testing.assert_allclose(_same_seed(compiled, x), _same_seed(fn, x), rtol=1e-6, atol=1e-6)


def test_gumbel_softmax_samples_the_softmax():
    """Random: the shape, rows summing to 1, hard samples one-hot with the soft sample's
    gradient (straight through), and argmax frequencies near softmax(logits)."""
    F = tg.nn.functional
    tg.manual_seed(0)
    logits = tg.tensor(np.tile([0.0, 1.0, 2.0], (20_000, 1)), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert soft.shape == (20_000, 3)
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True, dim=1)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(1) == 1).all()
    want = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(h.mean(0), want, atol=0.015)
    (hard * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert np.isfinite(logits.grad.numpy()).all() and np.abs(logits.grad.numpy()).sum() > 0
    np.testing.assert_allclose(logits.grad.numpy().sum(1), 0.0, atol=1e-9)  # softmax's gradient
    # the noise is a seeded op: a compiled function (fullgraph) draws the same samples
    fn = lambda x: F.gumbel_softmax(x, tau=0.7, hard=True) * 2
    compiled = tg.compile(fn, backend="c", fullgraph=True)
    x = tg.tensor(np.tile([0.0, 1.0, 2.0], (100, 1)).astype(np.float32))
    np.testing.assert_array_equal(_same_seed(compiled, x), _same_seed(fn, x))


def test_rrelu_training_draws_slopes_between_its_bounds():
    F = tg.nn.functional
    tg.manual_seed(0)
    x = tg.tensor(-np.ones(50_000) * 2.0, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = y.detach().numpy() / -2.0
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.005
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-12)  # d(a x)/dx = a
    positive = tg.tensor([1.0, 2.0])
    np.testing.assert_array_equal(F.rrelu(positive, training=True).numpy(), [1.0, 2.0])
    layer = tg.nn.RReLU(0.1, 0.3)
    assert not np.allclose(layer(x).detach().numpy(), layer.eval()(x).detach().numpy())
    np.testing.assert_allclose(layer(x).detach().numpy(), -0.4)
    fn = lambda x: F.rrelu(x, 0.1, 0.3, training=True) * 2
    compiled = tg.compile(fn, backend="c", fullgraph=True)
    x32 = tg.tensor(RNG.standard_normal(1000).astype(np.float32))
    np.testing.assert_allclose(_same_seed(compiled, x32), _same_seed(fn, x32), rtol=1e-6)


def test_margin_loss_modules_options_match_torch():
    """MultiMarginLoss's weight buffer, TripletMarginWithDistanceLoss with a distance given
    (a plain function: not a submodule) and swap, and their argument checks."""
    w = P[0]
    ours, theirs = tg.nn.MultiMarginLoss(weight=tg.tensor(w), reduction="sum"), \
        torch.nn.MultiMarginLoss(weight=torch.tensor(w), reduction="sum")
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    t = np.array([1, 0, 5, 3])
    np.testing.assert_allclose(ours(tg.tensor(X), tg.tensor(t)).numpy(),
                               theirs(torch.tensor(X), torch.tensor(t)).numpy(), rtol=1e-12)
    dist = (lambda L: lambda a, b: (a - b).abs().sum(-1))
    ours = tg.nn.TripletMarginWithDistanceLoss(distance_function=dist(tg), margin=0.3, swap=True)
    theirs = torch.nn.TripletMarginWithDistanceLoss(distance_function=dist(torch), margin=0.3, swap=True)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ours(*[tg.tensor(a) for a in (X, P, Y01)]).numpy(),
                               theirs(*[torch.tensor(a) for a in (X, P, Y01)]).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        tg.nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0 instead"):
        tg.nn.TripletMarginWithDistanceLoss(margin=0)
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        tg.nn.functional.multilabel_margin_loss(tg.ones(2, 3), tg.tensor([[0, 1], [1, 2]]))


@pytest.mark.parametrize("name, shape, output_size", [
    ("ConvTranspose1d", (2, 4, 5), [14]), ("ConvTranspose1d", (4, 5), (4, 15)),
    ("ConvTranspose2d", (2, 4, 5, 3), (2, 6, 13, 8)), ("ConvTranspose2d", (4, 5, 3), [15, 9]),
    ("ConvTranspose3d", (1, 4, 2, 3, 2), (1, 6, 6, 8, 5)), ("ConvTranspose3d", (4, 2, 1, 2), [4, 2, 6])], ids=str)
def test_transposed_convolutions_take_an_output_size_as_torchs(name, shape, output_size):
    tg.manual_seed(0)
    ours, theirs = getattr(tg.nn, name)(4, 6, 3, stride=3, padding=1), getattr(torch.nn, name)(4, 6, 3, stride=3, padding=1)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = RNG.standard_normal(shape).astype(np.float32)
    yo, yt = ours(tg.tensor(x), output_size), theirs(torch.tensor(x), output_size)
    assert tuple(yo.shape) == tuple(yt.shape)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(tg.tensor(x), [s + 5 for s in yt.shape])


def _parameters(fn, drop=("_stacklevel", "out", "device", "dtype")):
    import inspect

    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values() if p.name not in drop]


def _loss_and_extra_modules():
    from tracegrad.nn.modules.norms_and_dropouts import LAYERS_EXTRA
    from tracegrad.nn.modules.loss import _Loss

    losses = [n for n in tg.nn.__all__ if isinstance(getattr(tg.nn, n), type) and issubclass(getattr(tg.nn, n), _Loss)]
    from tracegrad.nn.modules.activation import _Elementwise

    activations = [n for n in tg.nn.__all__ if isinstance(getattr(tg.nn, n), type)
                   and issubclass(getattr(tg.nn, n), _Elementwise) and n != "Hardtanh"]  # (torch's has
    # two more deprecated arguments)
    return sorted(losses + activations + LAYERS_EXTRA + ["Embedding", "ParameterDict", "TransformerDecoderLayer",
                                                         "TransformerDecoder", "Transformer"])


@pytest.mark.parametrize("name", [n for n in tg.nn.functional.__all__ if n != "max_pool2d"])
def test_functional_parameters_are_torchs(name):
    """Names, order and kinds, so positional calls bind as in PyTorch (the deprecated
    size_average/reduce included: they decide the reduction when given)."""
    try:
        theirs = _parameters(getattr(torch.nn.functional, name))
    except (TypeError, ValueError):
        pytest.skip("torch's builtin has no Python signature")
    if [n for n, _ in theirs] == ["args", "kwargs"]:
        pytest.skip("torch's is a dispatcher over *args")
    assert _parameters(getattr(tg.nn.functional, name)) == theirs


@pytest.mark.parametrize("name", _loss_and_extra_modules())
def test_loss_and_new_module_constructors_take_torchs_parameters(name):
    def own(params):  # (*args, **kwargs): passed through, no arguments of its own
        return [] if [n for n, _ in params] == ["args", "kwargs"] else params

    assert own(_parameters(getattr(tg.nn, name))) == own(_parameters(getattr(torch.nn, name)))


@pytest.mark.parametrize("size_average, reduce", [(False, None), (None, False), (True, True)])
def test_deprecated_size_average_and_reduce_pick_the_reduction_as_torchs(size_average, reduce):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        ours = tg.nn.functional.mse_loss(tg.tensor(X), tg.tensor(P), size_average, reduce)
    with pytest.warns(UserWarning):
        theirs = torch.nn.functional.mse_loss(torch.tensor(X), torch.tensor(P), size_average, reduce)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.warns(UserWarning):
        ours = tg.nn.MarginRankingLoss(0.2, size_average, reduce)(*[tg.tensor(a[:, 0]) for a in (X, P, Y01 * 2 - 1)])
    with pytest.warns(UserWarning):
        theirs = torch.nn.MarginRankingLoss(0.2, size_average, reduce)(*[torch.tensor(a[:, 0]) for a in (X, P, Y01 * 2 - 1)])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_elementwise_loss_weights_as_torchs(name, reduction):
    """An elementwise weight; the mean is sum / sum of weights for mse and l1, the plain mean
    for huber, as torch's."""
    xo, xt = tg.tensor(X * 2, requires_grad=True), torch.tensor(X * 2, requires_grad=True)
    yo = getattr(tg.nn.functional, name)(xo, tg.tensor(Y01), reduction=reduction, weight=tg.tensor(P))
    yt = getattr(torch.nn.functional, name)(xt, torch.tensor(Y01), reduction=reduction, weight=torch.tensor(P))
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    yo.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        getattr(tg.nn.functional, name)(xo, tg.tensor(Y01), weight=tg.tensor(P[0]))


@pytest.mark.parametrize("dims, kernel, stride, padding", [(2, 2, None, 0), (2, 3, 2, 1), (2, (2, 3), (2, 2), (1, 0)),
                                                           (2, 3, 1, 1), (1, 3, 2, 1), (1, 2, None, 0)], ids=str)
def test_max_unpool_inverts_max_pool_as_torchs(dims, kernel, stride, padding):
    """Values and gradients (PyTorch's: the output's gradient at each index, also where
    overlapping windows share a maximum), the module forms' reprs, and compiled (fullgraph)
    against eager."""
    x = RNG.standard_normal((2, 3, 6, 7)[:dims + 2])
    size = x.shape
    pool, unpool = f"max_pool{dims}d", f"max_unpool{dims}d"
    po, io = getattr(tg.nn.functional, pool)(tg.tensor(x), kernel, stride, padding, return_indices=True)
    pt, it = getattr(torch.nn.functional, pool)(torch.tensor(x), kernel, stride, padding, return_indices=True)
    xo, xt = tg.tensor(po.numpy(), requires_grad=True), torch.tensor(pt.numpy(), requires_grad=True)
    name = f"MaxUnpool{dims}d"
    ours, theirs = getattr(tg.nn, name)(kernel, stride, padding), getattr(torch.nn, name)(kernel, stride, padding)
    assert repr(ours) == repr(theirs)
    yo, yt = ours(xo, io, output_size=size), theirs(xt, it, output_size=size)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = RNG.standard_normal(size)
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    compiled = tg.compile(lambda v, i: getattr(tg.nn.functional, unpool)(v, i, kernel, stride, padding, size),
                          backend="c", fullgraph=True)
    v32 = tg.tensor(po.numpy().astype(np.float32))
    np.testing.assert_allclose(compiled(v32, io).numpy(),
                               getattr(tg.nn.functional, unpool)(v32, io, kernel, stride, padding, size).numpy(),
                               rtol=1e-6)


def test_max_unpool_sizes_and_errors_as_torchs():
    F = tg.nn.functional
    out, idx = F.max_pool2d(tg.tensor(RNG.standard_normal((1, 1, 4, 4))), 2, return_indices=True)
    assert F.max_unpool2d(out, idx, 2).shape == (1, 1, 4, 4)
    assert F.max_unpool2d(out, idx, 2, output_size=(1, 1, 5, 5)).shape == (1, 1, 5, 5)
    with pytest.raises(ValueError, match=r'invalid output_size "\(7, 4\)" \(dim 0 must be between 2 and 6\)'):
        F.max_unpool2d(out, idx, 2, output_size=(7, 4))
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: \d+ \(output volumes are of size 4x4\)"):
        F.max_unpool2d(out, idx + 17, 2)


def test_batchnorm3d_and_a_batchnorm_without_bias_match_torch():
    """BatchNorm3d in training (running statistics) and eval, and bias=False (keyword-only,
    as torch's): state dict keys, outputs."""
    for args, kwargs, shape in [((3,), {}, (2, 3, 2, 3, 4)), ((3,), {"bias": False}, (4, 3))]:
        name = "BatchNorm3d" if len(shape) == 5 else "BatchNorm1d"
        ours, theirs = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
        assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
        ours, theirs = ours.double(), theirs.double()
        x = RNG.standard_normal(shape)
        np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-10, atol=1e-12)
        ours.eval()
        theirs.eval()
        np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    theta2, theta3 = RNG.standard_normal((2, 2, 3)), RNG.standard_normal((2, 3, 4))
    for theta, size in [(theta2, (2, 3, 4, 5)), (theta3, (2, 3, 2, 4, 5)), (theta2, (2, 1, 1, 3))]:
        to, tt = tg.tensor(theta, requires_grad=True), torch.tensor(theta, requires_grad=True)
        yo, yt = tg.nn.functional.affine_grid(to, size, align_corners), torch.nn.functional.affine_grid(tt, size, align_corners)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
        cot = RNG.standard_normal(tuple(yt.shape))
        yo.backward(tg.tensor(cot))
        yt.backward(torch.tensor(cot))
        np.testing.assert_allclose(to.grad.numpy(), tt.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        tg.nn.functional.affine_grid(tg.tensor(theta3), (2, 3, 4, 5), align_corners)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch_and_compiles(mode, padding_mode, align_corners):
    """Values and the input's gradient, and (bilinear) the grid's, with positions outside the
    image and exactly on half pixels; compiled (fullgraph) against eager."""
    F = tg.nn.functional
    x = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.3, 1.3, (2, 3, 6, 2))
    grid[0, 0, :3] = [[-0.6, 0.5], [1.0, -1.0], [0.0, 0.25]]
    xo, go = tg.tensor(x, requires_grad=True), tg.tensor(grid, requires_grad=True)
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    yo = F.grid_sample(xo, go, mode, padding_mode, align_corners)
    yt = torch.nn.functional.grid_sample(xt, gt, mode, padding_mode, align_corners)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(go.grad.numpy(), gt.grad.numpy(), rtol=1e-10, atol=1e-12)  # (nearest: zeros)
    compiled = tg.compile(lambda a, b: F.grid_sample(a, b, mode, padding_mode, align_corners), backend="c",
                          fullgraph=True)
    a32, b32 = tg.tensor(x.astype(np.float32)), tg.tensor(grid.astype(np.float32))
    np.testing.assert_allclose(compiled(a32, b32).numpy(), F.grid_sample(a32, b32, mode, padding_mode, align_corners).numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1}, {"stride": (1, 2, 2), "padding": (2, 0, 1),
                                                                      "dilation": (2, 1, 2), "groups": 2},
                                    {"padding": "same", "kernel_size": (2, 3, 4), "bias": False},
                                    {"padding": 1, "padding_mode": "reflect"},
                                    {"padding": (1, 0, 2), "padding_mode": "circular"}], ids=str)
def test_conv3d_matches_torch_and_compiles(kwargs):
    kwargs = dict(kwargs)
    kernel = kwargs.pop("kernel_size", 3)
    tg.manual_seed(0)
    ours, theirs = tg.nn.Conv3d(4, 6, kernel, **kwargs), torch.nn.Conv3d(4, 6, kernel, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    ours, theirs = ours.double(), theirs.double()
    x = RNG.standard_normal((2, 4, 5, 6, 7))
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's note on 'same' with even kernels)
        yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-11)
    ours = ours.float()
    x32 = tg.tensor(x[0].astype(np.float32))  # (unbatched)
    compiled = tg.compile(lambda v: ours(v), backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(x32).detach().numpy(), ours(x32).detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                    {"kernel_size": (2, 3, 2), "stride": (1, 2, 3), "padding": (1, 1, 0),
                                     "ceil_mode": True},
                                    {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": (2, 1, 2)}], ids=str)
def test_3d_pools_match_torch_and_compile(kwargs):
    """max_pool3d (values, indices, gradients) and avg_pool3d (both count_include_pad, and
    divisor_override) against torch, the modules' reprs, and compiled against eager."""
    F, TF = tg.nn.functional, torch.nn.functional
    x = RNG.standard_normal((2, 3, 5, 6, 7))
    x[0, 0, :2, :2, :2] = 5.0  # ties: the first maximum, as torch's
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (yo, io), (yt, it) = F.max_pool3d(xo, return_indices=True, **kwargs), TF.max_pool3d(xt, return_indices=True, **kwargs)
    np.testing.assert_array_equal(yo.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(io.numpy(), it.numpy())
    cot = RNG.standard_normal(tuple(yt.shape))
    yo.backward(tg.tensor(cot))
    yt.backward(torch.tensor(cot))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    plain = {k: v for k, v in kwargs.items() if k != "dilation"}
    for extra in [{"count_include_pad": True}, {"count_include_pad": False}, {"divisor_override": 5}]:
        xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yo, yt = F.avg_pool3d(xo, **plain, **extra), TF.avg_pool3d(xt, **plain, **extra)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
        cot = RNG.standard_normal(tuple(yt.shape))
        yo.backward(tg.tensor(cot))
        yt.backward(torch.tensor(cot))
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert repr(tg.nn.MaxPool3d(**kwargs)) == repr(torch.nn.MaxPool3d(**kwargs))
    assert repr(tg.nn.AvgPool3d(**plain)) == repr(torch.nn.AvgPool3d(**plain))
    x32 = tg.tensor(x[0].astype(np.float32))  # (unbatched)
    both = lambda v: F.max_pool3d(v, **kwargs).sum() + F.avg_pool3d(v, **plain).sum()
    compiled = tg.compile(both, backend="c", fullgraph=True)
    np.testing.assert_allclose(compiled(x32).item(), both(x32).item(), rtol=1e-5)
