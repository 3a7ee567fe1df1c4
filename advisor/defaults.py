"""Defaults the command line states in its help and the stages apply, in a module that imports
nothing: ``advisor COMMAND --help`` shows them without loading the stages that use them (pandas,
jinja2, the rule engine), and each stage takes them from here.
"""

from __future__ import annotations

#: Report formats written when --format is not given (advisor/report).
DEFAULT_FORMATS: tuple[str, ...] = ("html", "md", "json", "txt")

# Op facts handed to the rules at most (--max-op-facts). Only ops some rule may match become facts,
# and the places go round the rules (advisor/facts/select.py), so the cap thins out the long tail of
# each rule. Set from measurement: each op fact costs ~0.6 ms end to end with its findings and their
# reports (the rules alone ~0.06 ms, benchmarks/engine_scale.py). A 1M-row msprobe summary comparison
# of a training step, replicated from a real one with thousands of independent overflow onsets, ran
# 9.3 s at 5,000 (3,334 errors judged) against 18.7 s at 20,000; real comparisons rarely have that
# many ops a rule may match (docs/how-it-judges.md).
DEFAULT_MAX_OP_FACTS = 5000

#: File names advisor batch --scan takes for comparison results (advisor/batch/scan.py).
DEFAULT_PATTERN = "result_*.csv"

#: Where advisor batch writes when no output folder is given, and the history database in it.
DEFAULT_OUTPUT = "advisor-batch"
HISTORY_FILE = "history.sqlite"
