"""The ops a report's per-op table shows, and the op facts the report reads, on committed scenarios."""

from __future__ import annotations

import math

import pytest

from advisor.pipeline import AnalysisOptions, analyse

from ..conftest import scenario_csv, scenario_dirs

SCENARIOS = {d.name.split("__")[0] + "/" + d.name.split("__")[1]: d for d in scenario_dirs()}


def diagnose(key: str, graph: bool = False):
    folder = SCENARIOS[key]
    return analyse(AnalysisOptions(comparison=scenario_csv(folder), build_config=folder / "build.json",
                                   graph=folder / "model.onnx" if graph else None))


@pytest.fixture(scope="module")
def fp16_overflow():
    return diagnose("fp16_overflow/byte_transformer")


def test_the_table_holds_the_root_cause_the_entries_the_worst_ops_and_the_neighbours(fp16_overflow) -> None:
    rows = {op.index: op for op in fp16_overflow.key_ops}
    assert [op.index for op in fp16_overflow.key_ops] == sorted(rows)              # execution order
    root = rows[fp16_overflow.root_cause.index]
    assert root.op == "Pow_4" and root.roles[:2] == ["root", "entry"] and root.overflow
    # Every op where an overflow starts is listed as an entry, each of the five FP16 overflow findings' ops.
    overflow_ops = {f.index for f in fp16_overflow.findings if f.kind == "fp16_overflow"}
    assert overflow_ops <= {i for i, op in rows.items() if "entry" in op.roles}
    # Without a graph the neighbours are the ops just before and after it in execution order.
    assert {i for i, op in rows.items() if "neighbour" in op.roles} == {3, 4, 6, 7}
    worst = [op for op in fp16_overflow.key_ops if "worst" in op.roles]
    assert len(worst) == 10
    others = [p.cosine for p in fp16_overflow.series.points if p.index not in rows and p.cosine is not None]
    assert max(op.out_cosine for op in worst) <= min(others)
    assert all(op.source_line and op.source_line > 1 for op in fp16_overflow.key_ops)
    assert any("output" in op.roles for op in fp16_overflow.key_ops)


def test_with_a_graph_the_neighbours_are_the_graph_inputs_and_successors() -> None:
    diagnosis = diagnose("problem_node/mtcnn_pnet", graph=True)
    neighbourhood = {n.name for n in diagnosis.neighbourhood.nodes if n.role != "focus"}
    neighbours = {op.op for op in diagnosis.key_ops if "neighbour" in op.roles}
    assert neighbours and neighbours <= neighbourhood


def test_the_output_op_is_the_op_the_node_output_dump_came_from(fp16_overflow) -> None:
    # The Node_Output row's GroundTruth is the dump file Softmax_111.0.1714993867004658.npy.
    assert fp16_overflow.network["output_source"] == "Node_Output"
    assert fp16_overflow.network["output_op"] == "Softmax_111"


def test_the_remedy_names_the_type_of_every_kept_op_the_comparison_knows(fp16_overflow) -> None:
    kept = [op for step in fp16_overflow.remedy.steps for op in step.keep]
    assert len(kept) == 20
    assert {op.op_type for op in kept} == {"Pow", "ReduceMeanD", "Sqrt", "RealDiv"}


def test_metrics_are_numbers_or_none(fp16_overflow) -> None:
    for op in fp16_overflow.key_ops:
        for value in (op.in_cosine, op.out_cosine, op.out_red, op.out_max_abs_error):
            assert value is None or math.isfinite(value)
