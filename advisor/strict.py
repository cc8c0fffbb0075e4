"""Files read into their dataclasses, strictly: every field typed as the dataclass says, no
field missing that has no default, no field the dataclass does not have.

The types come from the dataclasses' own annotations (str, int, float, bool, ``Literal[...]``,
``X | None``, ``tuple[X, ...]``, ``tuple[X, Y]``, ``dict[str, X]``, nested dataclasses, and
types the caller knows how to read, such as the plan's checks), so the model is the schema.
Errors are :class:`StrictError` naming where in the file.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from advisor.errors import CachewiseError, Described, codes, what_of

T = TypeVar("T")
INT_LIMIT = 1 << 63


codes({"bad-field": "{why}"})


class StrictError(Described, ValueError):
    """A plan file field is missing, unknown or of the wrong type; the message says where."""

    CODE = "bad-field"


Readers = Mapping[Any, Callable[[Any], Any]]


def load(
    cls: type[T], data: Any, where: str, ignore: frozenset[str] = frozenset(), readers: Readers | None = None
) -> T:
    """An instance of the dataclass ``cls`` from JSON ``data`` (``ignore``: keys written for
    readers, such as ``expected_seconds``, that are not fields; ``readers``: how to read values
    of other types, raising a CachewiseError for a bad one)."""
    if not isinstance(data, dict):
        raise StrictError(f"{where}: expected an object, found {_kind(data)}")
    ignore = ignore | getattr(cls, "COMPUTED", frozenset())  # values the class computes, written for people
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields) - ignore)
    if unknown:
        raise StrictError(f"{where}: unknown field {unknown[0]!r}")
    values = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise StrictError(f"{where}: the field {name!r} is missing")
            continue
        values[name] = _value(hints[name], data[name], f"{where}.{name}", readers or {})
    return cls(**values)


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        tuple: "a list",
        str: "a string",
        bool: "true/false",
        type(None): "null",
    }.get(type(value), "a number")


def _value(hint: Any, value: Any, where: str, readers: Readers) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(inner, value, where, readers)
    if origin is list:
        if not isinstance(value, list | tuple):
            raise StrictError(f"{where}: expected a list, found {_kind(value)}")
        return [_value(args[0], v, f"{where}[{i}]", readers) for i, v in enumerate(value)]
    if origin is tuple:
        if not isinstance(value, list | tuple):  # a list in JSON; a tuple from to_json() unserialised
            raise StrictError(f"{where}: expected a list, found {_kind(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v, f"{where}[{i}]", readers) for i, v in enumerate(value))
        if len(value) != len(args):
            raise StrictError(f"{where}: expected {len(args)} items, found {len(value)}")
        return tuple(_value(a, v, f"{where}[{i}]", readers) for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if origin is dict:
        if not isinstance(value, dict):
            raise StrictError(f"{where}: expected an object, found {_kind(value)}")
        return {str(k): _value(args[1], v, f"{where}.{k}", readers) for k, v in value.items()}
    if origin is typing.Literal:
        if value not in args:
            raise StrictError(f"{where}: expected one of {', '.join(map(repr, args))}, found {value!r}")
        return value
    if hint in readers:
        try:
            return readers[hint](value)
        except CachewiseError as exc:
            raise StrictError(f"{where}: {what_of(exc)}") from None
    if dataclasses.is_dataclass(hint):
        return load(hint, value, where, readers=readers)  # type: ignore[arg-type]
    if hint is bool:
        if not isinstance(value, bool):
            raise StrictError(f"{where}: expected true or false, found {_kind(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise StrictError(f"{where}: expected a whole number, found {_kind(value)}")
        if not -INT_LIMIT <= value < INT_LIMIT:  # what SQLite, the kernel and lvm2 can hold
            raise StrictError(f"{where}: {value} is out of range")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise StrictError(f"{where}: expected a finite number, found {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise StrictError(f"{where}: expected a string, found {_kind(value)}")
        return value
    raise StrictError(f"{where}: cannot read a field of type {hint}")  # pragma: no cover - the model's types
