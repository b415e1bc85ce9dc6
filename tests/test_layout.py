"""The package layout: imports point downward only, and the product never imports ``benchmarks``.

    benchmarks -> schedopt -> runtime_bridge -> simulator -> allocators -> formulations -> optim

A module of package P may import P itself and the packages to its right; ``benchmarks`` only
measures the product, so no product module imports it. Every ``.py`` file of the product is
parsed with :mod:`ast`; module-level, lazy (inside functions) and ``TYPE_CHECKING`` imports all
count, and so do ``importlib.import_module("...")`` calls with a literal name. Third-party and
standard-library imports are not checked. A relative import must stay inside its own package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: top to bottom: a package may import itself and any package after it
ORDER = ("benchmarks", "schedopt", "runtime_bridge", "simulator", "allocators", "formulations", "optim")
PRODUCT = ORDER[1:]
RANK = {name: i for i, name in enumerate(ORDER)}

#: (importing module, imported module) pairs that break the rule on purpose, each with the reason
#: as a comment. Empty: no module of the product imports upward or imports ``benchmarks``. Adding
#: an entry needs a reason; an entry that no longer occurs fails the test, so the list only shrinks.
ALLOWED: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, source: str) -> list[tuple[int, str | None, int]]:
    """(line, absolute module name or None for an escaping relative import, level) of every import."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                out.append((node.lineno, node.module, 0))
            elif node.level > len(package):
                out.append((node.lineno, None, node.level))
            else:
                base = package[:len(package) - node.level + 1]
                out.append((node.lineno, ".".join(base + ([node.module] if node.module else [])), node.level))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and isinstance(node.func.value, ast.Name)
              and node.func.value.id == "importlib" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and not node.args[0].value.startswith(".")):
            out.append((node.lineno, node.args[0].value, 0))
    return out


def _product_files() -> list[Path]:
    files = []
    for package in PRODUCT:
        found = sorted(p for p in (ROOT / package).rglob("*.py") if ".venv" not in p.parts)
        assert found, f"package {package}/ has no Python files: update ORDER in tests/test_layout.py"
        files += found
    return files


def _violations(sources: list[tuple[Path, str]] | None = None) -> list[tuple[str, str, str]]:
    """(``file:line``, importing module, imported module) of every import against the layout, in
    ``sources`` ((path, text) pairs) or else in every file of the product."""
    if sources is None:
        sources = [(path, path.read_text(encoding="utf-8")) for path in _product_files()]
    bad = []
    for path, source in sources:
        module = _module_name(path)
        own = module.split(".")[0]
        for line, target, level in _imports(path, source):
            where = f"{path.relative_to(ROOT)}:{line}"
            if target is None:
                bad.append((where, module, f"{'.' * level} (relative import leaving {own}/)"))
                continue
            top = target.split(".")[0]
            if level and top != own:
                bad.append((where, module, target))
            elif top in RANK and RANK[top] < RANK[own]:
                bad.append((where, module, target))
    return bad


def test_the_product_never_imports_benchmarks():
    offenders = [v for v in _violations() if v[2].split(".")[0] == "benchmarks" and (v[1], v[2]) not in ALLOWED]
    assert not offenders, "product modules import benchmarks (it only measures the product):\n" + "\n".join(
        f"  {where}: {module} imports {target}" for where, module, target in offenders)


def test_imports_point_downward():
    found = _violations()
    offenders = [v for v in found if (v[1], v[2]) not in ALLOWED]
    assert not offenders, (f"imports against the layout {' -> '.join(ORDER)}:\n" + "\n".join(
        f"  {where}: {module} imports {target}" for where, module, target in offenders))
    stale = ALLOWED - {(module, target) for _, module, target in found}
    assert not stale, f"ALLOWED holds exceptions that no longer occur; remove them: {sorted(stale)}"


@pytest.mark.parametrize("source, bad", [
    ("import benchmarks.fidelity\n", True),
    ("from benchmarks import rows\n", True),
    ("def f():\n    from benchmarks.bench_all import sweeps\n", True),
    ("from schedopt.cli import app\n", True),
    ("import runtime_bridge\n", True),
    ("import importlib\nimportlib.import_module('schedopt.bench')\n", True),
    ("from ... import x\n", True),
    ("from allocators import POLICIES\nfrom formulations import AllocationProblem\nimport optim\n", False),
    ("from simulator.files import write_atomically\n", False),
    ("from .. import files\nfrom .loop import run\n", False),
    ("import numpy as np\nfrom pandas import DataFrame\n", False),
])
def test_the_check_sees_an_upward_import(source, bad):
    """The check itself: a module of ``simulator`` importing upward (or ``benchmarks``) is caught."""
    assert bool(_violations([(ROOT / "simulator" / "engine" / "_probe.py", source)])) == bad
