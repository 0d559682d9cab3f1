"""Saving and loading tensors, state dicts and training checkpoints as ``.npz`` files.

Nothing is pickled: arrays are stored as npz members and everything else (dict structure,
option values such as an optimizer's learning rate and betas) as one JSON document inside the
archive, read back with ``allow_pickle=False``. So a checkpoint can hold data only, never code.

>>> import os, tempfile
>>> import tracegrad as tg
>>> model = tg.nn.Linear(3, 2)
>>> opt = tg.optim.Adam(model.parameters(), lr=0.01)
>>> path = os.path.join(tempfile.mkdtemp(), "ckpt.npz")
>>> tg.save_checkpoint(path, model, opt, epoch=3)
>>> ckpt = tg.load_checkpoint(path, model, opt)
>>> int(ckpt["epoch"])
3
>>> tg.save(model.state_dict(), path)
>>> list(tg.load(path))
['weight', 'bias']
"""
from __future__ import annotations

import io
import json
import os
import tempfile
from collections import OrderedDict

import numpy as np

from .core.tensor import Tensor

_FORMAT = "tracegrad-npz"
_VERSION = 1
_TREE_KEY = "__tree__"


# ----------------------------------------------------------------------------- encoding
class _Encoder:
    """Turns a tree of dicts/lists/tuples/tensors/arrays/numbers/strings into JSON plus a
    list of arrays. Every JSON object in the result is a marker, so user keys never clash."""

    def __init__(self):
        self.arrays = {}

    def encode(self, obj, where="obj"):
        if isinstance(obj, Tensor):
            if obj.device.type != "cpu":  # (its values copied to the host; loaded back there)
                return {"tensor": self._store(obj.detach().cpu().numpy()), "device": str(obj.device)}
            return {"tensor": self._store(obj.detach().numpy())}
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                raise TypeError(f"{where}: object arrays cannot be saved (no pickling)")
            return {"ndarray": self._store(obj)}
        if isinstance(obj, np.generic):
            obj = obj.item()
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, dict):
            items = [[self._key(k, where), self.encode(v, f"{where}[{k!r}]")] for k, v in obj.items()]
            return {"dict": items, "ordered": isinstance(obj, OrderedDict)}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        raise TypeError(
            f"{where}: cannot save a {type(obj).__name__}; tracegrad checkpoints hold tensors, "
            "arrays, numbers, strings, None and dicts/lists/tuples of them (no pickled objects)")

    def _key(self, k, where):
        if isinstance(k, np.generic):
            k = k.item()
        if k is not None and not isinstance(k, (bool, int, float, str)):
            raise TypeError(f"{where}: dict keys must be strings or numbers, got {type(k).__name__}")
        return k

    def _store(self, array):
        name = f"a{len(self.arrays)}"
        self.arrays[name] = array
        return name


def _decode(node, archive, map_location=None):
    from .core.creation import from_numpy

    if isinstance(node, list):
        return [_decode(v, archive, map_location) for v in node]
    if not isinstance(node, dict):
        return node
    if "tensor" in node:
        t = from_numpy(np.array(archive[node["tensor"]]))
        # a cuda tensor goes back to the device, as PyTorch's load does, unless map_location="cpu"
        return t.to(node["device"]) if "device" in node and map_location is None else t
    if "ndarray" in node:
        return np.array(archive[node["ndarray"]])
    if "tuple" in node:
        return tuple(_decode(v, archive, map_location) for v in node["tuple"])
    pairs = [(k, _decode(v, archive, map_location)) for k, v in node["dict"]]
    return OrderedDict(pairs) if node.get("ordered") else dict(pairs)


# ----------------------------------------------------------------------------- save / load
def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (a tensor, a state dict, an optimizer state dict, or any dict/list/tuple
    of tensors, arrays, numbers and strings) to ``f``, a path or a writable binary file. The
    file is an npz archive; a path is written atomically and gets no extra suffix. Nothing is
    pickled, so PyTorch's pickle parameters are accepted for its call signature and have no
    effect; other Python objects are refused with an error naming them."""
    enc = _Encoder()
    tree = {"format": _FORMAT, "version": _VERSION, "root": enc.encode(obj)}
    members = dict(enc.arrays)
    members[_TREE_KEY] = np.array(json.dumps(tree))
    if hasattr(f, "write"):
        np.savez(f, **members)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **members)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what ``save`` wrote (tensors come back as tracegrad tensors). ``f`` is a path or a
    readable binary file. ``map_location`` may only be None (cuda tensors load back on cuda)
    or "cpu". The file holds no pickled
    code, so every load is what PyTorch calls ``weights_only``; ``mmap`` is accepted, and the
    arrays are read into memory."""
    if map_location not in (None, "cpu"):
        raise ValueError(f"map_location={map_location!r} is not supported: None or 'cpu'")
    source = f if hasattr(f, "read") else os.fspath(f)
    if hasattr(source, "read"):
        source = io.BytesIO(source.read())
    with np.load(source, allow_pickle=False) as archive:
        if _TREE_KEY not in archive.files:
            raise ValueError(f"{f!r} is not a tracegrad file (no {_TREE_KEY} member in the npz archive)")
        tree = json.loads(str(archive[_TREE_KEY]))
        if tree.get("format") != _FORMAT or tree.get("version", 0) > _VERSION:
            raise ValueError(f"{f!r}: unsupported format {tree.get('format')!r} version {tree.get('version')!r}")
        return _decode(tree["root"], archive, map_location)


def save_checkpoint(path, model=None, optimizer=None, **extra):
    """Save ``model.state_dict()``, ``optimizer.state_dict()`` (its options as JSON, its
    state tensors as arrays) and any extra named values (arrays, tensors, numbers, strings)."""
    tree = {}
    if model is not None:
        tree["model"] = model.state_dict()
    if optimizer is not None:
        tree["optimizer"] = optimizer.state_dict()
        tree["optimizer_type"] = type(optimizer).__name__
    if extra:
        tree["extra"] = extra
    save(tree, path)


def load_checkpoint(path, model=None, optimizer=None, strict=True):
    """Load a checkpoint written by ``save_checkpoint``. The states are loaded into ``model``
    and ``optimizer`` when given (``strict`` as in ``Module.load_state_dict``). Returns a dict
    with the extra values by name, plus ``"model"`` and ``"optimizer"`` holding the saved
    state dicts when the checkpoint has them."""
    tree = load(path)
    if not isinstance(tree, dict) or not set(tree) <= {"model", "optimizer", "optimizer_type", "extra"}:
        raise ValueError(f"{path!r} was not written by tg.save_checkpoint")
    if model is not None:
        if "model" not in tree:
            raise ValueError(f"checkpoint {path!r} holds no model state")
        model.load_state_dict(tree["model"], strict=strict)
    if optimizer is not None:
        if "optimizer" not in tree:
            raise ValueError(f"checkpoint {path!r} holds no optimizer state")
        saved_type = tree.get("optimizer_type")
        if saved_type != type(optimizer).__name__:
            raise ValueError(f"checkpoint {path!r} holds {saved_type} state, but the optimizer is "
                             f"{type(optimizer).__name__}")
        optimizer.load_state_dict(tree["optimizer"])
    result = dict(tree.get("extra", {}))
    for key in ("model", "optimizer"):
        if key in tree:
            result[key] = tree[key]
    return result
