"""``Module``: the base class of layers and models (PyTorch's ``torch.nn.Module``).

Assigning a Parameter, a Module or (for registered names) a buffer as an attribute registers
it; ``parameters()``, ``state_dict()``, ``train()``... then walk the tree of submodules.

>>> import tracegrad as tg
>>> class Net(tg.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = tg.nn.Linear(4, 2)
...         self.register_buffer("scale", tg.ones(2))
...     def forward(self, x):
...         return self.fc(x) * self.scale
>>> net = Net()
>>> [name for name, _ in net.named_parameters()]
['fc.weight', 'fc.bias']
>>> list(net.state_dict())
['scale', 'fc.weight', 'fc.bias']
>>> net
Net(
  (fc): Linear(in_features=4, out_features=2, bias=True)
)
"""
from __future__ import annotations

import sys
from collections import OrderedDict, namedtuple

import numpy as np

from ...autograd.grad_mode import no_grad
from ...autograd.graph import RemovableHandle
from ...core.tracing import _trusted_file, bump
from ...core.tracing import current_tracer, graph_break
from ...core.tensor import Tensor
from ..parameter import Parameter, is_lazy


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and the keys it did not use."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return "\n".join([first] + [(" " * spaces + ln) if ln.strip() else "" for ln in lines])


def _typename(v):
    return "tracegrad.nn.Parameter" if isinstance(v, Parameter) else (
        "tracegrad.Tensor" if isinstance(v, Tensor) else type(v).__name__)


_UNSET = object()


def _state_changed(module, name):
    """A module attribute changes: compiled programs that read modules compare them again
    (ir/pystate.py). While a function is traced, the assignment is also noted: a program would
    not repeat it (capture turns it into a graph break)."""
    bump()
    # the user's own assignments while tracing break the graph before they happen (so that the
    # eager run that follows assigns once); tracegrad's, such as a lazy module's one-time set-up,
    # are part of what the trace does once
    if current_tracer() is not None and not _trusted_file(sys._getframe(2).f_code.co_filename):
        graph_break(f"the function assigns {type(module).__name__}.{name}, a module attribute; a "
                    "compiled program would not repeat the assignment")


class Module:
    """Base class for all layers and models; subclasses define ``forward``."""

    training: bool

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from ...core.placement import layer_init

        layer_init(cls)  # (a constructor taking device= honours it: built, then moved there)

    def __init__(self):
        sets = object.__setattr__
        sets(self, "training", True)
        sets(self, "_parameters", OrderedDict())
        sets(self, "_buffers", OrderedDict())
        sets(self, "_non_persistent_buffers_set", set())
        sets(self, "_modules", OrderedDict())
        sets(self, "_forward_hooks", OrderedDict())
        sets(self, "_forward_pre_hooks", OrderedDict())
        sets(self, "_load_state_dict_pre_hooks", OrderedDict())

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        # (each hook table is copied and walked only when not empty: the usual module has none)
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        forward = self.__dict__.get("_compiled_forward") or self.forward
        out = forward(*args, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        return out

    def register_forward_pre_hook(self, hook):
        """``hook(module, args)`` runs before ``forward``; it may return replacement args."""
        bump()  # (the hook changes what a compiled call must do)
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook):
        """``hook(module, args, output)`` runs after ``forward``; it may return a new output."""
        bump()
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` (with ``with_module``: the module first) runs before ``load_state_dict``
        reads this module's keys; it may rename them (older layouts)."""
        if with_module:
            hook = (lambda h: lambda *args: h(self, *args))(hook)
        hooks = self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before ``load_state_dict`` reads this module."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    # ------------------------------------------------------------------ registration
    def _check_new_name(self, name, kind, table):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Add ``param`` (a Parameter, or None for an absent optional weight) as ``name``."""
        bump()
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(tracegrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a non-learnable tensor (saved in ``state_dict`` unless ``persistent=False``)."""
        bump()
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(tracegrad Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        bump()
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        if d.get(name, _UNSET) is not value:  # compiled programs that read modules recheck them
            _state_changed(self, name)
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_everywhere(name, keep=params)
            self.register_parameter(name, value)
        elif getattr(value, "_is_buffer", False) and isinstance(value, Tensor):  # an nn.Buffer
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._remove_everywhere(name, keep=buffers)
            self.register_buffer(name, value, persistent=value.persistent)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(tracegrad.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_everywhere(name, keep=modules)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(tracegrad.nn.Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(tracegrad Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _remove_everywhere(self, name, keep=None):
        """Forget ``name`` before it is assigned again; the table ``keep`` (where it goes now)
        keeps its entry, so that a replaced submodule or parameter keeps its place in the
        order, as in PyTorch (``seq[1] = m`` stays the second layer)."""
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            if table is not keep:
                table.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # only called when normal lookup fails: look in the registries
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        _state_changed(self, name)
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Yield ``(qualified_name, module)`` for this module and every descendant."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            yield from child.named_modules(memo, prefix + ("." if prefix else "") + name,
                                           remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield ``(qualified_name, Parameter)``; a parameter shared by two modules appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` ("" is this module)."""
        mod = self
        for atom in target.split(".") if target else []:
            if atom not in mod._modules or mod._modules[atom] is None:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{atom}`")
            mod = mod._modules[atom]
        return mod

    def get_parameter(self, target):
        """The parameter at dotted path ``target`` ("layer.0.weight")."""
        return self._get_registered(target, "_parameters", "parameter")

    def get_buffer(self, target):
        """The buffer at dotted path ``target`` ("bn.running_mean")."""
        return self._get_registered(target, "_buffers", "buffer")

    def _get_registered(self, target, table, kind):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        entries = getattr(mod, table)
        if name not in entries:
            raise AttributeError(f"{type(mod).__name__} has no {kind} `{name}`")
        return entries[name]

    def compile(self, *args, **kwargs):
        """Compile this module's ``forward`` in place (``tg.compile``'s arguments): calls of
        the module run the compiled program, hooks around it as before. As
        ``torch.nn.Module.compile``.

        >>> import tracegrad as tg
        >>> m = tg.nn.Linear(2, 1)
        >>> m.compile(backend="interpreter")
        >>> m(tg.ones(3, 2)).shape
        tracegrad.Size([3, 1])
        """
        from ...compiler.api import compile as tg_compile

        self.__dict__["_compile_args"] = (args, kwargs)
        self.__dict__["_compiled_forward"] = tg_compile(self.forward, *args, **kwargs)

    def __getstate__(self):
        # a copy or a pickle compiles its own forward again (the programs read this module's
        # tensors by reference: they are no state to copy)
        state = dict(self.__dict__)
        state.pop("_compiled_forward", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_compile_args" in state:
            args, kwargs = state["_compile_args"]
            self.compile(*args, **kwargs)

    def apply(self, fn):
        """Call ``fn(m)`` on every submodule (children first) and on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        modules = list(self.modules())
        if any(m.training is not mode for m in modules):
            bump()  # (compiled programs that read these modules recheck them: ir/pystate.py)
        for m in modules:
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # ------------------------------------------------------------------ dtype conversion
    def _apply_to_tensors(self, fn):
        for m in self.modules():
            for table in (m._parameters, m._buffers):
                for t in table.values():
                    if t is not None:
                        t.data = fn(t.data)
                        if t._grad is not None:
                            t._grad = fn(t._grad)
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False, **kwargs):
        """Move parameters and buffers to ``device`` and cast the floating-point ones to ``dtype``;
        the Parameter objects stay the same (their data is replaced). A device this build cannot
        place tensors on raises, as PyTorch's CPU build does (core/device.py, core/placement.py)."""
        from ...core.device import to_arguments

        dtype, dev = to_arguments(args, dtype, device)
        if dev is not None and any(t.device != dev for t in (*self.parameters(), *self.buffers())):
            from ...core.placement import move  # (only when something moves: .data is replaced)

            self._apply_to_tensors(lambda t: move(t, dev))
        if dtype is None:
            return self
        from ...core.dtypes import to_dtype

        dt = to_dtype(dtype)
        if not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dt}")
        return self._apply_to_tensors(lambda t: t.to(dt) if t.is_floating_point() else t)

    def float(self):
        return self.to("float32")

    def double(self):
        return self.to("float64")

    def half(self):
        return self.to("float16")

    def bfloat16(self):
        return self.to("bfloat16")

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        """Parameters and buffers moved to the GPU (without one, or the emulation: PyTorch's
        CPU build's error; core/device.py)."""
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    # ------------------------------------------------------------------ state dict
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of parameters and persistent buffers by qualified name. Values are
        detached tensors sharing storage with the module's (the Parameters themselves when
        ``keep_vars=True``)."""
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own entries (not its children's) into ``destination``; a lazy module
        keeps its uninitialized placeholders as they are (they have no data to detach)."""
        for name, t in self._local_state().items():
            destination[prefix + name] = t if keep_vars or is_lazy(t) else t.detach()

    def _local_state(self):
        buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        return {k: v for k, v in list(self._parameters.items()) + list(buffers.items()) if v is not None}

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy tensors (or ndarrays) from ``state_dict`` into this module's parameters and
        buffers in place. Shape mismatches always raise; missing and unexpected keys raise when
        ``strict`` (PyTorch's wording). Returns ``(missing_keys, unexpected_keys)``."""
        from collections.abc import Mapping

        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        state_dict = OrderedDict(state_dict)  # (the pre-hooks may rename keys: not the caller's dict)
        for prefix, mod in self.named_modules(remove_duplicate=False):
            for hook in mod.__dict__.get("_load_state_dict_pre_hooks", {}).values():
                hook(state_dict, prefix + "." if prefix else "", {}, strict, [], [], [])
        missing, expected, errors = [], set(), []
        for prefix, mod in self.named_modules(remove_duplicate=False):
            prefix = prefix + "." if prefix else ""
            for name, target in mod._local_state().items():
                key = prefix + name
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                error = _load_one(mod, name, key, target, state_dict[key], assign)
                if error:
                    errors.append(error)
        unexpected = [k for k in state_dict if k not in expected]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ repr
    def extra_repr(self):
        """The text inside the parentheses of this module's repr; layers override it."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(mod), 2) for key, mod in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _load_one(module, name, key, target, value, assign):
    """Copy one checkpoint value into ``target``; return an error message or None."""
    if isinstance(value, np.ndarray):
        from ...core.creation import from_numpy

        value = from_numpy(value)
    if not isinstance(value, Tensor):
        return (f'While copying the parameter named "{key}", expected a tracegrad Tensor or '
                f"ndarray from checkpoint but received {type(value)}")
    if is_lazy(target):  # (still uninitialized: the value is too, or the lazy load hook made it)
        return None
    if tuple(value.shape) != tuple(target.shape):
        return (f"size mismatch for {key}: copying a param with shape {value.shape} from "
                f"checkpoint, the shape in current model is {target.shape}.")
    with no_grad():
        if assign:
            if isinstance(target, Parameter):
                value = Parameter(value.detach(), requires_grad=target.requires_grad)
            setattr(module, name, value)
        else:
            target.copy_(value)
    return None


def _zero_grad(p, set_to_none):
    """PyTorch's rule for one tensor: drop the grad, or detach it and zero it in place."""
    if is_lazy(p):  # (not materialized yet: no gradient to reset, and no data a trace could read)
        return
    if set_to_none:
        p.grad = None  # without reading it first: a compiled step then needs no guard on it
        return
    g = p.grad
    if g is None:
        return
    if g.grad_fn is not None:
        g.detach_()
    else:
        g.requires_grad_(False)
    g.zero_()
