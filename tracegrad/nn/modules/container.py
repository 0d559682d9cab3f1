"""Containers: ``Sequential`` (chains modules), ``ModuleList`` and ``ModuleDict`` (hold them),
``ParameterList`` (holds parameters).

>>> import tracegrad as tg
>>> net = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.ReLU(), tg.nn.Linear(3, 1))
>>> len(net), type(net[1]).__name__, net[:2]
(3, 'ReLU', Sequential(
  (0): Linear(in_features=2, out_features=3, bias=True)
  (1): ReLU()
))
"""
from __future__ import annotations

import operator
from collections import OrderedDict

from .module import Module, _addindent
from ...core.tracing import bump


def _index(idx, n):
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"index {idx} is out of range")
    return i % n


class Sequential(Module):
    """Calls its modules in order, each on the previous one's output. Built from modules
    (named "0", "1", ...) or from one OrderedDict of names to modules."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]):
            bump()  # (compiled programs that read this container recheck it)
            del self._modules[key]
        # keep the numbering contiguous, as PyTorch does
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        mods = list(self._modules.values())
        mods.insert(index % (n + 1) if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))
        return self


class ModuleList(Module):
    """A list of modules whose parameters the parent module sees; it has no ``forward``."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self))), module)

    def __delitem__(self, idx):
        mods = list(self._modules.values())
        del mods[idx if isinstance(idx, slice) else _index(idx, len(mods))]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict()
        self.extend(mods)

    def __repr__(self):
        # like PyTorch: runs of identical entries print once, as "(0-2): 3 x Linear(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []  # [start, end, text]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2)
                 for a, b, r in blocks]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Modules by name (in insertion order) whose parameters the parent module sees."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        bump()  # (compiled programs that read this container recheck it)
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules):
        for key, module in (modules.items() if hasattr(modules, "items") else modules):
            self[key] = module

    def pop(self, key):
        module = self._modules[key]
        bump()  # (compiled programs that read this container recheck it)
        del self._modules[key]
        return module

    def clear(self):
        bump()  # (compiled programs that read this container recheck it)
        self._modules.clear()


class ParameterList(Module):
    """A list of Parameters (named "0", "1", ...) that the parent module sees."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        return self._parameters[str(_index(idx, len(self)))]

    def __setitem__(self, idx, param):
        self.register_parameter(str(_index(idx, len(self))), _as_parameter(param))

    def append(self, param):
        self.register_parameter(str(len(self)), _as_parameter(param))
        return self

    def extend(self, params):
        for p in params:
            self.append(p)
        return self

    def extra_repr(self):
        return "\n".join(f"({i}): Parameter containing: [{p.dtype.name} of size {tuple(p.shape)}]"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of Parameters (a plain tensor becomes one) that the parent module sees
    under their keys.

    >>> import tracegrad as tg
    >>> d = tg.nn.ParameterDict({"scale": tg.ones(2)})
    >>> d["shift"] = tg.zeros(2, 3)
    >>> list(d.state_dict())
    ['scale', 'shift']
    >>> d
    ParameterDict(
        (scale): Parameter containing: [torch.FloatTensor of size 2]
        (shift): Parameter containing: [torch.FloatTensor of size 2x3]
    )
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key):
        bump()  # (compiled programs that read this container recheck it)
        return self._parameters.pop(key)

    def clear(self):
        self._parameters.clear()

    def update(self, parameters):
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"  ({k}): Parameter containing: [torch.{p.dtype.torch_name}"
                         f"Tensor of size {'x'.join(str(s) for s in p.shape)}]" for k, p in self.items())


def _as_parameter(value):
    from ..parameter import Parameter

    return value if isinstance(value, Parameter) else Parameter(value)
