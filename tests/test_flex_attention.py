"""tg.nn.attention.flex_attention matches torch.nn.attention.flex_attention run eagerly on the
CPU: outputs, logsumexp, fully masked rows, gradients (also into a captured bias), block-mask
summaries, argument checks, and the compiled program equals eager."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.attention.flex_attention as TFA  # noqa: E402

import tracegrad as tg  # noqa: E402
import tracegrad.nn.attention.flex_attention as FA  # noqa: E402

# torch warns that eager flex_attention is unfused, and that return_lse is deprecated
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def _qkv(B=2, H=2, L=6, S=6, E=8, Hkv=None, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, H, L, E)).astype(np.float32),
            rng.standard_normal((B, Hkv or H, S, E)).astype(np.float32),
            rng.standard_normal((B, Hkv or H, S, E)).astype(np.float32))


def _both(arrays, requires_grad=False):
    ours = [tg.tensor(a, requires_grad=requires_grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=requires_grad) for a in arrays]
    return ours, theirs


def _close(ours, theirs, atol=1e-5):
    np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), atol=atol, rtol=1e-4)


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 2


def _run(arrays, score_mod=None, mask_mod=None, block=4, **kw):
    """flex_attention in both libraries with the same mods (written once, for either)."""
    (q, k, v), (tq, tk, tv) = _both(arrays)
    L, S = q.shape[-2], k.shape[-2]
    ours, theirs = mask_mod if isinstance(mask_mod, tuple) else (mask_mod, mask_mod)  # a pair: one per library
    bm = FA.create_block_mask(ours, None, None, L, S, BLOCK_SIZE=block) if mask_mod else None
    tbm = TFA.create_block_mask(theirs, None, None, L, S, device="cpu", BLOCK_SIZE=block) if mask_mod else None
    return FA.flex_attention(q, k, v, score_mod, bm, **kw), TFA.flex_attention(tq, tk, tv, score_mod, tbm, **kw)


@pytest.mark.parametrize("mask_mod", [None, _causal, _window,
                                      (FA.and_masks(_causal, _window), TFA.and_masks(_causal, _window))],
                         ids=["none", "causal", "window", "and"])
def test_masks_match_torch(mask_mod):
    ours, theirs = _run(_qkv(L=7, S=7), mask_mod=mask_mod, block=4)
    _close(ours, theirs)


def test_scale_and_different_lengths_match_torch():
    ours, theirs = _run(_qkv(L=5, S=9), mask_mod=lambda b, h, q, kv: kv <= q + 4, scale=0.3)
    _close(ours, theirs)


def test_relative_position_bias_from_a_captured_tensor():
    L = S = 6
    rel = np.linspace(-1, 1, L + S - 1).astype(np.float32)
    ours, theirs = tg.tensor(rel), torch.tensor(rel)
    (q, k, v), (tq, tk, tv) = _both(_qkv(L=L, S=S))
    got = FA.flex_attention(q, k, v, lambda s, b, h, qi, ki: s + ours[qi - ki + S - 1])
    want = TFA.flex_attention(tq, tk, tv, lambda s, b, h, qi, ki: s + theirs[qi - ki + S - 1])
    _close(got, want)


def test_head_dependent_alibi():
    H = 4
    slopes_np = (2.0 ** -np.arange(1, H + 1)).astype(np.float32)
    slopes, tslopes = tg.tensor(slopes_np), torch.tensor(slopes_np)
    (q, k, v), (tq, tk, tv) = _both(_qkv(H=H))
    got = FA.flex_attention(q, k, v, lambda s, b, h, qi, ki: s + slopes[h] * (ki - qi))
    want = TFA.flex_attention(tq, tk, tv, lambda s, b, h, qi, ki: s + tslopes[h] * (ki - qi))
    _close(got, want)


def test_gqa_and_errors():
    ours, theirs = _run(_qkv(H=4, Hkv=2), mask_mod=_causal, enable_gqa=True)
    _close(ours, theirs)
    (q, k, v), _ = _both(_qkv(H=4, Hkv=2))
    with pytest.raises(ValueError, match="Try setting enable_gqa=True"):
        FA.flex_attention(q, k, v)
    (q, k, v), _ = _both(_qkv(H=3, Hkv=2))
    with pytest.raises(ValueError, match="multiple of kv heads"):
        FA.flex_attention(q, k, v, enable_gqa=True)
    (q, k, v), _ = _both(_qkv(L=6, S=6))
    with pytest.raises(ValueError, match="larger length"):
        FA.flex_attention(q, k, v, block_mask=FA.create_block_mask(_causal, None, None, 8, 8))
    with pytest.raises(ValueError, match="Cannot specify both"):
        FA.flex_attention(q, k, v, return_lse=True, return_aux=FA.AuxRequest(lse=True))


def test_lse_and_fully_masked_rows_match_torch():
    def late(b, h, q_idx, kv_idx):  # rows 0 and 1 keep nothing
        return (kv_idx < q_idx - 1) & (q_idx > 1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (out, lse), (tout, tlse) = _run(_qkv(L=6, S=6), mask_mod=late, return_lse=True)
    _close(out, tout)
    _close(lse, tlse)
    assert np.isneginf(np.asarray(lse)[:, :, :2]).all() and (np.asarray(out)[:, :, :2] == 0).all()
    (out, aux), (tout, taux) = _run(_qkv(), mask_mod=_causal, return_aux=FA.AuxRequest(lse=True))
    _close(aux.lse, taux.lse)
    assert aux.max_scores is None


def test_return_lse_warns_as_torch():
    (q, k, v), _ = _both(_qkv())
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        FA.flex_attention(q, k, v, return_lse=True)


def _bias_mod(bias):
    return lambda s, b, h, qi, ki: s + bias[h] * (qi - ki)


def _late(b, h, q_idx, kv_idx):  # row 0 keeps nothing: its gradients must stay finite (0)
    return (kv_idx <= q_idx) & (q_idx > 0)


def _torch_reference(q, k, v, bias):
    """PyTorch's eager flex_attention math (its math_attention) in differentiable torch ops:
    torch's own flex_attention refuses backward on the CPU."""
    L, S = q.shape[-2], k.shape[-2]
    idx = (torch.arange(q.shape[0]).view(-1, 1, 1, 1), torch.arange(q.shape[1]).view(1, -1, 1, 1),
           torch.arange(L).view(1, 1, -1, 1), torch.arange(S).view(1, 1, 1, -1))
    scores = _bias_mod(bias)(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, *idx)
    scores = torch.where(_late(*idx), scores, float("-inf"))
    dead = torch.all(scores == float("-inf"), dim=-1)
    lse = torch.where(dead, float("-inf"), scores.logsumexp(-1))
    return torch._safe_softmax(scores, -1) @ v, lse


def test_gradients_of_q_k_v_and_a_captured_bias_match_torch():
    arrays = (*_qkv(L=6, S=6), np.array([0.5, -0.25], np.float32))
    ours, theirs = _both(arrays, requires_grad=True)
    bm = FA.create_block_mask(_late, None, None, 6, 6, BLOCK_SIZE=4)
    out, aux = FA.flex_attention(*ours[:3], _bias_mod(ours[3]), bm, return_aux=FA.AuxRequest(lse=True))
    tout, tlse = _torch_reference(*theirs)
    with torch.no_grad():  # the reference is torch's flex_attention itself, forward
        tbm = TFA.create_block_mask(_late, None, None, 6, 6, device="cpu", BLOCK_SIZE=4)
        flex, flex_aux = TFA.flex_attention(*(t.detach() for t in theirs[:3]), _bias_mod(theirs[3].detach()), tbm,
                                            return_aux=TFA.AuxRequest(lse=True))
    _close(tout, flex)
    _close(tlse, flex_aux.lse)
    _close(out, flex)
    _close(aux.lse, flex_aux.lse)
    # the lse of the dead row is -inf: weight only the finite ones
    ((out * out).sum() + tg.where(tg.isinf(aux.lse), 0.0, aux.lse).sum()).backward()
    ((tout * tout).sum() + torch.where(torch.isinf(tlse), 0.0, tlse).sum()).backward()
    for a, t in zip(ours, theirs):
        assert np.isfinite(np.asarray(a.grad)).all()
        _close(a.grad, t.grad, atol=1e-4)


def test_block_mask_summary_matches_torch():
    def mod(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (h == 0) | (kv_idx < 3)

    ours = FA.create_block_mask(mod, 2, 2, 10, 9, BLOCK_SIZE=(4, 3))
    theirs = TFA.create_block_mask(mod, 2, 2, 10, 9, device="cpu", BLOCK_SIZE=(4, 3))
    assert ours.shape == theirs.shape and ours.BLOCK_SIZE == theirs.BLOCK_SIZE
    assert ours.sparsity() == pytest.approx(theirs.sparsity())
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(np.asarray(getattr(ours, name)), getattr(theirs, name).numpy(), err_msg=name)
    np.testing.assert_array_equal(np.asarray(ours.to_dense()), theirs.to_dense().numpy())
    assert str(ours) == str(theirs)
    np.testing.assert_array_equal(np.asarray(FA.create_mask(mod, 2, 2, 10, 9)),
                                  TFA.create_mask(mod, 2, 2, 10, 9, device="cpu").numpy())
    either = FA.or_masks(_causal, lambda b, h, q, kv: kv == 5)
    np.testing.assert_array_equal(np.asarray(FA.create_mask(either, None, None, 6, 6)),
                                  TFA.create_mask(TFA.or_masks(_causal, lambda b, h, q, kv: kv == 5),
                                                  None, None, 6, 6, device="cpu").numpy())


def test_compiled_equals_eager():
    arrays, bias_np = _qkv(L=6, S=6), np.array([0.5, -0.25], np.float32)
    bm = FA.create_block_mask(_window, None, None, 6, 6, BLOCK_SIZE=4)

    def step(q, k, v, bias):
        out = FA.flex_attention(q, k, v, lambda s, b, h, qi, ki: s + bias[h] * (qi - ki), bm)
        loss = (out * out).sum()
        loss.backward()
        return out

    results = []
    for fn in (step, tg.compile(step, fullgraph=True)):
        args = [tg.tensor(a, requires_grad=True) for a in (*arrays, bias_np)]
        results.append((fn(*args), [a.grad for a in args]))
    (eager, eager_grads), (compiled, compiled_grads) = results
    _close(compiled, eager)
    for g, e in zip(compiled_grads, eager_grads):
        _close(g, e, atol=1e-4)


def test_block_mask_without_separate_full_blocks_matches_torch():
    ours = FA.create_block_mask(_window, 2, None, 7, 9, BLOCK_SIZE=(2, 4), separate_full_blocks=False)
    theirs = TFA.create_block_mask(_window, 2, None, 7, 9, device="cpu", BLOCK_SIZE=(2, 4),
                                   separate_full_blocks=False)
    assert ours.full_kv_num_blocks is None and theirs.full_kv_num_blocks is None
    for name in ("kv_num_blocks", "kv_indices", "q_num_blocks", "q_indices"):
        np.testing.assert_array_equal(np.asarray(getattr(ours, name)), getattr(theirs, name).numpy(), err_msg=name)
    assert ours.sparsity() == pytest.approx(theirs.sparsity())


def test_document_mask_on_shared_key_batch_and_max_scores():
    doc_np = np.array([0, 0, 0, 1, 1, 2])
    q, k, v = _qkv(B=3, L=6, S=6)
    k, v = k[:1], v[:1]  # one key/value batch for every query batch
    ours_doc, theirs_doc = tg.tensor(doc_np), torch.tensor(doc_np)
    bm = FA.create_block_mask(lambda b, h, qi, ki: ours_doc[qi] == ours_doc[ki], 3, None, 6, 6, BLOCK_SIZE=2)
    tbm = TFA.create_block_mask(lambda b, h, qi, ki: theirs_doc[qi] == theirs_doc[ki], 3, None, 6, 6,
                                device="cpu", BLOCK_SIZE=2)
    out, aux = FA.flex_attention(*(tg.tensor(a) for a in (q, k, v)), block_mask=bm,
                                 return_aux=FA.AuxRequest(lse=True, max_scores=True))
    tout = TFA.flex_attention(*(torch.tensor(a) for a in (q, k, v)), block_mask=tbm)
    _close(out, tout)
    # torch returns max_scores only on GPUs: compare with its definition, the row max of the kept scores
    scores = np.einsum("bhle,bhse->bhls", q, np.broadcast_to(k, q.shape)) / np.sqrt(q.shape[-1])
    kept = doc_np[:, None] == doc_np[None, :]
    np.testing.assert_allclose(np.asarray(aux.max_scores), np.where(kept, scores, -np.inf).max(-1), rtol=1e-5)


def test_block_mask_built_inside_a_compiled_function():
    """create_block_mask inside tg.compile: the block lists are built while tracing; a mask
    reading a traced input (document ids) keeps every block partial, and one program serves
    every document layout, exactly."""
    arrays = [tg.tensor(a) for a in _qkv(L=6, S=6)]

    def step(q, k, v, doc):
        causal_docs = FA.and_masks(_causal, lambda b, h, qi, ki: doc[qi] == doc[ki])
        bm = FA.create_block_mask(causal_docs, None, None, 6, 6, BLOCK_SIZE=2)
        return FA.flex_attention(q, k, v, block_mask=bm)

    compiled = tg.compile(step, fullgraph=True)
    for doc in ([0, 0, 1, 1, 1, 2], [0, 1, 1, 1, 1, 1]):
        _close(compiled(*arrays, tg.tensor(doc)), step(*arrays, tg.tensor(doc)))
    assert len(compiled.programs) == 1


def test_sliced_block_mask_matches_torch():
    def mod(b, h, q, kv):
        return (q >= kv) & (h != 1) | (b == 0)

    ours = FA.create_block_mask(mod, 2, 3, 8, 12, BLOCK_SIZE=4)
    theirs = TFA.create_block_mask(mod, 2, 3, 8, 12, device="cpu", BLOCK_SIZE=4)
    for index in (0, -1, (1, 2), (slice(0, 2), slice(1, 2))):
        a, b = ours[index], theirs[index]
        for name in ("kv_num_blocks", "kv_indices", "full_kv_indices", "q_num_blocks", "full_q_indices"):
            np.testing.assert_array_equal(np.asarray(getattr(a, name)), getattr(b, name).numpy(), err_msg=name)
        assert str(a) == str(b)
    q = tg.randn(1, 3, 8, 4)
    k = tg.randn(1, 3, 12, 4)
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        FA.flex_attention(q, k, k, block_mask=ours[0])
