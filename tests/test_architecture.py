"""The shape of the code: packages import downwards only, no import cycle between them, no module too
long to read in one sitting, and the README's "How it is built" names every package.

The import graph is read from the source (``ast``): every ``import advisor...`` and ``from ... import``
of an advisor module, at the top of a module or inside a function (a lazy import is still a
dependency). Imports under ``if TYPE_CHECKING:`` are left out: they are never executed, and only name a
type in an annotation. A *unit* is a package ``advisor/<pkg>/`` or a top-level module ``advisor/<mod>.py``.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

from tests.conftest import REPO

ADVISOR = REPO / "advisor"

# The allowed layering, bottom first: a unit may import units of its own layer or of a lower one.
# Shared low-level modules at the bottom; readers; what turns input into facts and evidence; the rule
# engine and what it concludes; the report; the commands.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({"__init__", "errors", "text", "dtypes", "catalogs", "nesting", "jsonstream", "inputfiles",
                        "yamlfile", "resources", "cjk", "templating", "progress", "filekind", "memory", "ownfiles",
                        "plugins", "cachefiles", "defaults"})),
    ("readers", frozenset({"ingest", "graph", "tensors", "compare", "detections"})),
    ("facts", frozenset({"facts", "evidence", "post"})),
    ("engine", frozenset({"diagnosis", "advice", "engine", "remedy", "config", "verify"})),
    ("report", frozenset({"report", "pipeline", "pipeline_post", "pipeline_cases", "docsgen"})),
    ("commands", frozenset({"batch", "cluster", "inspect", "cli", "__main__"})),
)

# Imports that break the layering or close a cycle today, each with the branch that removes it (the
# lead deletes an entry when merging that branch; a stale entry fails test_known_exceptions_still_exist).
KNOWN_UPWARD: dict[tuple[str, str], str] = {
}
# Imports within one layer that close a cycle there (none today; the list is here for the lead).
KNOWN_SIDEWAYS_CYCLES: dict[tuple[str, str], str] = {}

MAX_LINES = 400
# Modules over MAX_LINES today, with their line counts: a module may shrink, never grow past its number;
# the lead removes an entry when the branch that splits it is merged.
LONG_MODULES: dict[str, int] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ADVISOR.rglob("*.py"))}


def unit_of(module: str) -> str:
    """``advisor.facts.builder`` -> ``facts``; ``advisor.errors`` -> ``errors``; ``advisor`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported_modules(module: str, path: Path) -> set[str]:
    """The advisor modules ``module`` imports (a name imported from a package counts as the package,
    unless it is itself a module)."""
    modules = _modules()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            named = [f"{origin}.{alias.name}" for alias in node.names]
            # ``from pkg import submodule`` depends on the submodule; any other name, on ``pkg`` itself.
            targets = named + ([origin] if any(name not in modules for name in named) else [])
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("advisor"):
                found.add(target)
    return found


@cache
def unit_edges() -> dict[tuple[str, str], tuple[str, ...]]:
    """(importing unit, imported unit) -> the module imports behind that edge."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module, path in _modules().items():
        for target in imported_modules(module, path):
            if unit_of(module) != unit_of(target):
                edges[unit_of(module), unit_of(target)].add(f"{module} -> {target}")
    return {edge: tuple(sorted(via)) for edge, via in edges.items()}


def layer_of(unit: str) -> int:
    for rank, (_, units) in enumerate(LAYERS):
        if unit in units:
            return rank
    raise KeyError(unit)


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan), each sorted."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(edges):
        graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
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
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(set(graph) | {b for _, b in edges}):
        if node not in index:
            visit(node)
    return sorted(groups)


def _describe(edge: tuple[str, str]) -> str:
    via = unit_edges()[edge]
    return f"{edge[0]} -> {edge[1]} ({'; '.join(via[:3])}{' ...' if len(via) > 3 else ''})"


# --- the import graph ---------------------------------------------------------------------------

def test_the_graph_sees_relative_lazy_and_absolute_imports():
    edges = unit_edges()
    assert ("pipeline", "engine") in edges                   # from .engine.runner import run_rules
    assert any("advisor.ingest.known_files -> advisor.filekind" in v for v in edges.values())   # absolute
    assert ("cli", "pipeline") in edges                      # a function-level (lazy) import
    assert ("diagnosis", "remedy") not in edges              # only under TYPE_CHECKING


def test_every_unit_has_a_layer():
    units = {unit_of(m) for m in _modules()}
    placed = set().union(*(units_ for _, units_ in LAYERS))
    assert sorted(units - placed) == [], "place the new package or module in LAYERS (tests/test_architecture.py)"


def test_packages_import_only_their_own_layer_or_lower():
    upward = [_describe(edge) for edge in sorted(unit_edges())
              if layer_of(edge[1]) > layer_of(edge[0]) and edge not in KNOWN_UPWARD]
    assert upward == [], "imports against the layering (" + " < ".join(n for n, _ in LAYERS) + "):\n" + \
        "\n".join(upward)


def test_no_import_cycle_between_packages():
    allowed = set(KNOWN_UPWARD) | set(KNOWN_SIDEWAYS_CYCLES)
    found = cycles(set(unit_edges()) - allowed)
    detail = ["  " + _describe(e) for group in found for e in sorted(unit_edges()) if set(e) <= set(group)]
    assert found == [], f"import cycles: {found}\n" + "\n".join(detail)


def test_known_exceptions_still_exist():
    """A removed import leaves its entry behind: delete it, so the list only shrinks."""
    stale = sorted(edge for edge in (*KNOWN_UPWARD, *KNOWN_SIDEWAYS_CYCLES) if edge not in unit_edges())
    assert stale == []
    sideways = [edge for edge in KNOWN_SIDEWAYS_CYCLES if layer_of(edge[0]) != layer_of(edge[1])]
    assert sideways == []


@cache
def module_edges() -> set[tuple[str, str]]:
    """(importing module, imported module), lazy imports included."""
    return {(module, target) for module, path in _modules().items()
            for target in imported_modules(module, path) if target != module}


def test_no_import_cycle_between_modules():
    """Two modules that import each other, even inside a function (a lazy import hides the cycle, it
    does not remove it): the shared part belongs in a third module both import."""
    found = cycles(module_edges())
    assert found == [], f"module import cycles: {found}"


def test_the_module_graph_sees_imports_inside_functions():
    assert ("advisor.pipeline", "advisor.evidence.facts") in module_edges()     # inside _dump_folders


# --- module size --------------------------------------------------------------------------------

def test_no_module_is_too_long_to_read_in_one_sitting():
    too_long = {}
    for path in _modules().values():
        name = path.relative_to(REPO).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LONG_MODULES.get(name, MAX_LINES):
            too_long[name] = lines
    assert too_long == {}, f"modules over {MAX_LINES} lines (or longer than their entry in LONG_MODULES): split them"


def test_long_module_list_only_names_long_modules():
    shrunk = {}
    for name in LONG_MODULES:
        path = REPO / name
        lines = len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0
        if lines <= MAX_LINES:
            shrunk[name] = lines
    assert shrunk == {}, "these are short now: remove them from LONG_MODULES"


# --- the README -----------------------------------------------------------------------------------

def _how_it_is_built() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## How it is built\n(.*?)(?=^## )", readme, re.S | re.M)
    assert section, "README.md has no '## How it is built' section"
    return section[1]


def test_readme_names_every_package():
    text = _how_it_is_built()
    packages = sorted(p.name for p in ADVISOR.iterdir() if (p / "__init__.py").is_file())
    missing = [p for p in packages if f"advisor/{p}/" not in text]
    assert missing == [], "README 'How it is built' does not name these packages"


def test_readme_names_no_package_that_is_gone():
    named = set(re.findall(r"advisor/([a-z_]+)/", _how_it_is_built()))
    gone = sorted(name for name in named if not (ADVISOR / name / "__init__.py").is_file())
    assert gone == []
