"""Defaults the command line states in its help and the stages apply, in a module that imports
nothing: ``advisor COMMAND --help`` shows them without loading the stages that use them (pandas,
jinja2, the rule engine), and each stage takes them from here.
"""

from __future__ import annotations

#: Report formats written when --format is not given (advisor/report).
DEFAULT_FORMATS: tuple[str, ...] = ("html", "md", "json", "txt")

# Op facts handed to the rules at most (--max-op-facts). The selection (advisor/facts/select.py) keeps
# what a verdict needs first, so the cap only thins out the long tail. Set from measurement: the engine
# costs about 1.6 s per 1k op facts, linear to 100k (benchmarks/engine_scale.py), so 20k facts are ~30 s
# of rules at most, and real comparisons rarely have a tenth of that many notable ops
# (docs/how-it-judges.md).
DEFAULT_MAX_OP_FACTS = 20000

#: File names advisor batch --scan takes for comparison results (advisor/batch/scan.py).
DEFAULT_PATTERN = "result_*.csv"

#: Where advisor batch writes when no output folder is given, and the history database in it.
DEFAULT_OUTPUT = "advisor-batch"
HISTORY_FILE = "history.sqlite"
