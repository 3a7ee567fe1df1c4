"""Every real comparison input in tests/data/realdata (see its SOURCES.md) loads, and what each
one contains, as advisor reads it.

- two msprobe/ptdbg compare CSVs (old 16-column layout): read by ``read_comparison``;
- the old ptdbg ``npu_test.pkl`` (text, the dump the first CSV was made from) and four msprobe
  ``dump.json`` files: read as pairs by ``read_dump_pair`` (the MindSpore/PyTorch pair and the
  layer-mapping pair across frameworks, the others against themselves);
- ``advisor.txt`` is msprobe's advice output, not a comparison: it is refused with the format list.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputFormatError
from advisor.ingest import read_comparison, read_dump_pair
from advisor.ingest.table import check_schema

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
MSPROBE = REALDATA / "Ascend__msprobe"
COMPARE_CSV = MSPROBE / "test__msprobe_test__resources__compare_result_20230703104808.csv"
WITHOUT_ACCURACY_CSV = MSPROBE / "test__msprobe_test__resources__compare_result_without_accuracy.csv"
PKL_DUMP = REALDATA / "Ascend__att" / "debug__accuracy_tools__ptdbg_ascend__test__resources__compare__npu_test.pkl"
CROSS = "test__msprobe_test__mindspore_ut__compare__dump_file__"
MS_DUMP, PT_DUMP = MSPROBE / f"{CROSS}mindspore_data__dump.json", MSPROBE / f"{CROSS}pytorch_data__dump.json"
MS_CONSTRUCT = MSPROBE / f"{CROSS}mindspore_data__construct.json"
PT_CONSTRUCT = MSPROBE / f"{CROSS}pytorch_data__construct.json"
LAYER_MS = MSPROBE / "test__msprobe_test__resources__layer_mapping__mindspore__dump.json"
LAYER_PT = MSPROBE / "test__msprobe_test__resources__layer_mapping__pytorch__dump.json"
RUN_UT_DUMP = MSPROBE / "test__msprobe_test__pytorch_ut__api_accuracy_checker__run_ut__dump.json"
ADVICE_TXT = MSPROBE / "test__msprobe_test__resources__advisor.txt"

CALLS = ["Functional_linear_0_forward"] * 4 + ["Torch_relu_0_forward"] * 2 + ["Functional_relu_0_forward"] * 2
TENSORS = ["Functional_linear_0_forward_input.0", "Functional_linear_0_forward_input.1",
           "Functional_linear_0_forward_input.2", "Functional_linear_0_forward_output",
           "Torch_relu_0_forward_input.0", "Torch_relu_0_forward_output",
           "Functional_relu_0_forward_input.0", "Functional_relu_0_forward_output"]
SHAPES = ["[3, 2]", "[3, 2]", "[3]", "[3, 3]", "[3, 3]", "[3, 3]", "[3, 3]", "[3, 3]"]


def test_every_comparison_file_listed_here_exists():
    for path in (COMPARE_CSV, WITHOUT_ACCURACY_CSV, PKL_DUMP, MS_DUMP, PT_DUMP, MS_CONSTRUCT, PT_CONSTRUCT,
                 LAYER_MS, LAYER_PT, RUN_UT_DUMP):
        assert path.is_file(), path
    assert sorted(p.name for p in REALDATA.glob("*/*.csv")) == sorted([COMPARE_CSV.name, WITHOUT_ACCURACY_CSV.name])


def test_compare_result_csv_is_an_all_pass_ptdbg_result_of_three_forward_calls():
    table = read_comparison(COMPARE_CSV)
    frame = table.frame
    check_schema(frame)
    assert table.format == "msprobe-legacy"  # NPU Tensor Dtype: the old 16-column header
    assert len(frame) == 8
    assert list(frame["op_name"]) == CALLS
    assert list(frame["golden_ops"]) == CALLS
    assert list(frame["tensor_id"]) == TENSORS
    assert list(frame["op_index"]) == [0, 0, 0, 0, 1, 1, 2, 2]
    assert list(frame["op_type"].unique()) == ["Functional.linear", "Torch.relu", "Functional.relu"]
    assert list(frame["io"]) == ["input", "input", "input", "output", "input", "output", "input", "output"]
    assert list(frame["slot"]) == [0, 1, 2, 0, 0, 0, 0, 0]  # the bare "_output" is output 0
    assert set(frame["direction"]) == {"forward"}
    assert set(frame["npu_dtype"]) == set(frame["golden_dtype"]) == {"float32"}  # torch.float32
    assert list(frame["shape"]) == list(frame["golden_shape"]) == SHAPES
    assert (frame["cosine"] == 1.0).all() and (frame["max_abs_error"] == 0.0).all()
    assert set(frame["verdict"]) == {"Yes"}
    assert frame["compare_fail_reason"].isna().all()
    assert not frame[["npu_only", "golden_only", "shape_mismatch", "is_network_output"]].any().any()
    assert list(frame["source_line"]) == list(range(2, 10))
    # the two sides' statistics are identical: every relative difference is 0
    for stat in ("max", "min", "mean"):
        assert (frame[f"npu_{stat}"] == frame[f"golden_{stat}"]).all()
    assert (frame[["max_rel_diff", "min_rel_diff", "mean_rel_diff"]] == 0).all().all()
    assert frame.at[0, "npu_max"] == 1.948258399963379
    # what the old layout does not have stays NaN: no norms, EucDist, error ratios
    assert frame[["npu_norm", "golden_norm", "euclidean_distance", "err_ratio_1e3", "norm_rel_diff"]].isna().all().all()
    assert table.present_metrics == ["cosine", "max_abs_error", "npu_mean", "golden_mean", "npu_max", "npu_min",
                                     "golden_max", "golden_min", "max_rel_diff", "min_rel_diff", "mean_rel_diff"]
    assert table.derived_metrics == ["max_rel_diff", "min_rel_diff", "mean_rel_diff"]


def test_without_accuracy_csv_has_no_npu_names_and_takes_the_calls_from_the_bench_names():
    table = read_comparison(WITHOUT_ACCURACY_CSV)
    frame = table.frame
    check_schema(frame)
    assert table.format == "msprobe-legacy"
    assert len(frame) == 8
    # The NPU Name column is empty in every row, yet every row carries NPU data (dtype, stats):
    # not golden-only. The blank stays visible in tensor_id; the call comes from Bench Name.
    assert frame["tensor_id"].isna().all()
    assert not frame["golden_only"].any() and not frame["npu_only"].any()
    assert list(frame["op_name"]) == CALLS
    assert list(frame["golden_ops"]) == CALLS
    assert list(frame["slot"]) == [0, 1, 2, 0, 0, 0, 0, 0]
    assert frame["verdict"].isna().all()  # "Accuracy Reached or Not" left empty
    assert (frame["cosine"] == 1.0).all()  # written as the integer 1
    # the same numbers as compare_result_20230703104808.csv, rounded to 9 significant digits
    full = read_comparison(COMPARE_CSV).frame
    for column in ("npu_max", "npu_min", "npu_mean", "golden_max", "golden_min", "golden_mean"):
        np.testing.assert_allclose(frame[column], full[column], rtol=1e-8, atol=1e-9)


def test_ptdbg_pkl_is_the_text_dump_the_compare_csv_was_made_from():
    table = read_dump_pair(PKL_DUMP, PKL_DUMP)
    frame = table.frame
    check_schema(frame)
    assert table.format == "msprobe-dump"
    assert list(frame["tensor_id"]) == TENSORS
    assert list(frame["op_name"]) == CALLS
    assert list(frame["source_line"]) == list(range(1, 9))  # one JSON array per line
    assert set(frame["npu_dtype"]) == {"float32"}
    assert list(frame["shape"]) == SHAPES
    compare = read_comparison(COMPARE_CSV).frame
    for stat in ("max", "min", "mean"):  # [max, min, mean]: exactly the CSV's NPU statistics
        assert list(frame[f"npu_{stat}"]) == list(compare[f"npu_{stat}"])
    assert frame["npu_norm"].isna().all()  # the old dump has no norm
    assert (frame[["max_rel_diff", "min_rel_diff", "mean_rel_diff"]] == 0).all().all()
    assert frame["cosine"].isna().all()


def cross_framework_table():
    # msprobe's own cross-framework test: MindSpore is the target (NPU), PyTorch the bench.
    return read_dump_pair(bench=PT_DUMP, target=MS_DUMP)


def test_mindspore_vs_pytorch_dumps_pair_eleven_calls_across_frameworks():
    table = cross_framework_table()
    frame = table.frame
    check_schema(frame)
    pairs = frame[["op_name", "golden_ops"]].drop_duplicates().dropna()
    assert {tuple(p) for p in pairs.itertuples(index=False)} >= {
        ("Tensor.__add__.0.forward", "Tensor.__add__.0.forward"),              # exact name
        ("Tensor.__add__.1.forward", "Tensor.__add__.1.forward"),
        ("Distributed.all_reduce.0.forward", "Distributed.all_reduce.0.forward"),
        ("Mint.cos.0.forward", "Torch.cos.0.forward"),                        # framework prefix
        ("Primitive.norm.RmsNorm.0.forward", "NPU.npu_rms_norm.0.forward"),   # npu_ and "_" dropped
        ("Mint.logical_or.0.forward", "Tensor.__or__.0.forward"),             # alias
        ("Functional.flash_attention_score.0.forward", "NPU.npu_fusion_attention.0.forward"),
        ("Functional.flash_attention_score.0.backward", "NPU.npu_fusion_attention.0.backward"),
        ("Cell.network_with_loss.module.language_model.encoder.layers.0.attention.ParallelAttention.forward.0",
         "Module.module.module.language_model.encoder.layers.0.self_attention.ParallelAttention.forward.0"),
    }
    calls = frame.groupby("op_index").agg(target=("op_name", "first"), bench=("golden_ops", "first"))
    assert len(calls) == 14 and calls.notna().all(axis=1).sum() == 11
    assert list(calls.loc[calls["bench"].isna(), "target"]) == [
        "Tensor.__bool__.1.forward",
        "Cell.network_with_loss.module.language_model.encoder.layers.0.input_norm.FusedRMSNorm.backward.0"]
    assert list(calls.loc[calls["target"].isna() & ~frame.groupby("op_index")["npu_only"].any(), "bench"]) == [
        "Module.module.module.language_model.encoder.layers.0.input_norm.RMSNorm.forward.0"]


def test_mindspore_vs_pytorch_dumps_hold_32_and_39_tensors():
    table = cross_framework_table().frame

    def argument(column: str):   # an int, float, bool or str argument, as msprobe's CSV lists it
        return table[column].astype("string").str.startswith("python.").fillna(False)

    npu_tensor = table["npu_dtype"].notna() & ~argument("npu_dtype")
    bench_tensor = table["golden_dtype"].notna() & ~argument("golden_dtype")
    assert int(npu_tensor.sum()) == 32     # every MindSpore tensor once (SOURCES.md: 32)
    assert int(bench_tensor.sum()) == 39   # every PyTorch tensor once (SOURCES.md: 39)
    # MindSpore passes a tensor where PyTorch passes an int (Tensor.__add__'s second operand): paired
    assert int((npu_tensor & argument("golden_dtype")).sum()) == 1
    frame = table[~argument("npu_dtype") & ~argument("golden_dtype")]
    assert len(frame) == 43
    assert int(frame["npu_only"].sum()) == 4 and int(frame["golden_only"].sum()) == 12
    assert set(frame["direction"]) == {"forward", "backward"}
    assert set(frame["io"]) == {"input", "output"}
    # MindSpore Float32/BFloat16/Int32/UInt8..., torch.bfloat16...: one vocabulary
    counts = {side: {k: v for k, v in frame[f"{side}_dtype"].value_counts().to_dict().items() if v}
              for side in ("npu", "golden")}
    assert counts["npu"] == {"bfloat16": 18, "bool": 4, "int64": 3, "float32": 3, "int32": 2, "uint8": 1}
    assert counts["golden"] == {"bfloat16": 21, "float32": 7, "bool": 6, "int64": 5}
    assert frame["cosine"].isna().all() and frame["max_abs_error"].isna().all()  # statistics only
    # Bool tensors: Max/Min true/false -> 1/0, Mean/Norm null -> NaN
    logical_or = frame[frame["op_name"] == "Mint.logical_or.0.forward"]
    assert list(logical_or["npu_max"]) == [0.0, 1.0, 1.0] and logical_or["npu_norm"].isna().all()


def test_mindspore_vs_pytorch_values_and_mismatches_are_what_the_dumps_say():
    frame = cross_framework_table().frame.set_index("tensor_id")
    # the all_reduce output agrees to the last bit; so does the embedding output across Cell/Module
    out = frame.loc["Distributed.all_reduce.0.forward.output.0"]
    assert out["npu_norm"] == out["golden_norm"] and out["norm_rel_diff"] == 0.0
    # Tensor.__add__.0: the first input differs in dtype and shape between the two test dumps
    first = frame.loc["Tensor.__add__.0.forward.input.0"]
    assert (first["npu_dtype"], first["golden_dtype"]) == ("int32", "int64")
    assert bool(first["shape_mismatch"]) and first["norm_rel_diff"] > 10
    # the transformer layer's norm differs: 1 - 2,352 / ~470,000
    layer = frame.loc["Cell.network_with_loss.module.language_model.encoder.layers.0.ParallelTransformerLayer"
                      ".forward.0.input.0"]
    assert layer["norm_rel_diff"] == pytest.approx(0.99999, abs=1e-5)
    assert set(frame["shape_mismatch"].dropna()) == {False, True}


def test_cross_framework_api_pairs_agree_with_the_module_trees_in_construct_json():
    ms_parent = json.loads(MS_CONSTRUCT.read_text())
    pt_parent = json.loads(PT_CONSTRUCT.read_text())
    pt_calls = set(json.loads(PT_DUMP.read_text())["data"])
    frame = cross_framework_table().frame
    paired = dict(frame.dropna(subset=["op_name", "golden_ops"])[["op_name", "golden_ops"]]
                  .drop_duplicates().itertuples(index=False))
    checked = 0
    for target, bench in paired.items():
        parent_ms, parent_pt = ms_parent.get(target), pt_parent.get(bench)
        if parent_ms in paired and parent_pt in pt_calls:  # both parents dumped: they must pair too
            assert paired[parent_ms] == parent_pt, (target, bench)
            checked += 1
    assert checked == 3  # logical_or/__or__ (in the embedding), cos and the attention (in the layer)


def test_layer_mapping_dumps_pair_a_cell_with_its_module():
    table = read_dump_pair(bench=LAYER_PT, target=LAYER_MS)
    frame = table.frame
    check_schema(frame)
    assert list(frame["op_name"].unique()) == [
        "Cell.network_with_loss.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0"]
    assert list(frame["golden_ops"].unique()) == [
        "Module.module.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0"]
    assert list(frame["op_type"]) == ["Cell.VocabParallelEmbedding"] * 2
    assert list(frame["io"]) == ["input", "output"]
    assert list(frame["npu_dtype"]) == ["int32", "bfloat16"]
    assert list(frame["golden_dtype"]) == ["int64", "bfloat16"]
    assert (frame[["max_rel_diff", "min_rel_diff", "mean_rel_diff", "norm_rel_diff"]] == 0).all().all()
    assert not frame[["npu_only", "golden_only", "shape_mismatch"]].any().any()


def test_api_accuracy_checker_dump_has_nine_float16_tensors_with_nested_arguments():
    table = read_dump_pair(RUN_UT_DUMP, RUN_UT_DUMP)  # no "framework" key: an older dump.json
    check_schema(table.frame)
    arguments = table.frame["npu_dtype"].astype("string").str.startswith("python.").fillna(False)
    assert arguments.sum() == 3   # the chunk's count and dim, the cat's dim: numbers with their value
    frame = table.frame[~arguments]
    assert len(frame) == 9
    assert list(frame["op_name"].unique()) == ["Tensor.__mul__.7.forward", "Torch.chunk.4.forward",
                                               "Torch.cat.8.forward"]
    assert set(frame["npu_dtype"]) == {"float16"}
    cat_inputs = frame[(frame["op_name"] == "Torch.cat.8.forward") & (frame["io"] == "input")]
    assert list(cat_inputs["tensor_id"]) == ["Torch.cat.8.forward.input.0.0", "Torch.cat.8.forward.input.0.1"]
    assert list(cat_inputs["slot"]) == [0, 0]  # one list argument holding two tensors
    assert (frame["norm_rel_diff"] == 0).all() and not frame["npu_only"].any()


def test_msprobe_advice_text_is_not_a_comparison_and_says_what_is_read():
    with pytest.raises(InputFormatError) as caught:
        read_comparison(ADVICE_TXT)
    message = str(caught.value)
    assert message.startswith(f"{ADVICE_TXT}:1: unknown header 'Line: NA'")
    assert "msprobe (NPU Name, Bench Name," in message and "msprobe-dump (two dump.json files" in message
