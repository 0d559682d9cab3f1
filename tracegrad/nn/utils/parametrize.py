"""``tg.nn.utils.parametrize`` (PyTorch's): a module's tensor computed from other tensors.

``register_parametrization(module, "weight", p)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0, original1, ...`` when
``p.right_inverse`` returns several tensors) and makes ``module.weight`` a property computing
``p(original)``: as in PyTorch, the module's class becomes a subclass ``Parametrized<Class>``,
state dicts use the same keys, and assigning ``module.weight = value`` stores
``p.right_inverse(value)``. Parametrizations are modules: they trace and compile with the rest.

>>> import tracegrad as tg
>>> class Symmetric(tg.nn.Module):
...     def forward(self, x):
...         return x.triu() + x.triu(1).mT
>>> layer = tg.nn.Linear(3, 3)
>>> _ = tg.nn.utils.parametrize.register_parametrization(layer, "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all())
True
>>> type(layer).__name__, sorted(layer.state_dict())
('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
"""
from __future__ import annotations

from contextlib import contextmanager

from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "ParametrizationList"]

_cache = None  # {(id(module), name): tensor} while ``cached()`` is active


@contextmanager
def cached():
    """Within this context each parametrized tensor is computed once (on first use) and reused:
    for a module used several times in one forward (an RNN's weights)."""
    global _cache
    outer = _cache
    _cache = {} if outer is None else outer
    try:
        yield
    finally:
        _cache = outer


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they
    apply to (``original``, or ``original0, original1, ...``)."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for p in reversed(list(self)):
                if hasattr(p, "right_inverse"):
                    new = p.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        if self.is_tensor and isinstance(original, Parameter):
            # the module's own Parameter stays the original (an optimizer holding it still works)
            if new is not original:
                with no_grad():
                    original.copy_(new)
            self.register_parameter("original", original)
        elif self.is_tensor:
            self.register_buffer("original", new if new is original else new.detach().clone())
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a sequence of Tensors; "
                                     f"got an element of type {type(value).__name__}")
                if isinstance(original, Parameter):
                    self.register_parameter(f"original{i}", Parameter(value.detach().clone(), original.requires_grad))
                else:
                    self.register_buffer(f"original{i}", value.detach().clone())
        self.ntensors = 1 if self.is_tensor else len(new)
        if not unsafe:
            self._check(original)

    def _originals(self):
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def _check(self, original):
        value = self()
        if not isinstance(value, Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
        if value.dtype is not original.dtype or tuple(value.shape) != tuple(original.shape):
            raise ValueError("Registering a parametrization may not change the shape or dtype of the "
                             f"tensor, unless `unsafe` flag is enabled.\nunparametrized shape: "
                             f"{tuple(original.shape)} dtype {original.dtype}\nparametrized shape: "
                             f"{tuple(value.shape)} dtype {value.dtype}")

    def right_inverse(self, value):
        """Store ``value``: the right inverses of the parametrizations, last to first, into the
        original tensor(s), in place."""
        with no_grad():
            for p in reversed(list(self)):
                if not hasattr(p, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(p).__name__} does not implement "
                                       "right_inverse.")
                value = p.right_inverse(value)
            values = [value] if self.is_tensor else list(value)
            for original, v in zip(self._originals(), values):
                original.copy_(v)

    def forward(self):
        first, *rest = list(self)
        x = first(*self._originals())
        for p in rest:
            x = p(x)
        return x


def _property(name):
    def get(self):
        if _cache is None:
            return self.parametrizations[name]()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = self.parametrizations[name]()
        return _cache[key]

    def set(self, value):
        self.parametrizations[name].right_inverse(value)

    return property(get, set)


def _parametrized_class(cls):
    """``Parametrized<cls>``, whose attribute assignments to a parametrized name go to the
    property (PyTorch injects the same kind of subclass)."""
    def __setattr__(self, name, value):
        if name in self.__dict__.get("_modules", {}).get("parametrizations", {}) or {}:
            object.__setattr__(self, name, value)
        else:
            cls.__setattr__(self, name, value)

    return type(f"Parametrized{cls.__name__}", (cls,), {"__setattr__": __setattr__,
                                                       "_unparametrized_class": cls})


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` computed by ``parametrization`` (a Module) from the tensor
    now there; a second registration on the same name applies after the first. Returns
    ``module``."""
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            if not isinstance(value, Tensor) or tuple(value.shape) != tuple(current.shape) or \
                    value.dtype is not current.dtype:
                raise ValueError("Registering a parametrization may not change the shape or dtype of "
                                 "the tensor, unless `unsafe` flag is enabled.")
        plist.append(parametrization)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
                         f"element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        module.__class__ = _parametrized_class(type(module))
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _property(tensor_name))
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding the parametrized value (``leave_parametrized``) or the
    original. When no parametrization is left the module gets its own class back."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
    elif plist.is_tensor:
        value = plist.original
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                         "parametrized in terms of a sequence of tensors.")
    was_parameter = bool(plist._parameters)
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if was_parameter:
        module.register_parameter(tensor_name, Parameter(value.detach(), True))
    else:
        module.register_buffer(tensor_name, value.detach())
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module._unparametrized_class
    return module
