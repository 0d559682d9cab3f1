"""Flattening nested Python containers (tuples, lists, dicts, namedtuples) into leaves and a
spec that rebuilds them: used for compiled functions' arguments and results."""
from __future__ import annotations


def flatten(obj):
    """Return (leaves, spec)."""
    leaves = []
    spec = _flatten(obj, leaves)
    return leaves, spec


def _flatten(obj, leaves):
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj), [_flatten(x, leaves) for x in obj])
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, None, [_flatten(x, leaves) for x in obj])
    if isinstance(obj, dict):
        keys = list(obj.keys())
        return ("dict", keys, [_flatten(obj[k], leaves) for k in keys])
    leaves.append(obj)
    return ("leaf", None, None)


def unflatten(spec, leaves):
    it = iter(leaves)
    return _build(spec, it)


def _build(spec, it):
    kind, meta, children = spec
    if kind == "leaf":
        return next(it)
    items = [_build(c, it) for c in children]
    if kind == "namedtuple":
        return meta(*items)
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    return dict(zip(meta, items))
