"""``advisor post`` on the command line: the four reports (the JSON one to its schema), the exit codes of
``advisor run``, one-line errors, escaping, and each command loading only its own built-in packs."""

from __future__ import annotations

import json

import jsonschema
import pytest

from advisor.cli import main
from advisor.engine.loading import load_packs
from advisor.resources import data_dir
from tests.conftest import EXAMPLE
from tests.post.conftest import POST


def run(tmp_path, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["post", *args, "-o", str(tmp_path / "out")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def inputs(name: str) -> list[str]:
    return ["--golden", str(POST / "golden.json"), "--target", str(POST / name / "target.json"),
            "--annotations", str(POST / "annotations.json"), "--images-info", str(POST / "images.json")]


def test_a_fault_writes_every_report_and_names_it(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, *inputs("letterbox_as_resize"))
    assert (code, err) == (0, "")
    assert "Boxes mapped back with the wrong resize" in out and "letterbox_as_resize" in out
    names = sorted(p.name for p in (tmp_path / "out").glob("report.*"))
    assert names == ["report.html", "report.json", "report.md", "report.txt"]
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    schema = json.loads((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["root_cause"]["rule"] == "box-letterbox-mapping"
    assert report["post"]["mapping"] == "letterbox_as_resize" and report["post"]["pairs"]
    assert [p["name"] for p in report["packs"]] == ["post"]
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="boxes"' in html
    assert "Detection Type: Boxes mapped back" in (tmp_path / "out" / "report.txt").read_text(encoding="utf-8")


def test_fail_on_error_exits_1_and_a_clean_pair_exits_0(tmp_path, capsys):
    assert run(tmp_path, capsys, *inputs("class_offset"), "--fail-on", "error")[0] == 1
    code, out, _ = run(tmp_path, capsys, *inputs("clean"), "--fail-on", "warning")
    assert code == 0 and "agree" in out


def test_rule_parameters_and_knobs_are_set_like_advisor_run(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, *inputs("score_threshold"), "--set", "score-threshold-differs.min_gap=0.5")
    assert code == 0 and "Score thresholds differ" not in out
    code, _, err = run(tmp_path, capsys, *inputs("clean"), "--set", "no-such-rule.x=1")
    assert code == 2 and "no rule 'no-such-rule'" in err


def test_bad_input_is_one_line_exit_2_and_no_report(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1], "score": 0.5}]', encoding="utf-8")
    code, out, err = run(tmp_path, capsys, "--golden", str(POST / "golden.json"), "--target", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "bad.json" in err and "[0].bbox" in err
    assert not (tmp_path / "out").exists()


def test_advisor_run_loads_its_packs_and_advisor_post_its_own():
    assert "post" not in {p.name for p in load_packs(installed=False).packs}
    assert {p.name for p in load_packs(installed=False, command="post").packs} == {"post"}


def test_advisor_run_is_unchanged_by_the_post_pack(tmp_path, capsys):
    code = main(["run", str(EXAMPLE), "-o", str(tmp_path / "run"), "--format", "json", "-q"])
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    assert code == 0 and "post" not in report and "post" not in {p["name"] for p in report["packs"]}


HOSTILE = '<script>alert(1)</script>'


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_names_from_the_inputs_are_escaped(tmp_path, capsys, lang):
    truth = json.loads((POST / "annotations.json").read_text(encoding="utf-8"))
    truth["categories"][0]["name"] = HOSTILE
    for item in truth["images"]:
        item["id"] = f'"><img src=x onerror=alert({item["id"]})>'
    for item in truth["annotations"]:
        item["image_id"] = f'"><img src=x onerror=alert({item["image_id"]})>'
    (tmp_path / "a.json").write_text(json.dumps(truth), encoding="utf-8")
    for side, source in (("g.json", POST / "golden.json"), ("t.json", POST / "class_permutation" / "target.json")):
        dets = json.loads(source.read_text(encoding="utf-8"))
        for item in dets:
            item["image_id"] = f'"><img src=x onerror=alert({item["image_id"]})>'
        (tmp_path / side).write_text(json.dumps(dets), encoding="utf-8")
    code, _, err = run(tmp_path, capsys, "--golden", str(tmp_path / "g.json"), "--target", str(tmp_path / "t.json"),
                       "--annotations", str(tmp_path / "a.json"), "--lang", lang)
    assert code == 0, err
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert HOSTILE not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert HOSTILE not in markdown
