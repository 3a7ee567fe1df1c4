"""The one way advisor reads YAML (rule packs, knowledge, manifests, mappings, build configs): mappings
remember where every key was, and every error names the file, line and column, raised as the
caller's error class (RulePackError for packs, InputFormatError for inputs, KnowledgeError...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import AdvisorError, RulePackError


class LineDict(dict):
    """A mapping from YAML that knows the (line, column) of itself and of each key (1-based)."""

    position: tuple[int, int] = (0, 0)
    key_positions: dict[str, tuple[int, int]]

    def where(self, key: str | None = None) -> tuple[int, int]:
        if key is not None and key in self.key_positions:
            return self.key_positions[key]
        return self.position


class _LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:
        self.flatten_mapping(node)
        mapping = LineDict()
        mapping.position = (node.start_mark.line + 1, node.start_mark.column + 1)
        mapping.key_positions = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in mapping:
                raise self.error(f"duplicate key '{key}'", path=self.name,
                                    line=key_node.start_mark.line + 1, column=key_node.start_mark.column + 1)
            mapping[key] = self.construct_object(value_node, deep=True)
            mapping.key_positions[str(key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)


def load_yaml(path: Path, error: type[AdvisorError] = RulePackError) -> Any:
    """Parse a YAML file; any problem becomes ``error`` with the file, line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error("file not found", path=path) from None
    except IsADirectoryError:
        raise error("is a folder, expected a YAML file", path=path) from None
    except UnicodeDecodeError:
        raise error("not UTF-8 text", path=path) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", path=path) from None
    return parse_yaml(text, path, error)


def parse_yaml(text: str, path: Path, error: type[AdvisorError] = RulePackError) -> Any:
    """Parse YAML text read from ``path`` (named in errors), as :func:`load_yaml` does."""
    loader = _LineLoader(text)
    loader.name = str(path)
    loader.error = error
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise error(f"invalid YAML: {exc.problem or exc.context}", path=path,
                            line=mark.line + 1 if mark else None,
                            column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None
    finally:
        loader.dispose()
