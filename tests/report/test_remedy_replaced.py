"""A remedy is replaced as a whole: an earlier run's extra steps do not survive beside a newer, shorter remedy,
and files advisor did not write are never touched."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.diagnosis import Diagnosis, Finding
from advisor.remedy import remedy_for
from advisor.report import write_reports


def _diagnosis(ops: list[str]) -> Diagnosis:
    findings = [Finding(id=f"fp16-overflow@{i}", rule="fp16-overflow", pack="core", kind="fp16_overflow",
                        severity="error", title={"en": "FP16 overflow", "zh": "FP16 溢出"}, root_cause=True, op=op,
                        index=i, values={"keep_fp32": op}) for i, op in enumerate(ops)]
    remedy, _ = remedy_for(findings[0] if findings else None, findings, ("ascend",))
    return Diagnosis(root_cause=findings[0] if findings else None, findings=findings, network={}, inputs={},
                     packs=[], thresholds={}, remedy=remedy)


def _files(folder: Path) -> set[str]:
    """What a reader of the folder sees (through advisor's links), without its hidden store."""
    found = set()
    for root, _, names in os.walk(folder, followlinks=True):
        relative = Path(root).relative_to(folder)
        if not relative.parts or not relative.parts[0].startswith(".advisor-reports"):
            found |= {(relative / n).as_posix() for n in names if (Path(root) / n).is_file()}
    return found


def test_a_shorter_remedy_replaces_a_longer_one(tmp_path):
    write_reports(_diagnosis(["Pow_1", "Pow_2", "Pow_3"]), tmp_path, "json")
    assert "remedy/step3/ascend/keep_dtype.cfg" in _files(tmp_path)
    (tmp_path / "remedy" / "my_notes.txt").write_text("mine", encoding="utf-8")
    write_reports(_diagnosis(["Pow_1"]), tmp_path, "json")
    files = _files(tmp_path)
    assert "remedy/step1/ascend/keep_dtype.cfg" in files and not any(f.startswith("remedy/step2") for f in files)
    assert "remedy/my_notes.txt" in files                       # not advisor's: kept
    write_reports(_diagnosis([]), tmp_path, "json")             # no remedy any more
    assert _files(tmp_path) == {"report.json", "remedy/my_notes.txt"}
