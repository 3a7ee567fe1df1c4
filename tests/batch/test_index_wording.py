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


TEAM_RULE = """\
id: team-conv-weights
title: {en: Conv weights laid out for another layout, zh: 卷积权重按另一种排布存放}
severity: error
root_cause: true
priority: 10
docs:
  en: {what: A Conv whose output breaks although its inputs agree., why: Weights were exported in another layout.,
       fix: Re-export the weights in the layout the target expects.}
  zh: {what: 输入一致但输出不一致的卷积。, why: 权重以另一种排布导出。, fix: 按目标要求的排布重新导出权重。}
when: {fact: op, op_type: Conv2D, error_enters: true}
emit:
  kind: team_conv_weights
  confidence: 0.9
  evidence: {en: "{{ m.op }} breaks", zh: "{{ m.op }} 出错"}
advice:
  en: {what: "{{ op }} computes with weights in the wrong layout.", why: The export wrote another layout.,
       confirm: Compare the weight tensors., fix: {any: Re-export the weights.}, references: ["docs/rule-packs.md"]}
  zh: {what: "{{ op }} 使用了错误排布的权重。", why: 导出时写成了另一种排布。, confirm: 对比权重张量。,
       fix: {any: 重新导出权重。}, references: ["docs/rule-packs.md"]}
cases:
  - name: a Conv where error enters
    expect: fire
    facts: [{fact: op, id: "op:5", index: 5, op: Conv_3, op_type: Conv2D, error_enters: true}]
  - name: a Conv that inherits error
    expect: silent
    facts: [{fact: op, id: "op:5", index: 5, op: Conv_3, op_type: Conv2D, error_enters: false}]
"""


def test_a_rule_packs_own_verdict_reads_as_its_pages_title(workspace: Workspace) -> None:
    """The index page does not load the jobs' packs: the worker titles the verdict with them."""
    pack = workspace.root / "team-rules"
    pack.mkdir()
    (pack / "pack.yaml").write_text('pack: team\nversion: "1.0"\n', encoding="utf-8")
    (pack / "team-conv-weights.yaml").write_text(TEAM_RULE, encoding="utf-8")
    manifest = workspace.manifest({"pnet": {"input": "inputs/pnet.csv", "rules": ["team-rules/"]},
                                   "bert": PROBLEM})
    workspace.put("pnet", PROBLEM)
    assert workspace.batch(manifest).code == 0
    html = (workspace.out / "index.html").read_text(encoding="utf-8")
    badges = re.findall(r'<span class="badge sev-\w+" title="(\w+)">([^<]+)</span>', html)
    assert sorted(badges) == [("problem_node", "Problem node"),
                              ("team_conv_weights", "Conv weights laid out for another layout")]


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
