"""The import-cycle detector the layering test runs, on ragchat and on planted packages.

Every edge Python executes counts: a module's imports at top level and inside functions, a package's
`__init__` importing its own submodules, and the implicit imports of ancestor packages (importing `a.b.c`
runs `a/__init__` and `a/b/__init__` first, so the importer depends on those too, unless they are its own
ancestors, which are already running). Only imports under `if TYPE_CHECKING:` are left out: they never run.
"""

from __future__ import annotations

import grimp


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_edges(package: str) -> dict[str, set[str]]:
    graph = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=True)
    edges: dict[str, set[str]] = {m: set() for m in graph.modules}
    for importer in graph.modules:
        own = set(_ancestors(importer))
        for target in graph.find_modules_directly_imported_by(importer):
            edges[importer].add(target)
            for parent in _ancestors(target):
                if parent in edges and parent not in own and parent != importer:
                    edges[importer].add(parent)
    return edges


def import_cycles(package: str) -> list[list[str]]:
    """Each cycle once, as the path of modules that closes it (Tarjan's strongly connected components)."""
    edges = import_edges(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strongconnect(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges.get(module, ())):
            if target not in index:
                strongconnect(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            strongconnect(module)
    return sorted(components)
