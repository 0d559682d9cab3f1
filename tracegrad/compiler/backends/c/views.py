"""Strided views over C buffers: how the C backend reads a value without copying it.

A ``View`` is ``(buf, offset, shape, strides)`` in elements. Movement primitives (reshape where
the strides allow it, permute, expand, slice, flip) become views, so a consumer reads through index
arithmetic instead of a copy; broadcasting an operand to a loop's shape sets stride 0.

>>> v = View("b0", 0, (2, 3), contiguous_strides((2, 3)))
>>> v.permute((1, 0)).strides
(1, 3)
>>> v.broadcast_to((4, 2, 3)).strides
(0, 3, 1)
"""
from __future__ import annotations

from ....core.storage import contiguous_strides  # (one rule for row-major strides: device arrays use it too)


class View:
    __slots__ = ("buf", "offset", "shape", "strides")

    def __init__(self, buf, offset, shape, strides):
        self.buf = buf  # C expression of a typed pointer, e.g. "b3"
        self.offset = offset
        self.shape = tuple(shape)
        self.strides = tuple(strides)

    def __repr__(self):
        return f"View({self.buf}+{self.offset}, {self.shape}, {self.strides})"

    @property
    def is_contiguous(self):
        return all(st == c for s, st, c in zip(self.shape, self.strides, contiguous_strides(self.shape))
                   if s != 1)

    def reshape(self, shape):
        """A view with the new shape (its elements in the same row-major order), or None when
        this view's layout cannot express it. Beyond contiguous views: a run of dims that walk
        memory as one strided block (each dim's stride its inner neighbour's stride times that
        neighbour's size) may be split or merged, so ``split`` then ``view(B, T, H, D)`` of a
        projection's heads stays a view instead of a copy.

        >>> View("b0", 0, (2, 8), (24, 1)).reshape((2, 2, 4)).strides  # a (2, 8) slice of (2, 24)
        (24, 4, 1)
        >>> View("b0", 0, (4, 6), (1, 4)).reshape((24,)) is None  # a transpose: no one stride
        True
        """
        shape = tuple(shape)
        if self.is_contiguous or 0 in self.shape:
            return View(self.buf, self.offset, shape, contiguous_strides(shape))
        old = [(n, st) for n, st in zip(self.shape, self.strides) if n != 1]
        strides = [0] * len(shape)
        i = j = 0
        while j < len(shape):
            if shape[j] == 1:  # (any stride: the index is always 0)
                j += 1
                continue
            if i == len(old):
                return None
            # the new dims j..j2 cover exactly the old dims i..i2, which must be one block
            j2, i2, covered, size = j, i, shape[j], old[i][0]
            while covered != size:
                if covered < size:
                    j2 += 1
                    if j2 == len(shape):
                        return None
                    covered *= shape[j2]
                else:
                    if i2 + 1 == len(old) or old[i2][1] != old[i2 + 1][1] * old[i2 + 1][0]:
                        return None
                    i2 += 1
                    size *= old[i2][0]
            step = old[i2][1]
            for k in range(j2, j - 1, -1):
                strides[k] = step
                step *= shape[k]
            i, j = i2 + 1, j2 + 1
        return View(self.buf, self.offset, shape, strides) if i == len(old) else None

    def permute(self, dims):
        return View(self.buf, self.offset, [self.shape[d] for d in dims], [self.strides[d] for d in dims])

    def broadcast_to(self, shape):
        lead = len(shape) - len(self.shape)
        strides = [0] * lead
        for i, (s, st) in enumerate(zip(self.shape, self.strides)):
            strides.append(st if s == shape[lead + i] and s != 1 else 0)
        return View(self.buf, self.offset, shape, strides)

    def slice(self, index):
        offset, shape, strides = self.offset, [], []
        for (start, stop, step), st in zip(index, self.strides):
            n = max(0, (stop - start + step - 1) // step)
            if n:
                offset += start * st
            shape.append(n)
            strides.append(st * step)
        return View(self.buf, offset, shape, strides)

    def flip(self, dims):
        offset, strides = self.offset, list(self.strides)
        for d in dims:
            if self.shape[d] > 0:
                offset += (self.shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
        return View(self.buf, offset, self.shape, strides)

    def index(self, loop_vars):
        """C index expression for this view at loop variables (one per dim, None = 0)."""
        terms = [str(self.offset)] if self.offset else []
        for var, st in zip(loop_vars, self.strides):
            if var is None or st == 0:
                continue
            terms.append(var if st == 1 else f"{var}*{st}")
        return " + ".join(terms) or "0"


def coalesce(shape, views, groups=None):
    """Merge adjacent loop dims that every view walks contiguously (and that belong to the
    same group, e.g. kept vs reduced); drop size-1 dims. Returns (shape, per-view strides,
    groups)."""
    groups = list(groups) if groups is not None else [0] * len(shape)
    keep = [d for d, s in enumerate(shape) if s != 1]
    shape = [shape[d] for d in keep]
    strides = [[v[d] for d in keep] for v in views]
    groups = [groups[d] for d in keep]
    d = len(shape) - 2
    while d >= 0:
        if groups[d] == groups[d + 1] and all(st[d] == st[d + 1] * shape[d + 1] for st in strides):
            shape[d] *= shape[d + 1]
            del shape[d + 1], groups[d + 1]
            for st in strides:
                st[d] = st[d + 1]
                del st[d + 1]
        d -= 1
    return shape, strides, groups
