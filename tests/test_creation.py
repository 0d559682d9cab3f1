"""Tensor creation against PyTorch: the dtype each function infers (from Python values, NumPy
arrays, the default dtype), shapes and values; dtypes tracegrad lacks are rejected by name."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

CASES = {
    "full_int": lambda lib: lib.full((2,), 1), "full_bool": lambda lib: lib.full((2,), True),
    "full_float": lambda lib: lib.full((2,), 1.5), "arange_int": lambda lib: lib.arange(5),
    "arange_float_step": lambda lib: lib.arange(0, 1, 0.3), "arange_mixed": lambda lib: lib.arange(1, 4.0),
    "arange_negative_step": lambda lib: lib.arange(5, 0, -2), "linspace": lambda lib: lib.linspace(0, 10, 5),
    "linspace_int": lambda lib: lib.linspace(0, 10, 5, dtype=lib.int64),
    "logspace": lambda lib: lib.logspace(0, 2, 3), "logspace_base": lambda lib: lib.logspace(-1, 1, 5, base=2.0),
    "logspace_int": lambda lib: lib.logspace(0, 3, 4, dtype=lib.int64),
    "tensor_mixed": lambda lib: lib.tensor([1, 2.5]), "tensor_bool_int": lambda lib: lib.tensor([True, 2]),
    "tensor_nested": lambda lib: lib.tensor([[1, 2], [3, 4]]), "tensor_scalar": lambda lib: lib.tensor(3.0),
    "tensor_empty": lambda lib: lib.tensor([]), "tensor_big_int": lambda lib: lib.tensor([2**62]),
    "zeros_tuple": lambda lib: lib.zeros((2, 3)), "ones_int32": lambda lib: lib.ones(2, dtype=lib.int32),
    "eye_rectangular": lambda lib: lib.eye(2, 3), "zeros_like_dtype": lambda lib: lib.zeros_like(lib.ones(2, 3), dtype=lib.int64),
    "full_like_int": lambda lib: lib.full_like(lib.ones(2, dtype=lib.int64), 2.7),
    "tril_indices": lambda lib: lib.tril_indices(3, 3, -1), "triu_indices": lambda lib: lib.triu_indices(3, 4, 1),
    "scalar_tensor_int": lambda lib: lib.scalar_tensor(3), "scalar_tensor_bool": lambda lib: lib.scalar_tensor(True),
    "scalar_tensor_dtype": lambda lib: lib.scalar_tensor(3, dtype=lib.int64),
    "as_tensor_int32": lambda lib: lib.as_tensor(np.array([1, 2], np.int32)),
    "from_numpy_bool": lambda lib: lib.from_numpy(np.array([True, False])),
    "stack_ints": lambda lib: lib.stack([lib.tensor([1, 2]), lib.tensor([1, 2])]),
    "cat_promotes": lambda lib: lib.cat([lib.tensor([1, 2]), lib.tensor([1.5])]),
    "where_int_scalars": lambda lib: lib.where(lib.tensor([True, False]), 1, 0),
    "where_mixed_scalars": lambda lib: lib.where(lib.tensor([True, False]), 1.0, 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    got, want = CASES[name](tg), CASES[name](torch)
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got.numpy(), float), np.asarray(want.numpy(), float), rtol=1e-6)


@pytest.mark.parametrize("value", [np.array([1, 2], np.uint16), np.array([1, 2], np.uint32), [1 + 2j]])
def test_dtypes_tracegrad_lacks_are_named(value):
    with pytest.raises(TypeError, match="uint16|uint32|complex"):
        tg.tensor(value)
