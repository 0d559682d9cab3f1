"""Tensor's public surface is declared (issue 22): one public class, ``tracegrad.Tensor``
(tracegrad/_api/tensor.py), whose methods are explicit ``def``s in it and its mixins, with
signatures, true return annotations and docstrings; no method is bound at import with setattr.
The data and autograd machinery is ``TensorBase`` (core/tensor.py), and every tensor the lower
layers make is an instance of the public class."""
from __future__ import annotations

import copy
import inspect
import pathlib
import pickle
import re
import types
import typing

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.core.tensor import TensorBase

ROOT = pathlib.Path(__file__).resolve().parent.parent
MIXINS = [c for c in tg.Tensor.__mro__ if c is tg.Tensor or c.__module__.startswith("tracegrad._api.tensor")]


def _declared():
    """{name: (declaring class, function)} for the attributes the public class and its mixins declare."""
    out = {}
    for cls in reversed(MIXINS):
        for name, value in vars(cls).items():
            fn = value.fget if isinstance(value, property) else value
            if inspect.isfunction(fn):
                out[name] = (cls, fn)
    return out


def test_every_attribute_a_tensor_had_before_is_still_there():
    lines = (ROOT / "tests" / "tensor_attributes.txt").read_text().splitlines()
    before = {line for line in lines if line and not line.startswith("#")}
    now = set(dir(tg.tensor([1.0])))
    assert not before - now, sorted(before - now)
    assert {n for n in now - before if not n.startswith("_")} == set()


def test_the_methods_are_declared_in_the_surface_modules():
    assert tg.Tensor.__module__ == "tracegrad" and repr(tg.Tensor) == "<class 'tracegrad.Tensor'>"
    assert tg.Tensor.exp.__qualname__ == "MathMethods.exp"
    assert tg.Tensor.exp.__module__ == "tracegrad._api.tensor_math"
    assert tg.Tensor.add_.__qualname__ == "InPlaceMethods.add_"
    declared = _declared()
    assert len(declared) > 450
    for name, (cls, fn) in declared.items():
        if fn.__qualname__ != f"{cls.__qualname__}.{name}":  # an alias (``multiply = mul``, ``__hash__``)
            assert fn.__qualname__.split(".")[0] in {c.__qualname__ for c in MIXINS + [TensorBase]}, name
            continue
        assert fn.__module__ == cls.__module__, name
    # every attribute of the surface comes from the public class, its mixins or TensorBase
    owners = {c for c in tg.Tensor.__mro__ if c is not object}
    for name in dir(tg.Tensor):
        owner = next(c for c in tg.Tensor.__mro__ if name in vars(c))
        assert owner in owners or owner is object, (name, owner)


def test_no_method_is_bound_with_setattr():
    """The old mechanism (``setattr(Tensor, name, ...)``, ``Tensor.name = ...`` at import) is gone."""
    pattern = re.compile(r"setattr\((_?Tensor|TensorBase)\b|^(_?Tensor|TensorBase)\.\w+\s*=", re.M)
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "tracegrad").rglob("*.py") if pattern.search(p.read_text())]
    assert not offenders


def test_declared_methods_have_docstrings_and_return_annotations():
    for name, (cls, fn) in _declared().items():
        if fn.__qualname__ != f"{cls.__qualname__}.{name}":  # (an alias: the function it names is checked)
            continue
        _return_type(name)  # (every annotation evaluates)
        assert fn.__doc__ and fn.__doc__.strip(), name
        assert "return" in fn.__annotations__, name


def test_signatures_forward_each_parameter():
    """An editor sees the parameters (not ``*args, **kwargs``) where the function has them."""
    params = lambda f: list(inspect.signature(f).parameters)
    assert params(tg.Tensor.sum) == ["self", "dim", "keepdim", "dtype"]
    assert params(tg.Tensor.add) == ["self", "b", "alpha"]
    assert params(tg.Tensor.add_) == ["self", "b", "alpha"]
    assert params(tg.Tensor.transpose) == ["self", "dim0", "dim1"]
    assert params(tg.Tensor.topk) == ["self", "k", "dim", "largest", "sorted"]
    assert params(tg.Tensor.copy_) == ["self", "src_tensor", "non_blocking"]
    opaque = [name for name, (_, fn) in _declared().items()
              if params(fn)[1:] == ["args", "kwargs"]]
    assert not opaque


def _holds(value, annotation):
    """Whether ``value`` is of the type ``annotation`` (the few forms the surface uses)."""
    origin = typing.get_origin(annotation)
    if annotation is type(None) or annotation is None:
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_holds(value, a) for a in typing.get_args(annotation))
    if origin is tuple:
        args = typing.get_args(annotation)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_holds(v, args[0]) for v in value)
        return len(args) == len(value) and all(_holds(v, a) for v, a in zip(value, args))
    return isinstance(value, annotation)


def _return_type(name):
    cls, fn = _declared()[name]
    module = __import__(cls.__module__, fromlist=["_"])
    hints = typing.get_type_hints(fn, {**vars(module), "Tensor": tg.Tensor, "Generator": tg.Generator})
    return hints["return"]


def _x():
    return tg.tensor([[0.5, 0.2, 0.1], [0.3, 0.9, 0.4], [0.2, 0.1, 0.7]])


SAMPLE = [("exp", ()), ("add", (1.0,)), ("sum", ()), ("sum", (0,)), ("max", ()), ("max", (0,)), ("min", (1,)),
          ("median", (0,)), ("sort", ()), ("topk", (2,)), ("split", (1,)), ("chunk", (3,)), ("unbind", ()),
          ("unique", ()), ("nonzero", ()), ("aminmax", ()), ("slogdet", ()), ("svd", ()), ("qr", ()),
          ("equal", (_x(),)), ("allclose", (_x(),)), ("is_contiguous", ()), ("get_device", ()),
          ("storage_offset", ()), ("dim_order", ()), ("type", ()), ("type", (tg.float64,)), ("to", (tg.int64,)),
          ("add_", (1.0,)), ("zero_", ()), ("transpose_", (0, 1)), ("__getitem__", (0,)), ("__add__", (1,)),
          ("__eq__", (_x(),)), ("ndimension", ()), ("frexp", ()), ("histogram", (3,)),
          ("var_mean", ()), ("atleast_2d", ()), ("T", None), ("itemsize", None), ("is_cuda", None)]


@pytest.mark.parametrize("name,args", SAMPLE, ids=[f"{n}{a}" for n, a in SAMPLE])
def test_return_annotations_hold(name, args):
    x = _x()
    value = getattr(x, name) if args is None else getattr(x, name)(*args)
    assert _holds(value, _return_type(name)), (name, type(value), _return_type(name))


def test_a_method_annotated_noreturn_raises():
    assert _return_type("imag") is typing.NoReturn
    with pytest.raises(RuntimeError, match="non-complex"):
        _x().imag


# ----------------------------------------------------------------------------- the one public class
def test_every_tensor_is_an_instance_of_the_public_class():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    made = [x, x * 2, x.exp(), x[0], x.detach(), x.data, tg.zeros(2), TensorBase._make(np.zeros(2)),
            tg.Tensor([1, 2]), TensorBase([1, 2]), tg.compile(lambda a: a * 2)(x.detach())]
    (x * x).sum().backward()
    made.append(x.grad)
    assert all(type(t) is tg.Tensor for t in made), [type(t) for t in made]
    assert tg.Tensor([1, 2]).dtype == tg.float32  # (the legacy constructor)
    assert TensorBase._instance_class is tg.Tensor
    import tracegrad.core.tensor as core_tensor

    assert core_tensor.Tensor is TensorBase and isinstance(x, core_tensor.Tensor)


def test_subclasses_keep_working():
    p = tg.nn.Parameter(tg.ones(2))
    assert type(p) is tg.nn.Parameter and isinstance(p, tg.Tensor) and type(p * 2) is tg.Tensor
    assert type(p.sum()) is tg.Tensor and p.exp().shape == (2,)

    class Mine(tg.Tensor):
        pass

    m = Mine._make(np.ones(2, np.float32))
    assert type(m) is Mine and type(m + 1) is tg.Tensor
    with pytest.raises(TypeError, match="public tensor class is already"):
        type("Another", (TensorBase,), {}, public=True)


def test_pickle_deepcopy_and_hash_keep_the_class():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert type(y) is tg.Tensor and y.requires_grad and y.tolist() == [1.0, 2.0]
    p = tg.nn.Parameter(tg.ones(2))
    assert type(pickle.loads(pickle.dumps(p))) is tg.nn.Parameter
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):  # the class by reference, as tracegrad.Tensor
        assert pickle.loads(pickle.dumps(tg.Tensor, proto)) is tg.Tensor
        assert pickle.loads(pickle.dumps([x, tg.float64], proto))[0].tolist() == [1.0, 2.0]
    assert hash(x) == hash(x) and {x: 1}[x] == 1


def test_unbound_methods_and_numpy_names():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert tg.Tensor.add(x, 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert x.sum(axis=0, keepdims=True).tolist() == [[4.0, 6.0]]
    assert tg.Tensor.multiply is tg.Tensor.mul and tg.Tensor.__iadd__ is tg.Tensor.add_
