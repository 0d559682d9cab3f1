"""``Optimizer``: parameter groups, per-parameter state, zero_grad and PyTorch's state_dict layout.

Written for the compiler: a compiled training step traces ``step()`` into its program, so
``step()`` only runs tensor ops and in-place updates on tensors that already exist. All state
(moment buffers and the step count, a 0-dim float tensor) is allocated when a parameter group
is added, never inside a trace, and first-step special cases are tensor arithmetic on the step
count instead of Python branches on tensor values.

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.ones(2))
>>> opt = tg.optim.SGD([w], lr=0.5, momentum=0.9)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w
Parameter containing:
tensor([0., 0.], requires_grad=True)
>>> sorted(opt.state_dict()["state"][0])
['momentum_buffer', 'step']
"""
from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from ..autograd.graph import RemovableHandle
from ..autograd.grad_mode import enable_grad, no_grad
from ..core.tensor import Tensor


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(v):
    return "tracegrad.Tensor" if isinstance(v, Tensor) else type(v).__name__


# state kind: (a scalar in the default dtype, else a tensor like the parameter; its start)
_STATE_STARTS = {"step": (True, 0.0), "one": (True, 1.0), "lr": (True, "lr"),
                 "zeros": (False, 0.0), "lr_like": (False, "lr")}
# zeros of a shape derived from the parameter's, for the parameters it applies to (None: not
# this parameter): Adafactor's factored second moments
_STATE_SHAPES = {"row_zeros": lambda s: (*s[:-1], 1) if len(s) > 1 else None,
                 "col_zeros": lambda s: (*s[:-2], 1, s[-1]) if len(s) > 1 else None,
                 "vector_zeros": lambda s: s if len(s) <= 1 else None}


class _ParamGroup(dict):
    """A parameter group: a dict, as in PyTorch, that also keeps the options a scheduler changes
    between steps in 0-dim float64 tensors (``option_tensors``), written whenever the option is
    set: the learning rate, and the momentum or Adam's betas that OneCycleLR and CyclicLR
    cycle. A compiled step reads those tensors (lifted into the program like optimizer state),
    so a scheduler changing them neither retraces nor is ignored.

    >>> import tracegrad as tg
    >>> opt = tg.optim.Adam([tg.nn.Parameter(tg.ones(1))], betas=(0.9, 0.99))
    >>> opt.param_groups[0]["betas"] = (0.8, 0.99)
    >>> [float(t) for t in opt.param_groups[0].option_tensors["betas"]]
    [0.8, 0.99]
    """

    option_tensors = None  # {option: tensor, or a tuple of tensors for a tuple option}

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if self.option_tensors and key in self.option_tensors:
            _write_option(self.option_tensors[key], value)


# Options that live in tensors when they are numbers (a Tensor lr given by the user is used as it
# is): those PyTorch's schedulers write. The others are constants of a compiled step, guarded.
_TENSOR_OPTIONS = ("lr", "momentum", "betas")


def _option_tensors(value, device=None):
    if isinstance(value, tuple):
        return tuple(creation.tensor(float(v), dtype=_dt.float64, device=device) for v in value)
    return creation.tensor(float(value), dtype=_dt.float64, device=device)


def _write_option(tensors, value):
    if isinstance(tensors, tuple):
        for t, v in zip(tensors, value):
            _write_option(t, v)
    else:
        # (np.copyto: into host memory, or into a cuda tensor's device memory)
        np.copyto(tensors._value, value._value if isinstance(value, Tensor) else np.asarray(value, tensors._value.dtype))


class Optimizer:
    """Base class. Subclasses define ``_check_group(group)`` (hyper-parameter validation),
    ``_state_spec(group)`` (names of the state tensors each parameter needs) and
    ``_update_group(group)`` (the update, run under ``no_grad``)."""

    def __init__(self, params, defaults):
        if defaults.get("differentiable"):
            raise NotImplementedError(f"{type(self).__name__}(differentiable=True): tracegrad's optimizer "
                                      "steps run under no_grad, so no gradient flows through them")
        self.defaults = dict(defaults)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self._hooks = {kind: OrderedDict() for kind in _HOOK_KINDS}
        self.param_groups = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups and state
    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (missing options take the defaults)
        and allocate its state now, so that ``step()`` never allocates."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        group = _ParamGroup(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a "
                            "list instead.")
        group["params"] = list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in group["params"]}) != len(group["params"]):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self._check_group(group)
        # (on the parameters' device: a compiled step on cuda tensors then reads no host memory)
        device = group["params"][0].device if group["params"] else None
        group.option_tensors = {key: _option_tensors(group[key], device) for key in _TENSOR_OPTIONS
                                if key in group and _is_number_option(group[key])}
        self.param_groups.append(group)
        self._allocate_state(group)

    def _check_group(self, group):
        pass

    def _state_spec(self, group):
        """``{name: kind}``: the state tensors a parameter of ``group`` needs, each started as
        its kind says (``_STATE_STARTS``: a scalar count from 0, a scalar 1, the learning rate
        as a scalar, zeros like the parameter, the learning rate like the parameter)."""
        return {}

    def _allocate_state(self, group):
        """Create missing state tensors (eagerly; they become program inputs when traced)."""
        from ..core import tracing as trace
        from ..nn.parameter import is_lazy

        # a lazy module's parameter has no shape before the module's first forward: its state
        # is made at the first step after that, as PyTorch's optimizers allow, and eagerly also
        # when that step is being traced (it is made once, by that trace)
        deferred = self.__dict__.setdefault("_deferred_state", set())
        for p in group["params"]:
            if is_lazy(p):
                deferred.add(id(p))
                continue
            st = self.state[p]
            for name, kind in self._state_spec(group).items():
                if name in st or _STATE_SHAPES.get(kind, lambda s: ())(tuple(p.shape)) is None:
                    continue
                if trace.current_tracer() is not None and id(p) not in deferred:
                    trace.graph_break(f"{type(self).__name__} state '{name}' allocated inside a "
                                      "compiled function (run one eager step or create the "
                                      "optimizer before compiling)")
                if kind in _STATE_SHAPES:
                    shape = _STATE_SHAPES[kind](tuple(p.shape))
                    if shape is not None:
                        st[name] = creation.zeros(shape, dtype=p.dtype, device=p.device)
                    continue
                scalar, value = _STATE_STARTS[kind]
                value = float(group["lr"]) if value == "lr" else value
                with trace.paused():
                    if scalar:
                        # (the step count too lives on the parameter's device, as PyTorch's
                        # capturable=True keeps it: a compiled cuda step then copies nothing)
                        st[name] = creation.full((), value, dtype=_dt.get_default_dtype(), device=p.device)
                    else:
                        st[name] = creation.full_like(p.detach(), value)
            deferred.discard(id(p))

    # ------------------------------------------------------------------ hooks
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # every optimizer's step runs the step hooks
            cls.step = _with_step_hooks(cls.__dict__["step"])

    def _register(self, kind, hook, prepend=False):
        hooks = self.__dict__.setdefault("_hooks", {k: OrderedDict() for k in _HOOK_KINDS})[kind]
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return new
        ``(args, kwargs)``. Returns a handle whose ``remove()`` unregisters it."""
        return self._register("step_pre", hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        return self._register("step_post", hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs before ``state_dict`` builds the dict."""
        return self._register("state_dict_pre", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs after; it may return a replacement dict."""
        return self._register("state_dict_post", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs before loading; it may return a replacement."""
        return self._register("load_state_dict_pre", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs after ``load_state_dict``."""
        return self._register("load_state_dict_post", hook, prepend)

    def _run_hooks(self, kind, *args):
        """Each hook of ``kind`` in turn; the last non-None result (or None)."""
        result = None
        for hook in list(self.__dict__.get("_hooks", {}).get(kind, {}).values()):
            out = hook(self, *args)
            if out is not None:
                result = out
        return result

    # ------------------------------------------------------------------ the update
    def step(self, closure=None):
        """One update of every parameter that has a ``.grad``. ``closure`` (optional)
        re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._allocate_state(group)  # options such as momentum may have changed
        _guard_options(self)
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group):
        raise NotImplementedError

    @staticmethod
    def _gradients(group):
        """``(p, g)`` for each parameter of ``group`` that has a gradient, ``g`` negated
        under ``maximize``."""
        for p in group["params"]:
            if p.grad is not None:
                yield p, (-p.grad if group.get("maximize") else p.grad)

    def _stepped(self, group, l2=True):
        """``(p, g, state)`` for each parameter of ``group`` with a gradient, its step count
        advanced and, with ``l2``, ``weight_decay * p`` added to ``g`` (PyTorch's coupled
        weight decay): the preamble of the adaptive optimizers' loops."""
        wd = group.get("weight_decay", 0) if l2 else 0
        for p, g in self._gradients(group):
            st = self.state[p]
            st["step"].add_(1)
            yield p, (g.add(p, alpha=wd) if wd != 0 else g), st

    @staticmethod
    def _option(group, key):
        """The value of option ``key`` to compute with: in a trace, the group's tensor for it
        (a program input, see _ParamGroup) where it has one; eagerly, the number itself."""
        from ..core.tracing import current_tracer

        tensors = group.option_tensors
        if tensors and key in tensors and current_tracer() is not None:
            return tensors[key]
        return group[key]

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized parameters: to None (default) or to zeros."""
        from ..nn.modules.module import _zero_grad

        for group in self.param_groups:
            for p in group["params"]:
                _zero_grad(p, set_to_none)

    # ------------------------------------------------------------------ state dict
    def state_dict(self):
        """``{"state": {index: {name: tensor}}, "param_groups": [{option: value, "params":
        [index, ...]}]}``, PyTorch's layout: parameters are numbered in group order. The
        tensors are the optimizer's own (not copies)."""
        self._run_hooks("state_dict_pre")
        state_dict = self._state_dict()
        return self._run_hooks("state_dict_post", state_dict) or state_dict

    def _state_dict(self):
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(st) for p, st in self.state.items() if id(p) in index and st}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load options and state saved by ``state_dict`` (also from ``tg.load``). State is
        copied into the existing tensors in place, so compiled steps stay valid."""
        state_dict = self._run_hooks("load_state_dict_pre", state_dict) or state_dict
        self._load_state_dict(state_dict)
        self._run_hooks("load_state_dict_post")

    def _load_state_dict(self, state_dict):
        saved_groups = state_dict["param_groups"]
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        for group, saved in zip(self.param_groups, saved_groups):
            for k, v in saved.items():
                if k != "params":
                    # JSON (checkpoints) turns tuples such as betas into lists
                    group[k] = tuple(v) if isinstance(v, list) and isinstance(group.get(k), tuple) else v
            self._check_group(group)
            self._allocate_state(group)
        id_map = {}
        for group, saved in zip(self.param_groups, saved_groups):
            id_map.update(zip(saved["params"], group["params"]))
        for idx, saved_state in state_dict["state"].items():
            idx = int(idx)
            if idx not in id_map:
                raise ValueError(f"loaded state dict has state for parameter {idx}, which no group lists")
            self._load_param_state(id_map[idx], idx, saved_state)

    def _load_param_state(self, p, idx, saved_state):
        st = self.state[p]
        with no_grad():
            for name, value in saved_state.items():
                value = creation.tensor(value) if not isinstance(value, Tensor) else value
                if name in st:
                    if tuple(value.shape) != tuple(st[name].shape):
                        raise ValueError(
                            f"loaded state for parameter {idx} has '{name}' of shape "
                            f"{list(value.shape)}, but the optimizer's is {list(st[name].shape)}")
                    st[name].copy_(value)
                else:
                    dtype = p.dtype if value.is_floating_point() and name != "step" else value.dtype
                    st[name] = value.detach().to(dtype).clone()
        self._after_load(p, saved_state)

    def _after_load(self, p, saved_state):
        pass

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"



_HOOK_KINDS = ("step_pre", "step_post", "state_dict_pre", "state_dict_post", "load_state_dict_pre",
               "load_state_dict_post")


def _with_step_hooks(step):
    """``step`` running the optimizer's step pre-hooks (which may replace its arguments)
    before it and the post-hooks after it."""
    @functools.wraps(step)
    def stepped(*args, **kwargs):
        self = args[0]  # (the hooks see the optimizer among the arguments, as PyTorch's)
        hooks = self.__dict__.get("_hooks")
        if not hooks or not (hooks["step_pre"] or hooks["step_post"]):
            return step(*args, **kwargs)
        for hook in list(hooks["step_pre"].values()):
            out = hook(self, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {out}.")
                args, kwargs = out
        result = step(*args, **kwargs)
        for hook in list(hooks["step_post"].values()):
            hook(self, args, kwargs)
        return result

    return stepped


Optimizer.step = _with_step_hooks(Optimizer.step)


def _is_number_option(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) or (
        isinstance(value, tuple) and all(map(_is_number_option, value)))


def _guard_options(opt):
    """While a compiled step traces ``step()``, the options are baked into the program as
    constants: guard them so that changing one (weight decay, say) retraces instead of being
    silently ignored. The options kept in tensors (_ParamGroup) are program inputs instead;
    only whether a momentum is zero is guarded, as it picks the code (SGD's buffer or none)."""
    from ..core.tracing import current_tracer

    tracer = current_tracer()
    if tracer is None:
        return
    for i, group in enumerate(opt.param_groups):
        tensors = group.option_tensors or {}
        keys = tuple(key for key, value in group.items()
                     if key != "params" and key not in tensors
                     and isinstance(value, (int, float, bool, tuple, str, type(None))))
        get = group.get
        if "momentum" in tensors:
            what = ", ".join(keys + ("momentum == 0",))
            read = lambda get=get, keys=keys: (*map(get, keys), get("momentum") == 0)
        else:
            what = ", ".join(keys)
            read = lambda get=get, keys=keys: tuple(map(get, keys))
        # one guard per group, not one per option: the guards run on every call (five options
        # of SGD cost ~1 us as separate guards). Equal values of another type (0 and 0.0,
        # False and 0) are the same option to the optimizer's arithmetic.
        if what:
            tracer.guard_value(f"{type(opt).__name__}.param_groups[{i}] options {what}", read, read())
