"""``tg.distributions.transforms`` (PyTorch's ``torch.distributions.transforms``): invertible
maps with the log absolute determinant of their Jacobians, for ``TransformedDistribution``
and for moving parameters between the real line and a constraint (``biject_to``,
``transform_to``). The classes live in transform_base.py (the base and the combinators),
transform_pointwise.py (elementwise maps) and transform_vector.py (vectors and matrices).

>>> import tracegrad as tg
>>> from tracegrad.distributions.transforms import AffineTransform, ComposeTransform, ExpTransform
>>> t = ComposeTransform([AffineTransform(1.0, 2.0), ExpTransform()])
>>> x = tg.tensor([0.5, 1.0])
>>> t(x)
tensor([ 7.3891, 20.0855])
>>> t.inv(t(x))
tensor([0.5000, 1.0000])
>>> t.log_abs_det_jacobian(x, t(x))
tensor([2.6931, 3.6931])
"""
from .transform_base import (CatTransform, ComposeTransform, IndependentTransform, ReshapeTransform,  # noqa: F401
                             StackTransform, Transform, _InverseTransform, identity_transform)
from .transform_pointwise import (AbsTransform, AffineTransform, CumulativeDistributionTransform,
                                  ExpTransform, PowerTransform, SigmoidTransform, SoftplusTransform,
                                  TanhTransform)
from .transform_vector import (CorrCholeskyTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                               SoftmaxTransform, StickBreakingTransform)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
           "SoftplusTransform", "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]
