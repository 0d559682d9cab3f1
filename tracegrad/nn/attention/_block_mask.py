"""``BlockMask`` and the mask helpers of ``tg.nn.attention.flex_attention`` (PyTorch's
``torch.nn.attention.flex_attention``): ``create_block_mask``, ``create_mask``, ``and_masks``,
``or_masks``, ``noop_mask``.

A BlockMask keeps PyTorch's block-level summary (``kv_num_blocks``/``kv_indices`` and their
``full_``/``q_`` variants, as int32 tensors) because code reads it (``sparsity()``,
``to_dense()``, ``shape``); ``flex_attention`` applies the ``mask_mod`` itself element by
element, as PyTorch's eager implementation does, so results are exact whatever the block size.

>>> import tracegrad as tg
>>> from tracegrad.nn.attention.flex_attention import create_block_mask, create_mask
>>> causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx
>>> bm = create_block_mask(causal, None, None, 8, 8, BLOCK_SIZE=4)
>>> bm.shape, bm.BLOCK_SIZE, bm.sparsity()
((1, 1, 8, 8), (4, 4), 25.0)
>>> bm.to_dense()[0, 0].tolist()
[[1, 0], [1, 1]]
>>> create_mask(causal, 1, 1, 3, 3)[0, 0].tolist()
[[True, False, False], [True, True, False], [True, True, True]]
"""
from __future__ import annotations

import inspect
import itertools

import numpy as np
from ...core.device import check_device as _check_device

__all__ = ["BlockMask", "create_block_mask", "create_mask", "and_masks", "or_masks", "noop_mask"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128


def _tg():
    # the package imports tg.nn while it loads, so reach tracegrad lazily
    import tracegrad

    return tracegrad


def noop_mask(batch, head, token_q, token_kv):
    """A mask_mod that keeps every position.

    >>> import tracegrad as tg
    >>> noop_mask(tg.tensor(0), tg.tensor(0), tg.tensor(1), tg.tensor(2))
    tensor(True)
    """
    return _tg().ones((), dtype=_tg().bool)


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    """The mask_mod of a sliced BlockMask (PyTorch's): the slice no longer knows its offsets."""
    raise RuntimeError("Cannot use mask_mod from a sliced BlockMask. When you slice a BlockMask using [], the "
                       "mask_mod attribute is reset. You must set it from the original BlockMask's mask_mod.")


def or_masks(*mask_mods):
    """A mask_mod that keeps a position where any of ``mask_mods`` does.

    >>> import tracegrad as tg
    >>> either = or_masks(lambda b, h, q, kv: q == kv, lambda b, h, q, kv: kv == 0)
    >>> create_mask(either, 1, 1, 2, 2)[0, 0].tolist()
    [[True, False], [True, True]]
    """
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = _tg().zeros((), dtype=_tg().bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods):
    """A mask_mod that keeps a position where all of ``mask_mods`` do.

    >>> both = and_masks(lambda b, h, q, kv: q >= kv, lambda b, h, q, kv: q - kv < 2)
    >>> create_mask(both, 1, 1, 3, 3)[0, 0].tolist()
    [[True, False, False], [True, True, False], [False, True, True]]
    """
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = _tg().ones((), dtype=_tg().bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


def _positional_count(fn):
    """How many positional parameters without defaults ``fn`` takes (PyTorch tells a
    score_mod, 5, from a mask_mod, 4, this way)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        return code.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    return sum(1 for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty)


def _mod_type(fn):
    n = _positional_count(fn)
    if n not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {n}")
    return "score_mod" if n == 5 else "mask_mod"


def _index_grids(B, H, Q, KV):
    """int64 index tensors shaped to broadcast against ``(B, H, Q, KV)``: a mod is called once
    with these instead of PyTorch's four nested vmaps, and indexing a captured tensor with
    them (``bias[h]``, ``rel[q_idx - kv_idx]``) gathers the same values."""
    tg = _tg()
    return (tg.arange(B).reshape(B, 1, 1, 1), tg.arange(H).reshape(1, H, 1, 1),
            tg.arange(Q).reshape(1, 1, Q, 1), tg.arange(KV).reshape(1, 1, 1, KV))


def _as_full(value, shape, dtype):
    """A mod's result (maybe a Python scalar, maybe broadcast-shaped) at the full shape."""
    tg = _tg()
    if not isinstance(value, tg.Tensor):
        value = tg.tensor(value, dtype=dtype)
    return value.expand(*shape) if tuple(value.shape) != tuple(shape) else value


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The ``(B, H, Q_LEN, KV_LEN)`` bool mask of a mask_mod (True keeps), or of a score_mod
    (True where it does not give -inf); ``B``/``H`` of None mean 1."""
    _check_device(device)  # (a device other than the CPU raises: core/device.py)
    tg = _tg()
    B, H = B or 1, H or 1
    b, h, m, n = _index_grids(B, H, Q_LEN, KV_LEN)
    shape = (B, H, Q_LEN, KV_LEN)
    if _mod_type(mod_fn) == "score_mod":
        out = _as_full(mod_fn(tg.zeros(shape), b, h, m, n), shape, tg.float32)
        return tg.logical_not(tg.isneginf(out))
    return _as_full(mod_fn(b, h, m, n), shape, tg.bool)


# ----------------------------------------------------------------------------- block summaries
def _dense_to_ordered(dense):
    """Per row of blocks: how many are on, and their column indices first (PyTorch's stable
    descending argsort, so the on blocks come in ascending column order)."""
    dense = dense.astype(np.int32)
    return dense.sum(-1).astype(np.int32), np.argsort(-dense, axis=-1, kind="stable").astype(np.int32)


def _ordered_to_dense(num_blocks, indices):
    cols = indices.shape[-1]
    valid = np.arange(cols) < num_blocks[..., None]
    dense = np.zeros(indices.shape[:-1] + (cols + 1,), np.int32)  # one spare column for the unused slots
    np.put_along_axis(dense, np.where(valid, indices, cols), 1, axis=-1)
    return dense[..., :cols]


def _np(t):
    """The values of a block list. Read directly when concrete: in a compiled function the
    block lists are metadata built while tracing (their values are part of the BlockMask, as
    its shape is), not data to read at run time."""
    if t is None:
        return None
    value = getattr(t, "_value", None)
    return value if isinstance(value, np.ndarray) else np.asarray(t)


def _tensor(a):
    return None if a is None else _tg().tensor(a, dtype=_tg().int32)


def _transposed(num_blocks, indices):
    if num_blocks is None:
        return None, None
    nb, ix = _dense_to_ordered(np.swapaxes(_ordered_to_dense(_np(num_blocks), _np(indices)), -2, -1))
    return _tensor(nb), _tensor(ix)


class BlockMask:
    """Which ``(BLOCK_SIZE[0], BLOCK_SIZE[1])`` tiles of the score matrix ``flex_attention``
    may look at, with the ``mask_mod`` that decides each element. Build one with
    ``create_block_mask`` (or ``BlockMask.from_kv_blocks``); the constructor takes PyTorch's
    precomputed fields."""

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                 q_num_blocks, q_indices, full_q_num_blocks, full_q_indices, BLOCK_SIZE=(128, 128),
                 mask_mod=noop_mask, *, dq_write_order=None, dq_write_order_full=None, dq_kv_order=None,
                 dq_kv_order_spt=None):
        if kv_indices.ndim < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod
        self.dq_write_order, self.dq_write_order_full = dq_write_order, dq_write_order_full
        self.dq_kv_order, self.dq_kv_order_spt = dq_kv_order, dq_kv_order_spt

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None, full_kv_indices=None,
                       BLOCK_SIZE=128, mask_mod=None, seq_lengths=None, compute_q_blocks=True, *,
                       dq_write_order=None, dq_write_order_full=None, dq_kv_order=None):
        """A BlockMask from its kv-side block lists (the q-side ones are derived).

        >>> import tracegrad as tg
        >>> bm = BlockMask.from_kv_blocks(tg.tensor([[[1, 2]]], dtype=tg.int32),
        ...                               tg.tensor([[[[0, 1], [0, 1]]]], dtype=tg.int32), BLOCK_SIZE=2)
        >>> bm.shape, bm.q_num_blocks.tolist()
        ((1, 1, 4, 4), [[[2, 1]]])
        """
        if kv_indices.ndim < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        q_nb = q_ix = full_q_nb = full_q_ix = None
        if compute_q_blocks:
            q_nb, q_ix = _transposed(kv_num_blocks, kv_indices)
            full_q_nb, full_q_ix = _transposed(full_kv_num_blocks, full_kv_indices)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * block[0], kv_indices.shape[-1] * block[1])
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_nb, q_ix,
                   full_q_nb, full_q_ix, block, mask_mod if mask_mod is not None else noop_mask,
                   dq_write_order=dq_write_order, dq_write_order_full=dq_write_order_full,
                   dq_kv_order=dq_kv_order if not isinstance(dq_kv_order, bool) else None,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def __getitem__(self, index):
        """The BlockMask of some batches, heads (and query block rows): ints keep their
        dimension, as PyTorch's. Its mask_mod must be set again from the original.

        >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, 2, 3, 8, 8, BLOCK_SIZE=4)
        >>> bm[0].kv_num_blocks.shape, bm[0, 1:].kv_indices.shape
        (tracegrad.Size([1, 3, 2]), tracegrad.Size([1, 2, 2, 2]))
        """
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1)) if isinstance(i, int)
                      else (_np(i) if hasattr(i, "_value") else i) for i, n in zip(padded, sizes))

        def pick(t):
            return None if t is None else _tensor(_np(t)[index])

        return BlockMask.from_kv_blocks(pick(self.kv_num_blocks), pick(self.kv_indices), pick(self.full_kv_num_blocks),
                                        pick(self.full_kv_indices), BLOCK_SIZE=self.BLOCK_SIZE,
                                        mask_mod=_sliced_mask_mod_error, seq_lengths=self.seq_lengths,
                                        compute_q_blocks=self.q_indices is not None)

    @property
    def shape(self):
        return tuple(self.kv_indices.shape[:-2]) + self.seq_lengths

    def numel(self):
        """The number of elements of the mask (not accounting for sparsity)."""
        return int(np.prod(self.shape))

    def sparsity(self):
        """The percentage of blocks that are skipped (neither partial nor full)."""
        computed = int(_np(self.kv_num_blocks).sum())
        if self.full_kv_num_blocks is not None:
            computed += int(_np(self.full_kv_num_blocks).sum())
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def _dense_blocks(self):
        dense = _ordered_to_dense(_np(self.kv_num_blocks), _np(self.kv_indices))
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense(_np(self.full_kv_num_blocks), _np(self.full_kv_indices))
        return dense

    def to_dense(self):
        """The int32 ``(..., Q blocks, KV blocks)`` map of the blocks that are computed."""
        return _tensor(self._dense_blocks())

    def as_tuple(self, flatten=True):
        """The fields in PyTorch's order (sequence lengths, block lists, block sizes, mask_mod)."""
        block_size, seq_lengths = (self.BLOCK_SIZE, self.seq_lengths) if flatten else \
            ((self.BLOCK_SIZE,), (self.seq_lengths,))
        return (*seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, self.dq_write_order, self.dq_write_order_full, self.dq_kv_order,
                self.dq_kv_order_spt, *block_size, self.mask_mod)

    def to(self, device):
        """This BlockMask (tracegrad keeps everything on the CPU)."""
        _check_device(device)  # (a device other than the CPU raises: core/device.py)
        return self

    def to_string(self, grid_size=(20, 20), limit=4):
        """A drawing of the computed blocks per (batch, head): full, partial or empty."""
        dense = self._dense_blocks()
        *batch_dims, rows, cols = dense.shape
        max_rows, max_cols = (grid_size, grid_size) if isinstance(grid_size, int) else \
            ((rows, cols) if grid_size == -1 else grid_size)
        row_step, col_step = max(1, -(-rows // max_rows)), max(1, -(-cols // max_cols))
        out = []
        for i, idx in enumerate(itertools.product(*[range(d) for d in batch_dims])):
            if i == limit:
                out += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                        "You can also index (BlockMask[batch, head]) to choose a specific batch or head"]
                break
            vis = f"{idx}\n"
            for r in range(0, rows, row_step):
                for c in range(0, cols, col_step):
                    share = dense[idx][r:r + row_step, c:c + col_step].mean()
                    vis += ("█" if share == 1 else " " if share == 0 else "░") * 2
                vis += "\n"
            out.append(vis)
        return "\n".join(out)

    def __str__(self):
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n{self.to_string().strip()}\n)"

    def __repr__(self):
        def shape(t):
            return None if t is None else t.shape

        return (f"BlockMask(\n    kv_num_blocks={shape(self.kv_num_blocks)},\n"
                f"    kv_indices={shape(self.kv_indices)},\n"
                f"    full_kv_num_blocks={shape(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape(self.full_kv_indices)},\n    q_num_blocks={shape(self.q_num_blocks)},\n"
                f"    q_indices={shape(self.q_indices)},\n    full_q_num_blocks={shape(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape(self.full_q_indices)},\n    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={getattr(self.mask_mod, '__name__', self.mask_mod)}\n)")


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile=False, separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True):
    """A BlockMask for ``mask_mod`` over ``(B, H, Q_LEN, KV_LEN)`` (None for B or H: shared by
    all): evaluates the mask once, pads it to whole blocks, and lists per query block the
    partial blocks and (with ``separate_full_blocks``) the fully kept ones, as PyTorch does.
    ``_compile`` and the dQ write-order options only concern PyTorch's GPU kernels and are
    accepted for compatibility."""
    _check_device(device)  # (a device other than the CPU raises: core/device.py)
    if _mod_type(mask_mod) != "mask_mod":
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    from ...core import tracing as trace

    # the block lists are metadata (flex_attention evaluates mask_mod itself, in the trace), so
    # inside a compiled function they are built once, eagerly, when it is traced; a mask_mod
    # that reads a traced input (document ids passed to the compiled function) has no values
    # yet, so all its blocks count as partial
    unknown = trace.current_tracer() is not None and _reads_traced(mask_mod)
    with trace.paused():
        return _build_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, separate_full_blocks,
                                 unknown)


def _reads_traced(fn, depth=0):
    """Whether ``fn`` captures (in its closure, defaults or the globals it names) a traced
    tensor, looking into the functions it captures (``and_masks`` keeps its mods there)."""
    tg = _tg()
    if isinstance(fn, tg.Tensor):
        return fn._is_traced
    if isinstance(fn, (tuple, list)):
        return any(_reads_traced(x, depth) for x in fn)
    code = getattr(fn, "__code__", None)
    if depth > 8 or code is None:
        return False
    captured = [c.cell_contents for c in (fn.__closure__ or ()) if c.cell_contents is not fn]
    captured += list(fn.__defaults__ or ())
    captured += [fn.__globals__[n] for n in code.co_names if n in getattr(fn, "__globals__", {})]
    return any(_reads_traced(x, depth + 1) for x in captured
               if isinstance(x, (tg.Tensor, tuple, list)) or callable(x) and hasattr(x, "__code__"))


def _build_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, separate_full_blocks, unknown):
    _check_device(device)  # (a device other than the CPU raises: core/device.py)
    bq, bkv = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    b, h = B or 1, H or 1
    rows, cols = -(-Q_LEN // bq), -(-KV_LEN // bkv)
    if unknown:  # flex_attention applies mask_mod to each element anyway: results stay exact
        partial, full = np.ones((b, h, rows, cols), bool), np.zeros((b, h, rows, cols), bool)
    else:
        mask = np.asarray(create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device))
        b, h = mask.shape[:2]
        mask = np.pad(mask, ((0, 0), (0, 0), (0, rows * bq - Q_LEN), (0, cols * bkv - KV_LEN)))
        counts = mask.reshape(b, h, rows, bq, cols, bkv).sum((3, 5))
        partial, full = (counts > 0) & (counts < bq * bkv), counts == bq * bkv
    if not separate_full_blocks:
        partial, full = partial | full, None
    kv_nb, kv_ix = _dense_to_ordered(partial)
    full_nb, full_ix = _dense_to_ordered(full) if full is not None else (None, None)
    return BlockMask.from_kv_blocks(_tensor(kv_nb), _tensor(kv_ix), _tensor(full_nb), _tensor(full_ix),
                                    BLOCK_SIZE=(bq, bkv), mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))
