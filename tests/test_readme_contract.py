"""The README opens with two commands: install and analyse the example, install and run the tests.
CI runs exactly those lines first, in a fresh virtual environment; this keeps them from drifting."""

from __future__ import annotations

import re

from tests.conftest import REPO


def opening_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block and readme.index(block[0]) < readme.index("\n## "), "README.md must open with a bash block"
    return [line for line in block[1].splitlines() if line.strip()]


def test_ci_runs_the_readme_commands_verbatim_and_first():
    commands = opening_commands()
    assert len(commands) == 2 and commands[1].startswith('pip install ".[test]"')
    script = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.lstrip().startswith("#")]
    first_pytest = next(i for i, line in enumerate(script) if "pytest" in line)
    assert script[first_pytest - 1:first_pytest + 1] == commands
    assert not any("scenarios" in line for line in script[:first_pytest]), "extras must come after the README run"
    assert any("-m scenarios" in line for line in script[first_pytest + 1:])


def test_every_test_needing_torch_is_marked_for_the_second_run():
    unmarked = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if 'importorskip("torch"' in text and "pytest.mark.scenarios" not in text:
            unmarked.append(path.name)
    assert unmarked == []
