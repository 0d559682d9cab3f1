"""``tg.autograd``: mirrors ``torch.autograd``."""
from . import grad_mode, graph
from .engine import backward, grad
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import function
from .function import Function

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "graph", "grad_mode", "gradcheck", "gradgradcheck", "GradcheckError",
           "Function", "function"]
