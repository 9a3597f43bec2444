"""Load a TOML recipe into typed dataclasses, apply ``--set`` overrides, report every error at once.

Validation follows Sample Factory's ``verify_cfg``: nothing stops at the first problem; every error is
collected with its key path (``train.learning_rate: must be > 0, got -1``) and raised together.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from fivectl.config.fields import Schedule
from fivectl.errors import BadInput, ConfigError


def parse_override(text: str) -> tuple[list[str], Any]:
    """``train.learning_rate=1e-4`` -> (["train", "learning_rate"], 1e-4). Values are TOML; bare words are strings."""
    if "=" not in text:
        raise BadInput(f"--set {text!r}: expected key=value, e.g. --set train.learning_rate=1e-4")
    key, raw = text.split("=", 1)
    key, raw = key.strip(), raw.strip()
    if not key:
        raise BadInput(f"--set {text!r}: empty key")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.split("."), value


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    for text in overrides or []:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise BadInput(f"--set {text!r}: {part} is not a section")
            node = child
        node[path[-1]] = value
    return data


def read_toml(path: str | Path) -> dict:
    p = Path(path)
    if not p.exists():
        raise BadInput(f"{p}: no such file")
    if p.is_dir():
        raise BadInput(f"{p}: is a directory, expected a TOML recipe")
    try:
        return tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{p}: unreadable TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{p}: cannot read: {e}") from None


def build(cls: type, data: Any, errors: list[str], path: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``; append ``path: message`` for every problem."""
    if not isinstance(data, dict):
        errors.append(f"{path or '<root>'}: expected a table, got {type(data).__name__}")
        return cls()
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            near = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean {_join(path, near[0])}?)" if near else ""
            errors.append(f"{_join(path, key)}: unknown key{hint}")
    kwargs = {}
    for name, f in fields.items():
        if name not in data:
            continue
        key_path = _join(path, name)
        value = _coerce(hints[name], data[name], errors, key_path)
        if value is _INVALID:
            continue
        _check_range(f, value, errors, key_path)
        kwargs[name] = value
    obj = cls(**kwargs)
    check = getattr(obj, "validate", None)
    if callable(check):
        for msg in check() or []:
            errors.append(msg if ":" in msg.split(" ")[0] else f"{path}.{msg}" if path else msg)
    return obj


_INVALID = object()


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _coerce(tp: Any, value: Any, errors: list[str], path: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp) and tp is not Schedule:
        return build(tp, value, errors, path)
    if tp is Schedule:
        return _coerce_schedule(value, errors, path)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _coerce(args[0], value, errors, path)
    if origin is list:
        (item_tp,) = typing.get_args(tp) or (Any,)
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__} {value!r}")
            return _INVALID
        sub = [_coerce(item_tp, v, errors, f"{path}[{i}]") for i, v in enumerate(value)]
        return _INVALID if any(v is _INVALID for v in sub) else sub
    if origin is dict:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a table, got {type(value).__name__}")
            return _INVALID
        return dict(value)
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    errors.append(f"{path}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    return _INVALID


def _coerce_schedule(value: Any, errors: list[str], path: str) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Schedule.constant(float(value))
    if not isinstance(value, dict):
        errors.append(
            f"{path}: expected a number or a schedule table {{points=[[x, y], ...]}}, got {value!r}"
        )
        return _INVALID
    n_before = len(errors)
    for key in value:
        if key not in ("points", "interp", "unit"):
            errors.append(f"{path}.{key}: unknown key (schedule keys: points, interp, unit)")
    points = value.get("points")
    ok_points = (
        isinstance(points, list)
        and len(points) >= 1
        and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) for v in p)
            for p in points
        )
    )
    if not ok_points:
        errors.append(f"{path}.points: expected a list of [x, y] pairs, got {points!r}")
    elif any(points[i + 1][0] <= points[i][0] for i in range(len(points) - 1)):
        errors.append(f"{path}.points: x values must increase, got {points!r}")
    interp = value.get("interp", "linear")
    if interp not in ("linear", "step"):
        errors.append(f"{path}.interp: must be one of linear, step, got {interp!r}")
    unit = value.get("unit", "samples")
    if unit not in ("samples", "versions"):
        errors.append(f"{path}.unit: must be one of samples, versions, got {unit!r}")
    if len(errors) > n_before:
        return _INVALID
    return Schedule(points=[[float(x), float(y)] for x, y in points], interp=interp, unit=unit)


def _check_range(f: dataclasses.Field, value: Any, errors: list[str], path: str) -> None:
    md = f.metadata
    values = [value] if not isinstance(value, list) else value
    if isinstance(value, Schedule):
        values = [p[1] for p in value.points]
    for v in values:
        if md.get("choices") is not None and v not in md["choices"]:
            near = difflib.get_close_matches(str(v), [str(c) for c in md["choices"]], n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            errors.append(f"{path}: must be one of {', '.join(map(str, md['choices']))}, got {v!r}{hint}")
            return
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        for key, op, ok in (
            ("gt", ">", lambda a, b: a > b),
            ("ge", ">=", lambda a, b: a >= b),
            ("lt", "<", lambda a, b: a < b),
            ("le", "<=", lambda a, b: a <= b),
        ):
            bound = md.get(key)
            if bound is not None and not ok(v, bound):
                errors.append(f"{path}: must be {op} {bound:g}, got {v:g}")
                return


def to_dict(obj: Any) -> Any:
    """A dataclass tree as plain TOML/JSON-ready values (schedules as numbers or tables)."""
    if isinstance(obj, Schedule):
        return obj.to_toml()
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def raise_if(errors: list[str], source: str) -> None:
    if errors:
        raise ConfigError(errors, source)
