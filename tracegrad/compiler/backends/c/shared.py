"""Identical kernels become one C function (issue 26, deliverable 2: compile time).

A 32-layer MLP's step lowers to 32 copies of each layer's kernels: the same loops over the
same shapes and dtypes, differing only in the buffers they read and write. The C compiler
optimises each copy again (5.6 of 7.5 s of such a build was one compiler run, measured before
this). ``SharedKernels`` collects each kernel's rendered text while a program renders
(function.c.j2 calls it), names the buffers it uses by position (``tgp0``, ``tgp1``, ... in
order of first use), and after rendering (``finish``) turns every text that occurs twice or
more into one ``static`` function called with the buffers of each occurrence; a text that
occurs once stays inline, as before, so small programs compile to the same code.

The function is ``noinline``: inlined back into each call site, it would be optimised once per
copy again, which is the cost this removes. A kernel whose text reads anything other than its
buffers and the runtime's functions stays inline: the failure flag it may set (``tg_fail``),
the workspace (``ws``), the argument array or the dynamic batch size (``tg_B``).

>>> s = SharedKernels()
>>> a = s("  x = in1[0] + w2[0];", {"in1": "float", "w2": "float"})
>>> b = s("  x = in3[0] + w4[0];", {"in3": "float", "w4": "float"})
>>> print(s.finish(f"/*{SharedKernels.MARKER}*/\\nA{a}\\nB{b}"))
static __attribute__((noinline)) void tg_shared0(float *tgp0, float *tgp1) {
  x = tgp0[0] + tgp1[0];
}
<BLANKLINE>
A  tg_shared0(in1, w2);
B  tg_shared0(in3, w4);
"""
from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
# what a kernel may read beyond its buffers that a function of its own would not have
_FREE = re.compile(r"\b(tg_fail|ws|args|tg_B|tg_Bp|tgp\d+|return)\b")


class SharedKernels:
    """A render's kernels: call it with each kernel's text and its function's buffers (name ->
    C type); it returns a placeholder that ``finish`` replaces."""

    MARKER = "TG_SHARED_KERNELS"

    def __init__(self, prefix="tg", enabled=True):
        self._prefix = prefix  # (tg.export's entry name: several entries may share a library)
        self._enabled = enabled
        self._texts = []  # (original text, key or None, the buffers it passes)
        self._count = {}
        self._types = (None, {})  # (the last buffer list seen, its names' C types)

    def __call__(self, text, buffers):
        text = str(text)
        if not isinstance(buffers, dict):  # (a plan's buffers, as function.c.j2 has them)
            if self._types[0] is not buffers:
                self._types = (buffers, {_field(b, "name"): _field(b, "ctype") for b in buffers})
            buffers = self._types[1]
        key = args = None
        if self._enabled and not _FREE.search(text):
            params = {}
            args = []

            def rename(m):
                name = m.group(0)
                if name not in buffers:
                    return name
                if name not in params:
                    params[name] = f"tgp{len(params)}"
                    args.append(name)
                return params[name]

            body = _IDENTIFIER.sub(rename, text)
            key = (body, tuple(buffers[name] for name in args))
            self._count[key] = self._count.get(key, 0) + 1
        self._texts.append((text, key, args))
        return f"\x00TGK{len(self._texts) - 1}\x00"

    def finish(self, source):
        """``source`` with each placeholder replaced and the shared functions where
        ``/*TG_SHARED_KERNELS*/`` stands (before the functions that call them)."""
        names, definitions, pieces = {}, [], {}
        for i, (text, key, args) in enumerate(self._texts):
            if key is None or self._count[key] < 2:
                pieces[i] = text
                continue
            if key not in names:
                names[key] = f"{self._prefix}_shared{len(names)}"
                body, ctypes = key
                params = ", ".join(f"{ct} *tgp{n}" for n, ct in enumerate(ctypes)) or "void"
                definitions.append(f"static __attribute__((noinline)) void {names[key]}({params}) {{\n"
                                   f"{body}\n}}\n")
            pieces[i] = f"  {names[key]}({', '.join(args)});"
        source = re.sub(r"\x00TGK(\d+)\x00", lambda m: pieces[int(m.group(1))], source)
        return source.replace(f"/*{self.MARKER}*/", "\n".join(definitions))


def _field(buffer, name):
    return buffer[name] if isinstance(buffer, dict) else getattr(buffer, name)
