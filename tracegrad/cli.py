"""Command-line entry points (each takes the list of remaining arguments)."""


def demo(argv):
    print("tracegrad demo: the compiled training demo is not built yet (see issue 5).")
    return 0
