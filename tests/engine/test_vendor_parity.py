"""The public unit cases of the vendor's msaccucmp advisor (five) and of msit's analyser (one), as tables
written out by the ingest work (tests/data/ingest/vendor_ut/README.md gives the source of each), must be
diagnosed as the vendor tools expect; where our choice differs, the report says what they would say.
docs/vendor-parity.md records the choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline import AnalysisOptions, analyse

VENDOR = Path(__file__).resolve().parents[1] / "data" / "ingest" / "vendor_ut"


def diagnose(name: str, **options):
    return analyse(AnalysisOptions(comparison=VENDOR / name, plugins=False, **options))


def verdict(diagnosis) -> tuple[str, int | None]:
    root = diagnosis.root_cause
    return ("consistent", None) if root is None else (root.kind, root.index)


@pytest.mark.parametrize(("table", "expected"), [
    # every cosine at the 0.99 threshold: consistent
    ("mscmp_advisor_consistency.csv", ("consistent", None)),
    # first and last rows below 0.99: the network is broken from the first
    ("mscmp_advisor_consistency_problem.csv", ("problem_node", 0)),
    # only an early row below 0.99, the last agrees: a single-point deviation the network recovers from
    ("mscmp_advisor_consistency_ignore.csv", ("single_point_deviation", 0)),
    # OverFlow=YES with a passing cosine after an earlier row below 0.99: the overflow leads
    ("mscmp_advisor_overflow.csv", ("fp16_overflow", 1)),
    # msit's analyser: the first row that fails its thresholds (Mul_6, Index 214)
    ("msit_analyser_fake_test_csv.csv", ("problem_node", 214)),
])
def test_vendor_unit_cases_get_the_vendor_answer(table, expected):
    diagnosis = diagnose(table)
    assert verdict(diagnosis) == expected
    assert not [w for w in diagnosis.warnings if "vendor" in w]
    if expected[0] == "consistent":
        assert diagnosis.verdict == "consistent"


def test_overflow_leads_and_the_earlier_harmless_deviation_follows():
    diagnosis = diagnose("mscmp_advisor_overflow.csv")
    kinds = [f.kind for f in diagnosis.findings if f.explained_by is None]
    assert kinds.index("fp16_overflow") < kinds.index("single_point_deviation")


def test_a_named_input_node_of_any_type_is_honoured():
    diagnosis = diagnose("mscmp_advisor_input.csv", input_nodes=("error_node",))
    assert verdict(diagnosis) == ("input_mismatch", 1)
    assert diagnosis.root_cause.op == "error_node"
    assert not [w for w in diagnosis.warnings if "--input-nodes" in w]


def test_a_named_input_node_not_found_is_a_warning():
    diagnosis = diagnose("mscmp_advisor_input.csv", input_nodes=("error_node", "no_such_node"))
    assert any("--input-nodes not found" in w and "no_such_node" in w for w in diagnosis.warnings)


def test_a_named_input_node_never_judged_is_a_warning(tmp_path):
    table = tmp_path / "result_20240101000000.csv"
    table.write_text("Index,CosineSimilarity,NPUDump\n0,NaN,input_1\n1,0.95,conv\n2,0.99,relu\n", encoding="utf-8")
    diagnosis = analyse(AnalysisOptions(comparison=table, plugins=False, input_nodes=("input_1",)))
    assert any("never judged" in w and "input_1" in w for w in diagnosis.warnings)


def test_where_we_differ_the_report_says_what_the_vendor_would_have_said(tmp_path):
    # An op breaks the output (cosine stays low to the end); a later op overflows. We lead with the
    # problem node (a later overflow cannot cause an earlier error); the vendor reports the overflow.
    table = tmp_path / "result_20240101000000.csv"
    table.write_text("Index,CosineSimilarity,NPUDump,OverFlow\n0,0.999,a,NO\n1,0.80,b,NO\n2,0.70,c,YES\n"
                     "3,0.70,d,NO\n", encoding="utf-8")
    diagnosis = analyse(AnalysisOptions(comparison=table, plugins=False))
    assert verdict(diagnosis) == ("problem_node", 1)
    assert any("vendor's msaccucmp advisor would report fp16 overflow at Index 2" in w for w in diagnosis.warnings)


def test_no_vendor_note_when_our_cause_names_the_vendors_problem_node():
    """The vendor's "problem node at Index 5" and our fused-op problem at op 5 agree: no note."""
    from advisor.diagnosis.vendor import vendor_note

    assert vendor_note(("problem_node", 5, "Conv_3"), "fused_op_problem", 5) is None
    assert vendor_note(("problem_node", 5, "Conv_3"), "fused_op_problem", 7) is not None
    assert vendor_note(("fp16_overflow", 5, "Conv_3"), "problem_node", 5) is not None
