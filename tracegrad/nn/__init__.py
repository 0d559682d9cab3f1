"""Neural-network building blocks (PyTorch's ``torch.nn``): Module, Parameter, layers, losses,
``tg.nn.functional`` and ``tg.nn.init``.

>>> import tracegrad as tg
>>> _ = tg.manual_seed(0)
>>> model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.GELU(), tg.nn.Linear(8, 3))
>>> loss = tg.nn.CrossEntropyLoss()(model(tg.randn(5, 4)), tg.tensor([0, 1, 2, 0, 1]))
>>> loss.backward()
>>> model[0].weight.grad.shape
tracegrad.Size([8, 4])
"""
from . import functional, init
from .container import ModuleList, Sequential
from .conv import Conv2d, MaxPool2d
from .layers import (GELU, Dropout, Embedding, Flatten, Identity, LayerNorm, Linear, LogSoftmax,
                     ReLU, Sigmoid, Softmax, Tanh)
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from .module import Module
from .parameter import Parameter

__all__ = ["functional", "init", "Module", "Parameter", "Sequential", "ModuleList", "Linear",
           "Identity", "Flatten", "ReLU", "Tanh", "Sigmoid", "GELU", "Softmax", "LogSoftmax",
           "Dropout", "LayerNorm", "Embedding", "Conv2d", "MaxPool2d", "MSELoss",
           "CrossEntropyLoss", "BCEWithLogitsLoss"]
