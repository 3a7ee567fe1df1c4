"""What the index page, the digest and the terminal say about a batch: a batch in which nothing
could be analysed is not a green "No regression"; verdicts read as the reports title them; a
progress bar on a terminal, a line per job with -v."""

from __future__ import annotations

import io
import re

from advisor.cli import main

from .conftest import CLEAN, PROBLEM, Workspace


def banner(html: str) -> tuple[str, str]:
    match = re.search(r'<header class="verdict sev-(\w+)">.*?<p class="summary">\s*(.*?)\s*</p>', html, re.S)
    assert match, html[:2000]
    return match[1], " ".join(match[2].split())


def test_a_batch_whose_only_job_failed_says_so(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": {"input": "inputs/nowhere.csv"}})
    run = workspace.batch(manifest)
    assert run.code == 0 and "1 job: 0 analysed, 0 unchanged, 1 failed; 0 regressions," in run.out
    tone, text = banner((workspace.out / "index.html").read_text(encoding="utf-8"))
    assert tone == "error" and "No regression" not in text
    assert text.startswith("No job could be analysed: the only job failed")
    digest = (workspace.out / "digest.md").read_text(encoding="utf-8")
    assert "**no job could be analysed**" in digest.splitlines()[0] and "no regression" not in digest


def test_some_failed_jobs_are_a_warning_that_counts_them(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "missing": {"input": "inputs/nowhere.csv"}})
    workspace.batch(manifest)
    tone, text = banner((workspace.out / "index.html").read_text(encoding="utf-8"))
    assert (tone, text) == ("warning", "1 of 2 jobs could not be analysed; no regression among the 1 that were.")


def test_verdict_badges_read_as_the_report_titles_them(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert": PROBLEM})
    workspace.batch(manifest)
    html = (workspace.out / "index.html").read_text(encoding="utf-8")
    badges = dict(re.findall(r'<span class="badge sev-\w+" title="(\w+)">([^<]+)</span>', html))
    assert badges == {"consistent": "Consistent", "problem_node": "Problem node"}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_on_a_terminal_and_job_lines_with_verbose(workspace: Workspace, monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    manifest = workspace.manifest({"resnet": CLEAN, "bert": PROBLEM})
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["batch", str(manifest), "--workers", "1", "-v"]) == 0
    out = workspace.capsys.readouterr().out
    assert "advisor batch" in terminal.getvalue() and "2/2" in terminal.getvalue()
    assert re.search(r"^\[1/2\] (resnet|bert): ", out, re.M) and re.search(r"^\[2/2\] ", out, re.M)
    assert "\r" not in out


def test_no_bar_in_a_pipe(workspace: Workspace, monkeypatch) -> None:
    manifest = workspace.manifest({"resnet": CLEAN})
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    assert main(["batch", str(manifest)]) == 0
    assert pipe.getvalue() == "" and "[1/1]" not in workspace.capsys.readouterr().out
