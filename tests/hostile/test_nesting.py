"""Deep nesting and alias bombs in every YAML/JSON/TOML advisor reads: exit 2 with one line naming the
file, never a RecursionError (exit 3) or gigabytes of memory."""

from __future__ import annotations

import pytest

from advisor.engine.scaffold import scaffold_pack
from advisor.errors import InputFormatError, UsageError
from advisor.nesting import MAX_DEPTH, loads_json, loads_toml
from advisor.yamlfile import parse_yaml

from ..conftest import EXAMPLE

DEEP_YAML = "deep: " + "[" * 400 + "]" * 400 + "\n"                  # ~250 levels broke the loader
DEEP_BLOCK_YAML = "".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300 + "x: 1\n"
DEEP_JSON = "[" * 5000 + "]" * 5000                                   # ~1000 levels broke json.loads
MID_JSON = '{"a": ' * 150 + "1" + "}" * 150                             # parses, but deeper than advisor reads
DEEP_TOML = "a = " + "[" * 2000 + "]" * 2000 + "\n"


def alias_bomb(levels: int = 9) -> str:
    """The billion laughs: ten lists of ten references, nine times over (10^9 strings once expanded)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text", [DEEP_YAML, DEEP_BLOCK_YAML, alias_bomb(), "a: &a [*a]\n",
                                  "a: &a\n  b: *a\n"], ids=["flow", "block", "alias-bomb", "self-list", "self-map"])
def test_the_yaml_reader_refuses_what_would_blow_up(tmp_path, text):
    with pytest.raises(InputFormatError) as caught:
        parse_yaml(text, tmp_path / "x.yaml", InputFormatError)
    assert caught.value.path == str(tmp_path / "x.yaml")
    assert "nested more than" in caught.value.message or "alias" in caught.value.message


def test_ordinary_aliases_and_nesting_still_load(tmp_path):
    text = "defaults: &d {formats: [html, json]}\njobs:\n  - {name: a, <<: *d}\n  - {name: b, <<: *d}\n" + \
        "deep: " + "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2) + "\n"
    data = parse_yaml(text, tmp_path / "m.yaml", InputFormatError)
    assert data["jobs"][1] == {"name": "b", "formats": ["html", "json"]}


@pytest.mark.parametrize("text", [DEEP_JSON, MID_JSON])
def test_the_json_reader_refuses_deep_nesting(tmp_path, text):
    with pytest.raises(InputFormatError, match=f"nested more than {MAX_DEPTH} levels"):
        loads_json(text, tmp_path / "g.json", InputFormatError)


def test_the_toml_reader_refuses_deep_nesting(tmp_path):
    with pytest.raises(UsageError, match=f"nested more than {MAX_DEPTH} levels"):
        loads_toml(DEEP_TOML, tmp_path / "advisor.toml", UsageError)


@pytest.mark.parametrize("name,text", [("build.yaml", DEEP_YAML), ("build.json", DEEP_JSON),
                                       ("bomb.yaml", alias_bomb())])
def test_run_with_a_hostile_build_config(advisor, tmp_path, name, text):
    config = tmp_path / name
    config.write_text(text, encoding="utf-8")
    advisor("run", EXAMPLE, "--config", config, "-o", tmp_path / "out").one_line_error(str(config))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option,name,text", [("--graph", "model.json", DEEP_JSON),
                                              ("--graph", "model.json", MID_JSON),
                                              ("--fusion", "fusion_result.json", DEEP_JSON),
                                              ("--mapping", "map.yaml", DEEP_YAML),
                                              ("--project-config", "advisor.toml", DEEP_TOML)])
def test_run_with_a_deeply_nested_side_file(advisor, tmp_path, option, name, text):
    side = tmp_path / name
    side.write_text(text, encoding="utf-8")
    advisor("run", EXAMPLE, option, side, "-o", tmp_path / "out").one_line_error(str(side))


def hostile_case(text: str) -> str:
    """A third case for the scaffold rule whose one fact carries ``text`` (YAML mapping lines)."""
    body = "".join(f"        {line}\n" for line in text.splitlines())
    return f"  - name: hostile\n    expect: silent\n    facts:\n      - fact: op\n        id: 'op:9'\n{body}"


@pytest.mark.parametrize("command", [["validate"], ["list"], ["docs"], ["test"]])
@pytest.mark.parametrize("text", [DEEP_YAML, alias_bomb()], ids=["deep", "alias-bomb"])
def test_rules_commands_with_a_hostile_rule_file(advisor, tmp_path, command, text):
    """`rules docs` and `rules test` used 1-1.3 GB on the alias bomb; deep nesting was exit 3."""
    pack = scaffold_pack("team", tmp_path)
    rule = next(pack.glob("team-*.yaml"))
    rule.write_text(rule.read_text(encoding="utf-8") + hostile_case(text), encoding="utf-8")
    result = advisor("rules", *command, pack)
    if command == ["validate"]:            # lists every problem, one per line, then a count
        assert result.code == 2 and result.err.startswith(f"{rule}:") and "internal error" not in result.err
    else:
        result.one_line_error(str(rule))


def test_a_deeply_nested_manifest(advisor, tmp_path):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - name: a\n    input: {EXAMPLE}\n    x: " + "[" * 400 + "]" * 400 + "\n",
                        encoding="utf-8")
    advisor("batch", manifest, "-o", tmp_path / "out").one_line_error(str(manifest))


def test_control_characters_in_a_manifest_are_one_line(advisor, tmp_path):
    """Found by the fuzz harness: PyYAML refuses them when the loader is made, outside the old try (exit 3)."""
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - name: a\x02\n    input: {EXAMPLE}\n", encoding="utf-8")
    line = advisor("batch", manifest, "-o", tmp_path / "out").one_line_error(str(manifest))
    assert "unacceptable character" in line
