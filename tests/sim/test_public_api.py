"""The game behind one door: code outside ``fivectl.sim`` imports only the names ``fivectl.sim`` exports (plus the
user-facing PettingZoo adapter ``fivectl.sim.parallel_env``), and the observation schema imports nothing from the
game, so the two form no cycle."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import fivectl
import fivectl.sim

PACKAGE = Path(fivectl.__file__).resolve().parent
GAME = "fivectl.sim"
PUBLIC_SUBMODULES = {"fivectl.sim.parallel_env"}  # an adapter for users, imported on its own


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of every import in ``tree``: name is None for ``import module``; relative imports are
    resolved against ``module`` (a package when ``is_package``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            found.extend((node.lineno, base, alias.name) for alias in node.names)
    return found


def game_import_violation(module: str, name: str | None, public: set[str]) -> str | None:
    """Why importing ``name`` from ``module`` reaches past the game's public API (None if it does not)."""
    if module == "fivectl" and name == "sim":
        return None
    if module == GAME:
        if name is None or name in public or f"{GAME}.{name}" in PUBLIC_SUBMODULES:
            return None
        return f"{GAME}.{name} is not in fivectl.sim.__all__"
    if module.startswith(GAME + ".") and module not in PUBLIC_SUBMODULES:
        return f"{module} is a private module of the game"
    return None


def touches_game(module: str, name: str | None) -> bool:
    target = module if name is None else f"{module}.{name}"
    return module == GAME or module.startswith(GAME + ".") or target == GAME


def python_files(under: Path):
    return sorted(p for p in under.rglob("*.py") if "__pycache__" not in p.parts)


def imports_of(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    return imported(tree, module_name(path), path.name == "__init__.py")


def test_modules_outside_the_game_import_only_its_public_api():
    public = set(fivectl.sim.__all__)
    problems = []
    for path in python_files(PACKAGE):
        if path.is_relative_to(PACKAGE / "sim"):
            continue
        for line, module, name in imports_of(path):
            why = game_import_violation(module, name, public)
            if why:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {why}")
    assert not problems, "imports past fivectl.sim's public API:\n" + "\n".join(problems)


def test_the_schema_imports_nothing_from_the_game():
    problems = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: imports {module}" + (f".{name}" if name else "")
        for path in python_files(PACKAGE / "schema")
        for line, module, name in imports_of(path)
        if touches_game(module, name) or (module == "fivectl" and name == "sim")
    ]
    assert not problems, "fivectl.schema must not import the game:\n" + "\n".join(problems)


def test_importing_the_schema_loads_no_game_code():
    code = "import sys, fivectl.schema, fivectl.schema.frame; print([m for m in sys.modules if m.startswith('fivectl.sim')])"
    path = os.pathsep.join(filter(None, [str(PACKAGE.parent), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}  # the fivectl under test, wherever pytest runs from
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


def test_every_exported_name_exists():
    missing = [name for name in fivectl.sim.__all__ if not hasattr(fivectl.sim, name)]
    assert not missing
    assert len(set(fivectl.sim.__all__)) == len(fivectl.sim.__all__)


def test_the_checker_flags_private_imports():
    public = {"MobaEnv", "HOLD"}
    source = """
from fivectl.sim import MobaEnv
from fivectl.sim import data as D
from fivectl.sim.env import HOLD
import fivectl.sim.core
from fivectl.sim.parallel_env import MobaParallelEnv
from fivectl import sim
from ..sim.bots import bot_actions
"""
    found = imported(ast.parse(source), "fivectl.replay.view", is_package=False)
    flagged = [line for line, module, name in found if game_import_violation(module, name, public)]
    assert flagged == [3, 4, 5, 8]  # data, env, core and a relative bots import; MobaEnv/adapter/package pass
