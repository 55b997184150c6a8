"""No import circles among the project's packages (issue 25): components/, tools/, node/node_agent/, localcloud/.

The graph is read from the source with ast, not by importing: an edge is an `import` or `from ... import`
of a project module. Module-level imports (including those under `if`/`try`) must form no circle.
Imports inside functions are allowed (lazy imports keep the CLI's start-up light, for instance) and
counted, but may not close a circle either; `if TYPE_CHECKING:` imports are annotations only and left
out. spec -> egress -> nodeconfig -> spec was the last circle: nodeconfig now imports Spec for its
annotations only.

The floors: localcloud/ (neutral local servers and the stand-ins' base classes) sits below components/
and imports nothing from it, not even inside a function. The clouds' stand-ins (localcloud/standins/,
registered by the cloud's name) stand above components/, whose profiles they read; components/ imports
nothing from localcloud/ at all, nor any module that starts a server (the program holds no test servers).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"components": REPO / "components", "tools": REPO / "tools", "node_agent": REPO / "node" / "node_agent",
            "localcloud": REPO / "localcloud"}


def project_modules() -> dict[str, Path]:
    modules = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = (prefix, *path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def imported(module: str, node: ast.AST, modules: dict[str, Path]) -> set[str]:
    """The project modules an import statement in `module` names (the nearest one for `pkg.name`)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".")
            package = here if modules[module].name == "__init__.py" else here[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        names = [base] + [f"{base}.{alias.name}" for alias in node.names]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]], int]:
    """(module-level edges, edges of imports inside functions, how many such imports) per module."""
    modules = project_modules()
    top: dict[str, set[str]] = {m: set() for m in modules}
    inner: dict[str, set[str]] = {m: set() for m in modules}
    count = 0

    def visit(module: str, node: ast.AST, in_function: bool) -> None:
        nonlocal count
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                targets = imported(module, child, modules)
                (inner if in_function else top)[module].update(targets)
                count += bool(targets and in_function)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for rest in child.orelse:
                    visit(module, ast.Module(body=[rest], type_ignores=[]), in_function)
            else:
                visit(module, child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                       ast.Lambda)))

    for module, path in modules.items():
        visit(module, ast.parse(path.read_text(), filename=str(path)), False)
    return top, inner, count


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_the_graph_is_read():
    top, inner, count = import_graph()
    assert len(top) > 100 and {"components.artifacts", "components.cost"} <= top["components.nodeconfig"]
    assert "components.spec" not in top["components.nodeconfig"]  # under `if TYPE_CHECKING:` only
    assert {"components.nodeconfig", "components.egress"} <= top["components.validation.build"]
    # The records sit below every provider part: they import no validation, node config or egress.
    assert not {"components.nodeconfig", "components.egress", "components.validation"} & top["components.spec"]
    assert "components.nodeconfig" in inner["components.egress"]
    assert count > 0  # lazy imports exist (47 when this was written) and are counted


def test_no_circle_among_module_level_imports():
    top, _, _ = import_graph()
    assert circles(top) == []


def test_imports_inside_functions_close_no_circle_either():
    top, inner, count = import_graph()
    both = {m: top[m] | inner[m] for m in top}
    assert circles(both) == [], f"{count} imports inside functions"


def upward(top: dict[str, set[str]], inner: dict[str, set[str]], floor: str, above: str) -> list[str]:
    """`module -> target` for every import in the package `floor` of a module of the package `above`."""
    def within(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    return sorted(f"{module} -> {target}" for module in top if within(module, floor)
                  for target in top[module] | inner[module] if within(target, above))


def test_localcloud_imports_nothing_from_components():
    top, inner, _ = import_graph()
    assert [arrow for arrow in upward(top, inner, "localcloud", "components")
            if not arrow.startswith("localcloud.standins")] == []
    assert upward(top, inner, "components", "localcloud") == []


def test_an_upward_import_is_found_when_there_is_one():
    top = {"localcloud": set(), "localcloud.sandbox": {"components.artifacts"}, "components.artifacts": set(),
           "localcloud.standins.alicloud": {"localcloud"}}
    inner = {"localcloud": {"components.providers"}, "localcloud.sandbox": set(), "components.artifacts": set(),
             "localcloud.standins.alicloud": set()}
    assert upward(top, inner, "localcloud", "components") == ["localcloud -> components.providers",
                                                             "localcloud.sandbox -> components.artifacts"]


def test_a_circle_is_found_when_there_is_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


# Modules that start servers (or are test servers): the program's package imports none of them, not even inside
# a function, so a reader of components/ knows it holds deploy code only (architecture review 3, P3). The
# stand-ins of the clouds' APIs live in localcloud/standins/, registered by the cloud's name.
SERVER_MODULES = ("localcloud", "http.server", "socketserver", "wsgiref.simple_server", "xmlrpc.server",
                  "moto.server")


def server_imports(folder: Path) -> list[str]:
    """`file:line module` for every import under `folder` of a module in SERVER_MODULES (or below one)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            hits = sorted({s for n in names for s in SERVER_MODULES if n == s or n.startswith(s + ".")})
            if hits:
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno} {hits[0]}")
    return found


def test_the_program_imports_no_stand_in_and_starts_no_server():
    assert server_imports(REPO / "components") == []


def test_a_server_import_is_found_when_there_is_one(tmp_path):
    (tmp_path / "a.py").write_text("from http.server import ThreadingHTTPServer\n")
    (tmp_path / "b.py").write_text("def f():\n    from localcloud import signatures\n")
    (tmp_path / "c.py").write_text("import socketserver, json\nimport localcloud.standins\n")
    (tmp_path / "d.py").write_text("import http.client\nfrom localcloudy import x\n")
    found = [line.split("/")[-1] for line in server_imports(tmp_path)]
    assert found == ["a.py:1 http.server", "b.py:2 localcloud", "c.py:1 socketserver", "c.py:2 localcloud"]


def private_imports(modules: dict[str, Path]) -> list[str]:
    """`module -> owner.name` for every underscore name a project module imports from another one: a name used
    across modules is part of its module's interface and says so by having no underscore (review 3, P7)."""
    found = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in modules:
                continue
            found += [f"{module} -> {node.module}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return sorted(found)


def test_no_module_imports_another_ones_private_name():
    assert private_imports(project_modules()) == []


def test_a_private_import_is_found_when_there_is_one(tmp_path):
    (tmp_path / "a.py").write_text("def _helper():\n    pass\n")
    (tmp_path / "b.py").write_text("from a import _helper, __version__\nfrom os import _exit\n")
    modules = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    assert private_imports(modules) == ["b -> a._helper"]
