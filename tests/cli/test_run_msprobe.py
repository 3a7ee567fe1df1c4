"""advisor run on what msprobe users have: compare CSVs (statistics-only summary mode included) and
two dump.json files compared directly."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import REPO

REALDATA = REPO / "tests" / "data" / "realdata" / "Ascend__msprobe"
BASIC = ("NPU Name,Bench Name,NPU Dtype,Bench Dtype,NPU Tensor Shape,Bench Tensor Shape,"
         "NPU Requires_grad,Bench Requires_grad")
SUMMARY = (f"{BASIC},Max diff,Min diff,Mean diff,L2norm diff,MaxRelativeErr,MinRelativeErr,MeanRelativeErr,"
           "NormRelativeErr,NPU max,NPU min,NPU mean,NPU l2norm,Bench max,Bench min,Bench mean,Bench l2norm,"
           "Requires_grad Consistent,Result,Err_message")


def summary_row(api: str, io: str, npu_norm: float, bench_norm: float) -> str:
    name = f"{api}.forward.{io}.0"
    return (f'{name},{name},torch.float16,torch.float32,"[1, 8]","[1, 8]",True,True,0,0,0,'
            f'{npu_norm - bench_norm},0%,0%,0%,0%,1,0,0.5,{npu_norm},1,0,0.5,{bench_norm},True,,')


@pytest.fixture
def realdata() -> Path:
    return REALDATA


def test_real_msprobe_compare_csv_is_consistent(run_cli, realdata):
    run = run_cli(realdata / "test__msprobe_test__resources__compare_result_20230703104808.csv", "--format", "json")
    assert run.code == 0, run.err
    report = run.report()
    assert report["inputs"]["format"] == "msprobe-legacy" and report["root_cause"] is None


def test_two_real_dump_json_files_are_compared(run_cli, realdata):
    folder = "test__msprobe_test__mindspore_ut__compare__dump_file__{}_data__dump.json"
    run = run_cli("--bench", realdata / folder.format("pytorch"), "--target", realdata / folder.format("mindspore"),
                  "--format", "json")
    assert run.code == 0, run.err
    report = run.report()
    assert report["inputs"]["format"] == "msprobe-dump" and report["network"]["ops"] == 14


def test_summary_mode_is_judged_by_its_norms(run_cli, tmp_path):
    rows = [summary_row("Functional.linear.0", "input", 10.0, 10.0),
            summary_row("Functional.linear.0", "output", 10.01, 10.0),
            summary_row("Torch.softmax.1", "input", 10.01, 10.0),
            summary_row("Torch.softmax.1", "output", 13.0, 10.0),      # 30% off in scale: error enters here
            summary_row("Torch.matmul.2", "input", 13.0, 10.0),
            summary_row("Torch.matmul.2", "output", 14.0, 10.0)]
    path = tmp_path / "compare_result_summary.csv"
    path.write_text("\n".join([SUMMARY, *rows]) + "\n", encoding="utf-8")
    report = run_cli(path, "--format", "json").report()
    assert report["inputs"]["format"] == "msprobe-summary"
    root = report["root_cause"]
    assert (root["kind"], root["op"]) == ("problem_node", "Torch.softmax.1.forward")


@pytest.mark.parametrize(("args", "message"), [
    (["--bench", "a.json"], "--bench and --target go together"),
    (["x.csv", "--bench", "a.json", "--target", "b.json"], "not both or neither"),
    ([], "not both or neither"),
])
def test_usage_errors(run_cli, args, message):
    run = run_cli(*args)
    assert run.code == 2 and message in run.err


def test_a_forward_cause_explains_the_backward_pass(run_cli, tmp_path):
    def row(api: str, direction: str, io: str, norm: float) -> str:
        name = f"{api}.{direction}.{io}.0"
        return (f'{name},{name},torch.float16,torch.float32,"[1, 8]","[1, 8]",True,True,0,0,0,'
                f'{norm - 10.0},0%,0%,0%,0%,1,0,0.5,{norm},1,0,0.5,10.0,True,,')

    rows = [row("Functional.linear.0", "forward", "input", 10.0), row("Functional.linear.0", "forward", "output", 10.0),
            row("Torch.softmax.1", "forward", "input", 10.0), row("Torch.softmax.1", "forward", "output", 13.0),
            row("Torch.softmax.1", "backward", "input", 10.0), row("Torch.softmax.1", "backward", "output", 14.0),
            row("Functional.linear.0", "backward", "input", 14.0),
            row("Functional.linear.0", "backward", "output", 15.0)]
    path = tmp_path / "compare_result_training.csv"
    path.write_text("\n".join([SUMMARY, *rows]) + "\n", encoding="utf-8")
    report = run_cli(path, "--format", "json").report()
    root = report["root_cause"]
    assert (root["kind"], root["op"]) == ("problem_node", "Torch.softmax.1.forward")
    backward = [f for f in report["findings"] if f["op"] and ".backward" in f["op"]]
    assert backward and all(f["explained_by"] == root["id"] for f in backward)
