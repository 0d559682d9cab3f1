"""Import structure of the package, drawn by an AST scan (used by tests/test_architecture.py; run
it as a script for the numbers: python tests/import_graph.py)."""
from __future__ import annotations

import ast
import os


def package_modules(root: str, pkg: str = "tracegrad") -> dict[str, str]:
    """{dotted module name: file path} of every module of ``pkg`` under ``root``."""
    out = {}
    base = os.path.join(root, pkg)
    for d, dirs, files in os.walk(base):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), root)[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(d, f)
    return out


def import_edges(mods: dict[str, str]) -> list[tuple[str, str, bool]]:
    """(importer, imported, at module level) for every import statement between modules."""
    edges = []
    for name, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        tree = ast.parse(open(path).read())
        top = {id(n) for n in tree.body} | {id(n) for s in tree.body if isinstance(s, (ast.If, ast.Try))
                                             for n in ast.walk(s)}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = name.split(".")
                    if not is_pkg:
                        parts = parts[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    edges.append((name, t, id(node) in top))
    return edges


def floors(mods, edges):
    """({module: floor}, [(importer, imported) that run back up]). Floors come from the
    module-level imports (a module stands one floor above everything it imports; modules in
    a cycle share one); an import inside a function from a lower floor to a higher one runs
    back up."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(mods)
    g.add_edges_from((a, b) for a, b, top in edges if top)
    cond = nx.condensation(g)
    level = {}
    for c in reversed(list(nx.topological_sort(cond))):
        level[c] = 1 + max((level[s] for s in cond.successors(c)), default=0)
    floor = {m: level[cond.graph["mapping"][m]] for m in mods}
    up = [(a, b) for a, b, top in edges if floor[b] > floor[a]]
    return floor, up


if __name__ == "__main__":
    import pathlib

    root = str(pathlib.Path(__file__).resolve().parent.parent)
    mods = package_modules(root)
    floor, up = floors(mods, import_edges(mods))
    print(f"{len(mods)} modules, {max(floor.values())} floors, {len(up)} imports that run back up")
    for a, b in sorted(up):
        print(f"  {a} (floor {floor[a]}) -> {b} (floor {floor[b]})")
