"""``F.multi_head_attention_forward`` against PyTorch's: values and gradients for packed and
separate projections, learnt and zero extra keys, bool and float masks, padding masks, static
keys, unbatched inputs; the module through it; and a compiled call against eager."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from oracle import assert_close, compare_fn  # noqa: E402

L, S, N, E, H = 3, 4, 2, 6, 2
RNG = np.random.default_rng(11)
Q, K, V = (RNG.standard_normal(s) for s in ((L, N, E), (S, N, E), (S, N, E)))
W_IN, B_IN = RNG.standard_normal((3 * E, E)) * 0.5, RNG.standard_normal(3 * E) * 0.1
W_OUT, B_OUT = RNG.standard_normal((E, E)) * 0.5, RNG.standard_normal(E) * 0.1
W_Q, W_K, W_V = (RNG.standard_normal((E, E)) * 0.5 for _ in range(3))
BIAS_K, BIAS_V = RNG.standard_normal((1, 1, E)), RNG.standard_normal((1, 1, E))
STATIC_K = RNG.standard_normal((N * H, S, E // H))
FLOAT_MASK = RNG.standard_normal((L, S))
BOOL_MASK = np.array([[False, True, False, False], [False, False, True, True], [True, False, False, False]])
PAD = np.array([[False, False, False, True], [False, True, False, False]])


def _mha(lib, m, q, k, v, w_in, **kw):
    """Call ``lib``'s functional with the fixed weights; ``m`` converts arrays."""
    F = lib.nn.functional
    extra = {name: m(a) for name, a in kw.pop("arrays", {}).items()}
    return F.multi_head_attention_forward(
        q, k, v, E, H, w_in, m(B_IN), extra.pop("bias_k", None), extra.pop("bias_v", None),
        kw.pop("add_zero_attn", False), 0.0, m(W_OUT), m(B_OUT), **extra, **kw)


CASES = {
    "plain": {},
    "no-weights": {"need_weights": False},
    "per-head-weights": {"average_attn_weights": False},
    "bias-kv-zero-attn-masks": {"arrays": {"bias_k": BIAS_K, "bias_v": BIAS_V, "attn_mask": FLOAT_MASK,
                                           "key_padding_mask": PAD}, "add_zero_attn": True},
    "bool-mask": {"arrays": {"attn_mask": BOOL_MASK}},
    "3d-mask": {"arrays": {"attn_mask": np.tile(FLOAT_MASK, (N * H, 1, 1))}},
    "separate": {"use_separate_proj_weight": True, "arrays": {"q_proj_weight": W_Q, "k_proj_weight": W_K,
                                                              "v_proj_weight": W_V}},
    "static-k": {"arrays": {"static_k": STATIC_K}},
    "causal-hint": {"is_causal": True, "need_weights": False, "arrays": {"attn_mask": np.zeros((L, S))}},
}


def _converter(lib):
    if lib is torch:
        return lambda a: torch.from_numpy(np.array(a))
    return lambda a: tg.tensor(np.array(a))


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_matches_torch(name):
    def run(lib):
        def fn(q, k, v, w_in):
            kw = dict(CASES[name], arrays=dict(CASES[name].get("arrays", {})))
            out, weights = _mha(lib, _converter(lib), q, k, v, w_in, **kw)
            if weights is None:
                return out
            return (out * 2).sum(-1).unsqueeze(-1) + weights.reshape(*weights.shape[:2], -1).sum(-1)
        return fn

    compare_fn(run(tg), run(torch), [Q, K, V, W_IN])


def test_unbatched_and_weights_shape_match_torch():
    outs = []
    for lib in (tg, torch):
        m = _converter(lib)
        outs.append(_mha(lib, m, m(Q[:, 0]), m(K[:, 0]), m(V[:, 0]), m(W_IN), average_attn_weights=False))
    for a, b in zip(*outs):
        assert_close(a, b, "unbatched")


def test_bad_arguments_are_named():
    m = _converter(tg)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        _mha(tg, m, m(Q), m(K), m(V), m(W_IN), is_causal=True)
    with pytest.raises(RuntimeError, match="shape of the 2D attn_mask"):
        _mha(tg, m, m(Q), m(K), m(V), m(W_IN), arrays={"attn_mask": np.zeros((L, L))})
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6"):
        _mha(tg, m, m(Q[..., :4]), m(K), m(V), m(W_IN))
    with pytest.raises(AssertionError, match="only bool and floating types of key_padding_mask"):
        _mha(tg, m, m(Q), m(K), m(V), m(W_IN), arrays={"key_padding_mask": PAD.astype(np.int64)})
    with pytest.raises(AssertionError, match="in_proj_weight is None"):
        _mha(tg, m, m(Q), m(K), m(V), None)


@pytest.mark.parametrize("batch_first", [False, True])
def test_module_goes_through_the_functional_as_torchs(batch_first):
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, H, kdim=5, vdim=3, add_bias_kv=True, batch_first=batch_first).double()
    ours = tg.nn.MultiheadAttention(E, H, kdim=5, vdim=3, add_bias_kv=True, batch_first=batch_first,
                                    dtype=tg.float64)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    q, k, v = Q, RNG.standard_normal((S, N, 5)), RNG.standard_normal((S, N, 3))
    if batch_first:
        q, k, v = (a.transpose(1, 0, 2) for a in (q, k, v))
    compare_fn(lambda *a: ours(*a, key_padding_mask=tg.tensor(PAD))[0],
               lambda *a: theirs(*a, key_padding_mask=torch.from_numpy(PAD))[0], [q, k, v])


def test_compiled_functional_matches_eager():
    m = _converter(tg)

    def fn(q, k, v):
        out, w = _mha(tg, m, q, k, v, m(W_IN), arrays={"attn_mask": FLOAT_MASK, "key_padding_mask": PAD})
        return out.sum() + (w * w).sum()

    args = [tg.tensor(a) for a in (Q, K, V)]
    assert_close(tg.compile(fn)(*args), fn(*args), "compiled")


def test_attention_dropout_draws_from_the_generator_compiled_as_eagerly():
    tg.manual_seed(0)
    mha = tg.nn.MultiheadAttention(E, H, dropout=0.5)
    x = tg.tensor(Q.astype(np.float32))

    def attend(x):
        return mha(x, x, x)[1].detach()

    tg.manual_seed(4)
    first, second = attend(x).numpy(), attend(x).numpy()
    assert not np.allclose(first, second)
    compiled = tg.compile(attend, backend="c", fullgraph=True)
    tg.manual_seed(4)
    np.testing.assert_allclose(compiled(x).numpy(), first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(compiled(x).numpy(), second, rtol=1e-5, atol=1e-6)
    mha.eval()
    np.testing.assert_allclose(attend(x).numpy(), attend(x).numpy())
