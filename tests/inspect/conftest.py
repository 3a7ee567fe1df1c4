"""Shared fixtures: the committed scenarios, the shared real graph files (skipped when absent) and
a writer of msaccucmp result CSVs for generated scenarios."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "data" / "scenarios"
REALDATA = ROOT / "tests" / "data" / "realdata"
PRELU = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"
LAYOUT = SCENARIOS / "layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0"
OM_TDNN = "Ascend__msit/msit__test__UT__resource__analyze__dataset__model__test.om.json"
GE_PROTO_11 = ("hicann__oam-tools/test__st__msaicerr__res__ori_data__asys_output_20230713074104794__dfx__graph__"
               "370_0__ge_proto_00000001_Build.txt")

HEADER = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,"
          "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
          "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
          "MaxRelativeError,MeanRelativeError,CompareFailReason")


def result_csv(path: Path) -> Path:
    return next(path.glob("result_*.csv"))


def write_comparison(path: Path, ops: Sequence[tuple[str, str, str, float]]) -> Path:
    """An msaccucmp CSV: per (op_type, op_name, golden_ops, output cosine) one input row (the
    previous op's output cosine) and one output row, indexed in the given order."""
    lines = [HEADER]
    previous = 1.0
    for index, (op_type, name, golden, cosine) in enumerate(ops):
        red = round(1.0 - cosine, 6)
        for io, cos in (("input", previous), ("output", cosine)):
            if io == "input" and index == 0:
                continue
            lines.append(f'{index},{op_type},{name},DT_FLOAT16,0x0,"{golden}",float32,{name}:{io}:0,"[1,8]",NO,'
                         f'{cos:.6f},{red:.6f},0.1,{red:.6f},0.0,"(0;1),(0;1)",0.01,0.01,0.1,0.01,NaN')
        previous = cosine
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
