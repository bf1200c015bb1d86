"""A scenario file's text read as YAML that remembers the line of every key, so that each problem
found in it can be told as ``file:line: key.path: message``."""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml


class ScenarioError(ValueError):
    """A scenario file that cannot be used: one problem per line, each naming file, line and key path
    (``problems`` has them as a list)."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that remembers the line of every mapping key."""

    key_lines: dict[int, tuple[dict, dict]]


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict:
    mapping = {}
    lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        mapping[key] = loader.construct_object(value_node, deep=True)
        lines[key] = key_node.start_mark.line + 1
    loader.key_lines[id(mapping)] = (mapping, lines)
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass
class Document:
    """The parsed file: ``data`` and where each of its keys is."""

    source: str
    data: dict
    key_lines: dict[int, tuple[dict, dict]] = field(repr=False)

    def line(self, path: tuple) -> int:
        """The line of the key at ``path``; for a missing key, the line of the mapping it belongs in;
        for a list item, the line of its first key; 1 for the file as a whole."""
        node: object = self.data
        line = None
        for part in path:
            entry = self.key_lines.get(id(node)) if isinstance(node, dict) else None
            if entry is not None and part in entry[1]:
                line = entry[1][part]
            try:
                node = node[part]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                if entry is not None and entry[1]:
                    line = min(entry[1].values())
                return line or 1
        if isinstance(node, dict) and path and isinstance(path[-1], int):
            entry = self.key_lines.get(id(node))
            if entry is not None and entry[1]:
                line = min(entry[1].values())
        return line or 1

    def problem(self, path: tuple, message: str) -> tuple[int, str]:
        """``(line, "file:line: key.path: message")``, the line first to sort by."""
        line = self.line(path)
        dotted = ".".join(str(p) for p in path) or "(top level)"
        return line, f"{self.source}:{line}: {dotted}: {message}"

    def known_path(self, loc: tuple) -> tuple:
        """A validation error's ``loc`` without the parts that are not keys of the data (pydantic's
        union tags)."""
        out: list = []
        node: object = self.data
        for part in loc:
            try:
                node = node[part]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                if isinstance(node, dict) and part in node.values():
                    continue  # the discriminator's tag, not a key of the file
                if isinstance(node, dict) and part == 0:
                    continue  # a mapping given where a list of them may stand (fleet.cameras)
            out.append(part)
        return tuple(out)


def read(text: str, source: str) -> Document:
    """Parse ``text``; raises :class:`ScenarioError` (with the line) unless it is a YAML mapping."""
    loader = _LineLoader(text)
    loader.key_lines = {}
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        why = " ".join(str(getattr(err, "problem", None) or err).split())
        raise ScenarioError(f"{source}{line}: invalid YAML: {why}") from err
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}:1: a scenario is a mapping with at least a 'name'")
    return Document(source, data, loader.key_lines)
