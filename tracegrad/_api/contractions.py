"""Tensor contractions under PyTorch's names: ``einsum``, ``tensordot``, ``kron``. Each is
made of permutes, reshapes, sums and batched matrix products, so one contraction of two
operands is one product (BLAS in compiled code), and gradients, tracing and compilation come
from those primitives.

>>> import tracegrad as tg
>>> a, b = tg.ones(2, 3), tg.ones(3, 4)
>>> tg.einsum("ij,jk->ik", a, b).shape
tracegrad.Size([2, 4])
>>> tg.einsum("ii", tg.eye(3))
tensor(3.)
"""
from __future__ import annotations

import string

from . import functional as F
from ..ops.shapes import numel
from ..core.tensor import Tensor

__all__ = ["einsum", "tensordot", "kron"]

_LETTERS = string.ascii_letters


def einsum(equation, *operands):
    """Sum of products of ``operands`` over the subscripts ``equation`` names, as
    ``torch.einsum``: letters a-z and A-Z, ``...`` for broadcast dims, ``->`` for the output
    (without it: ``...`` then the letters used once, in alphabetical order). A repeated letter
    in one operand takes its diagonal; sizes 1 broadcast.

    >>> import tracegrad as tg
    >>> x = tg.arange(6.0).reshape(2, 3)
    >>> tg.einsum("bi,bi->b", x, x)
    tensor([ 5., 50.])
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError("einsum(): the sublist format (operand, [dims], ...) is not supported; "
                        "pass an equation string")
    for x in operands:
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operands must be tensors, got {type(x).__name__}")
    terms, output = _parse(equation.replace(" ", ""), operands)
    sizes = _sizes(terms, operands)
    tensors = []
    for k, (term, x) in enumerate(zip(terms, operands)):
        x, term = _take_diagonals(x, term)
        later = set(output).union(*terms[:k], *terms[k + 1:])
        x, term = _sum_out(x, term, [c for c in term if c not in later])
        tensors.append((x, term))
    x, term = tensors[0]
    for k, (y, yterm) in enumerate(tensors[1:], 1):
        keep = set(output).union(*(t for _, t in tensors[k + 1:]))
        x, term = _contract(x, term, y, yterm, keep, sizes)
    x, term = _sum_out(x, term, [c for c in term if c not in output])
    x = F.permute(x, [term.index(c) for c in output]) if term else x
    shape = tuple(sizes[c] for c in output)
    return x if tuple(x.shape) == shape else F.expand(x, shape)


def _parse(equation, operands):
    """(subscripts per operand, output subscripts) with ``...`` spelled as letters the
    equation does not use (right-aligned, so that broadcast dims line up)."""
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): the equation names {len(terms)} operands but {len(operands)} "
                           "were given")
    spare = [c for c in _LETTERS if c not in equation]
    widths = [x.ndim - len(t.replace("...", "")) for t, x in zip(terms, operands) if "..." in t]
    ell = "".join(spare[:max(widths, default=0)])
    out = []
    for t, x in zip(terms, operands):
        named = t.replace("...", "")
        if "..." in t:
            if t.count("...") > 1 or x.ndim < len(named):
                raise RuntimeError(f"einsum(): subscripts {t!r} do not fit an operand of {x.ndim} dims")
            t = t.replace("...", ell[len(ell) - (x.ndim - len(named)):])
        if len(t) != x.ndim or any(c not in _LETTERS for c in t):
            raise RuntimeError(f"einsum(): subscripts {t!r} (letters a-z, A-Z and ...) do not fit an "
                               f"operand of {x.ndim} dims")
        out.append(t)
    if arrow:
        output = rhs.replace("...", ell)
        if "." in output or any(c not in _LETTERS for c in output):
            raise RuntimeError(f"einsum(): invalid output subscripts {rhs!r}")
        for c in output:
            if output.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if not any(c in t for t in out):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                                   "for any input operand")
    else:
        used = "".join(out)
        output = ell + "".join(sorted((c for c in set(used) if used.count(c) == 1 and c not in ell),
                                      key=_LETTERS.index))
    return out, output


def _sizes(terms, operands):
    """Each subscript's size (1 broadcasts against any size)."""
    sizes = {}
    for t, x in zip(terms, operands):
        for c, n in zip(t, x.shape):
            have = sizes.get(c, 1)
            if n != have and 1 not in (n, have):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for an operand, which does "
                                   f"not broadcast with size {have} of another")
            sizes[c] = max(n, have) if 0 not in (n, have) else 0
    return sizes


def _take_diagonals(x, term):
    """A letter repeated within one operand: its diagonal, once, as the last dim."""
    from .composites import diagonal

    while True:
        dup = next((c for c in term if term.count(c) > 1), None)
        if dup is None:
            return x, term
        i = term.index(dup)
        j = term.index(dup, i + 1)
        x = diagonal(x, 0, i, j)
        term = "".join(c for k, c in enumerate(term) if k not in (i, j)) + dup


def _sum_out(x, term, letters):
    if not letters:
        return x, term
    x = F.sum(x, [term.index(c) for c in letters])
    return x, "".join(c for c in term if c not in letters)


def _contract(x, xt, y, yt, keep, sizes):
    """x (subscripts xt) times y (yt), summed over the letters both have and ``keep`` lacks:
    one batched matrix product over the letters both keep."""
    batch = [c for c in xt if c in yt and c in keep]
    summed = [c for c in xt if c in yt and c not in keep]
    left = [c for c in xt if c not in yt]
    right = [c for c in yt if c not in xt]

    def arrange(t, term, order):
        t = F.permute(t, [term.index(c) for c in order]) if order else t
        shape = tuple(sizes[c] for c in order)
        return t if tuple(t.shape) == shape else F.expand(t, shape)

    a = arrange(x, xt, batch + left + summed)
    b = arrange(y, yt, batch + summed + right)
    n = [numel([sizes[c] for c in group]) for group in (batch, left, summed, right)]
    out = F.matmul(F.reshape(a, (n[0], n[1], n[2])), F.reshape(b, (n[0], n[2], n[3])))
    return F.reshape(out, tuple(sizes[c] for c in batch + left + right)), "".join(batch + left + right)


def tensordot(a, b, dims=2, out=None):
    """Sums the products of ``a``'s last ``dims`` dims with ``b``'s first ``dims`` (an int), or
    of the dims the pair of lists ``dims`` names, as ``torch.tensordot``."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {da} and {db}")
    ta, tb = list(_LETTERS[:a.ndim]), list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} "
                               f"in dim {i} and second has size {b.shape[j]} in dim {j}")
        tb[j] = ta[i]
    kept = [c for c in ta if c not in tb] + [c for c in tb if c not in ta]
    return F.write_out(einsum(f"{''.join(ta)},{''.join(tb)}->{''.join(kept)}", a, b), out)


def kron(a, b):
    """The Kronecker product: every element of ``a`` times the whole of ``b``, blocks laid out
    as ``a``'s elements (the shorter shape padded with leading 1s)."""
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    wide_a = F.reshape(a, tuple(n for s in sa for n in (s, 1)))
    wide_b = F.reshape(b, tuple(n for s in sb for n in (1, s)))
    return F.reshape(F.mul(wide_a, wide_b), tuple(p * q for p, q in zip(sa, sb)))
