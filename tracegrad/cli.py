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
