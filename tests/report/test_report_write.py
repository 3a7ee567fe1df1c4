"""write_reports: every format rendered before anything is written, each file replaced atomically."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import advisor.report.outset
from advisor.diagnosis import Diagnosis
from advisor.errors import UsageError
from advisor.report import REPORTERS, Reporter, render, write_reports
from advisor.report.model import ReportView


class FailingReporter:
    format = "boom"
    filename = "report.boom"

    def render(self, view: ReportView) -> str:
        raise RuntimeError("renderer failed")


@pytest.fixture
def failing_reporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REPORTERS, "boom", FailingReporter())


def test_writes_every_default_format(root_cause: Diagnosis, tmp_path: Path) -> None:
    outdir = tmp_path / "out" / "nested"
    paths = write_reports(root_cause, outdir)
    assert [p.name for p in paths] == ["report.html", "report.md", "report.json", "report.txt"]
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    assert visible(outdir) == sorted(p.name for p in paths)                  # no temporary files left


def test_formats_as_given_on_the_command_line(root_cause: Diagnosis, tmp_path: Path) -> None:
    paths = write_reports(root_cause, tmp_path, formats="json, md,json", lang="zh")
    assert [p.name for p in paths] == ["report.json", "report.md"]
    assert "FP16 溢出" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_written_files_match_render(consistent: Diagnosis, tmp_path: Path) -> None:
    write_reports(consistent, tmp_path, formats=("txt", "json"))
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == render(consistent, "txt", "en", tmp_path)
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == render(consistent, "json", "en", tmp_path)


def test_a_failing_renderer_writes_nothing(root_cause: Diagnosis, tmp_path: Path, failing_reporter) -> None:
    (tmp_path / "report.md").write_text("previous report", encoding="utf-8")
    with pytest.raises(RuntimeError, match="renderer failed"):
        write_reports(root_cause, tmp_path, formats=("md", "json", "boom"))
    assert visible(tmp_path) == ["report.md"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "previous report"


def test_a_failing_renderer_does_not_create_the_folder(root_cause: Diagnosis, tmp_path: Path,
                                                       failing_reporter) -> None:
    with pytest.raises(RuntimeError):
        write_reports(root_cause, tmp_path / "new", formats=("boom",))
    assert not (tmp_path / "new").exists()


def test_a_failing_write_leaves_old_reports_and_no_temporary_files(root_cause: Diagnosis, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "report.md").write_text("previous report", encoding="utf-8")
    real_open = os.open
    calls = []

    def open_fails_second_time(path, flags, mode=0o777, **kwargs):
        if flags & os.O_CREAT and not Path(path).name.startswith(".") and Path(path).name != "lock":
            calls.append(path)                   # a report file being written (not a mark, lock or read)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(advisor.report.outset.os, "open", open_fails_second_time)
    with pytest.raises(UsageError, match="cannot write the reports: No space left on device"):
        write_reports(root_cause, tmp_path, formats=("md", "json"))
    assert visible(tmp_path) == ["report.md"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "previous report"


def test_reports_are_readable_by_others_as_the_umask_allows(root_cause: Diagnosis, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path, = write_reports(root_cause, tmp_path, formats=("txt",))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_unknown_format_is_a_usage_error_listing_the_valid_ones(root_cause: Diagnosis, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"unknown report format 'pdf': choose from html, md, json, txt"):
        write_reports(root_cause, tmp_path, formats=("md", "pdf"))
    with pytest.raises(UsageError, match="unknown report format 'pdf'"):
        render(root_cause, "pdf", "en")
    assert os.listdir(tmp_path) == []


def test_no_format_is_a_usage_error(root_cause: Diagnosis, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no report format given"):
        write_reports(root_cause, tmp_path, formats="")


def test_an_output_path_that_is_a_file_is_a_usage_error(root_cause: Diagnosis, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    with pytest.raises(UsageError, match="cannot create the output folder"):
        write_reports(root_cause, tmp_path / "taken", formats=("txt",))


def visible(folder: Path) -> list[str]:
    """The names in ``folder`` a user sees with ``ls`` (advisor keeps its report sets in a hidden folder)."""
    return sorted(n for n in os.listdir(folder) if n != ".advisor-reports")


def test_every_registered_reporter_follows_the_protocol() -> None:
    assert list(REPORTERS) == ["html", "md", "json", "txt"]
    for name, reporter in REPORTERS.items():
        assert isinstance(reporter, Reporter)
        assert reporter.format == name and reporter.filename.startswith("report.")


def test_html_is_self_contained(root_cause: Diagnosis) -> None:
    html = render(root_cause, "html", "en")
    assert html.startswith("<!DOCTYPE html>")
    assert "<style>" in html and "<svg" in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in html and "<link" not in html and "src=" not in html
    # The verdict comes first, then the findings, then the run details.
    assert html.index("FP16 overflow at LayerNorm_3/Pow (op 12)") < html.index("<svg") \
        < html.index('id="fp16-overflow@12"') < html.index("Explained by") < html.index("Thresholds used")


def test_html_without_a_series_has_no_plot(single_point: Diagnosis) -> None:
    assert "<svg" not in render(single_point, "html", "en")


def test_html_in_chinese(root_cause: Diagnosis) -> None:
    html = render(root_cause, "html", "zh")
    assert '<html lang="zh">' in html
    assert "FP16 溢出：LayerNorm_3/Pow（第 12 号算子）" in html
    assert "<summary>产生原因</summary>" in html and "阈值 0.99" in html
