"""Tensor creation: tensor, from_numpy, zeros/ones/full/empty/arange/linspace/eye, *_like,
random tensors and the global seed.

>>> import tracegrad as tg
>>> tg.tensor([[1, 2], [3, 4]]).dtype, tg.tensor([1.0, 2.0]).dtype
(tracegrad.int64, tracegrad.float32)
"""
from __future__ import annotations

import numbers

import numpy as np

from . import dtypes as _dt
from . import tracing as trace  # (imports nothing of the package: no cycle)
from .tensor import Tensor
from . import placement as _placement
from .device import CPU as _CPU
from .device import factory_device as _check_device
from .device import like_device as _like_device


def _infer_nested(data, dim=0):
    """Check that nested sequences are rectangular and hold numbers; return (shape, category)."""
    if isinstance(data, Tensor):
        return tuple(data.shape), data.dtype.category
    if isinstance(data, np.ndarray):
        return data.shape, _dt.from_numpy_dtype(data.dtype).category
    if isinstance(data, (bool, np.bool_, numbers.Number)) and not isinstance(data, complex):
        return (), _dt.scalar_category(data)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if not isinstance(data, (list, tuple)):
        raise TypeError(
            f"tensor(): could not infer dtype of {type(data).__name__}; expected numbers or "
            "(nested) sequences of numbers"
        )
    if len(data) == 0:
        return (0,), 2
    shapes, cats = zip(*(_infer_nested(x, dim + 1) for x in data))
    first = shapes[0]
    for s in shapes[1:]:
        if s != first:
            raise ValueError(
                f"expected sequence of length {first[0] if first else 0} at dim {dim + 1} "
                f"(got {s[0] if s else 0})"
            )
    return (len(data),) + first, max(cats)


def _flatten(data):
    if isinstance(data, Tensor):
        return data.detach().cpu().numpy()
    if isinstance(data, (list, tuple)):
        return [_flatten(x) for x in data]
    return data


def _wrap(array, dtype, requires_grad=False, dev=_CPU):
    """Make a fresh tensor from a host array: on ``dev`` (a device copy for cuda), or a constant
    of the trace when tracing (a compiled program's constants live where the program runs)."""
    tracer = trace.current_tracer()
    if tracer is not None:
        value = tracer.constant(array, dtype)
    else:
        value = array if dev is _CPU else _placement.place(array, dev)
    t = Tensor._make(value, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, requires_grad=False, device=None):
    """Create a tensor by copying ``data`` (numbers, nested lists, ndarrays or tensors); a
    tensor's copy stays on its device unless ``device`` is given, as in PyTorch."""
    if device is None and isinstance(data, Tensor):
        device = data.device
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    shape, cat = _infer_nested(data)
    if dtype is not None:
        dt = _dt.to_dtype(dtype)
    elif isinstance(data, np.ndarray):
        dt = _dt.from_numpy_dtype(data.dtype)
    elif isinstance(data, Tensor):
        dt = data.dtype
    else:
        dt = _dt.category_default(cat)
    try:
        array = np.array(_flatten(data), dtype=dt.np).reshape(shape)
    except OverflowError:  # ints beyond a small dtype's range: PyTorch's rule
        array = _dt.convert_ints(_flatten(data), dt, dt.name).reshape(shape)
    return _wrap(array, dt, requires_grad, dev)


def as_tensor(data, dtype=None):
    if isinstance(data, Tensor) and (dtype is None or data.dtype is _dt.to_dtype(dtype)):
        return data
    if isinstance(data, Tensor):
        return data.to(dtype)
    return tensor(data, dtype=dtype)


def from_numpy(a):
    """A tensor sharing memory with the ndarray ``a``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    return Tensor._make(a, _dt.from_numpy_dtype(a.dtype))


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of a DLPack-capable object (``copy=True``: a copy). Only
    host memory can be shared: a ``device`` other than the CPU is refused."""
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"from_dlpack: tracegrad tensors live in host memory; device={device!r} is not supported")
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.clone() if copy else ext_tensor
    array = np.from_dlpack(ext_tensor)
    return from_numpy(array.copy() if copy else array)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a tuple of ints, but got an element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _float(dtype):
    return _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()


def zeros(*size, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    return _wrap(np.zeros(_shape(size), dt.np), dt, requires_grad, dev)


def ones(*size, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    return _wrap(np.ones(_shape(size), dt.np), dt, requires_grad, dev)


def empty(*size, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    return _wrap(np.zeros(_shape(size), dt.np), dt, requires_grad, dev)


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.category_default(_dt.scalar_category(fill_value))
    return _wrap(np.full(_shape((size,) if isinstance(size, int) else size), fill_value, dt.np), dt,
                 requires_grad, dev)


def _like(t, dtype):
    return _dt.to_dtype(dtype) if dtype is not None else t.dtype


def zeros_like(t, dtype=None, requires_grad=False, *, device=None):
    dev = _like_device(t, device)  # (t's device unless one is given: core/device.py)
    dt = _like(t, dtype)
    return _wrap(np.zeros(tuple(t.shape), dt.np), dt, requires_grad, dev)


def ones_like(t, dtype=None, requires_grad=False, *, device=None):
    dev = _like_device(t, device)  # (t's device unless one is given: core/device.py)
    dt = _like(t, dtype)
    return _wrap(np.ones(tuple(t.shape), dt.np), dt, requires_grad, dev)


def empty_like(t, dtype=None, requires_grad=False, *, device=None):
    dev = _like_device(t, device)  # (t's device unless one is given: core/device.py)
    return zeros_like(t, dtype, requires_grad, device=dev)


def full_like(t, fill_value, dtype=None, requires_grad=False, *, device=None):
    dev = _like_device(t, device)  # (t's device unless one is given: core/device.py)
    dt = _like(t, dtype)
    return _wrap(np.full(tuple(t.shape), fill_value, dt.np), dt, requires_grad, dev)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dt = _dt.get_default_dtype() if is_float else _dt.int64
    else:
        dt = _dt.to_dtype(dtype)
    return _wrap(np.arange(start, end, step).astype(dt.np), dt, requires_grad, dev)


def _no_bool_range(name, dt):
    if dt == _dt.bool_:  # (PyTorch has no bool kernel of its ranges)
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'Bool\'')


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    _no_bool_range("linspace", dt)
    return _wrap(np.linspace(start, end, steps).astype(dt.np), dt, requires_grad, dev)


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False, device=None):
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the exponent.

    >>> import tracegrad as tg
    >>> tg.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    _no_bool_range("logspace", dt)
    return _wrap(np.power(float(base), np.linspace(start, end, steps)).astype(dt.np), dt, requires_grad, dev)


def scalar_tensor(s, *, dtype=None, requires_grad=False, device=None):
    """A 0-dim tensor holding the number ``s``, of the default float dtype unless ``dtype`` is
    given (PyTorch's: even for an int or a bool).

    >>> import tracegrad as tg
    >>> tg.scalar_tensor(3)
    tensor(3.)
    """
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    return _wrap(np.asarray(s).astype(dt.np), dt, requires_grad, dev)


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _float(dtype)
    return _wrap(np.eye(n, m, dtype=dt.np), dt, requires_grad, dev)


# ----------------------------------------------------------------------------- randomness
from .random import (Generator, default_generator, manual_seed)  # noqa: E402,F401  (re-exported; their home is random.py)

_RANDOM_BREAK = "random tensor creation (tg.randn/rand/randint/normal/bernoulli/...) inside a compiled function"


def _random(size, dtype, requires_grad, sample, dev=_CPU):
    # (drawn on the host by the default generator, cuda tensors' too: one stream of numbers)
    if trace.current_tracer() is not None:
        trace.graph_break(_RANDOM_BREAK)
    dt = _float(dtype)
    return _wrap(sample(_shape(size)).astype(dt.np), dt, requires_grad, dev)


def randn(*size, dtype=None, requires_grad=False, generator=None, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    g = generator or default_generator
    return _random(size, dtype, requires_grad, lambda s: g.rng.standard_normal(s), dev)


def rand(*size, dtype=None, requires_grad=False, generator=None, device=None):
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    g = generator or default_generator
    return _random(size, dtype, requires_grad, lambda s: g.rng.random(s), dev)


def randint(low, high=None, size=None, *, dtype=None, generator=None, requires_grad=False, device=None,
            layout=None, pin_memory=False):
    """Integers in ``[low, high)``; PyTorch's two overloads: ``randint(high, size)`` and
    ``randint(low, high, size)``."""
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    g = generator or default_generator
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    return _random(size, dt, requires_grad, lambda s: g.rng.integers(low, high, s), dev)


def randperm(n, dtype=None, generator=None, requires_grad=False, device=None):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` says otherwise)."""
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    g = generator or default_generator
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    return _random((int(n),), dt, requires_grad, lambda s: g.rng.permutation(s[0]), dev)


def _values(x):
    """The array of a random op's parameter (read eagerly: a traced call breaks the graph
    first, as _random would)."""
    if trace.current_tracer() is not None:
        trace.graph_break(_RANDOM_BREAK)
    return x._value if isinstance(x, Tensor) else np.asarray(x)


@_placement.on_host
def bernoulli(input, p=None, generator=None):
    """1 with probability ``input`` (or ``p``), else 0, elementwise, in ``input``'s dtype."""
    g = generator or default_generator
    probs = _values(input) if p is None else np.broadcast_to(np.asarray(p), _values(input).shape)
    if ((probs < 0) | (probs > 1)).any():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true")
    dt = input.dtype if isinstance(input, Tensor) else _float(None)
    return _random(probs.shape, dt, False, lambda s: (g.rng.random(s) < probs))


@_placement.on_host
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False):
    """Samples of N(mean, std^2): tensors broadcast together, or numbers with ``size``."""
    g = generator or default_generator
    m, sd = _values(mean), _values(std)
    if (sd < 0).any():
        raise RuntimeError(f"normal expects all elements of std >= 0.0, got {sd.min()}")
    shape = _shape(size) if size is not None else np.broadcast_shapes(m.shape, sd.shape)
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    dt = dtype or (tensors[0].dtype if tensors else None)
    return _random(shape, dt, requires_grad, lambda s: g.rng.normal(m, sd, s))


@_placement.on_host
def multinomial(input, num_samples, replacement=False, *, generator=None):
    """``num_samples`` category indices per row of ``input`` (non-negative weights), drawn with
    or without replacement."""
    g = generator or default_generator
    w = _values(input).astype(np.float64)
    if w.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {w.ndim}")
    rows = w.reshape(-1, w.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all() or (rows.sum(1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0, or a "
                           "negative, inf or nan entry)")
    if not replacement and num_samples > (rows > 0).sum(1).min():
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    picks = np.stack([g.rng.choice(len(r), num_samples, replace=replacement, p=r / r.sum()) for r in rows])
    return _random(w.shape[:-1] + (num_samples,), _dt.int64, False, picks.reshape)


@_placement.on_host
def poisson(input, generator=None):
    """Samples of Poisson(rate) for each rate of ``input``, in its dtype."""
    g = generator or default_generator
    rates = _values(input)
    return _random(rates.shape, input.dtype, False, lambda s: g.rng.poisson(rates, s))


def randn_like(t, dtype=None, requires_grad=False, *, device=None):
    dev = _like_device(t, device)  # (t's device unless one is given: core/device.py)
    return randn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=dev)


def rand_like(t, dtype=None, requires_grad=False, *, device=None):
    dev = _like_device(t, device)  # (t's device unless one is given: core/device.py)
    return rand(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=dev)


def seed_tensor():
    """A fresh int64 seed for a random op. While tracing it is a program input that the
    compiled program draws from the global generator on every call (so dropout masks differ
    between calls, stay reproducible under tg.manual_seed, and never force a retrace)."""
    tracer = trace.current_tracer()
    if tracer is not None:
        return Tensor._make(tracer.seed_input(), _dt.int64)
    # (on the default device: a random op whose only input is its seed runs where the seed is,
    # so dropout's mask is made on cuda inside a composite following a cuda input)
    return _wrap(np.asarray(default_generator.next_seed(), dtype=np.int64), _dt.int64, False, _check_device(None))


def legacy_tensor(*args, device=None):
    """``Tensor(...)``, PyTorch's legacy constructor, always of the default float dtype:
    ``Tensor()`` is empty, ``Tensor(2, 3)`` a tensor of that shape (zeros here; PyTorch leaves it
    uninitialized), ``Tensor([[1, 2]])`` (a sequence, a Size too, or an ndarray) copies the data
    converted, ``Tensor(t)`` of a tensor of the default dtype is ``t``'s storage."""
    dev = _check_device(device)  # (the CPU or cuda; others raise: core/device.py)
    dt = _dt.get_default_dtype()
    if not args:
        return _wrap(np.zeros((0,), dt.np), dt, False, dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t.dtype != dt:
            raise TypeError(f"expected {dt.torch_name}Tensor (got {t.dtype.torch_name}Tensor)")
        alias = Tensor._make(t._value, dt)
        alias._vc = t._vc  # (the same storage: writes through either are seen by both)
        return alias
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        return _wrap(np.zeros(_shape(args), dt.np), dt, False, dev)
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return tensor(np.asarray(tensor(args[0]).numpy(), dtype=dt.np), dtype=dt, device=dev)
    raise TypeError(f"new(): invalid data type for the legacy constructor Tensor(): "
                    f"{', '.join(type(a).__name__ for a in args)}")
