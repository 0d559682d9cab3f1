"""The op registry and the primitives (one module per family). Importing this package
registers every primitive in ``registry.REGISTRY``."""
from . import bitwise, elementwise, gamma_grads, index, linalg, movement, nn, reduce, scan, scatter, special  # noqa: F401
from .registry import REGISTRY, OpDef, dispatch  # noqa: F401
