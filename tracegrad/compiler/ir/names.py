"""Names for the tensors a traced function read without receiving them, so that listings say
``lifted model.fc.weight`` rather than ``lifted``; and the modules whose ``training`` flag the
function may depend on (they become guards).

Only what the function's code can reach cheaply is searched: the bound ``self`` of a method,
its closure variables and the globals its code names (one level into lists, tuples and dicts;
modules through their named parameters and buffers; optimizers through their state).

>>> import tracegrad as tg
>>> W = tg.zeros(2)
>>> def f(x):
...     return x * W
>>> names, modules = reachable(f)
>>> names[id(W)]
'W'
"""
from __future__ import annotations

import types


def _code_names(code, out):
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def _roots(fn):
    """(name, object) pairs the function can reach directly."""
    roots = []
    target = fn
    if isinstance(fn, types.MethodType):
        roots.append(("self", fn.__self__))
        target = fn.__func__
    code = getattr(target, "__code__", None)
    if code is None:  # a callable object: its attributes are reachable through self
        if hasattr(fn, "__dict__") and not isinstance(fn, type):
            roots.append(("self", fn))
        return roots
    for name, cell in zip(code.co_freevars, getattr(target, "__closure__", None) or ()):
        try:
            roots.append((name, cell.cell_contents))
        except ValueError:  # an empty cell
            pass
    globs = getattr(target, "__globals__", {})
    for name in sorted(_code_names(code, set())):
        if name in globs:
            roots.append((name, globs[name]))
    return roots


def reachable(fn, extra=()):
    """``({id(tensor): name}, [(name, module)])`` for what ``fn`` (and ``extra`` (name, obj)
    pairs, e.g. its arguments) can reach."""
    from ...core.tensor import Tensor

    names, modules, optimizers, seen = {}, [], [], set()

    def visit(name, obj, depth):
        if id(obj) in seen:
            return
        if isinstance(obj, Tensor):
            names.setdefault(id(obj), name)
            return
        seen.add(id(obj))
        if _is_module(obj):
            modules.append((name, obj))
            for pname, p in obj.named_parameters():
                names.setdefault(id(p), f"{name}.{pname}")
            for bname, b in obj.named_buffers():
                names.setdefault(id(b), f"{name}.{bname}")
        elif _is_optimizer(obj):
            optimizers.append((name, obj))  # after the modules: their names read better
        elif depth < 1 and isinstance(obj, (list, tuple)):
            for i, x in enumerate(obj[:64]):
                visit(f"{name}[{i}]", x, depth + 1)
        elif depth < 1 and isinstance(obj, dict):
            for k, x in list(obj.items())[:64]:
                if isinstance(k, (str, int)):
                    visit(f"{name}[{k!r}]", x, depth + 1)

    for name, obj in list(extra) + _roots(fn):
        if isinstance(obj, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
            continue
        visit(name, obj, 0)
    for name, opt in optimizers:
        _visit_optimizer(name, opt, names)
    return names, modules


def _visit_optimizer(name, opt, names):
    for g, group in enumerate(opt.param_groups):
        for key, t in (getattr(group, "option_tensors", None) or {}).items():  # (optim/optimizer.py)
            for j, ti in enumerate(t) if isinstance(t, tuple) else [(None, t)]:
                names.setdefault(id(ti), f"{name}.param_groups[{g}][{key!r}]" + ("" if j is None else f"[{j}]"))
        for i, p in enumerate(group["params"]):
            pname = names.get(id(p), f"param_groups[{g}][{i}]")
            names.setdefault(id(p), f"{name}.{pname}")
            for key, t in opt.state.get(p, {}).items():
                names.setdefault(id(t), f"{name}.state[{pname}].{key}")


def _is_module(obj):
    return hasattr(obj, "named_parameters") and hasattr(obj, "named_buffers") and hasattr(obj, "training")


def _is_optimizer(obj):
    return hasattr(obj, "param_groups") and hasattr(obj, "state") and hasattr(obj, "zero_grad")
