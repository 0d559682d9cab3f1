"""Where ops.index and ops.scatter find ``_inplace_source`` (their ``index_add_`` and
``scatter_``): it lives with the in-place methods, in ``tensor_inplace.py``. Tensor's methods
are declared by ``tracegrad._api.tensor.Tensor`` and its mixins, not bound here."""
from __future__ import annotations

from .tensor_inplace import _inplace_source

__all__ = ["_inplace_source"]
