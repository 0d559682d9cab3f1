"""The torch.* forms of tracegrad/torch_functions.py against PyTorch, with torch's positional
order (``torch.embedding(weight, indices)``, integer reduction codes, ...)."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from oracle import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")

X = np.array([[0.5, -1.5, 2.0, 0.25], [1.0, 3.0, -0.5, -2.0]], np.float32)
Y = np.array([[1.0, -1.0, 0.5, 0.0], [2.0, 1.0, -1.0, 0.5]], np.float32)
IMG = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)

CALLS = {
    "exp_": lambda m, x, y, img: (m.exp_(x), x)[1],
    "clamp_": lambda m, x, y, img: m.clamp_(x, -1, 1),
    "zero_": lambda m, x, y, img: m.zero_(x),
    "dropout_eval": lambda m, x, y, img: m.dropout(x, 0.5, False),
    "layer_norm": lambda m, x, y, img: m.layer_norm(x, (4,), None, None, 1e-5),
    "group_norm": lambda m, x, y, img: m.group_norm(img, 3),
    "batch_norm": lambda m, x, y, img: m.batch_norm(img, m.ones(3), m.zeros(3), m.zeros(3), m.ones(3), True, 0.1,
                                                     1e-5, False),
    "instance_norm": lambda m, x, y, img: m.instance_norm(img, None, None, None, None, True, 0.1, 1e-5, False),
    "embedding": lambda m, x, y, img: m.embedding(x, m.tensor([1, 0, 1])),
    "embedding_padding": lambda m, x, y, img: m.embedding(x, m.tensor([1, 0]), 0),
    "threshold": lambda m, x, y, img: m.threshold(x, 0.3, -7.0),
    "celu": lambda m, x, y, img: m.celu(x, 0.5),
    "selu": lambda m, x, y, img: m.selu(x),
    "rrelu_eval": lambda m, x, y, img: m.rrelu(x),
    "max_pool2d": lambda m, x, y, img: m.max_pool2d(img, 2),
    "max_pool1d": lambda m, x, y, img: m.max_pool1d(x[None], 2, 1),
    "avg_pool1d": lambda m, x, y, img: m.avg_pool1d(x[None], 2),
    "adaptive_avg_pool1d": lambda m, x, y, img: m.adaptive_avg_pool1d(x[None], 2),
    "adaptive_max_pool1d": lambda m, x, y, img: m.adaptive_max_pool1d(x[None], 2)[1].to(m.float32),
    "bilinear": lambda m, x, y, img: m.bilinear(x, y, m.ones(3, 4, 4), m.zeros(3)),
    "bce_logits_sum": lambda m, x, y, img: m.binary_cross_entropy_with_logits(x, (y > 0).float(), None, None, 2),
    "kl_div_none": lambda m, x, y, img: m.kl_div(x, y.abs(), 0),
    "hinge": lambda m, x, y, img: m.hinge_embedding_loss(x, m.sign(y) + (y == 0).float()),
    "margin_ranking": lambda m, x, y, img: m.margin_ranking_loss(x[0], x[1], m.sign(y[0]) + (y[0] == 0).float(), 0.1),
    "cosine_embedding": lambda m, x, y, img: m.cosine_embedding_loss(x, y, m.tensor([1.0, -1.0])),
    "poisson_nll": lambda m, x, y, img: m.poisson_nll_loss(x, y.abs(), True, False, 1e-8, 1),
    "triplet": lambda m, x, y, img: m.triplet_margin_loss(x, y, x * 0.5),
    "constant_pad_nd": lambda m, x, y, img: m.constant_pad_nd(x, (1, 2), 9.0),
    "rsub": lambda m, x, y, img: m.rsub(x, y, alpha=2),
    "rsub_scalar": lambda m, x, y, img: m.rsub(x, 3),
    "range": lambda m, x, y, img: m.range(1, 2.5, 0.5),
    "fill": lambda m, x, y, img: m.fill(x, 2.5),
    "row_stack": lambda m, x, y, img: m.row_stack([x, y]),
    "absolute": lambda m, x, y, img: m.absolute(x),
    "isreal": lambda m, x, y, img: m.isreal(x),
    "conj": lambda m, x, y, img: m.resolve_neg(m.resolve_conj(m.conj(x))),
    "qr_complete": lambda m, x, y, img: m.qr(x.T, some=False)[0].abs(),
    "split_with_sizes": lambda m, x, y, img: m.split_with_sizes(x, [1, 3], 1)[1],
    "unsafe_chunk": lambda m, x, y, img: m.unsafe_chunk(x, 2, 1)[0],
    "asarray": lambda m, x, y, img: m.asarray([1, 2], dtype=m.float64),
    "frombuffer": lambda m, x, y, img: m.frombuffer(bytearray(np.arange(3, dtype=np.int32).tobytes()), dtype=m.int32),
    "empty_strided_shape": lambda m, x, y, img: m.tensor(m.empty_strided((2, 3), (1, 2)).stride()),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_torch(name):
    fn = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(torch, *(torch.from_numpy(a.copy()) for a in (X, Y, IMG)))
    got = fn(tg, *(tg.tensor(a.copy()) for a in (X, Y, IMG)))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy().astype(np.float64), want.detach().numpy().astype(np.float64),
                               rtol=1e-5, atol=1e-6)


@needs_torch
def test_predicates_match_torch():
    x = torch.ones(2)
    for name in ("is_conj", "is_neg", "is_inference"):
        assert getattr(tg, name)(tg.ones(2)) == getattr(torch, name)(x)
    for a in (tg.bool, tg.uint8, tg.int8, tg.int64, tg.float16, tg.float32, tg.float64):
        for b in (tg.bool, tg.uint8, tg.int8, tg.int64, tg.float16, tg.float32, tg.float64):
            ta, tb = (getattr(torch, d.name) for d in (a, b))
            assert tg.can_cast(a, b) == torch.can_cast(ta, tb), (a, b)
            assert tg.promote_types(a, b).name == str(torch.promote_types(ta, tb)).split(".")[-1]


def test_errors():
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        tg.imag(tg.ones(2))
    with pytest.raises(RuntimeError, match="fill only supports 0-dimension value tensor"):
        tg.fill(tg.ones(2), tg.ones(2))
    assert tg.typename(tg.ones(1, dtype=tg.int64)) == "tracegrad.LongTensor"
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    tg.fill(tg.ones(3), (x * 2).sum()).sum().backward()  # the value gets the gradient
    assert x.grad.tolist() == [6.0, 6.0]


@pytest.mark.parametrize("call,message", [
    (lambda m: m.linalg.vector_norm(m.tensor([3, 4])), "linalg.vector_norm: Expected a floating point"),
    (lambda m: m.norm(m.tensor([3, 4]), dtype=m.float32), "linalg.vector_norm: Expected a floating point"),
    (lambda m: m.tensor([True]).norm(), "Got Bool"),
    (lambda m: m.linalg.matrix_norm(m.tensor([[3, 4]])), "linalg.matrix_norm: Expected a floating point"),
    (lambda m: m.argmax(m.tensor([True, False])), "argmax\\(\\): does not support bool input"),
    (lambda m: m.tensor([True]).argmin(), "argmin\\(\\): does not support bool input"),
])
def test_norms_of_integers_and_argmax_of_bools_raise_as_torch(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(tg)
    if torch is not None:
        with pytest.raises(RuntimeError, match=message):
            call(torch)
