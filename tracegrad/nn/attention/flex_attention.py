"""``tg.nn.attention.flex_attention`` (PyTorch's ``torch.nn.attention.flex_attention``):
attention whose scores a ``score_mod`` rewrites and a ``BlockMask``'s ``mask_mod`` masks, built
from tracegrad ops so it differentiates (also into tensors the mods capture) and compiles.

It computes what PyTorch's eager (math) implementation does: the whole score matrix,
``score_mod`` on every element, ``mask_mod`` element by element, a softmax that gives rows
with nothing kept an output of 0 and a logsumexp of -inf.

>>> import tracegrad as tg
>>> from tracegrad.nn.attention.flex_attention import flex_attention, create_block_mask
>>> q = k = v = tg.randn(1, 2, 4, 8)
>>> causal = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, None, None, 4, 4)
>>> bias = tg.tensor([0.0, -1.0])
>>> out = flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s + bias[h], block_mask=causal)
>>> tuple(out.shape)
(1, 2, 4, 8)
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

from ._block_mask import (BlockMask, _as_full, _index_grids, _sliced_mask_mod_error, and_masks,
                          create_block_mask, create_mask, noop_mask, or_masks)

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

# PyTorch's is a TypedDict of Triton tuning knobs; tracegrad has no kernel to tune
FlexKernelOptions = dict

# the block size PyTorch's default (no-op) BlockMask uses, which skips the length checks
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


class AuxRequest(NamedTuple):
    """Which extra outputs ``flex_attention(..., return_aux=AuxRequest(...))`` returns."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs: per query row, the logsumexp and the maximum of the modified scores."""
    lse: object = None
    max_scores: object = None


def _check(query, key, value, block_mask, enable_gqa, return_lse, return_aux):
    """PyTorch's argument checks, with its messages."""
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise ValueError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                         f"{query.dtype}, key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but got "
                         f"E={query.shape[-1]} and E={key.shape[-1]}.")
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    hq, hkv = query.shape[1], key.shape[1]
    if not enable_gqa and hq != hkv:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={hq} and "
                         f"Hkv={hkv}. Try setting enable_gqa=True for GQA.")
    if enable_gqa and hq % hkv:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={hq} "
                         f"and Hkv={hkv}.")
    bq, bkv = query.shape[0], key.shape[0]
    if bq != bkv:
        if block_mask is None:
            raise ValueError(f"Expect query and key/value to have the same batch size, or non-none block_mask, "
                             f"but got block_mask=None, Bq={bq}, and Bkv={bkv}.")
        if block_mask.kv_num_blocks.shape[0] != bq:
            raise ValueError(f"Expect query and key/value to have the same batch size, or block_mask and query "
                             f"to have the same batch size, but got Bq={bq}, Bkv={bkv}, "
                             f"B_block_mask={block_mask.kv_num_blocks.shape[0]}.")
        if bkv != 1:
            raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={bq} and Bkv={bkv}")
    if getattr(block_mask, "mask_mod", None) is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if block_mask is not None and block_mask.BLOCK_SIZE != (_LARGE_SPARSE_BLOCK_SIZE,) * 2:
        q_len, kv_len = block_mask.shape[-2:]
        lq, lkv = query.shape[-2], key.shape[-2]
        if lq > q_len or lkv > kv_len:
            raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={lq} "
                             f"and kv_len={lkv}. As the block mask was created for a smaller length than you're "
                             f"using it for, you likely need to create a new block mask.")
        if lq != q_len or lkv != kv_len:
            raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={lq} "
                             f"and kv_len={lkv}. As the block mask was created for a larger length than you're "
                             f"using it for, you can either 1. create a new block mask with the correct length, "
                             f"or 2. 'adjust' the existing block mask to the correct length by calling "
                             f"block_mask._adjust(q_len, kv_len). This essentially 'crops' the block mask to the "
                             f"upper left corner, which does not work for all mask_mods!")
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is deprecated, please use "
                         "return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=3)


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """``softmax(mask(score_mod(q @ k^T * scale))) @ v`` over ``(B, H, L, E)`` queries and
    ``(B, Hkv, S, E)`` keys/values, as PyTorch's ``flex_attention``.

    ``score_mod(score, b, h, q_idx, kv_idx)`` and the block mask's ``mask_mod(b, h, q_idx,
    kv_idx)`` are called once with int64 index tensors shaped ``(B,1,1,1)``, ``(1,H,1,1)``,
    ``(1,1,L,1)``, ``(1,1,1,S)`` (where PyTorch vmaps them over scalars: same values, and
    indexing a captured tensor with them gathers as there); positions the mask drops get
    -inf. The block lists of ``block_mask`` do not mask (PyTorch's eager implementation
    ignores them too); its ``mask_mod`` does, evaluated over the query's batch and heads.
    ``scale`` defaults to ``1/sqrt(E)``; ``enable_gqa`` shares each key/value head among
    ``H / Hkv`` query heads. ``return_lse`` (deprecated, as in PyTorch) or
    ``return_aux=AuxRequest(lse=True, max_scores=True)`` also give the per-row logsumexp
    (natural log) and maximum of the modified scores. ``kernel_options`` is accepted and
    ignored (there is no fused kernel to tune).

    >>> import tracegrad as tg
    >>> q, k, v = tg.randn(1, 1, 3, 4), tg.randn(1, 1, 3, 4), tg.randn(1, 1, 3, 4)
    >>> never = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx < 0, 1, 1, 3, 3)
    >>> out, aux = flex_attention(q, k, v, block_mask=never, return_aux=AuxRequest(lse=True))
    >>> out.abs().sum().item(), aux.lse.tolist()
    (0.0, [[[-inf, -inf, -inf]]])
    """
    from ..._api import composites as C
    from ..._api import functional as T

    _check(query, key, value, block_mask, enable_gqa, return_lse, return_aux)
    B, H, L, E = query.shape
    groups = H // key.shape[1]
    if groups > 1:
        key, value = (C.repeat_interleave(t, groups, dim=1) for t in (key, value))
    if key.shape[0] != B:  # a single key/value batch shared by every query batch
        key, value = key.expand(B, *key.shape[1:]), value.expand(B, *value.shape[1:])
    S = key.shape[-2]
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = T.mul(T.matmul(query, T.transpose(key, -2, -1)), scale)
    b, h, m, n = _index_grids(B, H, L, S)
    if score_mod is not None:
        scores = _as_full(score_mod(scores, b, h, m, n), (B, H, L, S), scores.dtype)
    mask_mod = None if block_mask is None else block_mask.mask_mod
    if mask_mod is not None and mask_mod is not noop_mask:
        scores = T.where(_as_full(mask_mod(b, h, m, n), (B, H, L, S), None), scores, float("-inf"))
    # a softmax safe for rows with nothing kept: shift by a finite row max and divide by a
    # non-zero sum, so those rows give 0 (not NaN) and gradients through them stay finite
    row_max = T.amax(scores, -1, keepdim=True).detach()
    dead = C.isneginf(row_max)
    shift = T.where(dead, 0.0, row_max)
    e = T.exp(T.sub(scores, shift))
    total = T.sum(e, -1, keepdim=True)
    safe_total = T.where(dead, 1.0, total)
    out = T.matmul(T.div(e, safe_total), value)
    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    want_max = return_aux is not None and return_aux.max_scores
    lse = T.where(dead, float("-inf"), T.add(T.log(safe_total), shift)).squeeze(-1) if want_lse else None
    max_scores = T.amax(scores, -1) if want_max else None
    if return_aux is not None:
        return out, AuxOutput(lse=lse, max_scores=max_scores)
    if return_lse:
        return out, lse
    return out
