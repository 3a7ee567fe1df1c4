"""The one way advisor reads YAML (rule packs, knowledge, manifests, mappings, build configs): mappings
remember where every key was, and every error names the file, line and column, raised as the
caller's error class (RulePackError for packs, InputFormatError for inputs, KnowledgeError...).
Nesting deeper than ``nesting.MAX_DEPTH`` and aliases that expand beyond ``nesting.MAX_EXPANDED`` are
refused while composing, before anything is built from the document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import AdvisorError, RulePackError
from .inputfiles import read_input
from .nesting import MAX_DEPTH, MAX_EXPANDED, too_deep

MAX_YAML_BYTES = 16 * 2**20      # packs, manifests, mappings and configs are a few KB; parsing is ~1 s per MB


class LineDict(dict):
    """A mapping from YAML that knows the (line, column) of itself and of each key (1-based)."""

    position: tuple[int, int] = (0, 0)
    key_positions: dict[str, tuple[int, int]]

    def where(self, key: str | None = None) -> tuple[int, int]:
        if key is not None and key in self.key_positions:
            return self.key_positions[key]
        return self.position


class _LineLoader(yaml.SafeLoader):
    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise too_deep(self.name, self.error, line=mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        _check_expansion(node, self.name, self.error)
        return node

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


def _check_expansion(root: yaml.Node, path: str, error: type[AdvisorError]) -> None:
    """Refuse a document whose aliases, expanded, nest deeper than MAX_DEPTH or weigh more than
    MAX_EXPANDED units (a node is 1, a scalar 1 per 64 characters more): each node is weighed once
    (memo), so this is linear in the document even for an alias bomb."""
    weight: dict[int, tuple[int, int]] = {}          # id(node) -> (expanded size, expanded depth)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        if id(node) in weight:
            continue
        children = _children(node)
        if not children_done:
            if id(node) in open_nodes:
                raise error("a YAML alias refers to itself", path=path, line=node.start_mark.line + 1)
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in weight)
            continue
        open_nodes.discard(id(node))
        size = 1 + (len(node.value) // 64 if isinstance(node, yaml.ScalarNode) else 0)
        depth = 1
        for child in children:
            child_size, child_depth = weight[id(child)]
            size += child_size
            depth = max(depth, child_depth + 1)
        if depth > MAX_DEPTH:
            raise too_deep(path, error, line=node.start_mark.line + 1)
        if size > MAX_EXPANDED:
            raise error(f"YAML aliases expand to more than {MAX_EXPANDED:,} values (an alias bomb?)", path=path,
                        line=node.start_mark.line + 1)
        weight[id(node)] = (size, depth)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)


def load_yaml(path: Path, error: type[AdvisorError] = RulePackError) -> Any:
    """Parse a YAML file; any problem becomes ``error`` with the file, line and column."""
    if Path(path).is_dir():
        raise error("is a folder, expected a YAML file", path=path)
    try:
        text = read_input(path, error, max_bytes=MAX_YAML_BYTES, what="YAML file").decode("utf-8")
    except UnicodeDecodeError:
        raise error("not UTF-8 text", path=path) from None
    return parse_yaml(text, path, error)


def parse_yaml(text: str, path: Path, error: type[AdvisorError] = RulePackError) -> Any:
    """Parse YAML text read from ``path`` (named in errors), as :func:`load_yaml` does."""
    try:
        loader = _LineLoader(text)          # the reader refuses control characters here already
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None
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
