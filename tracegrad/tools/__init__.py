"""Tools around the compiler: the command line (``cli``), ``inspect`` (a function's IR from
the shell) and ``demo`` (a small training run with a compiled step).

They are reached through ``tracegrad`` / ``python -m tracegrad``; see ``tracegrad --help``.
"""
