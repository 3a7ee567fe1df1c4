"""`advisor --help` and `--version` answer at once: they load no command's module and none of the
heavy libraries (pandas, numpy, the rule engine, jinja2); a command's `--help` loads its own module
and none of them either. The time itself is measured in benchmarks/startup.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from advisor.cli import COMMANDS, ONE_COMMAND_GC_THRESHOLD

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


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_commands_help_loads_nothing_heavy(command):
    """`advisor run --help` imported pandas, numpy, jinja2 and the rule engine (1.2 s) to print its
    options: what a command runs is imported when it runs (advisor/cli/__init__.py)."""
    heavy, commands = loaded([command, "--help"])
    assert heavy == [], f"advisor {command} --help imports {', '.join(heavy)}"
    assert f"advisor.cli.{command}" in commands


def test_a_command_loads_only_its_own_module():
    heavy, commands = loaded(["history", "--help"])
    assert commands == ["advisor.cli.history"]


def test_help_still_lists_every_command(capsys):
    from advisor.cli import main
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name, (_, text) in COMMANDS.items():
        assert name in out and text.split()[0] in out


def probe(code: str, variable: str | None = None, setting: str | None = None) -> str:
    """The last line ``code`` prints in a fresh interpreter, with the environment ``variable`` unset,
    or set to ``setting``."""
    env = {k: v for k, v in os.environ.items() if k != variable}
    if variable and setting:
        env[variable] = setting
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout.splitlines()[-1]


POOL_PROBE = """
from advisor.cli import main
main(["rules", "fields", "network"])
import pyarrow
print("POOL", pyarrow.default_memory_pool().backend_name)
"""


@pytest.mark.parametrize(("setting", "expected"), [(None, "system"), ("jemalloc", "jemalloc")])
def test_arrow_buffers_come_from_the_system_allocator_unless_the_user_chose_one(setting, expected):
    """A million-row read frees column buffers all the time: Arrow's own pool keeps them (peak memory),
    the system allocator, which advisor tunes to return big blocks, does not."""
    assert probe(POOL_PROBE, "ARROW_DEFAULT_MEMORY_POOL", setting) == f"POOL {expected}"


HUGEPAGE_PROBE = """
from advisor.cli import main
main(["rules", "fields", "network"])
import numpy
print("HUGEPAGE", numpy._core.multiarray._get_madvise_hugepage())
"""


@pytest.mark.parametrize(("setting", "expected"), [(None, False), ("1", True)])
def test_numpy_arrays_are_not_mapped_on_huge_pages_unless_the_user_asks(setting, expected):
    """A column array resident in 2 MiB steps raises the peak of a million-row run (~12 MiB)."""
    assert probe(HUGEPAGE_PROBE, "NUMPY_MADVISE_HUGEPAGE", setting) == f"HUGEPAGE {expected}"


FREEZE_PROBE = """
import gc, sys
from advisor.cli import main
before = gc.get_freeze_count()
main(["rules", "fields", "network"])
called = gc.get_freeze_count()
called_threshold = gc.get_threshold()
sys.argv = ["advisor", "rules", "fields", "network"]
try:
    import advisor.__main__
except SystemExit:
    pass
print("FROZEN", before, called, gc.get_freeze_count(), len(gc.get_objects()), *called_threshold, *gc.get_threshold())
"""


def test_a_command_freezes_what_its_imports_made_so_collections_skip_it():
    before, called, frozen, collected = map(int, probe(FREEZE_PROBE).split()[1:5])
    # The program (python -m advisor, the advisor script) freezes the modules' objects (tens of
    # thousands), not what the command made since; main() called from Python freezes nothing.
    assert before == called == 0 and frozen > 20_000 and collected < frozen


def test_only_the_program_collects_its_youngest_objects_less_often():
    """The advisor program (its process ends with the command) starts a collection after 10,000
    allocations, not Python's 700; main() called from Python leaves the caller's collector alone."""
    thresholds = tuple(map(int, probe(FREEZE_PROBE).split()[5:]))
    assert thresholds == (700, 10, 10, ONE_COMMAND_GC_THRESHOLD, 10, 10)
