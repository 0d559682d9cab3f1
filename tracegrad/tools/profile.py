"""``tracegrad profile path/to/file.py:function --arg x=f32[32,64]``: compile the function
(backend C) for these example arguments and print a per-kernel profile of one call: each
kernel's time, FLOPs, bytes, share of this machine's measured peak, IR nodes and generated C
(tracegrad/compiler/profile/). ``--trace out.json`` also writes a chrome trace. The target may
be a plain function, a ``tg.nn.Module`` or an already ``tg.compile``'d one; the ``--arg`` specs
are ``tracegrad inspect``'s.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..compiler.api import CompiledFunction, CompiledModule, compile
from ..compiler.profile import DEFAULT_REPEAT, DEFAULT_WARMUP, ProfileError, profile_call
from .inspect import add_target_arguments, load_call, user_errors


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``tracegrad profile``."""
    add_target_arguments(ap)
    ap.add_argument("--repeat", type=_count(1), default=DEFAULT_REPEAT, metavar="N",
                    help="timed runs (default: %(default)s)")
    ap.add_argument("--warmup", type=_count(0), default=DEFAULT_WARMUP, metavar="N",
                    help="untimed runs first (default: %(default)s)")
    ap.add_argument("--rows", type=_count(1), default=25, metavar="N",
                    help="kernels shown, slowest first (default: %(default)s)")
    ap.add_argument("--trace", metavar="PATH", help="also write a chrome trace (chrome://tracing, Perfetto)")
    ap.add_argument("--no-peak", action="store_true",
                    help="do not measure this machine's peak (no %% of peak; the measurement "
                         "takes about two seconds once, then is cached)")


def run(opts: argparse.Namespace) -> int:
    """``tracegrad profile``: print the profile (and write the trace)."""
    from .cli import UsageError  # (cli imports this module)

    try:
        fn, args, kwargs = load_call(opts)
        compiled = fn if isinstance(fn, (CompiledFunction, CompiledModule)) else compile(fn)
        prof = profile_call(compiled, args, kwargs, repeat=opts.repeat, warmup=opts.warmup,
                            peak=not opts.no_peak)
    except (*user_errors(), ProfileError) as exc:
        raise UsageError.of("profile", exc) from exc
    print(prof.table(limit=opts.rows))
    if opts.trace:
        try:
            prof.save_chrome_trace(opts.trace)
        except OSError as exc:
            raise UsageError.of("profile", exc) from exc
        print(f"wrote {opts.trace}")
    return 0


def main(argv: Sequence[str]) -> int:
    """``tracegrad profile ARGV...`` in this process; the exit code.

    >>> main(["--help"])  # doctest: +ELLIPSIS
    usage: tracegrad profile [-h] ...
    0
    """
    from .cli import main as cli_main

    return cli_main(["profile", *argv])


def _count(least: int):
    """An argparse type: an integer of at least ``least``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected at least {least}, got {value}")
        return value
    return parse
