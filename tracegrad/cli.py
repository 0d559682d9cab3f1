"""Command-line entry points (each takes the list of remaining arguments)."""


def demo(argv):
    """python -m tracegrad demo [--backend c|interpreter] [--epochs N]"""
    from .demo import main

    return main(argv)


def cache(argv):
    """python -m tracegrad cache info|clear: where compiled programs are cached, and emptying it."""
    from . import cache as _cache

    if len(argv) != 1 or argv[0] not in ("info", "clear"):
        print("usage: python -m tracegrad cache info|clear")
        return 2
    if argv[0] == "info":
        i = _cache.info()
        print(f"directory: {i['directory']}\nentries:   {i['entries']}\nsize:      {i['bytes']} bytes")
    else:
        print(f"removed {_cache.clear()} entries from {_cache.cache_dir()}")
    return 0


def inspect(argv):
    """python -m tracegrad inspect path/to/file.py:function --arg x=f32[32,64] [--svg out.svg]"""
    from .ir.inspect_cmd import main

    return main(argv)


def export(argv):
    """python -m tracegrad export path/to/file.py:function --arg x=f32[32,64] ... -o DIR [--name N]
    [--dynamic] [--split] [--build]: export the function as a standalone C library (see docs/export.md)."""
    import argparse
    import subprocess
    import sys

    import tracegrad as tg
    from .ir.inspect_cmd import _bind, load_target, parse_arg

    ap = argparse.ArgumentParser(prog="python -m tracegrad export",
                                 description="Export a function as a standalone C library.")
    ap.add_argument("target", help="path/to/file.py:function")
    ap.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                    help="an argument: x=f32[32,64] (a tensor; :grad to require grad) or n=3")
    ap.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write")
    ap.add_argument("--name", help="C name of the function (default: the Python name)")
    ap.add_argument("--build", action="store_true", help="also run make in DIR")
    ap.add_argument("--dynamic", action="store_true",
                    help="the leading dim of the batch arguments is a runtime batch size B")
    ap.add_argument("--split", action="store_true",
                    help="separate <name>_forward and <name>_backward entry points")
    opts = ap.parse_args(argv)
    try:
        fn = load_target(opts.target)
        named = dict(parse_arg(a, seed=k) for k, a in enumerate(opts.arg))
        args, kwargs = _bind(fn, named)
        ep = tg.export(fn, *args, name=opts.name, dynamic=opts.dynamic, split=opts.split, **kwargs)
    except (ValueError, FileNotFoundError, AttributeError, TypeError, NotImplementedError,
            tg.compiler.CompileError) as exc:
        print(f"tracegrad export: {exc}", file=sys.stderr)
        return 2
    ep.save(opts.output)
    print(ep)
    print(f"wrote {opts.output} (build it with: make -C {opts.output})")
    if opts.build:
        return subprocess.run(["make", "-C", opts.output]).returncode
    return 0
