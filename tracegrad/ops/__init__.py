"""The op registry and the primitives (one module per family). Importing this package
registers every primitive in ``registry.REGISTRY``."""
from . import bitwise, elementwise, gamma_grads, index, linalg, movement, nn, reduce, scan, scatter, special
from . import deferred  # (backward_error: ir/autodiff.py)
from . import decompositions, determinant, ldl, lu  # (built on linalg's)
from . import airy, bessel, bessel_k, error_functions, orthogonal_polynomials  # (special functions)
from . import collectives  # (all_reduce, broadcast: tracegrad.distributed's ops in a trace)
from .registry import REGISTRY, OpDef, dispatch
