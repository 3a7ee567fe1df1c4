"""How much CPU ``advisor --version`` and the ``--help`` of advisor and of each command cost: a user
waits for them each time.

    python benchmarks/startup.py            # 5 runs of each, median CPU seconds (user + system)

Each command runs in a fresh process (the installed ``advisor`` script beside this interpreter, else
``python -m advisor``); its CPU time comes from the kernel's accounting of that one child
(``os.wait4``), so a busy machine inflates the wall time but hardly the CPU time. Target: under
0.3 s of CPU each (the command modules and pandas, numpy, jinja2 and the engine are not imported to
print a version, the list of commands or a command's options). The exit status is 1 when a target
is missed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

TARGET_CPU = 0.3
COMMANDS = (["--version"], ["--help"], ["run", "--help"], ["compare", "--help"], ["batch", "--help"])


def advisor_command() -> list[str]:
    script = Path(sys.executable).with_name("advisor")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "advisor"]


def cpu_seconds(argv: list[str]) -> float:
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {child.returncode}")
    return usage.ru_utime + usage.ru_stime


def main(repeat: int = 5) -> int:
    missed = False
    for args in COMMANDS:
        argv = advisor_command() + args
        median = statistics.median(cpu_seconds(argv) for _ in range(repeat))
        ok = median < TARGET_CPU
        missed |= not ok
        print(f"advisor {' '.join(args):<16} {median:.3f} s CPU (median of {repeat}; target < {TARGET_CPU} s) "
              f"{'ok' if ok else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
