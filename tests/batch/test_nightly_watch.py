"""A batch over generated scenarios, run night after night with changes in between: history, regression
detection, skipping of unchanged jobs, index page and digest."""

from __future__ import annotations

import re

from .conftest import CLEAN, CLEAN_FP16, OVERFLOW, PROBLEM, SPD, Workspace


def _mtimes(workspace: Workspace, job: str) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (workspace.out / job).iterdir()}


def test_second_night_skips_unchanged_jobs_and_flags_the_regression(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert": OVERFLOW, "crepe": CLEAN_FP16, "onet": SPD})
    first = workspace.batch(manifest, "--fail-on-regression")
    assert first.code == 0, first.err
    assert workspace.statuses(1) == {"resnet": "ok", "bert": "ok", "crepe": "ok", "onet": "ok"}
    before = {job: _mtimes(workspace, job) for job in ("bert", "crepe", "onet")}

    workspace.put("resnet", PROBLEM)          # the new driver broke resnet
    second = workspace.batch(manifest, "--fail-on-regression")

    assert second.code == 1
    assert workspace.statuses(2) == {"resnet": "ok", "bert": "unchanged", "crepe": "unchanged", "onet": "unchanged"}
    assert "REGRESSION resnet: consistent -> problem_node at Conv_3" in second.out
    # Unchanged jobs were not analysed again: their reports are the first night's files.
    assert {job: _mtimes(workspace, job) for job in before} == before
    shown = workspace.history_json("show", "latest")
    transitions = {job["job"]: job["transition"] for job in shown["jobs"]}
    assert transitions == {"resnet": "regression", "bert": "same", "crepe": "same", "onet": "same"}


def test_without_fail_on_regression_a_regression_still_exits_0(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN})
    assert workspace.batch(manifest).code == 0
    workspace.put("resnet", PROBLEM)
    run = workspace.batch(manifest)
    assert run.code == 0
    assert "1 regression," in run.out


def test_history_diff_says_what_is_new_fixed_and_persists(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert": OVERFLOW})
    workspace.batch(manifest)
    workspace.put("resnet", PROBLEM)
    workspace.put("bert", SPD)
    workspace.batch(manifest)

    diff = workspace.history_json("diff", "1", "2")
    jobs = {job["job"]: job for job in diff["jobs"]}
    resnet, bert = jobs["resnet"], jobs["bert"]
    assert resnet["transition"] == "regression"
    assert [(f["rule"], f["kind"], f["op"]) for f in resnet["new"]] == [("problem-node", "problem_node", "Conv_3")]
    assert resnet["fixed"] == [] and resnet["persists"] == []
    assert bert["transition"] == "changed"
    assert ("single-point-deviation", "single_point_deviation", "Conv_8") in \
        {(f["rule"], f["kind"], f["op"]) for f in bert["new"]}
    assert {f["kind"] for f in bert["fixed"]} == {"fp16_overflow", "problem_node"}

    text = workspace.history("diff").out      # default: previous -> latest
    assert "run 1 -> run 2" in text
    assert "resnet: consistent -> problem_node at Conv_3 [regression]" in text
    assert "  new      problem-node: problem_node at Conv_3 (op 5) [error, root cause]" in text


def test_a_fixed_job_is_reported_recovered_with_its_findings_fixed(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": PROBLEM})
    workspace.batch(manifest)
    workspace.put("resnet", CLEAN)
    run = workspace.batch(manifest, "--fail-on-regression")
    assert run.code == 0
    assert "1 recovered" in run.out
    (job,) = workspace.history_json("diff", "previous", "latest")["jobs"]
    assert job["transition"] == "recovered"
    assert [f["op"] for f in job["fixed"]] == ["Conv_3"]
    digest = (workspace.out / "digest.md").read_text(encoding="utf-8")
    assert "**Recovered**" in digest and "`resnet`" in digest


def test_unchanged_jobs_persist_across_runs_and_keep_their_trend(workspace: Workspace) -> None:
    manifest = workspace.manifest({"bert": OVERFLOW})
    for _ in range(3):
        workspace.batch(manifest)
    listing = workspace.history_json("list", "--job", "bert")
    assert [row["status"] for row in listing] == ["ok", "unchanged", "unchanged"]
    assert len({row["job_hash"] for row in listing}) == 1
    assert {row["verdict"]["verdict"] for row in listing} == {"fp16_overflow"}
    diff = workspace.history_json("diff", "1", "3", "--job", "bert")
    (bert,) = diff["jobs"]
    assert bert["new"] == [] and bert["fixed"] == [] and len(bert["persists"]) >= 5
    html = (workspace.out / "index.html").read_text(encoding="utf-8")
    assert html.count("<circle") == 3              # one trend point per run


def test_force_and_missing_reports_make_a_job_run_again(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert": OVERFLOW})
    workspace.batch(manifest)
    (workspace.out / "resnet" / "report.json").unlink()
    workspace.batch(manifest)
    assert workspace.statuses(2) == {"resnet": "ok", "bert": "unchanged"}
    assert (workspace.out / "resnet" / "report.json").is_file()
    workspace.batch(manifest, "--force")
    assert workspace.statuses(3) == {"resnet": "ok", "bert": "ok"}


def test_a_changed_option_or_rule_pack_reruns_the_job(workspace: Workspace, tmp_path) -> None:
    manifest = workspace.manifest({"resnet": CLEAN})
    workspace.batch(manifest)
    manifest = workspace.manifest({"resnet": {"input": "inputs/resnet.csv", "thresholds": {"cosine": 0.9}}})
    workspace.batch(manifest)
    assert workspace.statuses(2) == {"resnet": "ok"}
    workspace.batch(manifest)
    assert workspace.statuses(3) == {"resnet": "unchanged"}


def test_index_page_leads_with_regressions_and_is_self_contained(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert <int8>": OVERFLOW, "crepe": CLEAN_FP16},
                                  title="Nightly <watch>")
    workspace.batch(manifest)
    workspace.put("resnet", PROBLEM)
    workspace.batch(manifest)
    html = (workspace.out / "index.html").read_text(encoding="utf-8")
    assert html.index("<h2>Regressions</h2>") < html.index("<h2>All jobs</h2>")
    regressions = html[html.index("<h2>Regressions</h2>"):html.index("<h2>All jobs</h2>")]
    assert "resnet" in regressions and "crepe" not in regressions
    assert "Nightly &lt;watch&gt;" in html and "<watch>" not in html
    assert "bert &lt;int8&gt;" in html and "bert <int8>" not in html
    assert html.count("<svg") == 3
    assert "<script" not in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)    # nothing fetched
    assert 'href="resnet/report.html"' in html
    digest = (workspace.out / "digest.md").read_text(encoding="utf-8")
    assert digest.startswith("**Nightly \\<watch>** · advisor batch run 2: **1 regression**")
    assert "- `resnet` ([report](resnet/report.html)): Consistent → Problem node at `Conv_3 (op 5)`" in digest
    assert digest.index("**Regressions**") < digest.index("[Index](index.html)")


def test_link_base_prefixes_report_links_in_the_digest(workspace: Workspace) -> None:
    manifest = workspace.manifest({"my model": CLEAN})
    workspace.batch(manifest)
    workspace.put("my model", PROBLEM)
    workspace.batch(manifest, "--link-base", "https://ci.example/nightly/")
    digest = (workspace.out / "digest.md").read_text(encoding="utf-8")
    assert "([report](https://ci.example/nightly/my%20model/report.html))" in digest
