"""``tg.backends.cudnn``: PyTorch's flags, kept and unused (no cuDNN on the CPU)."""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None
