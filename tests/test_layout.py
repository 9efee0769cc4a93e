"""The package's shape: no import cycle (lazy imports included), small modules, a short top."""

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "classifier"
MAX_LINES = 400
MAX_TOP_MODULES = 12


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:`: never run, so no import edge."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    return skip


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every package module `path` imports when run, at the top or inside a function."""
    found = set()
    tree = ast.parse(path.read_text())
    skip = _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found.update(n for n in names if n in modules)
    return found


def _graph():
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    graph = {}
    for name, path in paths.items():
        deps = _imports(path, modules)
        # importing a.b.c runs the __init__ of a and a.b first; those hold no imports here
        graph[name] = {d for d in deps if d != name}
    return graph


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep, stack)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_no_import_cycle_lazy_imports_included():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()))


def test_the_cycle_check_sees_a_lazy_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_package_inits_import_no_package_module_at_their_top():
    # Importing any module runs its packages' __init__ first: an import there would be an
    # edge the graph above does not draw.
    for init in PACKAGE.rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        names = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in tree.body if isinstance(n, ast.ImportFrom)]
        assert not [n for n in names if n.startswith("classifier") or not n], (init, names)


def test_no_module_over_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_the_top_of_the_package_stays_short():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert {"diagnosis", "rules", "render", "preflight", "jobs", "integrations", "corpus"} <= folders
