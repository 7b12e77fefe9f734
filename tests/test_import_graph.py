"""The project's import graph: no cycle between its modules, and the layers import one way.

Every .py file of the project's packages is parsed (never imported), and every import in it counts,
at module level or inside a function: a function-level import only hides a cycle until the function
runs. `from pkg import mod` counts as importing `pkg.mod` when pkg/mod.py exists, so a package
whose __init__ imports its submodules, one of which imports a sibling through the package, is not
taken for a cycle. Layers (ARCHITECTURE.md): core/ imports no streamlit, ui, server or pages;
server/ imports no ui or pages.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "ui", "server", "pages", "benchmarks", "scripts")
SCRIPTS = ("streamlit_app.py",)
FORBIDDEN = {  # layer -> top-level names its modules must never import
    "core": {"streamlit", "ui", "server", "pages"},
    "server": {"ui", "pages"},
}


def module_files(root: Path = ROOT, packages=PACKAGES, scripts=SCRIPTS) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the packages and the top-level scripts
    (a package's __init__.py is the package itself)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for script in scripts:
        if (root / script).exists():
            found[Path(script).stem] = root / script
    return found


def imports(path: Path, module: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every import in the file, at any depth, as (absolute module name, names taken from it):
    `import a.b` gives ("a.b", ()), `from .b import c` inside package a gives ("a.b", ("c",))."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: one dot is the file's own package, each more goes one up
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((base, tuple(alias.name for alias in node.names)))
    return found


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name runs: the name itself or its longest prefix that is a
    module (`import core.viz.theme.CHART_LOCK` is not valid Python, but a name inside a module
    resolves to the module). None for anything outside the project."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def targets(base: str, names: tuple[str, ...], modules: dict[str, Path]) -> set[str]:
    """The project modules one import statement depends on: `from pkg import mod` is pkg.mod when
    pkg/mod.py exists (the statement runs that module, whatever pkg's __init__ holds), and pkg
    for a name pkg defines itself."""
    if not names:
        found = {resolve(base, modules)}
    else:
        found = {f"{base}.{n}" if f"{base}.{n}" in modules else resolve(base, modules) for n in names}
    return found - {None}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports (itself left out)."""
    graph = {}
    for module, path in modules.items():
        graph[module] = set().union(*(targets(base, names, modules) for base, names in imports(path, module)))
        graph[module].discard(module)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path that ends where it starts) per group of modules that import each other."""
    return [_cycle_in(group, graph) for group in cycle_groups(graph)]


def cycle_groups(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (Tarjan's strongly
    connected components of more than one module, or a module importing itself), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _cycle_in(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ()) & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return [start, start]  # unreachable for a strongly connected group


def layer_violations(modules: dict[str, Path]) -> list[str]:
    """'module imports name' for each import a layer must not make."""
    found = []
    for module, path in modules.items():
        forbidden = FORBIDDEN.get(module.partition(".")[0], set())
        for base, _names in imports(path, module):
            if base.partition(".")[0] in forbidden:
                found.append(f"{module} imports {base}")
    return sorted(set(found))


# ------------------------------------------------------------------ the project


def test_the_project_has_no_import_cycle():
    graph = import_graph(module_files())
    found = [f"{' -> '.join(_cycle_in(group, graph))}  (modules in this tangle: {', '.join(group)})"
             for group in cycle_groups(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_layers_import_one_way():
    violations = layer_violations(module_files())
    assert not violations, "layering broken:\n" + "\n".join(violations)


def test_the_graph_sees_the_project():
    """Guards the two tests above against passing on an empty graph."""
    modules = module_files()
    assert {"core.models", "ui.state", "server.housekeeping", "server.runtime", "streamlit_app"} <= set(modules)
    graph = import_graph(modules)
    assert "server.housekeeping" in graph["streamlit_app"]
    assert {"server.runtime", "server.memory_probe"} <= graph["server.housekeeping"]
    assert graph["server.runtime"] == set()


# ------------------------------------------------------------------ the checker itself


def test_find_cycles_finds_a_cycle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) == []
    assert find_cycles({"a": {"a"}}) == [["a", "a"]]
    two = find_cycles({"a": {"b"}, "b": {"a"}, "x": {"y"}, "y": {"z"}, "z": {"x"}})
    assert sorted(two) == [["a", "b", "a"], ["x", "y", "z", "x"]]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_function_level_import_closes_a_cycle(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import helper\n",
        "pkg/b.py": "def helper():\n    from pkg import a\n    return a\n",
    })
    graph = import_graph(module_files(tmp_path, ("pkg",), ()))
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_relative_imports_are_resolved(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/a.py": "from . import b\nfrom ..c import thing\n",
        "pkg/sub/b.py": "from .a import x\n",
        "pkg/c.py": "thing = 1\n",
    })
    graph = import_graph(module_files(tmp_path, ("pkg",), ()))
    assert graph["pkg.sub.a"] == {"pkg.sub.b", "pkg.c"}
    assert find_cycles(graph) == [["pkg.sub.a", "pkg.sub.b", "pkg.sub.a"]]


def test_a_package_importing_its_submodules_is_not_a_cycle(tmp_path):
    """pkg/__init__ imports its modules; one imports a sibling through the package: Python runs
    pkg.b, not pkg's __init__ again, so there is no cycle."""
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg import a, b\n",
        "pkg/a.py": "from pkg import b\nimport pkg.b\n",
        "pkg/b.py": "import os\n",
        "app.py": "from pkg import a\n",
    })
    graph = import_graph(module_files(tmp_path, ("pkg",), ("app.py",)))
    assert graph == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": {"pkg.b"}, "pkg.b": set(), "app": {"pkg.a"}}
    assert find_cycles(graph) == []


def test_importing_a_name_the_package_defines_depends_on_the_package(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import run\nSETTING = 1\n",
        "pkg/a.py": "from pkg import SETTING\ndef run():\n    return SETTING\n",
    })
    graph = import_graph(module_files(tmp_path, ("pkg",), ()))
    assert find_cycles(graph) == [["pkg", "pkg.a", "pkg"]]


def test_layer_violations_name_the_import(tmp_path):
    _write(tmp_path, {
        "core/__init__.py": "",
        "core/maths.py": "def f():\n    import streamlit as st\n    from ui import charts\n",
        "server/__init__.py": "",
        "server/ops.py": "from pages import home\nimport core.maths\n",
        "ui/__init__.py": "",
        "ui/charts.py": "from server import ops\n",  # ui may import server
    })
    modules = module_files(tmp_path, ("core", "server", "ui"), ())
    assert layer_violations(modules) == ["core.maths imports streamlit", "core.maths imports ui",
                                         "server.ops imports pages"]
