"""Typed configs: a pydantic base, YAML loading, dotted overrides and readable errors.

Every run config in pairrl is a tree of `PairrlModel`s. Each field carries a description
and its bounds, so an invalid file fails *before* anything heavy loads, with an error that
names the field, the bad value and what is allowed. Overrides use dotted paths on the
command line: `--set train.lr=1e-6 --set sampling.top_p=0.9`.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = [
    "ConfigError",
    "PairrlModel",
    "apply_overrides",
    "describe_allowed",
    "format_validation_errors",
    "load_config",
    "load_yaml",
    "parse_config",
]

ModelT = TypeVar("ModelT", bound="PairrlModel")


class PairrlModel(BaseModel):
    """Base for every config node: unknown keys are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class ConfigError(ValueError):
    """A config file or override that does not validate. `str(err)` is user-facing."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"invalid config {source}:"] + [f"  - {p}" for p in problems]
        super().__init__("\n".join(lines))


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; errors name the file (and line, where YAML reports one)."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "file not found"
        raise ConfigError(str(path), [f"{what}: {path}"])
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        byte = f"byte {raw[err.start]:#04x} at offset {err.start}"
        raise ConfigError(str(path), [f"not a YAML text file: {byte} is not UTF-8"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(str(path), [f"not valid YAML: {err}"]) from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), [f"top level must be a mapping, got {type(data).__name__}"])
    return data


def apply_overrides(
    data: dict[str, Any], overrides: list[str], model_cls: type[BaseModel] | None = None
) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides to a nested dict (values parsed as YAML scalars).

    With `model_cls`, the schema the dict is for, a value for a text field stays the text
    that was typed: `logging.run_name=007` is the name '007', not the number 7.

    >>> apply_overrides({"train": {"lr": 1.0}}, ["train.lr=1e-6", "seed=3"])
    {'train': {'lr': 1e-06}, 'seed': 3}
    """
    out = _deep_copy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", [f"override {item!r} is not of the form key.path=value"])
        parts = key.strip().split(".")
        value = _parse_scalar(raw)
        if model_cls is not None:
            value = _as_typed_text(model_cls, tuple(parts), raw, value)
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError("--set", [f"override {key!r}: {part!r} is not a section"])
            node = child
        node[parts[-1]] = value
    return out


def parse_config(data: dict[str, Any], model_cls: type[ModelT], source: str = "<config>") -> ModelT:
    """Validate a dict against `model_cls`, turning pydantic errors into a `ConfigError`."""
    try:
        return model_cls.model_validate(data)
    except ValidationError as err:
        raise ConfigError(source, format_validation_errors(err, model_cls)) from None


def format_validation_errors(
    err: ValidationError, model_cls: type[BaseModel], prefix: str = ""
) -> list[str]:
    """One readable line per pydantic error (field, bad value, what is allowed).

    ``prefix`` names where ``model_cls`` sits in a larger file (``recipe.options``).
    """
    lines = [_format_error(e, model_cls) for e in err.errors()]
    return [f"{prefix}.{line}" if prefix else line for line in lines]


def load_config(
    path: str | Path, model_cls: type[ModelT], overrides: list[str] | None = None
) -> ModelT:
    """Load YAML from `path`, apply dotted `overrides`, validate against `model_cls`."""
    data = apply_overrides(load_yaml(path), overrides or [], model_cls)
    return parse_config(data, model_cls, source=str(path))


# --- error formatting -------------------------------------------------------------------


def _format_error(error: Any, model_cls: type[BaseModel]) -> str:
    loc = tuple(error.get("loc", ()))
    dotted = ".".join(str(p) for p in loc) or "<root>"
    kind = error.get("type", "")
    value = error.get("input")
    if kind == "extra_forbidden":
        parent = _model_at(model_cls, loc[:-1])
        allowed = sorted(parent.model_fields) if parent else []
        return f"{dotted}: unknown key; allowed keys here: {', '.join(allowed)}"
    if kind == "missing":
        return f"{dotted}: required field is missing ({describe_allowed(model_cls, loc)})"
    if not loc:  # a rule over the whole file: its message says what; the input is all of it
        return f"{error.get('msg')}"
    return (
        f"{dotted} = {value!r} is invalid: {error.get('msg')}. "
        f"Allowed: {describe_allowed(model_cls, loc)}"
    )


def describe_allowed(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """Human description of a field's type, bounds and purpose, found by its location."""
    parent = _model_at(model_cls, loc[:-1])
    if parent is None or not loc or loc[-1] not in parent.model_fields:
        return "see the schema"
    field = parent.model_fields[loc[-1]]
    parts = [_type_name(field.annotation)]
    for meta in field.metadata:
        for attr, sym in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                parts.append(f"{sym} {bound}")
    text = " ".join(parts)
    if field.description:
        text += f" — {field.description}"
    return text


def _model_at(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    current: Any = model_cls
    for part in loc:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(part)
        if field is None:
            return None
        current = _unwrap_model(field.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap_model(annotation: Any) -> Any:
    for arg in typing.get_args(annotation) or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return annotation


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)$")


def _parse_scalar(raw: str) -> Any:
    # YAML 1.1 reads "1e-6" as a string; on a command line it is always meant as a number.
    if _FLOAT.match(raw.strip()):
        return float(raw)
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def _as_typed_text(model_cls: type[BaseModel], loc: tuple[str, ...], raw: str, value: Any) -> Any:
    """`raw` itself where the field at `loc` takes text but not what YAML read (`007` read
    as 7 for a str field); else `value`. A value the field takes as it is stays."""
    parent = _model_at(model_cls, loc[:-1])
    field = parent.model_fields.get(loc[-1]) if parent is not None else None
    if field is None or isinstance(value, str):
        return value
    annotation = field.annotation
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    members = typing.get_args(annotation) if union else (annotation,)
    if str not in members:
        return value
    if any(_takes_as_is(m, value) for m in members if m is not str):
        return value
    return raw.strip()


def _takes_as_is(member: Any, value: Any) -> bool:
    """Whether a union member `member` takes `value` without reading it as something else
    (a bool is no int here, an int is a float; `list[str]` takes a list). A member of a
    shape not known here takes it: the schema decides."""
    origin = typing.get_origin(member)
    if origin is typing.Literal:
        return value in typing.get_args(member)
    cls = origin or member
    if not isinstance(cls, type):
        return True
    if isinstance(value, bool):
        return cls is bool
    if cls is float:
        return isinstance(value, int | float)
    return isinstance(value, cls)


def _deep_copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _deep_copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_deep_copy(v) for v in data]
    return data
