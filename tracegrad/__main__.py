"""``python -m tracegrad demo | inspect | export | cache``."""
import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m tracegrad {demo,inspect,export,cache} ...")
        return 0
    cmd, rest = argv[0], argv[1:]
    from . import cli

    handler = getattr(cli, cmd, None)
    if handler is None:
        print(f"unknown command {cmd!r}; expected one of demo, inspect, export, cache", file=sys.stderr)
        return 2
    return handler(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
