"""The repository's structure (docs/architecture.md §7): one-way imports, citations that resolve."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gemhsa_sym"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Package modules imported anywhere in ``path`` (inside functions and ``if`` blocks included)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    graph = {name: _imports(path, modules) for name, path in paths.items()}
    # a package imports its __init__ when any of its modules is imported; that edge is not a dependency
    return {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (found := visit(target)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_walker_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_imports_have_no_cycle() -> None:
    graph = _graph()
    assert "gemhsa_sym.laws.spectral" in graph and "gemhsa_sym.free.algebraic.roots" in graph["gemhsa_sym.laws.spectral"]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_citations_resolve_in_the_repository() -> None:
    """Every ``docs/FILE.md §N.M`` cited in code, tests, benchmarks and the README is a heading there,
    and nothing cites a design or reference file outside the repository."""
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), ROOT / "README.md"]
    cited = 0
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert not re.search(r"DESIGN[ .§]|REFERENCE\.md|\.\./shared[/]", text), source
        for file, section in re.findall(r"docs/([a-z-]+\.md) §(\d+(?:\.\d+)?)", text):
            doc = (ROOT / "docs" / file).read_text(encoding="utf-8")
            assert re.search(rf"^#+ {re.escape(section)}[ .]", doc, re.M), f"{source.name}: docs/{file} §{section}"
            cited += 1
    assert cited > 50


def test_rooms_stay_small() -> None:
    """Each folder of the package holds at most 15 modules and no module is over 400 lines (docs/architecture.md §7.1)."""
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__" and "records" not in p.parts)]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 15, folder
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 400, path


def test_a_configuration_imports_nothing_of_the_engine() -> None:
    """The first stage is light: the public face and its Config load no module of the engine, the laws or the samplers,
    and not numba."""
    import subprocess
    import sys

    code = "import sys, gemhsa_sym as gs; gs.Config(heads=2); print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    heavy = [m for m in loaded if m.startswith(("gemhsa_sym.free", "gemhsa_sym.laws", "gemhsa_sym.sampling", "numba", "torch"))]
    assert "gemhsa_sym.layer.config" in loaded and not heavy, heavy


def test_tests_use_only_public_names() -> None:
    """No test imports a name of the package that starts with an underscore or reaches for a private attribute
    (``_repr_latex_`` is IPython's protocol, not private)."""
    private = []
    for path in (ROOT / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gemhsa_sym"):
                private += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("_"):
                private.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not private, private
