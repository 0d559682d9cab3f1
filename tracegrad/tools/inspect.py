"""``tracegrad inspect path/to/file.py:function --arg x=f32[32,64] --arg n=3``:
trace a function on example arguments and print its IR (and the saved-tensor report when its
outputs are differentiable); ``--svg out.svg`` also renders the graph with Graphviz ``dot``
(when ``dot`` is not installed the DOT text is written next to it, ``out.dot``).

Argument specs: ``NAME=DTYPE[D0,D1,...]`` is a tensor (``f32``, ``f64``, ``f16``, ``bf16``,
``i64``, ``i32``, ``i16``, ``i8``, ``u8``, ``b8``; ``f32[]`` a 0-d one) filled with seeded random values
(zeros for integer and bool tensors); append ``:grad`` for ``requires_grad=True``. Anything else
is a Python literal (``n=3``, ``scale=0.5``, ``mode='sum'``) or, failing that, a string.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence

_TENSOR = re.compile(r"^(f32|f64|f16|bf16|i64|i32|i16|i8|u8|b8)\[([0-9,\s]*)\](:grad)?$")


def parse_arg(spec: str, seed: int = 0) -> tuple[str, object]:
    """``"x=f32[2,3]:grad"`` -> ("x", tensor); ``"n=3"`` -> ("n", 3)."""
    import numpy as np

    import tracegrad as tg

    if "=" not in spec:
        raise ValueError(f"--arg {spec!r}: expected NAME=VALUE, e.g. x=f32[32,64] or n=3")
    name, text = spec.split("=", 1)
    name, text = name.strip(), text.strip()
    m = _TENSOR.match(text)
    if m:
        short, dims, grad = m.groups()
        shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d)
        dtype = {d.short: d for d in tg.dtypes.ALL}[short]
        if dtype.is_floating_point:
            data = np.random.default_rng(seed).standard_normal(shape).astype(dtype.np)
        else:
            if grad:
                raise ValueError(f"--arg {spec!r}: only floating point tensors can require grad")
            data = np.zeros(shape, dtype.np)
        t = tg.from_numpy(data)
        return name, t.requires_grad_(True) if grad else t
    try:
        return name, ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return name, text


def load_target(spec: str) -> object:
    """``path/to/file.py:function`` (or ``:obj.attr``) -> the object."""
    path, sep, attr = spec.rpartition(":")
    if not sep or not path or not attr:
        raise ValueError(f"{spec!r}: expected path/to/file.py:function")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    mod_name = "_tracegrad_inspect_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise ValueError(f"{path}:{exc.lineno}: {exc.msg}") from exc
    finally:
        sys.path.pop(0)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"{path} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``tracegrad inspect``."""
    add_target_arguments(ap)
    ap.add_argument("--svg", metavar="PATH", help="also render the graph to this SVG file "
                    "(with Graphviz dot; without it the DOT text is written beside it)")
    ap.add_argument("--no-optimize", action="store_true", help="show the graph before the passes")
    ap.add_argument("--partition", choices=("mincut", "annotations"), default="mincut",
                    help="how the backward's saved values are chosen (default: %(default)s)")


def add_target_arguments(ap: argparse.ArgumentParser) -> None:
    """The target and its ``--arg`` specs, shared by ``inspect`` and ``export``."""
    ap.add_argument("target", help="path/to/file.py:function (or :object.attribute)")
    ap.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                    help="an argument, repeated for each: x=f32[32,64] (a tensor filled with seeded "
                         "random values; :grad to require grad) or a Python literal, n=3")


def load_call(opts: argparse.Namespace) -> tuple[Callable, tuple, dict]:
    """(function, positional arguments, keyword arguments) named by ``opts.target`` and
    ``opts.arg``; raises one of :data:`USER_ERRORS` for a mistake in them."""
    fn = load_target(opts.target)
    named = dict(parse_arg(a, seed=k) for k, a in enumerate(opts.arg))
    args, kwargs = bind_arguments(fn, named)
    return fn, args, kwargs


def user_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean a mistake in the command line, its file or its arguments (a
    missing file or attribute, a bad spec, arguments the function does not take, a function
    the compiler cannot capture): reported in one line, exit code 2."""
    import tracegrad as tg

    return (ValueError, OSError, AttributeError, TypeError, NotImplementedError,
            tg.compiler.CompileError)


def run(opts: argparse.Namespace) -> int:
    """``tracegrad inspect``: print the program's IR (forward, backward, saved values)."""
    import tracegrad as tg

    from .cli import UsageError

    try:
        fn, args, kwargs = load_call(opts)
        cf = tg.compile(fn, backend="interpreter",
                        options={"optimize": not opts.no_optimize, "partition": opts.partition})
        prog = cf.inspect(*args, **kwargs)
    except user_errors() as exc:
        raise UsageError.of("inspect", exc) from exc
    print(prog)
    if opts.svg:
        return _write_svg(prog.to_dot(), opts.svg)
    return 0


def main(argv: Sequence[str]) -> int:
    """``tracegrad inspect ARGV...`` in this process; the exit code.

    >>> main(["--help"])  # doctest: +ELLIPSIS
    usage: tracegrad inspect [-h] ...
    0
    """
    from .cli import main as cli_main

    return cli_main(["inspect", *argv])


def bind_arguments(fn: Callable, named: dict) -> tuple[tuple, dict]:
    """Positional arguments in the function's parameter order; the rest as keywords."""
    import inspect

    target = fn.forward if hasattr(fn, "forward") and hasattr(fn, "named_parameters") else fn
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return (), named
    args = []
    for p in params.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name in named:
            args.append(named.pop(p.name))
        else:
            break
    missing = [p.name for p in params.values() if p.default is p.empty and p.name not in named
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)][len(args):]
    if missing:
        raise TypeError(f"missing --arg for parameter(s) {', '.join(missing)}")
    return tuple(args), named


def _write_svg(dot_text: str, path: str) -> int:
    dot = shutil.which("dot")
    if dot is None:
        alt = os.path.splitext(path)[0] + ".dot"
        with open(alt, "w") as f:
            f.write(dot_text)
        print(f"tracegrad inspect: Graphviz 'dot' is not installed; wrote the DOT text to {alt}",
              file=sys.stderr)
        return 0
    proc = subprocess.run([dot, "-Tsvg", "-o", path], input=dot_text, text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        print(f"tracegrad inspect: dot failed: {proc.stderr.strip()}", file=sys.stderr)
        return 1
    print(f"wrote {path}", file=sys.stderr)
    return 0
