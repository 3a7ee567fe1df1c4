"""docs/rule-packs.md's walk-through is run as written: its files are written, its `advisor` commands
run in order (each must exit 0 and print the lines the page shows), and its shipping step is checked
(the pyproject's entry point resolves to the pack the page built, which validates)."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path

from advisor.cli import main
from advisor.engine.loading import ENTRY_POINT_GROUP, _pack_path
from advisor.engine.packs import check_pack

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "rule-packs.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def walkthrough() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index("## From nothing to a shipped pack"), text.index("\n## ", text.index("**7. Ship it.**"))
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text[start:end])]


def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch, capsys):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    ran, installs = [], []
    for language, body in walkthrough():
        first, _, rest = body.partition("\n")
        if language in ("yaml", "toml") and first.startswith("# file: "):
            target = tmp_path / first.removeprefix("# file: ").strip()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(rest, encoding="utf-8")
            continue
        assert language == "console", f"unexpected {language} block in the walk-through"
        for command, expected in _commands(body):
            argv = shlex.split(command)
            if argv[0] == "advisor":
                code = main(argv[1:])
                out = capsys.readouterr().out
                assert code == 0, (command, out)
                for line in expected:
                    assert line in out, (command, line, out)
                ran.append(argv[1:3])
            elif argv[:2] == ["pip", "install"]:
                installs.append(tmp_path / argv[2])
            else:
                _shell(argv, tmp_path)
    assert ["rules", "validate"] in ran and ["rules", "test"] in ran and any(cmd[:1] == ["run"] for cmd in ran)
    assert installs, "the walk-through ships the pack with pip install"
    for project in installs:
        _check_package(project)


def _commands(body: str) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif line.strip():
            commands[-1][1].append(line.strip())
    return commands


def _shell(argv: list[str], root: Path) -> None:
    """The few file commands the page uses, done here the same way."""
    if argv[:2] == ["mkdir", "-p"]:
        (root / argv[2]).mkdir(parents=True, exist_ok=True)
    elif argv[:2] == ["cp", "-r"]:
        shutil.copytree(root / argv[2], root / argv[3])
    elif argv[0] == "rm":
        (root / argv[1]).unlink()
    elif argv[0] == "touch":
        (root / argv[1]).touch()
    else:
        raise AssertionError(f"the walk-through uses a command this test does not know: {argv}")


def _check_package(project: Path) -> None:
    """What `pip install` would register: the entry point names a module whose folder is a valid pack."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    [(name, module)] = meta["project"]["entry-points"][ENTRY_POINT_GROUP].items()
    [package_dir] = meta["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    sys.path.insert(0, str(project / Path(package_dir).parent))
    try:
        __import__(module)
        path = _pack_path(sys.modules[module])
    finally:
        sys.path.pop(0)
        sys.modules.pop(module, None)
    pack, problems = check_pack(path)
    assert problems == [] and pack is not None and pack.name == name
