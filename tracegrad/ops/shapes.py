"""Shape helpers shared by the ops' inference rules (one place for each rule)."""
from __future__ import annotations


def broadcast_shapes(*shapes):
    """NumPy/PyTorch broadcasting; the error names both sizes and the dimension."""
    if len(shapes) == 2:  # the usual cases: nothing to broadcast, or a tensor and a scalar
        a, b = shapes
        if a == b or not b:
            return tuple(a)
        if not a:
            return tuple(b)
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        pad = (1,) * (ndim - len(s)) + tuple(s)
        for i, d in enumerate(pad):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
                continue
            a, b = shapes[0], s
            raise RuntimeError(
                f"The size of tensor a ({out[i]}) must match the size of tensor b ({d}) at "
                f"non-singleton dimension {i}: shapes {list(a)} and {list(b)} cannot be broadcast"
            )
    return tuple(out)


def wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def wrap_dim_of_nonscalar(dim, ndim, message, error=RuntimeError):
    """``wrap_dim`` for the ops that PyTorch defines only on tensors with a dim (narrow, split,
    chunk, diff, glu...): a 0-d tensor is a RuntimeError with the op's own ``message``, raised
    before ``dim`` is looked at (an IndexError for unbind, whose check is the dim wrapper's). Every other op follows ``wrap_dim``'s rule (a 0-d tensor has
    the dims 0 and -1; anything else is an IndexError) and must check ``dim`` on a 0-d tensor
    too, even where it has nothing to compute there."""
    if ndim == 0:
        raise error(message)
    return wrap_dim(dim, ndim)


def normalize_dims(dim, ndim):
    """None -> all dims; int or tuple -> sorted tuple of non-negative dims (no repeats)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(sorted(wrap_dim(d, ndim) for d in dim))  # (validated on a 0-d tensor too: IndexError)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dim} appears multiple times in the list of dims")
    return dims if ndim else ()  # (a 0-d tensor's dim 0 or -1 is the tensor itself: nothing to reduce)


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def wrap_dim_or_none(dim, ndim):
    """``wrap_dim``, or None for a 0-d tensor, whose only dims are 0 and -1 (anything else is
    PyTorch's IndexError there too)."""
    d = wrap_dim(dim, ndim)
    return d if ndim else None
