"""The published JSON Schema (rules/schema/) and the loader agree: every shipped and scaffolded rule
passes both, and structural mistakes are rejected by both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from advisor.engine.packs import check_pack
from advisor.engine.rulemodel import CASES_FOLDER
from advisor.engine.scaffold import scaffold_pack

from .test_pack_validation import GOOD_RULE, make_pack

jsonschema = pytest.importorskip("jsonschema")
REPO = Path(__file__).resolve().parents[2]
RULE_SCHEMA = json.loads((REPO / "rules" / "schema" / "rule.schema.json").read_text())
PACK_SCHEMA = json.loads((REPO / "rules" / "schema" / "pack.schema.json").read_text())
SHIPPED = [p for root in (REPO / "rules", REPO / "examples") for p in root.rglob("*.yaml")
           if "schema" not in p.parts and "scenarios" not in p.parts and CASES_FOLDER not in p.parts]


def schema_errors(document: dict, schema: dict = RULE_SCHEMA) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(document)]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_rule_files_match_the_schema(path):
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = PACK_SCHEMA if path.name == "pack.yaml" else RULE_SCHEMA
    assert schema_errors(document, schema) == []


def test_scaffolded_pack_matches_the_schema(tmp_path):
    folder = scaffold_pack("my-team", tmp_path)
    for path in folder.glob("*.yaml"):
        schema = PACK_SCHEMA if path.name == "pack.yaml" else RULE_SCHEMA
        assert schema_errors(yaml.safe_load(path.read_text()), schema) == []


@pytest.mark.parametrize(("change", "loader_says"), [
    (("severity: warning", "severity: fatal"), "severity must be one of"),
    (("id: pow-in-fp16", "id: Pow_In_FP16"), "kebab-case"),
    (("  - name: fp32 pow", "  - nme: fp32 pow"), "unknown case field 'nme'"),
    (("emit:\n  kind", "emitt:\n  kind"), "unknown rule field 'emitt'"),
])
def test_structural_mistakes_are_rejected_by_schema_and_loader(tmp_path, change, loader_says):
    text = GOOD_RULE.replace(*change)
    assert schema_errors(yaml.safe_load(text))
    _, problems = check_pack(make_pack(tmp_path, text))
    assert any(loader_says in str(p) for p in problems), [str(p) for p in problems]
