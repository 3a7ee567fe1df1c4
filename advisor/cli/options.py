"""The analysis options ``advisor run`` and ``advisor batch --scan`` share, declared once (like
Polygraphy's reusable option groups): the same flags, metavars and help in both commands.

``run`` registers them with their defaults. ``batch`` registers them without (``None``), so it can
tell what the command line gave: a manifest sets analysis options itself, and ``--scan`` puts only
the given ones on top of the project settings (advisor/batch/jobs.py).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ..defaults import DEFAULT_FORMATS, DEFAULT_MAX_OP_FACTS
from ..inputfiles import input_path


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)   # argparse keywords but the default
    default: Any = None                                      # advisor run's default
    group: str = "judging"                                   # advisor run --help's group (run.py)

    @property
    def dest(self) -> str:
        return self.settings.get("dest") or self.flags[0].lstrip("-").replace("-", "_")


ANALYSIS_OPTIONS: tuple[Option, ...] = (
    Option(("--rules",), {"action": "append", "type": input_path, "metavar": "PACK",
                          "help": "extra rule pack (folder with pack.yaml, or a single YAML file); repeatable"}, []),
    Option(("--no-builtin-rules",), {"action": "store_true", "help": "use only the packs given with --rules"},
           False),
    Option(("--input-nodes",), {"metavar": "A;B", "help": "names of the network's input ops, separated by ';' "
                                                          "(default: Data ops, else the first op)"}, "",
           group="evidence"),
    Option(("--threshold",), {"action": "append", "metavar": "[DTYPE.]METRIC=VALUE",
                              "help": "override a threshold, e.g. cosine=0.995 or float16.cosine=0.98; repeatable"},
           []),
    Option(("--set",), {"action": "append", "dest": "params", "metavar": "RULE.PARAM=VALUE",
                        "help": "override a rule parameter; repeatable"}, []),
    Option(("--disable",), {"action": "append", "metavar": "RULE", "help": "do not fire this rule; repeatable"}, []),
    Option(("--severity",), {"action": "append", "metavar": "RULE=LEVEL",
                             "help": "change a rule's severity (error, warning, info); repeatable"}, []),
    Option(("--lang",), {"choices": ("en", "zh"), "help": "report language (default: en)"}, "en", group="output"),
    Option(("--format",), {"metavar": "LIST", "help": "comma-separated report formats (default: "
                                                      f"{','.join(DEFAULT_FORMATS)})"}, ",".join(DEFAULT_FORMATS),
           group="output"),
    Option(("--comparison-format",), {"metavar": "NAME",
                                      "help": "force the input format instead of detecting it from the header"},
           group="inputs"),
    Option(("--max-op-facts",), {"type": int, "metavar": "N",
                                 "help": f"most op facts handed to the rules (default: {DEFAULT_MAX_OP_FACTS}); the "
                                         "inputs, the (worst) output and the first and last entry are always kept, "
                                         "and the report counts what was left out"}, DEFAULT_MAX_OP_FACTS),
)


def add_analysis_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, defaults: bool,
                         groups: dict[str, argparse._ArgumentGroup] | None = None) -> None:
    """Register the shared options; ``defaults``: with advisor run's defaults, else ``None`` (not given).
    ``groups``: each option goes to the group its ``group`` names (advisor run --help), else to ``parser``."""
    for option in ANALYSIS_OPTIONS:
        default = option.default if defaults else None
        if isinstance(default, list):
            default = list(default)          # argparse appends to its default: a fresh list per parser
        (groups or {}).get(option.group, parser).add_argument(*option.flags, default=default, **option.settings)
