"""Known durable_rules 2.0.28 defects, each reproduced against the library itself and then shown
avoided by our wrapper (advisor/engine/runner.py). DESIGN.md "durable_rules: facts to design around".

Every reproduction runs in its own Python process: a segfault or a hang in the C core fails that
one test (with its exit status), never the test run. ``upstream_*`` tests pin the library's own
behaviour: if one starts failing, durable_rules changed and the workaround named in it may be
removed. ``wrapper_*`` tests run the same input through ``run_rules``.

| defect                                                   | upstream reproduction | our wrapper |
|----------------------------------------------------------|-----------------------|-------------|
| a number in exponent form in a fact (1e-05, 1e+20)       | yes                   | avoids it   |
| a number in exponent form in a ruleset (gt: 1e-06)       | yes                   | avoids it   |
| a fact no rule matches: MessageNotHandledException       | yes                   | avoids it   |
| an identical fact twice: MessageObservedException        | yes                   | avoids it   |
| an ordering join inside an $and reads past a buffer      | no (AddressSanitizer) | avoids it   |
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .test_pack_validation import GOOD_RULE, make_pack, problems_of

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def isolated(code: str) -> tuple[int | None, str]:
    """Run ``code`` in a fresh interpreter; (exit status, or None on a hang; stdout + stderr)."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=TIMEOUT, cwd=REPO)
    except subprocess.TimeoutExpired:
        return None, "hung"
    return done.returncode, done.stdout + done.stderr


RAW = """
import json
import durable_rules_engine as d

def fired(handle):
    names = []
    result = d.start_action(handle)
    while result:
        names.extend(json.loads(result[1]))
        d.update_state(handle, result[0])
        following = d.complete_and_start_action(handle, result[2])
        result = (result[0], following, result[2]) if following else None
    return names

CATCH_ALL = {"all": [{"m": {"$ex": {"fact": 1}}}], "pri": 1000000}
"""


@pytest.mark.parametrize("value", ["1e-05", "1e+20", "1e+16"])
def test_upstream_a_fact_number_in_exponent_form_is_lost(value):
    # The fact matches 'big' and the catch-all; durable_rules fires neither (or crashes, or hangs).
    status, out = isolated(RAW + f"""
handle = d.create_ruleset("t", json.dumps({{"big": {{"all": [{{"m": {{"$and": [{{"fact": "op"}},
    {{"$lt": {{"v": 1e300}}}}]}}}}]}}, "catch_all": CATCH_ALL}}))
d.assert_facts(handle, '[{{"id": "a", "fact": "op", "v": {value}}}]')
print("fired", fired(handle))
""")
    assert status != 0 or "fired []" in out, out


@pytest.mark.parametrize("value", [1e-5, 1e20, 1e16, float("inf")])
def test_wrapper_writes_fact_numbers_positionally(tmp_path, value):
    pack = make_pack(tmp_path, GOOD_RULE.replace("dtype: float16\nemit", "out_kl: {gte: 0.0}\nemit"))
    status, out = isolated(f"""
from advisor.engine.packs import load_pack
from advisor.engine.runner import run_rules
rule = load_pack({str(pack)!r}).rules[0]
fact = {{"fact": "op", "id": "op:1", "index": 1, "op": "Pow_1", "op_type": "Pow", "out_kl": float({str(value)!r})}}
print("findings", [f.id for f in run_rules([rule], [fact]).findings])
""")
    assert status == 0 and "findings ['pow-in-fp16@1']" in out, out


def test_upstream_a_ruleset_number_in_exponent_form_is_refused():
    status, out = isolated(RAW + """
d.create_ruleset("t", json.dumps({"r": {"all": [{"m": {"$and": [{"fact": "op"}, {"$gt": {"v": 1e-06}}]}}]}}))
print("created")
""")
    assert status != 0 and "created" not in out, out


@pytest.mark.parametrize(("threshold", "fires", "silent"), [("0.000001", 2e-6, 5e-7), ("1.0e+20", 3e20, 5e19),
                                                            ("-1.0e-7", 0.0, -1e-6)])
def test_wrapper_writes_rule_numbers_positionally(tmp_path, threshold, fires, silent):
    # Condition numbers of any magnitude: the 1e-4..1e15 limit rule authors had is gone.
    pack = make_pack(tmp_path, GOOD_RULE.replace("dtype: float16\nemit", f"out_kl: {{gt: {threshold}}}\nemit"))
    status, out = isolated(f"""
from advisor.engine.packs import load_pack
from advisor.engine.runner import run_rules
rule = load_pack({str(pack)!r}).rules[0]
for value in ({fires!r}, {silent!r}):
    fact = {{"fact": "op", "id": "op:1", "index": 1, "op": "Pow_1", "op_type": "Pow", "out_kl": value}}
    print(value, len(run_rules([rule], [fact]).findings))
""")
    assert status == 0, out
    assert f"{fires!r} 1" in out and f"{silent!r} 0" in out, out


def test_a_number_yaml_reads_as_text_gets_a_hint(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace("dtype: float16\nemit", "out_kl: {gt: 1e20}\nemit"))
    assert any("'1e20' is not a number (YAML reads a number like 1e20 as text: write 1.0e+20)" in p
               for p in problems_of(pack))


def test_upstream_a_fact_no_rule_matches_loses_the_batch():
    status, out = isolated("""
from durable import engine
host = engine.Host()
seen = []
host.register_rulesets({"t": {"r": {"all": [{"m": {"fact": "op"}}], "run": lambda c: seen.append(c.m.id)}}})
try:
    host.assert_facts("t", [{"id": "a", "fact": "op"}, {"id": "n", "fact": "network"}])
except engine.MessageNotHandledException:
    print("not handled, fired", seen)
""")
    assert status == 0 and "not handled, fired []" in out, out


def test_wrapper_handles_facts_no_rule_matches(tmp_path):
    pack = make_pack(tmp_path)
    status, out = isolated(f"""
from advisor.engine.packs import load_pack
from advisor.engine.runner import run_rules
rule = load_pack({str(pack)!r}).rules[0]
facts = [{{"fact": "network", "id": "network"}},
         {{"fact": "op", "id": "op:1", "index": 1, "op": "Pow_1", "op_type": "Pow", "dtype": "float16"}}]
print("findings", [f.id for f in run_rules([rule], facts).findings])
""")
    assert status == 0 and "findings ['pow-in-fp16@1']" in out, out


def test_upstream_an_identical_fact_twice_is_refused():
    status, out = isolated("""
from durable import engine
host = engine.Host()
host.register_rulesets({"t": {"r": {"all": [{"m": {"fact": "op"}}], "run": lambda c: None}}})
host.assert_facts("t", [{"fact": "op", "v": 1}])
try:
    host.assert_facts("t", [{"fact": "op", "v": 1}])
except engine.MessageObservedException:
    print("observed")
""")
    assert status == 0 and "observed" in out, out


def test_wrapper_runs_the_same_facts_again(tmp_path):
    # Each run has its own ruleset (deleted after), and findings asserted back carry unique ids.
    pack = make_pack(tmp_path)
    status, out = isolated(f"""
from advisor.engine.packs import load_pack
from advisor.engine.runner import run_rules
rule = load_pack({str(pack)!r}).rules[0]
fact = {{"fact": "op", "id": "op:1", "index": 1, "op": "Pow_1", "op_type": "Pow", "dtype": "float16"}}
print("runs", [len(run_rules([rule], [fact]).findings) for _ in range(3)])
""")
    assert status == 0 and "runs [1, 1, 1]" in out, out


def test_wrapper_never_sends_ordering_joins_and_survives_many_rulesets():
    # Ordering joins inside an $and corrupted memory (found with AddressSanitizer; a plain build does
    # not crash reliably, so there is no upstream reproduction). Every built-in explanation rule,
    # over many findings, in 30 rulesets of one process: the joins match the reference matcher's.
    status, out = isolated("""
from pathlib import Path
from advisor.engine.packs import load_pack
from tests.engine.reference import run_reference
from advisor.engine.runner import run_rules
from advisor.engine.durable_host import encode_json
rules = [r for r in load_pack(Path("rules/core")).rules if r.explain]
kinds = ["fp16_overflow", "input_mismatch", "problem_node", "single_point_deviation", "rgb_bgr_swap"]
facts = [{"fact": "finding", "id": f"f{i}", "kind": kinds[i % 5], "index": i * 7 % 40, "root_cause": i % 3 > 0,
          "inputs_agree": i % 2 == 0} for i in range(60)]
for text in (encode_json([a.all for r in rules for a in r.compile_when()]),):
    assert all(op not in text for op in ('"$gt"', '"$gte"', '"$lt"', '"$lte"')), "ordering join sent"
same = all(sorted(run_rules(rules, facts).every_explanation()) == sorted(run_reference(rules, facts).explanations)
           for _ in range(30))
print("same", same)
""")
    assert status == 0 and "same True" in out, out
