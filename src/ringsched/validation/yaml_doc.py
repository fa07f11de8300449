"""YAML user files read safely and with the line of every value.

``read_yaml(path)`` returns a ``YamlDoc``: the plain Python value (dicts, lists, scalars) and
a map from each value's location (``("servers", 0, "gpus")``) to its 1-based line. Refused,
each with one InputError naming the file and the line: a file over ``MAX_YAML_BYTES``, text
that is not UTF-8 or not YAML, more than one document, a duplicate key, a merge key, a tag
other than YAML's plain types (no Python objects), and a document that expands to more than
``MAX_YAML_NODES`` values (an alias bomb is refused while walking, with bounded memory:
composing keeps each anchored node once) or nests deeper than ``MAX_YAML_DEPTH``. The path
itself is checked by ``validation.files`` (a regular file; a byte-order mark is dropped).

Plain numbers are YAML 1.2's (core schema), not YAML 1.1's: decimal integers and floats
(``1e9``, ``.inf``) are numbers; ``0x8``, ``0o17``, ``1_000`` and ``10:5`` are the text as
typed (not hex, octal or base-60 integers), and ``010`` is ten. ``dump_yaml`` writes what
``read_yaml`` and YAML 1.1 readers both read back unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ringsched.errors import InputError
from ringsched.validation.bounds import MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES
from ringsched.validation.files import read_text

_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_INT_12 = re.compile(r"^[-+]?[0-9]+$")
_FLOAT_12 = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_NUMBER_START = list("-+.0123456789")
_COLLECTION_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_PLAIN_TAGS = {"tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "timestamp")}


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2's core-schema numbers in place of YAML 1.1's."""

    def construct_yaml_int(self, node) -> int:
        return int(node.value)  # decimal only: the resolver gives no other form


class _Dumper(yaml.SafeDumper):
    """SafeDumper that also quotes the strings YAML 1.2 reads as numbers (``09``, ``1e9``)."""


_Loader.yaml_implicit_resolvers = {  # YAML 1.1's numbers out
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for _cls in (_Loader, _Dumper):  # YAML 1.2's in (the dumper keeps 1.1's too: it quotes both)
    _cls.add_implicit_resolver(_INT_TAG, _INT_12, _NUMBER_START)
    _cls.add_implicit_resolver(_FLOAT_TAG, _FLOAT_12, _NUMBER_START)
_Loader.add_constructor(_INT_TAG, _Loader.construct_yaml_int)


def dump_yaml(value) -> str:
    """``value`` as block-style YAML, keys in the order given."""
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


@dataclass
class YamlDoc:
    value: object
    lines: dict[tuple, int]
    file: str

    def line_of(self, loc: tuple) -> int | None:
        """The line of ``loc``, else of its nearest enclosing value."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get(())


def location(loc: tuple) -> str:
    """``("jobs", 0, "work", "epochs")`` -> ``jobs[0].work.epochs``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read_yaml(path: str | Path) -> YamlDoc:
    name = str(path)
    text = read_text(path, max_bytes=MAX_YAML_BYTES)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except RecursionError:  # PyYAML's composer recurses once per level of nesting
        raise InputError(f"invalid YAML (nested more than {MAX_YAML_DEPTH} levels deep)", file=name) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise InputError(f"invalid YAML ({e.problem or e.context})", file=name,
                         row=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise InputError(f"invalid YAML ({str(e).splitlines()[0]})", file=name) from None
    finally:
        loader.dispose()
    lines: dict[tuple, int] = {}
    if node is None:
        return YamlDoc(None, lines, name)
    walker = _Walker(name, lines)
    return YamlDoc(walker.build(node, ()), lines, name)


class _Walker:
    def __init__(self, file: str, lines: dict[tuple, int]):
        self.file, self.lines, self.count = file, lines, 0
        self.scalars = _Loader("")

    def fail(self, msg: str, node, loc: tuple):
        raise InputError(msg, file=self.file, row=node.start_mark.line + 1, field=location(loc) or None)

    def build(self, node, loc: tuple):
        self.count += 1
        if self.count > MAX_YAML_NODES:
            self.fail(f"document expands to more than {MAX_YAML_NODES:,} values (nested aliases?)", node, loc)
        if len(loc) > MAX_YAML_DEPTH:
            self.fail(f"nested more than {MAX_YAML_DEPTH} levels deep", node, loc[:MAX_YAML_DEPTH])
        self.lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _COLLECTION_TAGS:
            self.fail(f"unsupported YAML tag {node.tag!r}", node, loc)
        if isinstance(node, yaml.MappingNode):
            out = {}
            for k_node, v_node in node.value:
                if not isinstance(k_node, yaml.ScalarNode) or k_node.tag == "tag:yaml.org,2002:merge":
                    self.fail("keys must be plain scalars (no merge keys or complex keys)", k_node, loc)
                key = self.scalar(k_node, loc)
                if isinstance(key, (list, dict)) or key in out:
                    self.fail(f"duplicate key {key!r}", k_node, (*loc, key))
                self.lines[(*loc, key)] = k_node.start_mark.line + 1
                out[key] = self.build(v_node, (*loc, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]
        return self.scalar(node, loc)

    def scalar(self, node, loc: tuple):
        if node.tag not in _PLAIN_TAGS:
            self.fail(f"unsupported YAML tag {node.tag!r}", node, loc)
        try:
            return self.scalars.construct_object(node)
        except (yaml.YAMLError, ValueError, OverflowError) as e:
            self.fail(f"bad value {node.value!r} ({e})", node, loc)
