"""Manifests: mistakes stop the batch before it runs, naming file, line and column; options layer
like `advisor run`; graph, dumps and config are checked, hashed and recorded."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from advisor.batch import ManifestError, load_manifest
from advisor.config import ProjectConfig

from ..conftest import SCENARIOS
from .conftest import CLEAN, PROBLEM, Workspace


def _write(workspace: Workspace, text: str) -> Path:
    workspace.put("resnet", CLEAN)
    path = workspace.root / "nightly.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "message"), [
    ("""\
     jobs:
       - name: resnet
         imput: inputs/resnet.csv
     """, "nightly.yaml:3:5: unknown job key 'imput' (did you mean 'input'?)"),
    ("""\
     ouptut: out
     jobs: [{name: resnet, input: inputs/resnet.csv}]
     """, "nightly.yaml:1:1: unknown manifest key 'ouptut' (did you mean 'output'?)"),
    ("""\
     defaults:
       treshold: {cosine: 0.9}
     jobs: [{name: resnet, input: inputs/resnet.csv}]
     """, "nightly.yaml:2:3: unknown defaults key 'treshold' (did you mean 'thresholds'?)"),
    ("""\
     defaults:
       backends: [ascend, tensorrtt]
     jobs: [{name: resnet, input: inputs/resnet.csv}]
     """, "unknown backend 'tensorrtt' (did you mean 'tensorrt'?)"),
    ("""\
     jobs:
       - {name: resnet, input: inputs/resnet.csv}
       - {name: resnet, input: inputs/resnet.csv}
     """, "nightly.yaml:3: job name 'resnet' is used twice (first at line 2)"),
    ("""\
     jobs:
       - name: resnet
         input: inputs/resnet.csv
         formats: [html, pdf]
     """, "nightly.yaml:4:5: unknown report format 'pdf'"),
    ("""\
     jobs:
       - name: resnet
         input: inputs/resnet.csv
         dumps: {golden: g}
     """, "nightly.yaml:4:12: 'target' is required"),
    ("""\
     jobs:
       - name: ../escape
         input: inputs/resnet.csv
     """, "nightly.yaml:2:5: job name '../escape' must be a relative folder name"),
    ("""\
     jobs:
       - name: resnet
     """, "nightly.yaml:2:5: 'input' is required"),
    ("""\
     workers: 0
     jobs: [{name: resnet, input: inputs/resnet.csv}]
     """, "nightly.yaml:1:1: 'workers' must be a whole number of at least 1"),
    ("""\
     jobs:
       - name: resnet
         input: inputs/resnet.csv
         lang: fr
     """, "nightly.yaml:4:5: 'lang' must be one of en, zh, not 'fr'"),
    ("""\
     defaults:
       verify: sometimes
     jobs: [{name: resnet, input: inputs/resnet.csv}]
     """, "nightly.yaml:2:3: 'verify' must be true or false"),
    ("jobs: [\n", "nightly.yaml:2:1: invalid YAML"),
    ("jobs: []\n", "nightly.yaml:1:1: 'jobs' must be a non-empty list of jobs"),
])
def test_manifest_mistakes_exit_2_with_file_line_and_hint(workspace: Workspace, text: str, message: str) -> None:
    run = workspace.batch(_write(workspace, text))
    assert run.code == 2
    assert message in run.err
    assert run.err.count("\n") == 1
    assert not workspace.out.exists()           # nothing ran, nothing was written


def test_options_are_checked_against_the_rule_packs_before_anything_runs(workspace: Workspace) -> None:
    path = _write(workspace, """\
        jobs:
          - name: resnet
            input: inputs/resnet.csv
          - name: bert
            input: inputs/resnet.csv
            disable: [problem-nod]
        """)
    run = workspace.batch(path)
    assert run.code == 2
    assert "nightly.yaml:4: job 'bert': no rule 'problem-nod' (did you mean 'problem-node'?)" in run.err
    assert not workspace.out.exists()


def test_options_layer_settings_then_defaults_then_job(workspace: Workspace, tmp_path: Path) -> None:
    path = _write(workspace, """\
        defaults:
          thresholds: {cosine: 0.99}
          disable: [single-point-deviation]
          lang: zh
          formats: html,json
        jobs:
          - name: resnet
            input: inputs/resnet.csv
            thresholds: {float16.cosine: 0.98}
            params: {problem-node.min_confidence: 0.7}
            severity: {problem-node: warning}
            lang: en
            input_nodes: "images;mask"
            output: custom/place
        """)
    settings = ProjectConfig(source=tmp_path / "advisor.toml", thresholds=["bfloat16.cosine=0.97"],
                             disable=["fp16-overflow-masked"], severity={"problem-node": "error"},
                             input_nodes=["data"])
    (job,) = load_manifest(path, settings).jobs
    assert job.thresholds == ("bfloat16.cosine=0.97", "cosine=0.99", "float16.cosine=0.98")
    assert job.disable == ("fp16-overflow-masked", "single-point-deviation")
    assert dict(job.severity) == {"problem-node": "warning"}
    assert job.params == ("problem-node.min_confidence=0.7",)
    assert (job.lang, job.formats, job.input_nodes) == ("en", ("html", "json"), ("images", "mask"))
    assert job.outdir == workspace.root / "advisor-batch" / "custom" / "place"    # default OUTPUT: beside it
    assert job.input == workspace.root / "inputs" / "resnet.csv"
    assert job.settings == settings.source


def test_graph_dumps_and_config_are_hashed_and_recorded(workspace: Workspace) -> None:
    scenario = SCENARIOS / "clean_bf16__mtcnn_pnet__mixed_bf16__s0"     # real dumps and graph: advisor reads them
    for folder in ("golden", "target"):
        shutil.copytree(scenario / folder, workspace.root / folder)
    (workspace.root / "build.json").write_text('{"precision_mode": "allow_fp32_to_fp16"}', encoding="utf-8")
    shutil.copy(scenario / "model.onnx", workspace.root / "model.onnx")
    workspace.put("resnet", CLEAN)
    manifest = workspace.manifest({"resnet": {"input": "inputs/resnet.csv", "graph": "model.onnx",
                                              "config": "build.json",
                                              "dumps": {"golden": "golden", "target": "target"}}})
    assert workspace.batch(manifest).code == 0
    recorded = workspace.history_json("show", "latest", "--job", "resnet")["inputs"]
    assert set(recorded) == {"comparison", "graph", "config", "dumps_golden", "dumps_target"}
    assert recorded["config"]["path"] == str(workspace.root / "build.json")
    assert recorded["dumps_target"]["digest"].startswith("listing:")

    workspace.batch(manifest)
    assert workspace.statuses(2) == {"resnet": "unchanged"}
    (workspace.root / "build.json").write_text('{"precision_mode": "force_fp16"}', encoding="utf-8")
    workspace.batch(manifest)
    assert workspace.statuses(3) == {"resnet": "ok"}            # a new build config re-runs the job
    dump = next((workspace.root / "target").iterdir())
    os.utime(dump, (dump.stat().st_atime, dump.stat().st_mtime + 60))
    workspace.batch(manifest)
    assert workspace.statuses(4) == {"resnet": "ok"}            # so do new dumps


def test_a_missing_graph_fails_that_job_only(workspace: Workspace) -> None:
    workspace.put("bert", PROBLEM)
    manifest = workspace.manifest({"resnet": {"input": "inputs/bert.csv", "graph": "nowhere.onnx"},
                                   "bert": {"input": "inputs/bert.csv"}})
    run = workspace.batch(manifest)
    assert run.code == 0
    assert workspace.statuses(1) == {"resnet": "failed", "bert": "ok"}
    assert "nowhere.onnx: file not found" in run.out


def test_load_manifest_raises_manifest_error(workspace: Workspace) -> None:
    path = _write(workspace, "jobs: [{name: resnet, input: inputs/resnet.csv, color: red}]\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, ProjectConfig())
    assert caught.value.exit_code == 2 and caught.value.line == 1


def test_backends_choose_the_remedy_files_of_every_job(workspace: Workspace) -> None:
    path = _write(workspace, """\
        defaults: {backends: "onnxruntime,pytorch"}
        jobs:
          - {name: resnet, input: inputs/resnet.csv}
          - {name: bert, input: inputs/resnet.csv, backends: [all]}
        """)
    jobs = {job.name: job for job in load_manifest(path, ProjectConfig()).jobs}
    assert jobs["resnet"].backends == ("onnxruntime", "pytorch")
    assert jobs["bert"].analysis_options().backends == ("ascend", "magicmind", "tensorrt", "onnxruntime", "pytorch")


def test_verify_checks_a_jobs_diagnosis_on_the_cpu(workspace: Workspace) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is a dependency of advisor run --verify")
    scenario = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"      # the model and the input dumps
    for folder in ("golden", "target"):
        shutil.copytree(scenario / folder, workspace.root / folder)
    shutil.copy(scenario / "model.onnx", workspace.root / "model.onnx")
    workspace.put("pnet", next(scenario.glob("result_*.csv")))
    job = {"input": "inputs/pnet.csv", "graph": "model.onnx", "dumps": {"golden": "golden", "target": "target"}}
    manifest = workspace.manifest({"pnet": {**job, "verify": True}, "plain": job}, defaults={"formats": ["json"]})
    jobs = {j.name: j for j in load_manifest(manifest, ProjectConfig()).jobs}
    assert jobs["pnet"].analysis_options().verify and not jobs["plain"].verify
    assert jobs["pnet"].options_spec()["verify"] is True          # part of the job's hash: a change re-runs it
    assert workspace.batch(manifest).code == 0
    reports = {name: json.loads((workspace.out / name / "report.json").read_text(encoding="utf-8"))
               for name in ("pnet", "plain")}
    assert reports["pnet"]["verification"]["fidelity"]["target_output_cosine"] == pytest.approx(0.79611, abs=1e-5)
    assert reports["plain"]["verification"] is None
