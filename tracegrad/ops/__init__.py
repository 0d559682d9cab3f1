"""The op registry and the primitives (one module per family). Importing this package
registers every primitive in ``registry.REGISTRY``."""
from . import bitwise, elementwise, gamma_grads, index, linalg, movement, nn, reduce, scan, scatter, special  # noqa: F401
from . import deferred  # noqa: F401,E402  (backward_error: ir/autodiff.py)
from . import decompositions, determinant, ldl, lu  # noqa: F401,E402  (built on linalg's)
from . import airy, bessel, bessel_k, error_functions, orthogonal_polynomials  # noqa: F401,E402  (special functions)
from .registry import REGISTRY, OpDef, dispatch  # noqa: F401
