"""`advisor run` and `advisor batch --scan` take the same analysis options, declared once
(advisor/cli/options.py): the same flags, metavars and help; run with its defaults, batch without
(what was not given comes from the project settings or the manifest)."""

from __future__ import annotations

import argparse

from advisor.cli import build_parser
from advisor.cli.options import ANALYSIS_OPTIONS


def _actions(command: str) -> dict[str, argparse.Action]:
    parser = build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {flag: action for action in sub._actions for flag in action.option_strings}


def test_run_and_batch_declare_the_analysis_options_alike():
    run, batch = _actions("run"), _actions("batch")
    for option in ANALYSIS_OPTIONS:
        flag = option.flags[0]
        mine, theirs = run[flag], batch[flag]
        assert (mine.dest, mine.metavar, mine.help, mine.choices, mine.type) == \
            (theirs.dest, theirs.metavar, theirs.help, theirs.choices, theirs.type), flag
        assert theirs.default is None, flag          # batch: "not given", so the manifest or settings decide
        assert mine.default == option.default, flag


def test_a_manifest_batch_refuses_them_by_their_flag(tmp_path, capsys):
    from advisor.cli import main
    manifest = tmp_path / "nightly.yaml"
    manifest.write_text("jobs: []\n", encoding="utf-8")
    assert main(["batch", str(manifest), "--set", "problem-node.min_confidence=0.7", "--lang", "zh"]) == 2
    assert "--set, --lang: only with --scan" in capsys.readouterr().err
