"""One source of numbers: every number that changes a verdict or a colour is a rule parameter or an
entry of knowledge/thresholds.yaml (``--set``, ``--threshold``, advisor.toml), never a literal in the
Python. This test reads every float literal in advisor/ (``ast``) and fails on one that is not in
ALLOWED below with the reason it is not a judgement. Arithmetic constants (0, 1, 2, 0.5, 3, 4, 10,
100) and numeric guards (below 1e-5 or above 1e5 in magnitude: epsilons, infinities stand-ins) are
not judgements and are skipped.

A new literal that does judge (a tolerance, a fit, a percentile, a cosine) belongs in
knowledge/thresholds.yaml (``knobs:`` for what Python measures with, the dtype table for when a
tensor deviates) or in a rule's ``params``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache

from tests.conftest import REPO

ARITHMETIC = frozenset({0.0, 1.0, 2.0, 0.5, 3.0, 4.0, 10.0, 100.0})
GUARD_BELOW, GUARD_ABOVE = 1e-5, 1e5

# (module, value) -> why the literal is not a judgement.
ALLOWED: dict[tuple[str, float], str] = {
    # formats and physical constants
    ("advisor/dtypes.py", 65504.0): "the largest finite float16 value (IEEE 754)",
    ("advisor/evidence/quant.py", 127.0): "int8 code range",
    ("advisor/evidence/quant.py", 255.0): "int8 code range (asymmetric: 256 codes)",
    ("advisor/verify/qdq.py", 127.0): "int8 code range",
    ("advisor/verify/qdq.py", 255.0): "int8 code range (asymmetric: 256 codes)",
    ("advisor/inspect/tensor.py", 6.103515625e-05): "float16's smallest normal number, 2**-14",
    ("advisor/compare/msaccucmp_csv.py", 0.001): "msaccucmp writes a mean or std below this as 0 (its format)",
    # well-known constants the probes name (what the tools and model zoos use, not a tolerance)
    **{("advisor/evidence/normalisation.py", v): "well-known normalisation constants (ImageNet, CLIP, 127.5/128)"
       for v in (123.675, 116.28, 103.53, 58.395, 57.12, 57.375, 0.485, 0.456, 0.406, 0.229, 0.224, 0.225,
                 0.48145466, 0.4578275, 0.40821073, 0.26862954, 0.26130258, 0.27577711, 127.5, 128.0)},
    **{("advisor/evidence/normalisation.py", v): "scale factors a probe names: 0-255 vs 0-1, 16-bit PCM vs float"
       for v in (255.0, 256.0, 32768.0)},
    ("advisor/evidence/normalisation.py", 0.001): "ZERO_MEAN: absolute floor of a relative comparison, so a mean "
                                                  "of 0 can match a well-known 0",
    # the search space of a probe (what is measured), not how a result is judged
    **{("advisor/evidence/geometry.py", v): "zoom factors the geometry probe tries (its search grid)"
       for v in (0.75, 0.8, 0.85, 0.9, 0.95, 1.05, 1.1, 1.15, 1.2, 1.25, 1.33)},
    ("advisor/evidence/geometry.py", 0.4): "MIN_OVERLAP: shifts searched keep this share of the pixels (search "
                                           "space; a hypothesis found is judged by geometry_simpler_margin)",
    ("advisor/evidence/layer_sim.py", 300.0): "SQNR cap in dB for identical tensors (infinite otherwise)",
    # the vendor's own advisor, emulated to say where it differs: its fixed threshold is a fact about it
    ("advisor/diagnosis/vendor.py", 0.99): "msaccucmp's advisor judges every row at cosine 0.99 "
                                           "(docs/vendor-parity.md)",
    # user-given tolerances of `advisor diff` (allclose), with numpy's defaults shown as ours
    ("advisor/cli/diff.py", 1e-05): "--atol default (numpy.allclose's)",
    ("advisor/cli/diff.py", 0.001): "--rtol default",
    ("advisor/inspect/diff.py", 1e-05): "atol default (numpy.allclose's)",
    ("advisor/inspect/diff.py", 0.001): "rtol default",
    # drawing, terminal and engine plumbing
    ("advisor/report/plot.py", 1000.0): "plot geometry",
    ("advisor/report/plot.py", 0.001): "plot: smallest cosine span drawn",
    ("advisor/report/plot.py", 0.06): "plot: margin around the drawn span",
    ("advisor/report/plot.py", 2.5): "plot geometry",
    ("advisor/report/plot.py", 0.62): "plot: average sans-serif glyph width per pixel of font size",
    ("advisor/report/plot_layouts.py", 0.6): "plot geometry (an agreeing call's short tick in the MD5 strip)",
    ("advisor/report/verification.py", 6.0): "significant digits shown",
    ("advisor/batch/sparkline.py", 0.001): "sparkline: smallest cosine span drawn",
    ("advisor/batch/sparkline.py", 0.6): "sparkline bar width",
    ("advisor/batch/sparkline.py", 8.0): "sparkline bar width",
    ("advisor/engine/durable_host.py", 0.0001): "where json switches to exponent notation (durable_rules trap)",
    ("advisor/ingest/msaccucmp_columns.py", 1.25): "array growth factor when reading",
    ("advisor/progress.py", 0.1): "progress bar refresh interval (s)",
    ("advisor/text.py", 0.6): "difflib similarity for 'did you mean' hints",
}


def judging_candidates(source: str) -> list[tuple[float, int]]:
    """(value, line) of each float literal of ``source`` that is neither arithmetic nor a guard."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and type(node.value) is float:
            value = abs(node.value)
            if value not in ARITHMETIC and GUARD_BELOW <= value <= GUARD_ABOVE:
                found.append((value, node.lineno))
    return found


@cache
def float_literals() -> dict[tuple[str, float], list[int]]:
    found: dict[tuple[str, float], list[int]] = defaultdict(list)
    for path in sorted((REPO / "advisor").rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        for value, line in judging_candidates(path.read_text(encoding="utf-8")):
            found[name, value].append(line)
    return found


def test_no_judging_literal_outside_the_allow_list():
    unexplained = [f"{name}:{lines[0]}: {value!r}" for (name, value), lines in sorted(float_literals().items())
                   if (name, value) not in ALLOWED]
    assert unexplained == [], ("numbers in advisor/ that may judge: make them a knob in knowledge/thresholds.yaml or "
                               "a rule parameter, or add them to ALLOWED with the reason they do not judge:\n"
                               + "\n".join(unexplained))


def test_the_allow_list_names_only_literals_that_exist():
    stale = sorted(key for key in ALLOWED if key not in float_literals())
    assert stale == [], "remove these from ALLOWED: the literal is gone"


def test_a_new_tolerance_is_caught_where_it_hides():
    """In a comparison, a default argument, a module constant, a keyword argument; not 0, 1 or an epsilon."""
    source = ("TOLERANCE = 0.03\ndef f(x, fit=0.97):\n    return x < 0.995 and close(x, rtol=0.02)\n"
              "y = 1.0 - 0.5 * 2.0 + 1e-30\n")
    assert sorted(judging_candidates(source)) == [(0.02, 3), (0.03, 1), (0.97, 2), (0.995, 3)]
