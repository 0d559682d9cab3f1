"""``python -m tracegrad``: the command line of tracegrad/tools/cli.py."""
import sys

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
