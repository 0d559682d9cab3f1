"""Optimizers (PyTorch's ``torch.optim``): SGD, Adam, AdamW, NAdam, RAdam, Adamax, RMSprop,
Adagrad, Adadelta, Rprop, ASGD, LBFGS, Adafactor, Muon, ``lr_scheduler`` and ``swa_utils``.

>>> import tracegrad as tg
>>> model = tg.nn.Linear(3, 1)
>>> opt = tg.optim.AdamW(model.parameters(), lr=1e-2)
>>> model(tg.ones(4, 3)).sum().backward()
>>> opt.step()
>>> opt.zero_grad()
>>> model.weight.grad is None
True
"""
from . import lr_scheduler, swa_utils
from .adafactor import Adafactor
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import Adadelta, Adagrad, RMSprop
from .rprop import ASGD, Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad",
           "Adadelta", "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon", "lr_scheduler", "swa_utils"]
