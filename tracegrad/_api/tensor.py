"""``tracegrad.Tensor``: the one public tensor class, whose methods are declared here and in
the mixins it lists (one per theme), each an explicit ``def`` with its signature, return type
and docstring, forwarding to the function of the namespace that holds the rule (``x.exp()``
is ``tg.exp(x)``). The data and autograd machinery is ``TensorBase`` (core/tensor.py); every
tensor, made by an op, by ``tg.tensor`` or by ``Tensor(...)``, is an instance of this class
(or of a subclass: ``nn.Parameter``, a user's own).

>>> import tracegrad as tg
>>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> type(x) is tg.Tensor, isinstance(x, tg.Tensor)
(True, True)
>>> y = x.exp().sum(dim=1)
>>> y.shape
tracegrad.Size([2])
>>> (x @ x).mean().backward()
>>> x.grad
tensor([[1.7500, 2.7500],
        [2.2500, 3.2500]])
"""
from __future__ import annotations

from ..core.tensor import TensorBase
from .tensor_conversion import ConversionMethods
from .tensor_inplace import InPlaceMethods
from .tensor_linalg import LinalgMethods
from .tensor_math import MathMethods
from .tensor_reductions import ReductionMethods
from .tensor_shape import ShapeMethods

__all__ = ["Tensor"]


class Tensor(MathMethods, ReductionMethods, ShapeMethods, LinalgMethods, ConversionMethods, InPlaceMethods,
             TensorBase, public=True):
    """An n-dimensional array with autograd, as ``torch.Tensor``; see ``tg.tensor`` for
    construction (``tg.Tensor([1, 2])``, the legacy constructor, makes a float32 tensor).

    >>> import tracegrad as tg
    >>> tg.Tensor([1, 2])
    tensor([1., 2.])
    >>> tg.Tensor
    <class 'tracegrad.Tensor'>
    """

    # Named where users reach it, as torch.Tensor is (repr, help, error messages, pickling the
    # class by reference: pickle finds it as tracegrad.Tensor). Tensors themselves pickle through
    # core.tensor._rebuild, which this does not touch.
    __module__ = "tracegrad"


# (doctest skips a class whose __module__ is another module's; this keeps the example above run)
__test__ = {"Tensor": Tensor}
