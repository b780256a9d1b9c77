"""The package's import graph, read from the source (every import statement, those inside
functions and class bodies too): no cycles, and each folder of the data path imports only
the folders that hand it what it works on.

The data goes down frontend -> dialects -> passes -> codegen -> runtime; each folder builds
on the definitions of the folders before it, so its imports point back up that list, never
down it. The one swap is dialects before frontend: the frontend emits tile-dialect ops, so
it imports their definitions (and the dialect imports nothing of the frontend). Inside
codegen, `common/` is shared by the `cpu/` and `gpu/` lowerings, which never import each
other, and the driver (codegen's own modules) runs them all and `backend/`.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORDER = ("dialects", "frontend", "passes", "codegen", "runtime")
CODEGEN_ORDER = {"common": 0, "cpu": 1, "gpu": 1, "backend": 1, None: 2}  # None: the driver


def _modules() -> dict[str, pathlib.Path]:
    mods = {"tile": ROOT / "__init__.py"}
    for folder in ORDER:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            mods[".".join(("tile",) + parts[: -1 if parts[-1] == "__init__" else None])] = path
    return mods


def _imports(mods: dict[str, pathlib.Path]) -> dict[str, dict[str, bool]]:
    """module -> {imported module: whether at module level (not inside a function)}."""
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f) if n is not f}
        edges = graph[name] = {}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                # `from pkg import mod` imports the module; `from mod import name` the module that holds it
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                if t in mods:
                    edges[t] = edges.get(t, False) or id(node) not in in_function
    return graph


MODS = _modules()
GRAPH = _imports(MODS)


def _cycle(graph) -> list[str] | None:
    """One import cycle, as the list of its modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = "done"
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_graph_is_read():
    """The reader sees relative imports, imports in functions and class bodies, and `from . import mod`."""
    assert "tile.passes.registry" in GRAPH["tile.codegen.gpu.convert_tile_to_gpu"]
    assert GRAPH["tile.runtime.cache"]["tile.codegen.build"] is False  # (inside a function)
    assert "tile.codegen.pipelines" in GRAPH["tile.codegen.compiler"]  # (from . import pipelines)
    assert _cycle({"a": {"b": True}, "b": {"c": False}, "c": {"a": True}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b": True}, "b": {}}) is None


def test_no_import_cycles():
    assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH))


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _codegen_part(module: str):
    parts = module.split(".")
    return parts[2] if len(parts) > 3 else None  # tile.codegen.X.mod -> X; tile.codegen.mod: the driver


def test_the_data_path_imports_only_the_folders_before_it():
    wrong = []
    for m, edges in GRAPH.items():
        if m == "tile":  # the public API: all of it
            continue
        for n in edges:
            a, b = _folder(m), _folder(n)
            if b is None or ORDER.index(b) > ORDER.index(a):
                wrong.append(f"{m} -> {n}")
            elif a == b == "codegen":
                pa, pb = _codegen_part(m), _codegen_part(n)
                if pa != pb and CODEGEN_ORDER[pb] >= CODEGEN_ORDER[pa]:
                    wrong.append(f"{m} -> {n}")
    assert not wrong, "imports against the data path:\n" + "\n".join(sorted(wrong))


def test_runtime_loads_no_mlir_until_it_compiles():
    """What `import tile` and the runtime import at module level never imports MLIR: a host that
    launches from the cache alone needs none of the compiler (the compiler is imported in functions)."""
    reached, todo = set(), ["tile"] + [m for m in MODS if _folder(m) == "runtime"]
    while todo:
        m = todo.pop()
        if m not in reached:
            reached.add(m)
            todo += [n for n, top in GRAPH[m].items() if top]
    mlir = [m for m in sorted(reached) if any(isinstance(node, (ast.Import, ast.ImportFrom)) and node.col_offset == 0
                                               and ((node.module or "") if isinstance(node, ast.ImportFrom) else
                                                    node.names[0].name).split(".")[0] == "mlir"
                                               for node in ast.parse(MODS[m].read_text()).body)]
    assert not mlir, f"imported at module level from the runtime, and importing MLIR: {mlir}"


def test_every_package_is_installed():
    """pyproject.toml lists the packages by hand (the repo root is `tile`): a new folder of
    modules missing there would import from a checkout and an editable install, but not from a
    wheel."""
    line = re.search(r"^packages = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    listed = {name.strip().strip('"') for name in line.split(",")}
    packages = {m for m, path in MODS.items() if path.name == "__init__.py"}
    assert packages - listed == set()
    assert "tile.codegen.gpu" in packages
