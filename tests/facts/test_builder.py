"""Facts from comparison results: where error enters versus where it is inherited, which op is the
network output, which dtype judges a tensor. Tables are written as real msaccucmp CSVs and read back
through the reader users run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from advisor.engine.judgement import builtin_judgement
from advisor.facts.builder import build_facts
from advisor.facts.fp16 import mark_fp16_sensitive
from advisor.facts.schema import FACT_FIELDS
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison

from ..conftest import scenario_csv, scenario_dirs

HEADER = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,"
          "CosineSimilarity,MaxAbsoluteError,RelativeEuclideanDistance,StandardDeviation")


def row(index, op_type, op, io, cos, red=None, *, slot=0, dtype="DT_FLOAT16", golden=None, overflow="NO",
        npu_stats="(0.1;1.0)", golden_stats="(0.1;1.0)", mae=0.001):
    red = 0.001 if red is None else red
    golden = op if golden is None else golden
    return (f'{index},{op_type},{op},{dtype},0x0,"{golden}",float32,{op}:{io}:{slot},"[1,8]",{overflow},'
            f'{cos},{mae},{red},"{npu_stats},{golden_stats}"')


def facts_for(tmp_path: Path, rows: list[str], **kwargs):
    path = tmp_path / "result_20240101000000.csv"
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    kwargs.setdefault("judge", builtin_judgement())
    return build_facts(read_comparison(path), load_thresholds(kwargs.pop("thresholds", ())), **kwargs)


def op_fact(facts, index):
    return next(f for f in facts.op_facts if f["index"] == index)


CHAIN = [
    row(0, "Data", "input", "output", 1.0),
    row(1, "Conv2D", "Conv_1", "input", 1.0), row(1, "Conv2D", "Conv_1", "output", 0.99999),
    row(2, "BNInference", "BN_2", "input", 0.99999), row(2, "BNInference", "BN_2", "output", 0.62, 0.8),
    row(3, "Relu", "Relu_3", "input", 0.62, 0.8), row(3, "Relu", "Relu_3", "output", 0.60, 0.8),
    row(4, "NaN", "Node_Output", "output", 0.58, 0.9, golden="out.npy"),
]


def test_error_enters_where_inputs_agree_and_outputs_do_not(tmp_path):
    facts = facts_for(tmp_path, CHAIN)
    entries = [f["op"] for f in facts.op_facts if f.get("error_enters")]
    assert entries == ["BN_2"]
    bn = op_fact(facts, 2)
    assert bn["in_cosine"] == pytest.approx(0.99999) and bn["out_cosine"] == pytest.approx(0.62)
    assert bn["local_drop"] == pytest.approx(0.37999) and bn["downstream_deviating"] == 1
    # Relu only inherits the error: it is no fact of its own, only counted.
    assert all(f["op"] != "Relu_3" for f in facts.op_facts)
    assert facts.network["deviating_ops"] == 2 and facts.network["entry_points"] == 1


def test_ops_listed_out_of_index_order_aggregate_as_when_listed_in_order(tmp_path):
    # msaccucmp lists ops in index order; a merged or hand-sorted file may not. The op of each row
    # is found by its index either way, and its rows stay together.
    ops = CHAIN[1:-1]
    shuffled = [ops[4], ops[5], ops[0], ops[2], ops[1], ops[3]]   # Relu_3, then Conv_1 and BN_2 interleaved
    (tmp_path / "in_order").mkdir()
    (tmp_path / "out_of_order").mkdir()
    in_order = facts_for(tmp_path / "in_order", [CHAIN[0], *ops, CHAIN[-1]]).ops
    out_of_order = facts_for(tmp_path / "out_of_order", [CHAIN[0], *shuffled, CHAIN[-1]]).ops
    assert list(out_of_order.index) == list(in_order.index) == [0, 1, 2, 3]
    columns = ["op", "tensors", "in_cosine", "out_cosine", "in_rows", "out_rows", "out_deviates"]
    pd.testing.assert_frame_equal(out_of_order[columns], in_order[columns])


@pytest.mark.parametrize("written", ["NaN", "0.1"])
def test_a_row_with_one_side_is_not_judged_whatever_metric_it_carries(tmp_path, written):
    # msaccucmp writes NaN metrics on a row whose other side is missing (GroundTruth *); a tool
    # that writes a number there must not make the op deviate either.
    rows = CHAIN[:-1] + [row(5, "Cast", "trans_Cast_5", "output", written, written, golden="*"), CHAIN[-1]]
    ops = facts_for(tmp_path, rows).ops
    cast = ops.loc[5]
    assert not cast["out_deviates"] and pd.isna(cast["out_cosine"]) and pd.isna(cast["out_red"])
    assert ops.loc[2, "out_deviates"]   # BN_2 still does


def test_network_output_is_the_node_output_row_not_the_last_op(tmp_path):
    rows = CHAIN[:-1] + [row(4, "NaN", "Node_Output", "output", 0.9995, 0.002, golden="out.npy")]
    net = facts_for(tmp_path, rows).network
    assert net["output_source"] == "Node_Output" and net["output_op"] == "out.npy"
    assert net["output_cosine"] == pytest.approx(0.9995) and net["output_deviates"] is False


def test_without_node_output_the_last_compared_op_is_the_output(tmp_path):
    rows = CHAIN[:-1] + [row(5, "Cast", "trans_Cast_5", "output", "NaN", "NaN", golden="*")]
    facts = facts_for(tmp_path, rows)
    assert facts.network["output_source"] == "last_compared_op" and facts.network["output_op"] == "Relu_3"
    assert op_fact(facts, 3)["is_output"] is True


def test_without_input_rows_the_op_before_decides_whether_inputs_agree(tmp_path):
    rows = [row(0, "Data", "input", "output", 1.0), row(1, "Conv2D", "Conv_1", "output", 0.99999),
            row(2, "MatMul", "MatMul_2", "output", 0.5, 0.7), row(3, "Add", "Add_3", "output", 0.4, 0.8)]
    facts = facts_for(tmp_path, rows)
    entry = op_fact(facts, 2)
    assert entry["error_enters"] and not entry["inputs_known"]
    assert entry["inputs_from"] == "previous_op"   # the rules give it a lower confidence than input rows
    assert [f["index"] for f in facts.op_facts if f.get("error_enters")] == [2]


def test_first_disagreement_on_an_input_row_is_a_hidden_entry(tmp_path):
    # A target-only Cast between Conv_1 and Add_3 changes the data; Cast itself was not compared.
    rows = [row(0, "Data", "input", "output", 1.0),
            row(1, "Conv2D", "Conv_1", "input", 1.0), row(1, "Conv2D", "Conv_1", "output", 0.99999),
            row(2, "Cast", "trans_Cast_2", "output", "NaN", "NaN", golden="*"),
            row(3, "Add", "Add_3", "input", 0.7, 0.6), row(3, "Add", "Add_3", "output", 0.7, 0.6)]
    add = op_fact(facts_for(tmp_path, rows), 3)
    assert add["hidden_entry"] is True and add["error_enters"] is False


def test_input_mismatch_on_a_data_op(tmp_path):
    rows = [row(0, "Data", "input", "output", 0.71, 0.5)] + CHAIN[1:]
    data = op_fact(facts_for(tmp_path, rows), 0)
    assert data["is_input"] and data["input_deviates"] and data["input_source"] == "op_type"


def test_user_named_inputs_win_and_unknown_names_warn(tmp_path):
    facts = facts_for(tmp_path, CHAIN, input_nodes=("Conv_1", "not_there"))
    assert [f["op"] for f in facts.op_facts if f.get("is_input")] == ["Conv_1"]
    assert any("not_there" in w for w in facts.warnings)


def test_overflow_starts_at_the_first_op_whose_inputs_did_not_overflow(tmp_path):
    rows = [row(0, "Data", "input", "output", 1.0),
            row(1, "Pow", "Pow_1", "input", 1.0), row(1, "Pow", "Pow_1", "output", "NaN", "NaN", overflow="YES",
                                                       npu_stats="(inf;nan)", mae="inf", golden="Sub_0,Pow_1"),
            row(2, "ReduceMean", "ReduceMean_2", "input", "NaN", "NaN", overflow="YES", npu_stats="(inf;nan)"),
            row(2, "ReduceMean", "ReduceMean_2", "output", "NaN", "NaN", overflow="YES", npu_stats="(inf;nan)"),
            row(3, "NaN", "Node_Output", "output", "NaN", "NaN", npu_stats="(nan;nan)", golden="o.npy")]
    facts = facts_for(tmp_path, rows)
    starts = [f for f in facts.op_facts if f.get("overflow_enters")]
    assert [f["op"] for f in starts] == ["Pow_1"]
    # Keep the op where it starts and the sensitive ops after it that stay out of range (golden names).
    assert starts[0]["keep_fp32"] == "Pow_1,ReduceMean_2" and starts[0]["fp16_sensitive"] is True
    assert facts.network["overflow_ops"] == 2 and facts.network["output_deviates"] is True
    assert facts.network["overflow_entries"] == 1 and facts.network["keep_fp32_all"] == "Pow_1,ReduceMean_2"


def test_a_float32_output_of_an_fp16_network_is_judged_with_fp16_thresholds(tmp_path):
    rows = CHAIN[:-1] + [row(4, "NaN", "Node_Output", "output", 0.9995, 0.02, dtype="DT_FLOAT", golden="o.npy")]
    rows[4] = row(2, "BNInference", "BN_2", "output", 0.9999)
    rows[5], rows[6] = row(3, "Relu", "Relu_3", "input", 0.9999), row(3, "Relu", "Relu_3", "output", 0.9999)
    net = facts_for(tmp_path, rows).network
    assert net["compute_dtype"] == "float16" and net["output_deviates"] is False and net["deviating_ops"] == 0


def test_a_target_collapsed_to_zero_deviates_although_its_cosine_is_nan(tmp_path):
    rows = CHAIN[:3] + [row(2, "Mul", "Mul_2", "input", 0.99999),
                        row(2, "Mul", "Mul_2", "output", "NaN", "NaN", npu_stats="(0.0;0.0)")]
    assert op_fact(facts_for(tmp_path, rows), 2)["error_enters"] is True


def test_threshold_overrides_change_what_deviates(tmp_path):
    rows = CHAIN[:3] + [row(2, "Relu", "Relu_2", "input", 0.99999), row(2, "Relu", "Relu_2", "output", 0.995)]
    assert facts_for(tmp_path, rows).network["deviating_ops"] == 0
    assert facts_for(tmp_path, rows, thresholds=("float16.cosine=0.999",)).network["deviating_ops"] == 1


def test_op_facts_are_capped_keeping_inputs_outputs_and_the_earliest_entries(tmp_path):
    rows = [row(0, "Data", "input", "output", 1.0)]
    for i in range(1, 41):   # alternating: every odd op introduces error, every even op recovers
        cos = 0.5 if i % 2 else 1.0
        rows += [row(i, "Conv2D", f"Conv_{i}", "input", 1.0), row(i, "Conv2D", f"Conv_{i}", "output", cos, 0.6
                                                                   if i % 2 else 0.001)]
    facts = facts_for(tmp_path, rows, max_op_facts=5)
    assert len(facts.op_facts) == 5 and facts.warnings
    kept = [f["index"] for f in facts.op_facts]
    assert kept[:1] == [0] and 40 in kept and 1 in kept


@pytest.mark.parametrize("directory", scenario_dirs(), ids=lambda d: d.name)
def test_every_fact_field_is_described_in_the_schema(directory):
    facts = build_facts(read_comparison(scenario_csv(directory)), load_thresholds(), judge=builtin_judgement())
    assert set(facts.network) <= set(FACT_FIELDS["network"])
    for fact in facts.op_facts:
        assert set(fact) <= set(FACT_FIELDS["op"]), set(fact) - set(FACT_FIELDS["op"])


def test_fp16_sensitivity_is_worked_out_for_the_ops_read_and_left_na_for_the_others(tmp_path):
    # Forty clean ops whose golden names are FP16-sensitive (Softmax), then an overflow onset: the
    # facts and the keep list read only the notable ops and the ops from the onset on.
    rows = [row(0, "Data", "input", "output", 1.0)]
    rows += [row(i, "Mul", f"Mul_{i}", "output", 1.0, golden=f"/m/l{i}/Softmax") for i in range(1, 41)]
    rows += [row(41, "Pow", "Pow_41", "input", 1.0),
             row(41, "Pow", "Pow_41", "output", "NaN", "NaN", overflow="YES", npu_stats="(inf;nan)", mae="inf",
                 golden="/m/l41/Pow"),
             row(42, "ReduceMean", "ReduceMean_42", "output", "NaN", "NaN", overflow="YES", npu_stats="(inf;nan)",
                 golden="/m/l42/ReduceMean"),
             row(43, "NaN", "Node_Output", "output", "NaN", "NaN", npu_stats="(nan;nan)", golden="o.npy")]
    facts = facts_for(tmp_path, rows)
    ops = facts.ops
    everything = ops.copy()
    mark_fp16_sensitive(everything)    # every op worked out: the reference
    read = ops["fp16_sensitive"].notna().to_numpy()
    assert read[ops.index.get_indexer([0, 41, 42])].all() and not read[ops.index.get_indexer([10, 20])].any()
    assert ops["fp16_sensitive"][read].tolist() == everything["fp16_sensitive"][read].tolist()
    assert ops["sensitive_golden"][read].tolist() == everything["sensitive_golden"][read].tolist()
    assert everything.at[10, "fp16_sensitive"] and ops.at[10, "fp16_sensitive"] is pd.NA   # Softmax, not read
    assert facts.network["keep_fp32_all"] == "Pow_41,/m/l42/ReduceMean"   # golden names of the first rows
