"""`advisor --help` and `--version` answer at once: they load no command's module and none of the
heavy libraries (pandas, numpy, the rule engine, jinja2). The time itself is measured in benchmarks/."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "durable", "jinja2", "yaml", "tqdm", "onnx")
PROBE = """
import sys
from advisor.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print("LOADED", *sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r})))
print("COMMANDS", *sorted(m for m in sys.modules if m.startswith("advisor.cli.")))
"""


def loaded(argv: list[str]) -> tuple[list[str], list[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True,
                         text=True, check=True).stdout
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("LOADED", "COMMANDS"))}
    return lines["LOADED"], lines["COMMANDS"]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_load_nothing_heavy(argv):
    heavy, commands = loaded(argv)
    assert heavy == [] and commands == []


def test_a_command_loads_only_its_own_module():
    heavy, commands = loaded(["history", "--help"])
    assert commands == ["advisor.cli.history"]


def test_help_still_lists_every_command(capsys):
    from advisor.cli import COMMANDS, main
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name, (_, text) in COMMANDS.items():
        assert name in out and text.split()[0] in out
