"""``tg.export``: a captured function as a standalone C library (library.py), with a runtime
batch size where asked (dynamic.py), or as a CUDA library on device pointers (cuda.py; what is
particular to each target: targets.py); the library's templates are in templates/."""
from .library import export

__all__ = ["export"]
