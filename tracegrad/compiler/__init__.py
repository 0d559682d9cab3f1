"""The compiler: ``tg.compile`` and ``tg.explain`` (api.py), Programs (program.py), the on-disk
cache (cache.py), ``dynamic=True`` (dynamic.py), the IR and capture (ir/), the transforms
(transforms/: autodiff, partition, vmap), the passes (passes/), the backends (backends/:
interpreter, c) and ``tg.export`` (export/). ``tg.compiler`` also holds ``torch.compiler``'s
helpers (torch_compiler.py). See docs/architecture.md for the path of data.

>>> import tracegrad as tg
>>> f = tg.compile(lambda x: (x * 2).sum(), backend="interpreter")
>>> f(tg.ones(3))
tensor(6.)
>>> tg.compiler.reset()  # forget every compiled program (as torch.compiler.reset)
"""
from .api import (CompiledFunction, CompiledModule, CompileError, Explanation, capture_graphs,
                  capture_program, compile, explain)
from .torch_compiler import (allow_in_graph, assume_constant_result, disable, is_compiling,
                             is_dynamo_compiling, list_backends, reset)

__all__ = ["compile", "explain", "CompileError", "CompiledFunction", "CompiledModule", "Explanation",
           "allow_in_graph", "assume_constant_result", "disable", "is_compiling",
           "is_dynamo_compiling", "list_backends", "reset"]
