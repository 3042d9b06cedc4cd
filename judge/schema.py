"""Parse plain data (from TOML) into typed, frozen dataclasses that reject unknown keys.

Standard library only: ``practice/judge.py`` and the practice pack need nothing but torch,
so pydantic (which the web app uses) is not available here. Supported field types: str,
int, float, bool, Literal[...], nested dataclasses, and tuples of those
(``tuple[X, ...]``), each optionally ``| None``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, TypeVar

C = TypeVar("C")


class SchemaError(ValueError):
    """Data that does not fit the schema; the message names the key and what is wrong."""


def parse(cls: type[C], data: Any, where: str) -> C:
    """Build ``cls`` from ``data``. ``where`` prefixes messages (e.g. ``problem.toml``)."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise SchemaError(f"{prefix}expected a table, got {_kind(data)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SchemaError(f"{prefix}unknown key {unknown[0]!r} "
                          f"(allowed: {', '.join(sorted(fields))})")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, f in fields.items():
        key = f"{where}.{name}" if where else name
        if name in data:
            values[name] = _convert(hints[name], data[name], key)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise SchemaError(f"{key}: required key is missing")
    return cls(**values)


def _kind(v: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(v), type(v).__name__)


def _convert(tp: Any, v: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if v is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _convert(inner, v, key)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if v not in allowed:
            raise SchemaError(f"{key}: {v!r} is not one of {', '.join(map(repr, allowed))}")
        return v
    if origin is tuple:
        if not isinstance(v, list):
            raise SchemaError(f"{key}: expected an array, got {_kind(v)}")
        (inner, _) = typing.get_args(tp)
        return tuple(_convert(inner, x, f"{key}[{i}]") for i, x in enumerate(v))
    if dataclasses.is_dataclass(tp):
        return parse(tp, v, key)  # type: ignore[arg-type]
    if tp is bool:
        if not isinstance(v, bool):
            raise SchemaError(f"{key}: expected true or false, got {_kind(v)}")
        return v
    if tp is int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise SchemaError(f"{key}: expected an integer, got {_kind(v)}")
        return v
    if tp is float:
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise SchemaError(f"{key}: expected a number, got {_kind(v)}")
        return float(v)
    if tp is str:
        if not isinstance(v, str):
            raise SchemaError(f"{key}: expected a string, got {_kind(v)}")
        return v
    raise TypeError(f"schema type {tp!r} is not supported")  # a bug in the schema itself
