"""``F.multi_head_attention_forward``, PyTorch's functional multi-head attention, re-exported by
``tracegrad.nn.functional``; ``nn.MultiheadAttention`` calls it, so the rule lives here once.
Made of linear maps, batched matrix products and softmax: it differentiates and compiles.

Inputs are sequence-first, ``(L, N, E)`` (or unbatched ``(L, E)``); masks as PyTorch's: a bool
``True`` means "may not attend", a float mask is added to the scores; ``key_padding_mask`` is
``(N, S)``, ``attn_mask`` ``(L, S)`` or ``(N * num_heads, L, S)``.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> E, H = 4, 2
>>> x = tg.ones(3, 1, E)
>>> w, b = tg.eye(E).repeat(3, 1), tg.zeros(3 * E)
>>> out, weights = F.multi_head_attention_forward(x, x, x, E, H, w, b, None, None, False, 0.0,
...                                               tg.eye(E), tg.zeros(E))
>>> out[:, 0, 0], weights.shape
(tensor([1., 1., 1.]), tracegrad.Size([1, 3, 3]))
"""
from __future__ import annotations

import math

from ...core import creation
from ...core import dtypes as _dt
from ..._api import functional as T

__all__ = ["multi_head_attention_forward"]


def _additive(mask, dtype, name):
    """A mask as the float added to attention scores: bool True (masked out) is -inf."""
    if mask is None:
        return None
    if mask.dtype is not _dt.bool_ and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if mask.dtype is _dt.bool_:
        return T.where(mask, float("-inf"), T.cast(creation.zeros(()), dtype))
    return T.cast(mask, dtype)


def _append_zeros(t, dim):
    """``t`` with one more position of zeros at the end of ``dim`` (a key nobody masks)."""
    shape = list(t.shape)
    shape[dim] = 1
    return T.cat([t, creation.zeros(*shape, dtype=t.dtype)], dim)


def _one_more_key(mask):
    """An attention or padding mask (or None) with a 0 (attend) for one more key at its end."""
    return None if mask is None else _append_zeros(mask, -1)


def _head_dim(E, embed_dim_to_check, num_heads):
    """Each head's size, ``E // num_heads``, once the embedding size is checked."""
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    hd = E // num_heads
    if hd * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    return hd


def _check_key_value(key, value, use_separate_proj_weight):
    if use_separate_proj_weight and tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                             f"{value.shape[:2]}")
    if not use_separate_proj_weight and tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")


def _check_attn_mask(mask, L, S, NH):
    """PyTorch's shapes for ``attn_mask``: ``(L, S)`` (made ``(1, L, S)``) or ``(N*H, L, S)``."""
    if mask.ndim == 2:
        if tuple(mask.shape) != (L, S):
            raise RuntimeError(f"The shape of the 2D attn_mask is {mask.shape}, but should be {(L, S)}.")
        return T.unsqueeze(mask, 0)
    if mask.ndim == 3:
        if tuple(mask.shape) != (NH, L, S):
            raise RuntimeError(f"The shape of the 3D attn_mask is {mask.shape}, but should be {(NH, L, S)}.")
        return mask
    raise RuntimeError(f"attn_mask's dimension {mask.ndim} is not supported")


def _project(query, key, value, use_separate, in_w, in_b, q_w, k_w, v_w):
    """The input projections: chunks of the packed ``in_proj_weight``, or three weights."""
    if use_separate:
        if q_w is None or k_w is None or v_w is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight "
                                 "or v_proj_weight is None")
        w_q, w_k, w_v = q_w, k_w, v_w
    else:
        if in_w is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w_q, w_k, w_v = T.chunk(in_w, 3)
    b_q, b_k, b_v = T.chunk(in_b, 3) if in_b is not None else (None,) * 3
    from . import linear

    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _static(given, computed, NH, hd, name):
    """``static_k`` / ``static_v`` replace the projected keys or values when given."""
    if given is None:
        return computed
    if given.shape[0] != NH:
        raise AssertionError(f"expecting {name}.size(0) of {NH}, but got {given.shape[0]}")
    if given.shape[2] != hd:
        raise AssertionError(f"expecting {name}.size(2) of {hd}, but got {given.shape[2]}")
    return given


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                                 out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
                                 attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights=True, is_causal=False):
    """``softmax(q k^T / sqrt(head_dim) + mask) v`` over ``num_heads`` heads of the projected
    query, key and value, then the output projection; returns ``(output, weights)``, weights
    ``(N, L, S)`` averaged over heads (``(N, H, L, S)`` without ``average_attn_weights``), or
    ``None`` without ``need_weights``. ``bias_k``/``bias_v`` append a learnt key and value,
    ``add_zero_attn`` a zero one; ``is_causal`` is a hint that ``attn_mask`` is causal, and is
    taken as the causal mask itself where PyTorch does (no weights wanted, no padding mask)."""
    from . import dropout, linear, softmax

    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                           "module method `generate_square_subsequent_mask` to create this mask.")
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = (T.unsqueeze(t, 1) for t in (query, key, value))
        key_padding_mask = None if key_padding_mask is None else T.unsqueeze(key_padding_mask, 0)
    L, N, E = query.shape
    hd = _head_dim(E, embed_dim_to_check, num_heads)
    _check_key_value(key, value, use_separate_proj_weight)
    if is_causal and key_padding_mask is None and not need_weights:
        # PyTorch then hands is_causal to scaled_dot_product_attention, ignoring attn_mask
        from ..._api.composites import triu

        attn_mask = triu(creation.full((L, key.shape[0]), float("-inf"), dtype=query.dtype), diagonal=1)
    q, k, v = _project(query, key, value, use_separate_proj_weight, in_proj_weight, in_proj_bias,
                       q_proj_weight, k_proj_weight, v_proj_weight)
    NH = N * num_heads
    mask = None if attn_mask is None else _check_attn_mask(_additive(attn_mask, q.dtype, "attn_mask"), L, k.shape[0], NH)
    pad = _additive(key_padding_mask, q.dtype, "key_padding_mask")
    if bias_k is not None and bias_v is not None:  # one more key and value, which every query may attend
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key or value.")
        k = T.cat([k, T.expand(bias_k, (1, N, E))], 0)
        v = T.cat([v, T.expand(bias_v, (1, N, E))], 0)
        mask, pad = _one_more_key(mask), _one_more_key(pad)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must be given together")

    def heads(x):  # (n, N, E) -> (N * H, n, hd)
        return T.transpose(T.reshape(x, (x.shape[0], NH, hd)), 0, 1)

    q = heads(q)
    k = _static(static_k, heads(k), NH, hd, "static_k")
    v = _static(static_v, heads(v), NH, hd, "static_v")
    if add_zero_attn:  # and a key and value of zeros
        k, v = _append_zeros(k, 1), _append_zeros(v, 1)
        mask, pad = _one_more_key(mask), _one_more_key(pad)
    S = k.shape[1]
    if pad is not None:
        if tuple(pad.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got {tuple(pad.shape)}")
        pad = T.reshape(T.expand(T.reshape(pad, (N, 1, 1, S)), (N, num_heads, 1, S)), (NH, 1, S))
        mask = pad if mask is None else T.add(mask, pad)
    scores = T.matmul(T.mul(q, math.sqrt(1.0 / float(hd))), T.transpose(k, 1, 2))  # (N * H, L, S)
    if mask is not None:
        scores = T.add(scores, mask)
    weights = softmax(scores, -1)
    if training and dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = T.reshape(T.transpose(T.matmul(weights, v), 0, 1), (L * N, E))
    out = T.reshape(linear(out, out_proj_weight, out_proj_bias), (L, N, out_proj_weight.shape[0]))
    out = T.squeeze(out, 1) if unbatched else out
    if not need_weights:
        return out, None
    weights = T.reshape(weights, (N, num_heads, L, S))
    if average_attn_weights:
        weights = T.mean(weights, 1)
    return out, (T.squeeze(weights, 0) if unbatched else weights)
