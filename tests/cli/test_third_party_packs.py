"""Rule packs shipped as Python packages: installed with pip, found through the `advisor.rule_packs`
entry point, fired by `advisor run`; a broken installed pack is skipped with a warning naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..conftest import EXAMPLE, REPO

EXAMPLE_PACK = REPO / "examples" / "advisor-pack-example"


def advisor(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "advisor", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                           str(EXAMPLE_PACK)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return target


def test_an_installed_pack_fires_in_advisor_run(site, tmp_path):
    done = advisor(site, tmp_path, "run", str(EXAMPLE), "-o", "out", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {"name": "batchnorm-team", "version": "0.1.0"}.items() <= next(
        p for p in report["packs"] if p["name"] == "batchnorm-team").items()
    assert report["root_cause"]["kind"] == "folded_batchnorm"
    assert report["root_cause"]["op"] == "BatchNormalization_13"
    finding = report["findings"][0]
    assert finding["advice"]["fixes"][0]["text"].startswith("Call model.eval()")   # its inline advice
    # The generic problem node at the same op is explained by the specific diagnosis.
    assert any(f["kind"] == "problem_node" and f["explained_by"] == finding["id"] for f in report["findings"])


def test_installed_packs_are_listed_and_tested(site, tmp_path):
    listed = advisor(site, tmp_path, "rules", "list")
    assert "batchnorm-team 0.1.0" in listed.stdout and "folded-batchnorm-suspect" in listed.stdout
    tested = advisor(site, tmp_path, "rules", "test")
    assert tested.returncode == 0 and "PASS batchnorm-team/folded-batchnorm-suspect" in tested.stdout


def test_a_broken_installed_pack_is_skipped_with_a_warning_naming_it(tmp_path):
    site = tmp_path / "site"
    package = site / "broken_pack"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "pack.yaml").write_text('pack: broken\nversion: "1.0"\n')
    (package / "rule.yaml").write_text("id: x\ntitle: {en: a, zh: b\n")
    info = site / "broken_pack-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-pack\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text("[advisor.rule_packs]\nbroken = broken_pack\n")
    done = advisor(site, tmp_path, "run", str(EXAMPLE), "-o", "out", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert any("installed rule pack 'broken' (broken-pack 2.0) skipped" in w and "rule.yaml" in w
               for w in report["warnings"])
    assert report["root_cause"]["kind"] == "problem_node"      # the built-in packs still ran


def test_project_settings_disable_and_rerate_rules(tmp_path):
    (tmp_path / "advisor.toml").write_text(textwrap.dedent("""\
        disable = ["network-consistent"]
        [severity]
        problem-node = "warning"
        [thresholds]
        "float16.cosine" = 0.98
    """))
    done = advisor(tmp_path / "nothing", tmp_path, "run", str(EXAMPLE), "-o", "out", "--format", "json",
                   "--fail-on", "error")
    assert done.returncode == 0, done.stderr          # problem-node is only a warning here
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["root_cause"]["severity"] == "warning"
    assert report["overrides"]["disabled"] == ["network-consistent"]
    assert report["overrides"]["severity"] == {"problem-node": "warning"}
    assert report["thresholds"]["float16"]["cosine"] == 0.98
    assert report["overrides"]["settings"].endswith("advisor.toml")


def test_a_typo_in_project_settings_is_named(tmp_path):
    (tmp_path / "advisor.toml").write_text('disabel = ["x"]\n')
    done = advisor(tmp_path / "nothing", tmp_path, "run", str(EXAMPLE), "-o", "out")
    assert done.returncode == 2
    assert "advisor.toml" in done.stderr and "unknown setting 'disabel' (did you mean 'disable'?)" in done.stderr


PROVIDER = '''
import pandas as pd

kind = "cast_chain"
fields = {"casts": ("number", "target-only Cast ops"),
          "narrowing": ("bool", "a Cast to float16 sits before the first deviation")}


def facts(table, network):
    frame = table.frame
    casts = frame[(frame["op_type"] == "Cast") & frame["npu_only"].fillna(False)]
    first = network.get("first_deviating_index", 10**9)
    narrowing = bool(((casts["op_index"] < first) & (casts["npu_dtype"] == "float16")).any())
    return [{"id": "all", "casts": int(casts["op_index"].nunique()), "narrowing": narrowing}]
'''

PROVIDER_RULES = '''
pack: casts
version: "1.0"
rules:
  - id: narrowing-cast
    title: {en: A target-only Cast narrows to FP16, zh: 目标侧插入的 Cast 收窄为 FP16}
    severity: warning
    docs:
      en: {what: A Cast to FP16 was inserted., why: It halves the precision., fix: Keep the input in FP32.}
      zh: {what: 插入了转为 FP16 的 Cast。, why: 精度减半。, fix: 保持 FP32 输入。}
    when: {fact: cast_chain, narrowing: true}
    emit:
      kind: problem_node
      confidence: 0.3
      evidence: {en: "{{ m.casts }} target-only Casts", zh: "{{ m.casts }} 个目标侧 Cast"}
    cases:
      - {name: narrowing, expect: fire, facts: [{fact: cast_chain, id: a, casts: 2, narrowing: true}]}
      - {name: no narrowing, expect: silent, facts: [{fact: cast_chain, id: a, casts: 2, narrowing: false}]}
'''


def test_a_fact_provider_plugin_adds_facts_that_a_pack_can_match(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "cast_probe.py").write_text(PROVIDER)
    info = site / "cast_probe-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cast-probe\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[advisor.fact_providers]\ncasts = cast_probe\n")
    pack = tmp_path / "casts.yaml"
    pack.write_text(PROVIDER_RULES)
    scenario = next((REPO / "tests" / "data" / "scenarios").glob("problem_node__*/result_*.csv"))
    assert advisor(site, tmp_path, "rules", "test", str(pack)).returncode == 0
    done = advisor(site, tmp_path, "run", str(scenario), "--rules", str(pack), "-o", "out", "--format", "json")
    assert done.returncode == 0, done.stderr
    findings = json.loads((tmp_path / "out" / "report.json").read_text())["findings"]
    assert any(f["rule"] == "narrowing-cast" and "target-only Casts" in f["evidence"] for f in findings)
