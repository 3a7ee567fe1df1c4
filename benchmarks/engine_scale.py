"""How the rule engine's time grows with the number of notable ops: it must grow linearly.

    python benchmarks/engine_scale.py                    # 1k, 10k and 100k notable ops
    python benchmarks/engine_scale.py --sizes 1000 5000 --budget 2.0

For each size a synthetic but realistic fact set is built, shaped like what ``build_facts`` hands the
rules for a deep network whose input already deviates and whose FP16 overflows start in a few
places (field values copied from the committed scenarios' facts):

* the network fact (its output deviates);
* op 0, the network input, deviating: an ``input_mismatch`` root cause that explains every later
  root cause (``input-mismatch-explains-downstream``, an ordering join);
* every 8th op an error entry (``problem-node``); every 8th, shifted, a hidden entry that inherited
  its error (``problem-node`` with ``inputs_agree: false``);
* ``OVERFLOW_ONSETS`` FP16 overflow onsets spread over the network, each explaining every later
  inherited root cause (``overflow-explains-inherited``) and the problem node at its own op
  (``specific-cause-explains-problem-node``, an equality join);
* every 50th op an absorbed deviation; the rest deviate because their inputs do (no finding);
* as in an msprobe training comparison, the first half of the ops runs forward and the second half
  backward (``direction``), so every forward root cause explains every backward one
  (``forward-explains-backward``: a product of the entries, kept as one group by the engine), and
  every 97th op passes an argument that differs between the runs (``argument_mismatch``, which
  explains every later root cause: ``training-cause-explains-downstream``).

The causes are few and fixed, as in a real network, so the matches the rules ask for (findings and
explanations) grow linearly with the ops; the engine must then too. The whole built-in rule pack runs
(``run_rules``), then ``rank_findings``; the time of both is printed per 1,000 facts. Each size runs
``--repeat`` times (the least time counts: the machine is shared).

durable_rules 2.0.28 keeps asserted facts in fixed-size (512-bucket) hash indexes, so each stored
fact makes the next assert slower; the engine keeps facts no pattern can match out of it
(joins.Prefilter) and asserts the rest in states of ``FACTS_PER_STATE`` facts each (runner.py), so
the printed time, which includes it, should grow linearly too.

Budget: time per 1k facts at the largest size at most ``--budget`` (default 2) times that at the
smallest; otherwise the growth is superlinear and the exit status is 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.engine.loading import load_packs  # noqa: E402
from advisor.engine.ranking import rank_findings  # noqa: E402
from advisor.engine.runner import run_rules  # noqa: E402

DEFAULT_SIZES = (1_000, 10_000, 100_000)
OVERFLOW_ONSETS = 4
BUDGET = 2.0

NETWORK = {"id": "network", "fact": "network", "dtype": "float16", "compute_dtype": "float16", "has_fp16": True,
           "format": "msaccucmp", "output_source": "Node_Output", "output_cosine": 0.740477, "output_red": 0.672082,
           "output_deviates": True, "output_known": True, "consistent": False, "training": False,
           "input_deviates": True}
OP = {"fact": "op", "op_type": "BatchMatMulV2", "dtype": "float16", "tensors": 2, "in_cosine": 0.97,
      "out_cosine": 0.93, "in_red": 0.08, "out_red": 0.21, "in_scale": 0.0, "out_scale": 0.017,
      "out_max_abs_error": 3.48, "out_kl": 0.0145, "is_input": False, "is_output": False, "input_source": "op_type",
      "inputs_known": True, "inputs_from": "input_rows", "inputs_agree": False, "out_deviates": True,
      "error_enters": False, "hidden_entry": False, "out_overflow": False, "inputs_overflow": False,
      "overflow_enters": False, "out_nonfinite": False, "input_deviates": False, "fp16_sensitive": False,
      "downstream_deviating": 1, "param_first": False, "bits_first": False,
      "param_differs": False, "arg_differs": False, "output_deviates": True}


def make_facts(ops: int) -> list[dict[str, Any]]:
    """The network fact and ``ops`` notable op facts (see the module doc)."""
    onsets = {ops * (k + 1) // (OVERFLOW_ONSETS + 1) for k in range(OVERFLOW_ONSETS)}
    facts = [{**NETWORK, "ops": ops, "rows": 2 * ops, "output_op": f"Softmax_{ops - 1}"}]
    for i in range(ops):
        fact = {**OP, "id": f"op:{i}", "index": i, "position": i, "op": f"MatMul_{i}", "golden_ops": f"MatMul_{i}",
                "source_line": i + 2, "downstream_deviating": ops - i}
        if i == 0:
            fact.update(op="input", op_type="Data", is_input=True, input_deviates=True, inputs_known=False,
                        inputs_from="previous_op")
        elif i % 8 == 1 or i in onsets:
            fact.update(error_enters=True, inputs_agree=True, in_cosine=0.9999, in_red=0.001)
        elif i % 8 == 5:
            fact.update(hidden_entry=True)
        elif i % 50 == 3:   # an entry the network recovers from before the next one: absorbed
            fact.update(error_enters=True, inputs_agree=True, in_cosine=0.9999, next_entry_index=i + 2,
                        clean_streak=5, recovered_cosine=0.99995)
        if i in onsets:
            fact.update(overflow_enters=True, out_overflow=True, fp16_sensitive=True, op_type="Pow")
        if i % 97 == 7:
            fact.update(arg_differs=True, arg_tensor=f"MatMul_{i}.input.2", arg_name="transpose_b", arg_npu="True",
                        arg_golden="False", args_differing=1)
        fact["direction"] = "forward" if i < ops // 2 else "backward"
        facts.append(fact)
    return facts


@dataclass
class Measurement:
    ops: int
    facts: int
    findings: int
    explanations: int
    rules_seconds: float
    rank_seconds: float

    @property
    def per_1k(self) -> float:
        return (self.rules_seconds + self.rank_seconds) / self.facts * 1000


def measure(ops: int, rules: list, priorities: dict[str, int], repeat: int) -> Measurement:
    facts = make_facts(ops)
    best: Measurement | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run_rules(rules, facts)
        middle = time.perf_counter()
        rank_findings(result.findings, result.explanations, priorities, result.groups)
        end = time.perf_counter()
        explanations = len(result.explanations) + sum(group.count() for group in result.groups)
        run = Measurement(ops, len(facts), len(result.findings), explanations, middle - start, end - middle)
        if best is None or run.per_1k < best.per_1k:
            best = run
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), metavar="OPS",
                        help="notable op counts, smallest first (default: 1000 10000 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size below 100k ops; the least counts")
    parser.add_argument("--budget", type=float, default=BUDGET,
                        help="largest allowed ratio of time per 1k facts, largest size / smallest (default 2)")
    args = parser.parse_args(argv)
    if len(args.sizes) < 2 or any(size < 1 for size in args.sizes) or args.repeat < 1:
        parser.error("give at least two positive sizes and a positive --repeat")
    rules = load_packs(installed=False).rules
    priorities = {rule.id: rule.priority for rule in rules}
    print(f"rule engine scaling: {len(rules)} built-in rules; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    print(f"{'notable ops':>11}  {'facts':>7}  {'findings':>8}  {'explanations':>12}  {'rules s':>8}  "
          f"{'rank s':>7}  {'s per 1k facts':>14}")
    results = []
    for size in sorted(args.sizes):
        m = measure(size, rules, priorities, args.repeat if size < 100_000 else 1)
        results.append(m)
        print(f"{m.ops:>11,}  {m.facts:>7,}  {m.findings:>8,}  {m.explanations:>12,}  {m.rules_seconds:>8.2f}  "
              f"{m.rank_seconds:>7.3f}  {m.per_1k:>14.4f}", flush=True)
    ratio = results[-1].per_1k / results[0].per_1k
    ok = ratio <= args.budget
    print(f"budget: time per 1k facts at {results[-1].ops:,} ops is {ratio:.2f}x that at {results[0].ops:,} "
          f"(allowed {args.budget:g}x): {'ok' if ok else 'SUPERLINEAR'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
