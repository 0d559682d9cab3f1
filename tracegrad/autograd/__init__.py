"""``tg.autograd``: mirrors ``torch.autograd``."""
from . import grad_mode, graph
from .engine import backward, grad
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import function
from .function import Function
from . import forward_ad, profiler
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from . import anomaly as anomaly_mode  # (PyTorch's module name)
from .legacy import Variable, is_multithreading_enabled, set_multithreading_enabled

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "graph", "grad_mode", "gradcheck", "gradgradcheck", "GradcheckError",
           "Function", "function", "forward_ad", "functional", "profiler", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "Variable",
           "is_multithreading_enabled", "set_multithreading_enabled", "anomaly_mode"]


def __getattr__(name):
    # Start-up time (docs/performance.md): the functional API (jacobian, hessian, ...) is ~10 ms
    # of ``import tracegrad`` that training code does not use; it loads on first use (PEP 562).
    if name == "functional":
        import importlib

        return importlib.import_module(".functional", __name__)
    raise AttributeError(f"module 'tracegrad.autograd' has no attribute '{name}'")
