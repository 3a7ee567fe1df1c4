"""Diagnoses the report tests render, and advice pages of our own (so the tests do not depend on the
texts in knowledge/advice, which change as experts edit them)."""

from __future__ import annotations

import math
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

import advisor.advice
from advisor.diagnosis import Diagnosis, Finding, OpPoint, PackInfo, Series

VERSION = "0.1.0-test"

ADVICE_PAGES = {
    "fp16_overflow": {
        "title": {"en": "FP16 overflow", "zh": "FP16 溢出"},
        "en": {
            "what": "{{ op }} ({{ op_type }}) produces values beyond the FP16 range while its inputs are finite.",
            "why": "FP16 tops out at 65504; squares of activations above 256 exceed it.",
            "confirm": "Check `numpy.isinf(x).any()` on the target dump of {{ op }}.",
            "fix": {
                "ascend": "Keep {{ values.keep_fp32 }} in FP32 with `--keep_dtype=keep_dtype.cfg`.\n"
                          "```\n{{ op }}\n```\n",
                "tensorrt": "Set `layer.precision = trt.float32` for {{ op }}.",
                "pytorch": "Run the block under `torch.autocast(device_type, enabled=False)`.",
            },
            "references": ["https://example.org/fp16", "IEEE 754 binary16"],
        },
        "zh": {
            "what": "{{ op }}（{{ op_type }}）在输入有限时产生了超出 FP16 范围的值。",
            "why": "FP16 最大有限值为 65504。",
            "confirm": "检查 {{ op }} 目标侧 dump：`numpy.isinf(x).any()`。",
            "fix": {
                "ascend": "使用 `--keep_dtype=keep_dtype.cfg` 将 {{ values.keep_fp32 }} 保持为 FP32。",
                "tensorrt": "为 {{ op }} 设置 `layer.precision = trt.float32`。",
            },
            "references": ["IEEE 754 binary16"],
        },
    },
    "problem_node": {
        "title": {"en": "Problem node", "zh": "问题节点"},
        "en": {"what": "Error enters at {{ op }}: its inputs agree, its outputs do not.",
               "why": "A kernel, a fusion pass or a precision choice changed the result of this op.",
               "confirm": "Compare the op's output with its inputs replayed on the golden side.",
               "fix": {"any": "Disable the fusion pass or keep {{ op }} in FP32."},
               "references": ["msaccucmp user guide"]},
        "zh": {"what": "误差在 {{ op }} 处引入：输入一致，输出不一致。",
               "why": "算子实现、融合规则或精度选择改变了该算子的结果。",
               "confirm": "用标杆侧输入重放该算子并比对输出。",
               "fix": {"any": "关闭融合规则，或将 {{ op }} 保持为 FP32。"},
               "references": ["msaccucmp 用户指南"]},
    },
    "single_point_deviation": {
        "title": {"en": "Single-point deviation", "zh": "单点偏差"},
        "en": {"what": "{{ op }} deviates but the network output agrees.",
               "why": "Local rounding that later ops wash out.",
               "confirm": "The output cosine is {{ values.output_cosine }}.",
               "fix": {"any": "Usually nothing to do: the output is fine."},
               "references": ["Vendor rule of thumb: judge by the network output"]},
        "zh": {"what": "{{ op }} 存在偏差，但网络输出一致。",
               "why": "局部舍入误差被后续算子抵消。",
               "confirm": "输出余弦相似度为 {{ values.output_cosine }}。",
               "fix": {"any": "通常无需处理：网络输出正常。"},
               "references": ["厂商经验：以网络输出为准"]},
    },
    "consistent": {
        "title": {"en": "Consistent", "zh": "一致"},
        "en": {"what": "Every compared op agrees within its dtype's thresholds.",
               "why": "The migration preserved the numbers.",
               "confirm": "Nothing to confirm.",
               "fix": {"any": "No action needed: the NPU results match the golden results."},
               "references": ["advisor thresholds per dtype"]},
        "zh": {"what": "所有比对的算子都在其数据类型的阈值内。",
               "why": "迁移保持了数值。",
               "confirm": "无需确认。",
               "fix": {"any": "无需处理：NPU 结果与标杆一致。"},
               "references": ["advisor 各数据类型阈值"]},
    },
}


@pytest.fixture(autouse=True)
def advice_pages(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.mktemp("advice")
    for kind, page in ADVICE_PAGES.items():
        (folder / f"{kind}.yaml").write_text(yaml.safe_dump(page, allow_unicode=True), encoding="utf-8")
    monkeypatch.setattr(advisor.advice, "advice_dir", lambda: folder)
    advisor.advice.clear_cache()
    yield folder
    advisor.advice.clear_cache()


def _series(n: int, drop_at: int | None, nan_at: tuple[int, ...] = ()) -> Series:
    points = []
    for i in range(n):
        if drop_at is not None and i >= drop_at:
            cosine, error = 0.93 - 0.002 * (i - drop_at), 0.2 + 0.01 * (i - drop_at)
        else:
            cosine, error = 0.99995 - 1e-6 * i, 1e-4 * (1 + i % 5)
        if i in nan_at:
            cosine = error = math.nan
        points.append(OpPoint(index=i, op=f"op_{i}", cosine=cosine, error=error))
    return Series(points=points, error_metric="relative_euclidean_distance", cosine_threshold=0.99,
                  error_threshold=0.05, total_ops=n)


def _run_details() -> dict:
    return {
        "inputs": {"comparison": "result_20240101120000.csv", "graph": "ge_proto_00000_Build.txt"},
        "packs": [PackInfo("core", "1.0.0", "rules/core", 14)],
        "thresholds": {"float16": {"cosine": 0.99, "relative_euclidean_distance": 0.05},
                       "float32": {"cosine": 0.999, "relative_euclidean_distance": 0.01}},
        "version": VERSION,
    }


def make_root_cause() -> Diagnosis:
    op = "LayerNorm_3/Pow"
    root = Finding(
        id="fp16-overflow@12", rule="fp16-overflow", pack="core", kind="fp16_overflow", severity="error",
        title={"en": "FP16 overflow", "zh": "FP16 溢出"}, op=op, index=12, op_type="Pow", confidence=0.95,
        evidence={"en": f"max |x| = 70144 >= 65504 on the output of {op} while its inputs are finite "
                        "(input cosine 0.99998)",
                  "zh": f"{op} 的输出 max |x| = 70144 >= 65504，而输入有限（输入余弦 0.99998）"},
        values={"npu_abs_max": 70144.0, "in_cosine": 0.99998, "out_cosine": math.nan,
                "keep_fp32": "LayerNorm_3/Pow,LayerNorm_3/ReduceMean"},
        source_lines=[27, 28], explains=["problem-node@13", "problem-node@14", "problem-node@40"])

    def symptom(index: int, name: str, op_type: str, cosine: float) -> Finding:
        return Finding(
            id=f"problem-node@{index}", rule="problem-node", pack="core", kind="problem_node",
            severity="warning", title={"en": "Problem node", "zh": "问题节点"}, op=name, index=index,
            op_type=op_type, confidence=0.6,
            evidence={"en": f"cosine {cosine} < 0.99 with inputs already deviating",
                      "zh": f"余弦 {cosine} < 0.99，输入已偏差"},
            values={"out_cosine": cosine}, source_lines=[index * 2 + 3], explained_by="fp16-overflow@12")

    independent = Finding(
        id="problem-node@57", rule="problem-node", pack="core", kind="problem_node", severity="warning",
        title={"en": "Problem node", "zh": "问题节点"}, op="Conv_57", index=57, op_type="Conv2D",
        confidence=0.7, evidence={"en": "inputs agree (cosine 0.9991), output cosine 0.962"},
        values={"in_cosine": 0.9991, "out_cosine": 0.962}, source_lines=[117])
    symptoms = [symptom(13, "LayerNorm_3/Div", "RealDiv", 0.912), symptom(14, "MatMul_4", "MatMul", 0.905),
                symptom(40, "Softmax_7", "SoftmaxV2", 0.93)]
    return Diagnosis(
        root_cause=root, findings=[root, independent, *symptoms],
        network={"id": "network", "fact": "network", "rows": 162, "ops": 80, "compared_tensors": 158,
                 "deviating_ops": 68, "overflow_ops": 1, "output_cosine": math.nan,
                 "output_deviates": True, "dtype": "float16", "first_deviating_index": 12},
        overrides={"cosine.float16": 0.98}, series=_series(80, 12, nan_at=(12, 30)),
        warnings=["3 rows have a NaN cosine (one side all zeros)"], **_run_details())


def make_consistent() -> Diagnosis:
    finding = Finding(
        id="consistent", rule="consistent", pack="core", kind="consistent", severity="info",
        title={"en": "Consistent", "zh": "一致"},
        evidence={"en": "all 80 ops within thresholds; output cosine 0.99998",
                  "zh": "80 个算子均在阈值内；输出余弦 0.99998"},
        values={"output_cosine": 0.99998})
    return Diagnosis(root_cause=None, findings=[finding],
                     network={"ops": 80, "deviating_ops": 0, "output_cosine": 0.99998},
                     series=_series(80, None), **_run_details())


def make_single_point() -> Diagnosis:
    root = Finding(
        id="single-point@30", rule="single-point-deviation", pack="core", kind="single_point_deviation",
        severity="info", title={"en": "Single-point deviation", "zh": "单点偏差"}, op="Conv_30", index=30,
        op_type="Conv2D", confidence=0.8,
        evidence={"en": "cosine 0.97 at op 30, network output cosine 0.9995",
                  "zh": "第 30 号算子余弦 0.97，网络输出余弦 0.9995"},
        values={"out_cosine": 0.97, "output_cosine": 0.9995}, source_lines=[63])
    return Diagnosis(root_cause=root, findings=[root], network={"ops": 80, "deviating_ops": 1,
                     "output_cosine": 0.9995}, series=None, **_run_details())


def make_unexplained() -> Diagnosis:
    """The network deviates but no rule fired (e.g. built-in rules turned off)."""
    return Diagnosis(root_cause=None, findings=[],
                     network={"ops": 26, "deviating_ops": 15, "first_deviating_index": 10,
                              "first_deviating_op": "BatchNormalization_13", "output_cosine": 0.007333,
                              "consistent": False},
                     series=_series(26, 10), **_run_details())


@pytest.fixture
def root_cause() -> Diagnosis:
    return make_root_cause()


@pytest.fixture
def consistent() -> Diagnosis:
    return make_consistent()


@pytest.fixture
def single_point() -> Diagnosis:
    return make_single_point()


@pytest.fixture
def unexplained() -> Diagnosis:
    return make_unexplained()


# The elements Markdown itself makes (GitHub's tables included): a report's Markdown may render to these only.
MARKDOWN_TAGS = frozenset({"h1", "h2", "h3", "h4", "p", "strong", "em", "code", "pre", "ul", "ol", "li", "hr",
                           "table", "thead", "tbody", "tr", "th", "td"})


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)


@pytest.fixture
def markdown_html():
    """``markdown -> (html, elements that are not Markdown's own)``: the Markdown as a CommonMark reader
    with GitHub's tables shows it (raw HTML allowed, as GitHub allows some)."""
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with the test extra")
    parser = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table")

    def render(markdown: str) -> tuple[str, set[str]]:
        html = parser.render(markdown)
        elements = _Elements()
        elements.feed(html)
        return html, elements.tags - MARKDOWN_TAGS
    return render
