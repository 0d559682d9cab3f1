"""Pruning (PyTorch's ``torch.nn.utils.prune``): a parameter ``<name>`` is replaced by
``<name>_orig`` (the parameter, still trained) and a buffer ``<name>_mask``; a forward pre-hook
sets ``module.<name> = <name>_orig * <name>_mask`` before every call, so the product is
differentiated (and traced by ``tg.compile``) like any other. Pruning a tensor again combines
the masks (a ``PruningContainer``): the new method only sees what the earlier ones kept.
``remove`` makes the pruning permanent.

Masks are computed eagerly from the detached values (NumPy), as they are not differentiated.

>>> import tracegrad as tg
>>> from tracegrad.nn.utils import prune
>>> layer = tg.nn.Linear(4, 2)
>>> _ = prune.l1_unstructured(layer, "weight", amount=0.5)
>>> int(layer.weight_mask.sum()), sorted(n for n, _ in layer.named_parameters())
(4, ['bias', 'weight_orig'])
"""
from __future__ import annotations

import numbers

import numpy as np

from ...core import creation
from ...autograd.grad_mode import no_grad

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod:
    """A pruning method: ``compute_mask(t, default_mask)`` gives the new mask (a tensor like
    ``t``) from the importance scores ``t`` and the mask so far; the instance is the forward
    pre-hook of the module it prunes."""

    PRUNING_TYPE = "unstructured"
    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        raise NotImplementedError

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {list(importance_scores.shape)} vs {list(orig.shape)}")
        scores = orig if importance_scores is None else importance_scores
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = creation.ones_like(orig.detach())
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # leave the module as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes (no module involved)."""
        scores = t if importance_scores is None else importance_scores
        default_mask = creation.ones_like(t.detach()) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with no_grad():
            orig.copy_(weight)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """The new method, or a container holding the tensor's earlier method(s) and it."""
    old, keys = None, []
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            keys.append(key)
    if len(keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for key in keys:
        del module._forward_pre_hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return old
    if old is not None:
        container = PruningContainer(old)
        container.add_pruning_method(method)
        return container
    return method


class PruningContainer(BasePruningMethod):
    """The sequence of methods applied to one tensor; its mask is the last method's, computed
    on what the earlier masks kept (the kept elements, channels, or everything for a global
    method)."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        values, mask = _np(t), _np(default_mask).astype(_np(t).dtype)
        if method.PRUNING_TYPE == "unstructured":
            where = mask == 1
        elif method.PRUNING_TYPE == "structured":
            dim = method.dim % values.ndim
            keep = mask.sum(axis=tuple(d for d in range(values.ndim) if d != dim)) != 0
            where = tuple(keep if d == dim else slice(None) for d in range(values.ndim))
        elif method.PRUNING_TYPE == "global":
            where = tuple(slice(None) for _ in range(values.ndim))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial = method.compute_mask(_like(values[where], t), default_mask=_like(mask[where], t))
        mask[where] = _np(partial)
        return _like(mask, t)


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _ByScore(BasePruningMethod):
    """Unstructured pruning of the ``amount`` elements with the lowest ``_scores``."""

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = _count(self.amount, t.numel())
        mask = _np(default_mask).copy()
        if n:
            order = np.argsort(self._scores(t).reshape(-1), kind="stable")
            mask.reshape(-1)[order[:n]] = 0
        return _like(mask, t)


class RandomUnstructured(_ByScore):
    """Prunes ``amount`` (a count, or a fraction) of the elements, chosen at random."""

    def _scores(self, t):
        return _random(tuple(t.shape))

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_ByScore):
    """Prunes ``amount`` of the elements with the smallest absolute values."""

    def _scores(self, t):
        return np.abs(_np(t))

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        size = _structured_size(t, self.dim)
        n = _count(self.amount, size)
        if not n:
            return default_mask
        prob = _random((size,))
        keep = prob > np.sort(prob)[n - 1]
        return _like(_channel_mask(t, self.dim, keep) * _np(default_mask), t)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim`` with the smallest ``n``-norms."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        from ..._api.composites import norm

        size = _structured_size(t, self.dim)
        n = _count(self.amount, size)
        if not n:
            return default_mask
        dim = self.dim % t.ndim
        norms = _np(norm(t.detach(), self.n, [d for d in range(t.ndim) if d != dim]))
        keep = np.zeros(size, dtype=bool)
        keep[np.argsort(-norms, kind="stable")[:size - n]] = True
        return _like(_channel_mask(t, self.dim, keep) * _np(default_mask), t)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"default_mask shape {list(default_mask.shape)} must match self.mask shape "
                                 f"{list(self.mask.shape)}")
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ----------------------------------------------------------------------------- the functions
def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` tensors together: ``pruning_method`` (unstructured) on all
    their scores as one vector, each tensor then given its part of the mask."""
    from . import parameters_to_vector

    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)).detach() for m, n in parameters])
    default = parameters_to_vector([getattr(m, n + "_mask", creation.ones_like(getattr(m, n).detach()))
                                    for m, n in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer()
    container._tensor_name = method._tensor_name = "temp"
    container.add_pruning_method(method)
    mask = container.compute_mask(scores, default)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=mask[start:start + param.numel()].reshape(tuple(param.shape)))
        start += param.numel()


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: a plain parameter again, zeros kept."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether any submodule of ``module`` has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, m in module.named_modules() for hook in m._forward_pre_hooks.values())


# ----------------------------------------------------------------------------- helpers
def _np(t):
    return np.array(t.detach().numpy()) if hasattr(t, "detach") else np.asarray(t)


def _like(array, t):
    return creation.tensor(np.ascontiguousarray(array), dtype=t.dtype)


def _random(shape):
    return creation.default_generator.rng.random(shape)


def _channel_mask(t, dim, keep):
    mask = np.zeros(tuple(t.shape), dtype=_np(t).dtype)
    index = [slice(None)] * t.ndim
    index[dim % t.ndim] = keep
    mask[tuple(index)] = 1
    return mask


def _structured_size(t, dim):
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {tuple(t.shape)} with {t.ndim} dims")
    if dim >= t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")
    return t.shape[dim]


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount, size):
    n = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    return n
