"""One verdict, said the same everywhere: the terminal, report.{html,md,json,txt} and the batch history
all read it from the findings (``Diagnosis.verdict``), never from a flag Python set beside the rules.

The case that once contradicted itself: with the single-point deviation rule disabled and
``network-consistent`` allowed five deviating ops, the rule finds the network consistent; the terminal
used to say "no root cause found" while report.txt said "Whole network consistent".
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import yaml

from advisor.cli import main

from ..conftest import SCENARIOS, scenario_csv, scenario_dirs

SPD = SCENARIOS / "single_point_deviation__mtcnn_pnet__saturated_logits__s0"
ALLOW_FIVE = ("--disable", "single-point-deviation", "--set", "network-consistent.max_deviating_ops=5")

# (scenario, options, the verdict the run must reach)
CASES = [
    (SPD, ALLOW_FIVE, "consistent"),
    (SPD, ("--disable", "single-point-deviation"), "unexplained"),
    (SPD, (), "single_point_deviation"),
    (SCENARIOS / "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0", ("--disable", "network-consistent"),
     "unexplained"),
]


def _said_everywhere(outdir: Path, terminal: str) -> dict[str, str]:
    """The verdict as each output states it (a kind, or the headline where a format only has words)."""
    report = json.loads((outdir / "report.json").read_text(encoding="utf-8"))
    verdict_line = next(line for line in terminal.splitlines() if line.startswith("Verdict: "))
    root = report["root_cause"]
    if verdict_line.startswith("Verdict: consistent"):
        terminal_kind = "consistent"
    elif verdict_line.startswith("Verdict: no root cause found"):
        terminal_kind = "unexplained"
    else:
        terminal_kind = root["kind"] if root and f"op {root['index']}" in verdict_line else verdict_line
    txt = (outdir / "report.txt").read_text(encoding="utf-8").splitlines()[0].removeprefix("Detection Type: ")
    first_block = next(f for f in report["findings"] if f["kind"] == report["verdict"]) \
        if report["verdict"] not in ("unexplained",) else None
    md_headline = (outdir / "report.md").read_text(encoding="utf-8").splitlines()[0].removeprefix("# ")
    html_headline = html.unescape(re.search(r"<h1>(.*?)</h1>", (outdir / "report.html").read_text(encoding="utf-8"),
                                            re.S)[1]).strip()
    return {"json": report["verdict"], "terminal": terminal_kind,
            "txt": "unexplained" if txt == "No root cause found" else
            (report["verdict"] if first_block and txt == first_block["title"] else txt),
            "md": report["verdict"] if md_headline == report["headline"] else md_headline,
            "html": report["verdict"] if html_headline == report["headline"] else html_headline}


@pytest.mark.parametrize(("scenario", "options", "expected"), CASES,
                         ids=["allowance-consistent", "no-rule-unexplained", "default", "clean-without-rule"])
def test_terminal_and_every_report_format_say_the_same_verdict(run_cli, scenario, options, expected):
    run = run_cli(scenario_csv(scenario), *options)
    assert run.code == 0, run.err
    said = _said_everywhere(run.outdir, run.out)
    assert said == dict.fromkeys(said, expected)


def test_the_batch_history_records_the_verdict_the_reports_state(tmp_path, capsys):
    jobs = [{"name": f"job{n}", "input": str(scenario_csv(scenario)), **_job_options(options)}
            for n, (scenario, options, _) in enumerate(CASES)]
    manifest = tmp_path / "nightly.yaml"
    manifest.write_text(yaml.safe_dump({"output": "out", "workers": 1, "jobs": jobs}), encoding="utf-8")
    assert main(["batch", str(manifest), "-q"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["history", "--db", str(tmp_path / "out" / "history.sqlite"), "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    recorded = {row["job"]: row["verdict"]["verdict"] for row in shown["jobs"]}
    assert recorded == {f"job{n}": expected for n, (_, _, expected) in enumerate(CASES)}
    for n in range(len(CASES)):
        report = json.loads((tmp_path / "out" / f"job{n}" / "report.json").read_text(encoding="utf-8"))
        assert report["verdict"] == recorded[f"job{n}"]


def _job_options(options: tuple[str, ...]) -> dict:
    """The same options in a manifest job's words."""
    job: dict = {"formats": "json"}
    for flag, value in zip(options[::2], options[1::2], strict=True):
        if flag == "--disable":
            job.setdefault("disable", []).append(value)
        elif flag == "--set":
            key, _, number = value.partition("=")
            job.setdefault("params", {})[key] = int(number)
    return job


def test_every_committed_scenario_says_one_verdict(run_cli):
    for scenario in scenario_dirs():
        run = run_cli(scenario_csv(scenario), "--format", "json,txt,md,html")
        assert run.code in (0, 1), run.err
        said = _said_everywhere(run.outdir, run.out)
        assert len(set(said.values())) == 1, (scenario.name, said)
