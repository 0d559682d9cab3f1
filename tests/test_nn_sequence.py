"""Recurrent and attention layers (tracegrad/nn/rnn.py, transformer.py) against PyTorch:
parameter names, reprs, outputs, final states and gradients for each configuration, with
torch's layer loaded from ours; masks as torch's; and compiled training steps (fullgraph)
against eager."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

RNG = np.random.default_rng(7)


def _pair(name, *args, **kwargs):
    tg.manual_seed(0)
    ours, theirs = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name, kwargs", [
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"num_layers": 2, "batch_first": True}), ("GRU", {"bidirectional": True}),
    ("RNN", {"bidirectional": True}), ("RNN", {"nonlinearity": "relu", "bias": False})], ids=str)
def test_recurrent_layers_match_torch(name, kwargs):
    ours, theirs = _pair(name, 3, 5, **kwargs)
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (oo, ho), (ot, ht) = ours(xo), theirs(xt)
    _close(oo, ot)
    states = (lambda h: h if name == "LSTM" else (h,))
    for a, b in zip(states(ho), states(ht)):
        _close(a, b)
    loss_o = oo.square().sum() + sum(h.sum() for h in states(ho))
    loss_t = ot.square().sum() + sum(h.sum() for h in states(ht))
    loss_o.backward()
    loss_t.backward()
    _close(xo.grad, xt.grad, 1e-4)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        _close(p.grad, q.grad, 1e-4)
    # an initial state given, and an unbatched sequence
    h0 = RNG.standard_normal(tuple(ht[0].shape if name == "LSTM" else ht.shape)).astype(np.float32)
    given = (lambda L: (L.tensor(h0), L.tensor(h0 * 0.5)) if name == "LSTM" else L.tensor(h0))
    _close(ours(xo, given(tg))[0], theirs(xt, given(torch))[0])
    _close(ours(tg.tensor(x[:, 0]))[0], theirs(torch.tensor(x[:, 0]))[0])


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(name):
    ours, theirs = _pair(name, 3, 4)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    first = (lambda r: r[0] if name == "LSTMCell" else r)
    _close(first(ours(tg.tensor(x))), first(theirs(torch.tensor(x))))
    _close(first(ours(tg.tensor(x[0]))), first(theirs(torch.tensor(x[0]))))


@pytest.mark.parametrize("kwargs", [{}, {"key_padding_mask": "pad"}, {"attn_mask": "float"},
                                    {"attn_mask": "bool", "average_attn_weights": False},
                                    {"need_weights": False}], ids=str)
def test_multihead_attention_matches_torch(kwargs):
    ours, theirs = _pair("MultiheadAttention", 8, 2)
    q = RNG.standard_normal((5, 3, 8)).astype(np.float32)
    kv = RNG.standard_normal((4, 3, 8)).astype(np.float32)
    pad = np.zeros((3, 4), bool)
    pad[1, 2:] = True
    scores = RNG.standard_normal((5, 4)).astype(np.float32)
    masks = {"pad": pad, "float": scores, "bool": scores > 1.0}
    args = (lambda L: {k: L.tensor(masks[v]) if isinstance(v, str) else v for k, v in kwargs.items()})
    qo, qt = tg.tensor(q, requires_grad=True), torch.tensor(q, requires_grad=True)
    (oo, wo), (ot, wt) = ours(qo, tg.tensor(kv), tg.tensor(kv), **args(tg)), theirs(qt, torch.tensor(kv), torch.tensor(kv), **args(torch))
    _close(oo, ot)
    assert (wo is None) == (wt is None)
    if wt is not None:
        _close(wo, wt)
    oo.square().sum().backward()
    ot.square().sum().backward()
    _close(qo.grad, qt.grad, 1e-4)
    _close(ours.in_proj_weight.grad, theirs.in_proj_weight.grad, 1e-4)


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "activation": "gelu", "batch_first": True}], ids=str)
def test_transformer_encoder_matches_torch(kwargs):
    ours, theirs = _pair("TransformerEncoderLayer", 8, 2, dim_feedforward=16, dropout=0.0, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on nested tensors
        stack_o, stack_t = tg.nn.TransformerEncoder(ours, 2), torch.nn.TransformerEncoder(theirs, 2)
    stack_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in stack_o.state_dict().items()})
    x = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5 if kwargs else 2)
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo = stack_o(xo, mask=tg.tensor(causal.numpy()))
    yt = stack_t(xt, mask=causal)
    _close(yo, yt)
    yo.square().sum().backward()
    yt.square().sum().backward()
    _close(xo.grad, xt.grad, 1e-4)


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "encoder"])
def test_sequence_training_step_compiles_to_eager_values(layer):
    tg.manual_seed(0)
    if layer == "encoder":
        body = tg.nn.TransformerEncoderLayer(6, 2, dim_feedforward=12, dropout=0.0, batch_first=True)
    else:
        body = getattr(tg.nn, layer)(6, 6, num_layers=2, batch_first=True)
    head = tg.nn.Linear(6, 3)
    params = list(body.parameters()) + list(head.parameters())
    # (SGD: the key projection's bias has a zero gradient in exact arithmetic, softmax being
    # shift-invariant, and Adam would scale its rounding noise up to full-size steps)
    opt = tg.optim.SGD(params, lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        out = body(x)
        out = out[0] if isinstance(out, tuple) else out
        loss = tg.nn.functional.cross_entropy(head(out[:, -1]), y)
        loss.backward()
        opt.step()
        return loss

    x = tg.tensor(RNG.standard_normal((4, 5, 6)).astype(np.float32))
    y = tg.tensor(np.array([0, 1, 2, 1]))
    start = [p.detach().clone() for p in params]
    eager = [step(x, y).item() for _ in range(2)]
    after = [p.detach().numpy().copy() for p in params]
    with tg.no_grad():
        for p, s in zip(params, start):
            p.copy_(s)
    for state in opt.state.values():  # the momentum buffers back to the start
        for t in state.values():
            t.zero_()
    compiled = tg.compile(step, backend="c", fullgraph=True)
    np.testing.assert_allclose([compiled(x, y).item() for _ in range(2)], eager, rtol=1e-5)
    for p, a in zip(params, after):
        np.testing.assert_allclose(p.detach().numpy(), a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}], ids=str)
def test_pad_sequence_matches_torch_and_feeds_an_lstm(kwargs):
    from torch.nn.utils.rnn import pad_sequence as torch_pad

    from tracegrad.nn.utils.rnn import pad_sequence

    seqs = [RNG.standard_normal((n, 3)) for n in (2, 5, 3)]
    ours_in = [tg.tensor(s, requires_grad=True) for s in seqs]
    theirs_in = [torch.tensor(s, requires_grad=True) for s in seqs]
    ours, theirs = pad_sequence(ours_in, **kwargs), torch_pad(theirs_in, **kwargs)
    _close(ours, theirs, 1e-12)
    ours.square().sum().backward()
    theirs.square().sum().backward()
    for a, b in zip(ours_in, theirs_in):
        _close(a.grad, b.grad, 1e-12)
    lstm = tg.nn.LSTM(3, 4, batch_first=kwargs.get("batch_first", False), dtype=tg.float64)
    assert lstm(ours.detach())[0].shape[:2] == ours.shape[:2]
