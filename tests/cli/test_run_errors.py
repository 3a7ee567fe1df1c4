"""Bad input and bad usage: one line on stderr naming the file (and line or field), exit code 2,
and no report written."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from ..conftest import EXAMPLE

HEADER = EXAMPLE.read_text(encoding="utf-8").splitlines()[0]
FIRST_ROWS = EXAMPLE.read_text(encoding="utf-8").splitlines()[1:6]


def assert_bad_input(run, *fragments: str) -> None:
    assert run.code == 2, (run.code, run.err)
    assert run.err.count("\n") == 1 and run.err.startswith("advisor: error: "), run.err
    for fragment in fragments:
        assert fragment in run.err, run.err
    assert not run.outdir.exists(), "no report may be written for bad input"


def write(tmp_path: Path, text: str | bytes, name: str = "result_20240101000000.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_missing_file(run_cli, tmp_path):
    assert_bad_input(run_cli(tmp_path / "nope.csv"), "nope.csv")


def test_empty_file(run_cli, tmp_path):
    assert_bad_input(run_cli(write(tmp_path, "")), "result_20240101000000.csv", "empty")


def test_truncated_file_names_the_line(run_cli, tmp_path):
    truncated = "\n".join([HEADER, *FIRST_ROWS[:3], FIRST_ROWS[3][:40]])
    assert_bad_input(run_cli(write(tmp_path, truncated)), "result_20240101000000.csv:5")


def test_wrong_columns_list_what_was_expected(run_cli, tmp_path):
    run = run_cli(write(tmp_path, "name,value\na,1\n"))
    assert_bad_input(run, "result_20240101000000.csv", "msaccucmp")


def test_bad_number_names_column_and_line(run_cli, tmp_path):
    rows = list(csv.reader([HEADER, *FIRST_ROWS]))
    rows[3][rows[0].index("CosineSimilarity")] = "abc"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    assert_bad_input(run_cli(write(tmp_path, text.getvalue())), ":4", "CosineSimilarity", "abc")


def test_binary_garbage(run_cli, tmp_path):
    assert_bad_input(run_cli(write(tmp_path, bytes(range(256)) * 4)), "result_20240101000000.csv")


def test_a_folder_instead_of_a_file(run_cli, tmp_path):
    assert_bad_input(run_cli(tmp_path), str(tmp_path))


def test_broken_rule_pack_names_file_and_line(run_cli, tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text('pack: team\nversion: "1.0"\n')
    (pack / "r.yaml").write_text("id: x\ntitle: {en: a, zh: b\n")
    assert_bad_input(run_cli(EXAMPLE, "--rules", pack), "r.yaml:", "invalid YAML")


@pytest.mark.parametrize(("args", "fragment"), [
    (["--threshold", "cosin=0.9"], "unknown metric 'cosin'"),
    (["--threshold", "cosine=high"], "'high' is not a number"),
    (["--set", "problem-nod.min_confidence=0.5"], "did you mean 'problem-node'"),
    (["--set", "problem-node.min_conf=0.5"], "no parameter 'min_conf'"),
    (["--format", "html,pdf"], "pdf"),
    (["--comparison-format", "nope"], "nope"),
])
def test_usage_errors(run_cli, args, fragment):
    assert_bad_input(run_cli(EXAMPLE, *args), fragment)


def test_unknown_option_is_a_usage_error(run_cli):
    with pytest.raises(SystemExit) as exit_info:
        run_cli(EXAMPLE, "--no-such-option")
    assert exit_info.value.code == 2
