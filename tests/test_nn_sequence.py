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
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
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
    c0 = RNG.standard_normal(tuple(ht[1].shape)).astype(np.float32) if name == "LSTM" else None
    given = (lambda L: (L.tensor(h0), L.tensor(c0)) if name == "LSTM" else L.tensor(h0))
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


@pytest.mark.parametrize("kwargs", [{"kdim": 5, "vdim": 3}, {"add_bias_kv": True}, {"add_zero_attn": True, "bias": False},
                                    {"kdim": 5, "vdim": 3, "add_bias_kv": True, "add_zero_attn": True,
                                     "batch_first": True}], ids=str)
def test_multihead_attention_options_match_torch(kwargs):
    """Keys and values of their own sizes (separate q/k/v projection weights), the learnt
    bias key/value and the zero key/value: parameter names, outputs, weights and gradients
    with masks (which grow with the extra keys), and compiled against eager."""
    ours, theirs = _pair("MultiheadAttention", 8, 2, **kwargs)
    batched = (lambda n, e: (3, n, e) if kwargs.get("batch_first") else (n, 3, e))
    q = RNG.standard_normal(batched(5, 8)).astype(np.float32)
    k = RNG.standard_normal(batched(4, kwargs.get("kdim", 8))).astype(np.float32)
    v = RNG.standard_normal(batched(4, kwargs.get("vdim", 8))).astype(np.float32)
    pad = np.zeros((3, 4), bool)
    pad[1, 2:] = True
    mask = RNG.standard_normal((5, 4)).astype(np.float32)
    qo, qt = tg.tensor(q, requires_grad=True), torch.tensor(q, requires_grad=True)
    (oo, wo) = ours(qo, tg.tensor(k), tg.tensor(v), key_padding_mask=tg.tensor(pad), attn_mask=tg.tensor(mask))
    (ot, wt) = theirs(qt, torch.tensor(k), torch.tensor(v), key_padding_mask=torch.tensor(pad),
                      attn_mask=torch.tensor(mask))
    _close(oo, ot)
    _close(wo, wt)
    oo.square().sum().backward()
    ot.square().sum().backward()
    _close(qo.grad, qt.grad, 1e-4)
    for (name, p), (_, t) in zip(ours.named_parameters(), theirs.named_parameters()):
        _close(p.grad, t.grad, 1e-4)
    compiled = tg.compile(lambda a, b, c: ours(a, b, c, need_weights=False)[0], backend="c", fullgraph=True)
    _close(compiled(tg.tensor(q), tg.tensor(k), tg.tensor(v)),
           ours(tg.tensor(q), tg.tensor(k), tg.tensor(v), need_weights=False)[0])


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


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "activation": "gelu", "batch_first": True}], ids=str)
def test_transformer_decoder_matches_torch(kwargs):
    """Decoder layers stacked with a final norm: causal target mask, a memory padding mask,
    outputs and gradients (target and memory) as torch's."""
    ours, theirs = _pair("TransformerDecoderLayer", 8, 2, dim_feedforward=16, dropout=0.0, **kwargs)
    stack_o = tg.nn.TransformerDecoder(ours, 2, norm=tg.nn.LayerNorm(8))
    stack_t = torch.nn.TransformerDecoder(theirs, 2, norm=torch.nn.LayerNorm(8))
    assert repr(stack_o) == repr(stack_t)
    stack_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in stack_o.state_dict().items()})
    batch_first = kwargs.get("batch_first", False)
    tgt = RNG.standard_normal((2, 4, 8) if batch_first else (4, 2, 8)).astype(np.float32)
    mem = RNG.standard_normal((2, 5, 8) if batch_first else (5, 2, 8)).astype(np.float32)
    pad = np.zeros((2, 5), bool)
    pad[1, 3:] = True
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(tg.nn.Transformer.generate_square_subsequent_mask(4).numpy(), causal.numpy())
    to, tt = tg.tensor(tgt, requires_grad=True), torch.tensor(tgt, requires_grad=True)
    mo, mt = tg.tensor(mem, requires_grad=True), torch.tensor(mem, requires_grad=True)
    yo = stack_o(to, mo, tgt_mask=tg.tensor(causal.numpy()), memory_key_padding_mask=tg.tensor(pad),
                 tgt_is_causal=True)
    yt = stack_t(tt, mt, tgt_mask=causal, memory_key_padding_mask=torch.tensor(pad), tgt_is_causal=True)
    _close(yo, yt)
    yo.square().sum().backward()
    yt.square().sum().backward()
    _close(to.grad, tt.grad, 1e-4)
    _close(mo.grad, mt.grad, 1e-4)
    for p, q in zip(stack_o.parameters(), stack_t.parameters()):
        _close(p.grad, q.grad, 1e-4)


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "batch_first": True, "bias": False}], ids=str)
def test_transformer_matches_torch_and_compiles(kwargs):
    """nn.Transformer: parameter names, repr, outputs and gradients with torch's loaded from
    ours; then a compiled training step (fullgraph) against eager."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on nested tensors with norm_first
        ours, theirs = _pair("Transformer", 8, 2, 2, 1, dim_feedforward=12, dropout=0.0, **kwargs)
    batch_first = kwargs.get("batch_first", False)
    src = RNG.standard_normal((3, 5, 8) if batch_first else (5, 3, 8)).astype(np.float32)
    tgt = RNG.standard_normal((3, 4, 8) if batch_first else (4, 3, 8)).astype(np.float32)
    src_pad = np.zeros((3, 5), bool)
    src_pad[0, 4:] = True
    mask = tg.nn.Transformer.generate_square_subsequent_mask(4)
    so, st = tg.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
    yo = ours(so, tg.tensor(tgt), tgt_mask=mask, src_key_padding_mask=tg.tensor(src_pad),
              memory_key_padding_mask=tg.tensor(src_pad))
    yt = theirs(st, torch.tensor(tgt), tgt_mask=torch.tensor(mask.numpy()),
                src_key_padding_mask=torch.tensor(src_pad), memory_key_padding_mask=torch.tensor(src_pad))
    _close(yo, yt)
    yo.square().sum().backward()
    yt.square().sum().backward()
    _close(so.grad, st.grad, 1e-4)
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        ours(tg.ones(3, 3, 8), tg.ones(3, 3, 6))

    opt = tg.optim.SGD(ours.parameters(), lr=0.05)

    def step(src, tgt):
        opt.zero_grad()
        loss = ours(src, tgt, tgt_mask=mask).square().mean()
        loss.backward()
        opt.step()
        return loss

    start = [p.detach().clone() for p in ours.parameters()]
    x, y = tg.tensor(src), tg.tensor(tgt)
    eager = [step(x, y).item() for _ in range(2)]
    after = [p.detach().numpy().copy() for p in ours.parameters()]
    with tg.no_grad():
        for p, s in zip(ours.parameters(), start):
            p.copy_(s)
    compiled = tg.compile(step, backend="c", fullgraph=True)
    np.testing.assert_allclose([compiled(x, y).item() for _ in range(2)], eager, rtol=1e-5)
    for p, a in zip(ours.parameters(), after):
        np.testing.assert_allclose(p.detach().numpy(), a, rtol=1e-4, atol=1e-5)


def test_transformer_dropout_compiles_to_the_eager_draws():
    """Training-mode dropout (attention weights and the layers' dropouts) draws from seeded
    ops: the same seed gives the same output eagerly and compiled (fullgraph); eval is
    deterministic."""
    tg.manual_seed(0)
    model = tg.nn.Transformer(8, 2, 1, 1, 16, dropout=0.3, batch_first=True)
    src, tgt = tg.randn(2, 5, 8), tg.randn(2, 3, 8)
    mask = tg.nn.Transformer.generate_square_subsequent_mask(3)
    run = (lambda s, t: model(s, t, tgt_mask=mask))
    compiled = tg.compile(run, backend="c", fullgraph=True)
    outs = []
    for fn in (run, compiled):
        tg.manual_seed(1)
        outs.append(fn(src, tgt).detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(outs[0], run(src, tgt).detach().numpy())  # a fresh draw differs
    model.eval()
    np.testing.assert_array_equal(run(src, tgt).detach().numpy(), run(src, tgt).detach().numpy())


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
