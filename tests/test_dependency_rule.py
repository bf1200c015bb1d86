"""The house rules, read off the source as text:

- api/ and hardware/ never import twin/; the ports import only themselves;
- hardware/ and the scenario engine (twin/scenario/) never import api/: real members are front-ends
  of the API layer (api/members/), and the composition root hands the scenario engine what it needs;
- no import cycle among the project's modules, type-only imports (``if TYPE_CHECKING:``) included:
  a part takes its collaborators in its constructor and never imports the aggregate that builds it;
- no module past ``MAX_LINES``;
- twin/'s root holds only the world's core and the composition root; each kind of device has a wing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("twin", "api", "hardware")
MAX_LINES = 500
TWIN_ROOT = {
    # the world's core
    "bus",
    "clock",
    "engine",
    "feed",
    "fleet",
    "journal",
    "keys",
    "kinds",
    "rng",
    "sensors",
    "signals",
    "store",
    "world",
    # the composition root: typed settings, the control object, the servers, the command line
    "settings",
    "control",
    "serve",
    "cli",
    "wings",
}
TWIN_WINGS = {"automation", "camera", "scenario"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports, every import statement counted (type-only and
    function-local ones too); ``from package import name`` counts ``package.name`` when that is
    a module, else ``package``."""
    paths = {module_name(p): p for package in PACKAGES for p in files(package)}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(filter(None, (known(a.name) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    edges.add(target if target in paths else known(source) or "")
        edges.discard("")
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize("package", ["api", "hardware"])
def test_nothing_outside_twin_imports_twin(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "twin")
        for path in files(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("package", ["hardware", "twin/scenario"])
def test_hardware_and_the_scenario_engine_import_nothing_from_api(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "api")
        for path in files(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_ports_import_nothing_from_api_twin_or_adapters() -> None:
    bad = {}
    for path in files("hardware/ports"):
        hits = [
            m
            for m in imported_modules(path)
            if m.split(".")[0] in ("api", "twin") or m.startswith("hardware.adapters")
        ]
        if hits:
            bad[str(path.relative_to(ROOT))] = hits
    assert bad == {}


def test_no_import_cycle_among_the_projects_modules() -> None:
    graph = import_graph()
    found = {
        " <-> ".join(component): {m: sorted(graph[m] & set(component)) for m in component}
        for component in cycles(graph)
    }
    assert found == {}


def test_the_cycle_finder_sees_a_type_only_import_of_the_aggregate() -> None:
    graph = {"a.camera": {"a.ota"}, "a.ota": {"a.camera"}, "a.core": set(), "a.world": {"a.camera", "a.core"}}
    assert cycles(graph) == [["a.camera", "a.ota"]]
    assert "twin.camera.camera" in import_graph()["twin.camera.wing"]


def test_no_module_past_the_line_limit() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in files(package)
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_twin_root_holds_only_the_core_and_the_composition_root() -> None:
    modules = {p.stem for p in (ROOT / "twin").glob("*.py")} - {"__init__"}
    wings = {p.name for p in (ROOT / "twin").iterdir() if (p / "__init__.py").exists()}
    assert modules - TWIN_ROOT == set()
    assert wings == TWIN_WINGS


def test_the_rule_is_checked_on_real_files() -> None:
    assert len(files("api")) > 5 and len(files("hardware")) > 3
    assert len(import_graph()) > 150
