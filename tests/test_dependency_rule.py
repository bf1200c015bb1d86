"""The dependency rule: api/ and hardware/ never import twin/; the ports import only themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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


@pytest.mark.parametrize("package", ["api", "hardware"])
def test_nothing_outside_twin_imports_twin(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "twin")
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


def test_the_rule_is_checked_on_real_files() -> None:
    assert len(files("api")) > 5 and len(files("hardware")) > 3
