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
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("twin", "api", "hardware")
MAX_LINES = 450
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
    "past",
    "rng",
    "sensors",
    "signals",
    "store",
    "documents",
    "state_dir",  # opening the store on a state directory, or one line saying why not
    "world",
    # the composition root: typed settings, the control object, the servers, the command line
    "settings",
    "control",
    "serve",
    "cli",
    "listeners",
    "http_limits",
    "loopwatch",
    "serving",
    "wings",
    # the twin in a user's own test suite (what the pytest plugin, pytest_twin.py, is built on)
    "testing",
}
TWIN_WINGS = {"automation", "camera", "cluster", "scenario"}


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


# Concepts, not cuts: no class leans on a base that reads what only its host defines ----------------
class ClassFacts:
    """What the source says about one class: its bases (resolved to dotted names where the module's
    imports allow), what it defines (methods, class-level names, ``self.x = ...`` in any method) and
    which ``self.x`` its methods read. A bare annotation (``env: Environment``) defines a field of
    a dataclass or a member of a Protocol; in any other class it only declares what a host sets."""

    def __init__(self, module: str, node: ast.ClassDef, names: dict[str, str]) -> None:
        self.name = f"{module}.{node.name}"
        self.bases = [_dotted(base, names) for base in node.bases]
        self.defined: set[str] = set()
        self.read: set[str] = set()
        self.open = False  # attributes it may define dynamically (setattr, __dict__, __getattr__)
        decorators = {_dotted(d.func if isinstance(d, ast.Call) else d, names) for d in node.decorator_list}
        declares = "dataclasses.dataclass" in decorators or "typing.Protocol" in self.bases
        self.stubs: set[str] = set()
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _stub(stmt) and not declares:
                self.stubs.add(stmt.name)
                continue
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(stmt.name)
                self.open |= stmt.name in ("__getattr__", "__getattribute__")
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is None and not declares:
                continue
            elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                self.defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _reads_self(stmt):
                self._method(stmt, stmt.args.args[0].arg)

    def _method(self, func: ast.FunctionDef | ast.AsyncFunctionDef, me: str) -> None:
        for node in ast.walk(func):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == me:
                if isinstance(node.ctx, ast.Store | ast.Del):
                    self.defined.add(node.attr)
                elif node.attr == "__dict__":
                    self.open = True
                else:
                    self.read.add(node.attr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "vars")
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id == me
            ):
                self.open = True


def _stub(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method that only says a host defines it: its body (after a docstring) is ``...``, ``pass``
    or ``raise NotImplementedError``, and it is not an ``@abstractmethod`` of an abstract base."""
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    marked = any(
        isinstance(d, ast.Name | ast.Attribute) and "abstractmethod" in ast.unparse(d)
        for d in func.decorator_list
    )
    return not marked and all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is ...)
        or (isinstance(s, ast.Raise) and s.exc is not None and "NotImplementedError" in ast.unparse(s.exc))
        for s in body
    )


def _reads_self(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An instance method (it has a ``self``): not a static or class method."""
    plain = not any(ast.unparse(d) in ("staticmethod", "classmethod") for d in func.decorator_list)
    return plain and bool(func.args.args)


def _dotted(node: ast.expr, names: dict[str, str]) -> str:
    """A base class expression as a dotted name: ``Generic[T]`` → ``typing.Generic``; ``m.C`` with
    ``import a.m as m`` → ``a.m.C``; a name of the module itself → ``module.Name``."""
    if isinstance(node, ast.Subscript):
        return _dotted(node.value, names)
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value, names)}.{node.attr}"
    return ast.dump(node)


def project_classes() -> dict[str, ClassFacts]:
    classes: dict[str, ClassFacts] = {}
    for package in PACKAGES:
        for path in files(package):
            module = module_name(path)
            tree = ast.parse(path.read_text(), str(path))
            names = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
                elif isinstance(node, ast.Import):
                    names |= {a.asname or a.name: a.name for a in node.names if a.asname}
            names |= {n.name: f"{module}.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef)}
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    facts = ClassFacts(module, node, names)
                    classes.setdefault(facts.name, facts)
    return classes


PLAIN_BASES = {"object", "typing.Generic", "typing.Protocol", "abc.ABC", "typing_extensions.Protocol"}
"""Bases that define no instance attributes a subclass's methods could read."""


def host_reads(classes: dict[str, ClassFacts]) -> dict[str, set[str]]:
    """Each project class whose methods read what only a host defines, with those names: an
    attribute that neither it nor its bases set or define (a bare annotation declares, it does not
    define), or, in a class without a constructor of its own, a method it leaves to its host (a
    stub). A class with a base from outside the project (an exception, a model, a route) may
    inherit the attributes it reads and is left out."""

    def chain(name: str) -> tuple[set[str], set[str]] | None:
        """(defined, stubs) over ``name`` and its bases; None when that is not known."""
        facts = classes[name]
        if facts.open:
            return None
        defined, stubs = set(facts.defined), set(facts.stubs)
        for base in facts.bases:
            if base in classes:
                inherited = chain(base)
                if inherited is None:
                    return None
                defined |= inherited[0]
                stubs |= inherited[1]
            elif base not in PLAIN_BASES:
                return None
        return defined, stubs

    found = {}
    for name, facts in classes.items():
        known = chain(name)
        if known is None:
            continue
        defined, stubs = known
        if "__init__" in defined:
            defined |= stubs
        missing = {a for a in facts.read - defined if not a.startswith("__")}
        if missing:
            found[name] = missing
    return found


def test_no_class_inherits_from_a_mixin_that_reads_its_hosts_attributes() -> None:
    classes = project_classes()
    leaning = host_reads(classes)
    found = {
        f"{host}({base.rsplit('.', 1)[1]})": sorted(leaning[base])
        for host, facts in classes.items()
        for base in facts.bases
        if base in leaning
    }
    assert found == {}


def test_the_mixin_check_tells_a_mixin_from_an_ordinary_base() -> None:
    source = '''
from dataclasses import dataclass
from typing import Protocol

class Port(Protocol):
    size: int
    def area(self) -> int: return self.size * self.size

class Base:
    kind = "base"
    def __init__(self) -> None: self.ready = True
    def describe(self) -> str: return f"{self.kind} {self.ready} {self.name}"
    @property
    def name(self) -> str: return "b"

@dataclass
class Point:
    x: int
    def norm(self) -> int: return abs(self.x)

class Failure(Exception):
    def text(self) -> str: return str(self.args)

class Focus:
    motor: object
    def refocus(self) -> None: self.position = self.motor.home

class Lens(Focus, Base, Port):
    def __init__(self) -> None: self.motor = object()

class Square(Base, Port):
    size = 2

class Gate:
    def __init__(self) -> None: self.seen = 0
    def token(self) -> str: raise NotImplementedError
    def check(self) -> bool: return self.token() == "ok"

class OpenGate(Gate):
    def token(self) -> str: return "ok"

class Settings:
    def _sync(self) -> None:
        """Written by the host."""
        raise NotImplementedError
    def apply(self) -> None: self._sync()

class Media(Settings):
    def _sync(self) -> None: pass

class Tagged(Point, Failure): pass
'''
    tree = ast.parse(source)
    names = {n.name: f"m.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef)}
    names |= {"Protocol": "typing.Protocol", "dataclass": "dataclasses.dataclass"}
    classes = {f"m.{n.name}": ClassFacts("m", n, names) for n in tree.body if isinstance(n, ast.ClassDef)}
    assert host_reads(classes) == {"m.Focus": {"motor"}, "m.Settings": {"_sync"}}


def test_only_the_coordinator_imports_ray() -> None:
    """A single-process twin never imports Ray: only the coordinator of a sharded run does."""
    users = {
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in files(package)
        if any(m == "ray" or m.startswith("ray.") for m in imported_modules(path))
    }
    assert users == {"twin/cluster/coordinator.py"}


def test_a_single_process_twin_never_imports_ray() -> None:
    code = (
        "import sys; from twin.cli import main; from twin.serve import build; from twin.settings import "
        "Settings, LOOPBACK; from twin.scenario.runner import run; build(Settings(**LOOPBACK)); "
        "print('ray' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-2000:]
