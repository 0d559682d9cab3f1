"""The command line: ``tracegrad`` (installed) or ``python -m tracegrad``.

``tracegrad demo | inspect | profile | export | cache``, each with its own ``--help``; ``--version``.
A mistake in the command line or in what it names (a missing file, a bad ``--arg`` spec, a
function the compiler cannot capture) is reported in one line, ``tracegrad: error: ...``, with
exit code 2; a bare ``tracegrad`` prints the usage and exits 2 as well.

>>> main(["cache", "--help"])  # doctest: +ELLIPSIS
usage: tracegrad cache [-h] {info,clear}
...
0
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import _logging
from . import demo as _demo
from . import inspect as _inspect
from . import profile as _profile

PROG = "tracegrad"


class UsageError(Exception):
    """A mistake in the command line or in what it names: one line on stderr, exit code 2."""

    @classmethod
    def of(cls, command: str, exc: BaseException) -> UsageError:
        """The one-line report of ``exc`` raised while ``command`` read its input."""
        # a NotImplementedError's message names the construct, not that it is unsupported
        what = f"not supported: {exc}" if isinstance(exc, NotImplementedError) else str(exc)
        return cls(f"{command}: {what or type(exc).__name__}")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are a :class:`UsageError` (one line, no usage block), so
    :func:`main` reports every user mistake the same way and returns instead of exiting."""

    def error(self, message: str) -> NoReturn:
        command = self.prog[len(PROG):].strip()
        raise UsageError(f"{command}: {message}" if command else message)


def version() -> str:
    """The installed distribution's version (the package's own where it is not installed)."""
    from importlib import metadata

    try:
        return metadata.version("tracegrad")
    except metadata.PackageNotFoundError:
        import tracegrad

        return getattr(tracegrad, "__version__", "unknown")


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, one sub-parser per command."""
    topics = ", ".join(_logging.TOPICS)
    ap = _Parser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
                 description="tracegrad: PyTorch-style autograd with a graph-capture compiler to C.",
                 epilog="environment:\n"
                        "  TRACEGRAD_CACHE_DIR  where compiled programs are cached\n"
                        f"  TRACEGRAD_LOG        comma list of log topics: {topics}\n\n"
                        f"'{PROG} COMMAND --help' tells more about each command.")
    ap.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    p = sub.add_parser("demo", help="train a small classifier with a compiled training step",
                       description=_demo.__doc__.split("\n\n")[0])
    _demo.add_arguments(p)
    p.set_defaults(run=_run_demo)

    p = sub.add_parser("inspect", help="print the IR of a function traced on example arguments",
                       description="Trace a function on example arguments and print its IR (and "
                                   "the saved-tensor report when its outputs are differentiable).")
    _inspect.add_arguments(p)
    p.set_defaults(run=_inspect.run)

    p = sub.add_parser("profile", help="time each kernel of a function's compiled program",
                       description=_profile.__doc__.split("\n\n")[0])
    _profile.add_arguments(p)
    p.set_defaults(run=_profile.run)

    p = sub.add_parser("export", help="export a function as a standalone C or CUDA library",
                       description="Export a function as a standalone C library, or CUDA with --backend cuda "
                                   "(docs/export.md, docs/cuda.md).")
    _inspect.add_target_arguments(p)
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write")
    p.add_argument("--name", help="C name of the function (default: the Python name)")
    p.add_argument("--build", action="store_true", help="also run make in DIR")
    p.add_argument("--dynamic", action="store_true",
                   help="the leading dim of the batch arguments is a runtime batch size B")
    p.add_argument("--split", action="store_true",
                   help="separate <name>_forward and <name>_backward entry points")
    p.add_argument("--backend", choices=("c", "cuda"), default="c",
                   help="c: a C library on host memory (default); cuda: a .cu library on device pointers")
    p.set_defaults(run=_run_export)

    p = sub.add_parser("cache", help="show or empty the compiled-code cache",
                       description="Where compiled programs are cached (info), and emptying it "
                                   "(clear: removes only the cache's own files).")
    p.add_argument("action", choices=("info", "clear"))
    p.set_defaults(run=_run_cache)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit code.

    >>> main(["no-such-command"])  # one line on stderr: tracegrad: error: argument COMMAND: ...
    2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if not argv:
            sys.stderr.write(parser.format_usage())
            raise UsageError(f"a command is required (see '{PROG} --help')")
        try:
            opts = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version end the parse this way, with code 0
            return exc.code if isinstance(exc.code, int) else 0
        return opts.run(opts) or 0
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130  # (as a shell reports SIGINT; no traceback for a deliberate stop)


def _run_demo(opts: argparse.Namespace) -> int:
    _demo.run(opts.backend, opts.epochs, quiet=opts.quiet)
    return 0


def _run_cache(opts: argparse.Namespace) -> int:
    from ..compiler import cache

    if opts.action == "info":
        i = cache.info()
        print(f"directory: {i['directory']}\nentries:   {i['entries']}\nsize:      {i['bytes']} bytes")
    else:
        print(f"removed {cache.clear()} entries from {cache.cache_dir()}")
    return 0


def _run_export(opts: argparse.Namespace) -> int:
    import tracegrad as tg

    try:
        fn, args, kwargs = _inspect.load_call(opts)
        ep = tg.export(fn, *args, name=opts.name, dynamic=opts.dynamic, split=opts.split, backend=opts.backend,
                       **kwargs)
        ep.save(opts.output)
    except _inspect.user_errors() as exc:
        raise UsageError.of("export", exc) from exc
    print(ep)
    build = f"make -C {opts.output}"
    if opts.backend == "cuda":
        build += f" (with a GPU), or {build} EMULATE=1 (on the CPU, emulated)"
    print(f"wrote {opts.output} (build it with: {build})")
    if opts.build:
        return subprocess.run(["make", "-C", opts.output], check=False).returncode
    return 0
