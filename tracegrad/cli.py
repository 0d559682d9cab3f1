"""Command-line entry points (each takes the list of remaining arguments)."""


def demo(argv):
    """python -m tracegrad demo [--backend c|interpreter] [--epochs N]"""
    from .demo import main

    return main(argv)
