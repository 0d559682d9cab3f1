"""The stack of saved-tensor hooks (``saved_tensors_hooks``)."""
import threading

_state = threading.local()


def current_hooks():
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None
