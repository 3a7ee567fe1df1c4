"""Do two checkouts write the same reports? For changes that must not change a word (engine speed-ups).

    python benchmarks/same_reports.py OLD_TREE NEW_TREE --out /tmp/same
    python benchmarks/same_reports.py OLD NEW --out /tmp/same1m --inputs big.csv --args --max-op-facts 1000000

Every comparison file of tests/data, examples and the rule packs' cases (or the ``--inputs`` given)
runs through ``advisor run`` with each tree's code, with the build config, ONNX model and dumps
found beside it, writing every format; the exit codes and each report file must be byte-identical.
Each run imports ``advisor`` from its tree alone (PYTHONPATH, from a folder that holds no
``advisor``). Prints the files that differ; exit status 1 when any does.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUFFIXES = (".csv", ".xlsx")
FORMATS = ("json", "md", "txt", "html")


def comparison_files(root: Path) -> list[Path]:
    return [path for folder in ("tests/data", "examples", "rules") for path in sorted((root / folder).rglob("*"))
            if path.is_file() and (path.suffix in SUFFIXES or path.name.startswith("compare_result")
                                   and path.suffix == ".json")]


def beside(comparison: Path) -> list[str]:
    """The run options for the inputs found next to a comparison file."""
    folder, options = comparison.parent, []
    if (folder / "build.json").is_file():
        options += ["--config", str(folder / "build.json")]
    if (folder / "model.onnx").is_file():
        options += ["--graph", str(folder / "model.onnx")]
    if (folder / "golden").is_dir() and (folder / "target").is_dir():
        options += ["--dumps", f"{folder / 'golden'}:{folder / 'target'}"]
    return options


def run(tree: Path, comparison: Path, out: Path, extra: list[str], cwd: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "advisor", "run", str(comparison), *beside(comparison), *extra,
               "-o", str(out), "--format", ",".join(FORMATS)]
    with open(out.with_suffix(".log"), "w", encoding="utf-8") as log:
        return subprocess.run(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                              check=False).returncode


def differences(old: Path, new: Path, codes: tuple[int, int]) -> list[str]:
    found = [f"exit {codes[0]} vs {codes[1]}"] if codes[0] != codes[1] else []
    for fmt in FORMATS:
        a, b = old / f"report.{fmt}", new / f"report.{fmt}"
        if a.exists() != b.exists() or (a.exists() and not filecmp.cmp(a, b, shallow=False)):
            found.append(f"report.{fmt}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="checkout whose reports are the reference")
    parser.add_argument("new", type=Path, help="checkout under test")
    parser.add_argument("--out", type=Path, required=True, help="folder for both runs' reports")
    parser.add_argument("--inputs", type=Path, nargs="+", help="comparison files (default: the repository's)")
    parser.add_argument("--args", nargs=argparse.REMAINDER, default=[], help="further `advisor run` options")
    args = parser.parse_args(argv)
    inputs = [path.resolve() for path in args.inputs] if args.inputs else comparison_files(REPO)
    same, differing = 0, 0
    with tempfile.TemporaryDirectory() as neutral:
        for number, comparison in enumerate(inputs, 1):
            old, new = (args.out / side / str(number) for side in ("old", "new"))
            for out in (old, new):
                out.parent.mkdir(parents=True, exist_ok=True)
            codes = (run(args.old.resolve(), comparison, old, args.args, Path(neutral)),
                     run(args.new.resolve(), comparison, new, args.args, Path(neutral)))
            found = differences(old, new, codes)
            if found:
                differing += 1
                print(f"DIFFERS {comparison}: {', '.join(found)}", flush=True)
            else:
                same += 1
    print(f"{same} identical, {differing} differing, of {len(inputs)} comparison files")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
