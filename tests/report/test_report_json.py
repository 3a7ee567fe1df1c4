"""report.json: strictly valid JSON that follows the published schema.

jsonschema is used by these tests only; it is not a runtime dependency of advisor.
"""

from __future__ import annotations

import json
import math

import jsonschema
import pytest

from advisor.diagnosis import Diagnosis
from advisor.report import render
from advisor.resources import data_dir


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def strict_loads(text: str) -> dict:
    def reject(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=reject)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", ["root_cause", "consistent", "single_point", "unexplained"])
def test_every_report_follows_the_schema(case: str, lang: str, validator, request) -> None:
    report = strict_loads(render(request.getfixturevalue(case), "json", lang))
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_root_cause_and_findings(root_cause: Diagnosis) -> None:
    report = strict_loads(render(root_cause, "json", "en"))
    assert report["schema"] == "advisor-report/1" and report["version"] == "0.1.0-test"
    assert report["verdict"] == "fp16_overflow"
    assert report["root_cause"] == {"id": "fp16-overflow@12", "kind": "fp16_overflow", "op": "LayerNorm_3/Pow",
                                    "index": 12, "rule": "fp16-overflow", "severity": "error",
                                    "confidence": 0.95}
    first = report["findings"][0]
    assert first["advice"]["fixes"][0]["backend"] == "ascend"
    assert first["source_lines"] == [27, 28]
    assert [f["explained_by"] for f in report["findings"][2:]] == ["fp16-overflow@12"] * 3
    assert report["packs"] == [{"name": "core", "version": "1.0.0", "source": "rules/core", "rules": 14}]
    assert report["thresholds"]["float16"] == {"cosine": 0.99, "relative_euclidean_distance": 0.05}


def test_nan_and_infinity_become_null(root_cause: Diagnosis) -> None:
    root_cause.findings[0].values["ratio"] = math.inf
    root_cause.thresholds["int8"] = {"cosine": math.nan}
    report = strict_loads(render(root_cause, "json", "en"))
    assert report["findings"][0]["values"]["out_cosine"] is None
    assert report["findings"][0]["values"]["ratio"] is None
    assert report["network"]["output_cosine"] is None
    assert report["thresholds"]["int8"] == {"cosine": None}


def test_numpy_values_are_plain_json(root_cause: Diagnosis) -> None:
    np = pytest.importorskip("numpy")
    root_cause.findings[0].values.update(count=np.int64(3), worst=np.float32(0.5), flags=np.array([1, 2]))
    root_cause.network["deviating_ops"] = np.int64(68)
    report = strict_loads(render(root_cause, "json", "en"))
    assert report["findings"][0]["values"]["count"] == 3
    assert report["findings"][0]["values"]["flags"] == [1, 2]
    assert report["network"]["deviating_ops"] == 68


def test_consistent_report_has_a_null_root_cause(consistent: Diagnosis) -> None:
    report = strict_loads(render(consistent, "json", "en"))
    assert report["root_cause"] is None
    assert report["verdict"] == "consistent" and report["severity"] == "ok"
    assert report["findings"][0]["kind"] == "consistent"


def test_chinese_text_is_written_as_is(root_cause: Diagnosis) -> None:
    text = render(root_cause, "json", "zh")
    assert "FP16 溢出" in text and "\\u" not in text
    assert strict_loads(text)["language"] == "zh"


def test_a_deviating_network_without_a_root_cause_is_unexplained_not_consistent(unexplained: Diagnosis) -> None:
    report = strict_loads(render(unexplained, "json", "en"))
    assert report["verdict"] == "unexplained" and report["root_cause"] is None
    assert report["severity"] == "warning"
