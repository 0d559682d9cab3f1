"""Attention layers with PyTorch's parameters, masks, shapes and reprs:
``MultiheadAttention``, ``TransformerEncoderLayer`` and ``TransformerEncoder``. Made of
linear maps, batched matrix products and softmax, so they train, compile and export like the
rest.

>>> import tracegrad as tg
>>> _ = tg.manual_seed(0)
>>> mha = tg.nn.MultiheadAttention(8, 2, batch_first=True)
>>> x = tg.randn(3, 5, 8)
>>> out, weights = mha(x, x, x)
>>> out.shape, weights.shape
(tracegrad.Size([3, 5, 8]), tracegrad.Size([3, 5, 5]))
"""
from __future__ import annotations

import copy

from ...core import creation
from ..._api import functional as T
from .. import functional as F
from .. import init
from .container import ModuleList
from .basic import Dropout, LayerNorm, Linear
from .module import Module
from ..parameter import Parameter
from ...core.device import check_device as _check_device


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention's output projection."""


class MultiheadAttention(Module):
    """``softmax(q k^T / sqrt(head_dim) + mask) v`` over ``num_heads`` heads of the projected
    query, key and value, then an output projection. Masks as PyTorch's: bool True means
    "may not attend", a float mask is added; ``key_padding_mask`` is ``(N, S)``. Keys and
    values of other sizes (``kdim``, ``vdim``) get their own projections; ``add_bias_kv``
    appends a learnt key and value, ``add_zero_attn`` a zero one, to every sequence."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim, dtype=dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(creation.empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(creation.empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(creation.empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.zeros(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(creation.empty(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(creation.empty(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w)
        if bias:
            init.zeros_(self.out_proj.bias)
        if add_bias_kv:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        # batch_first is the module's: the functional takes sequence-first inputs
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = (T.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
            self.out_proj.bias, training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = T.transpose(out, 0, 1)
        return out, weights


def _activation(activation):
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and
    LayerNorm (after it, or before with ``norm_first``), as PyTorch's."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = T.add(x, self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal))
            return T.add(x, self._ff_block(self.norm2(x)))
        x = self.norm1(T.add(x, self._sa_block(x, src_mask, src_key_padding_mask, is_causal)))
        return self.norm2(T.add(x, self._ff_block(x)))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


def generate_square_subsequent_mask(sz, dtype=None):
    """The causal mask PyTorch's Transformer uses: 0 on and below the diagonal, -inf above."""
    from ..._api.composites import triu

    return triu(creation.full((sz, sz), float("-inf"), dtype=dtype), diagonal=1)
