"""The scenario vectors' checks: `PATH OP VALUE` (spec/vectors/scenarios/README.md)."""

from __future__ import annotations

import json
import operator
import re
from typing import Any, Callable

_CHECK = re.compile(r"^\s*(\S+)\s*(==|!=|>=|<=|>|<)\s*(.+?)\s*$")
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}

_MISSING = object()


def resolve(obj: Any, path: str) -> Any:
    """Dot-separated path into obj; `length` of an array is its length; _MISSING if absent."""
    current = obj
    for part in path.split("."):
        if isinstance(current, list) and part == "length":
            current = len(current)
        elif isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def evaluate(check: str, result: dict[str, Any]) -> tuple[bool, str]:
    """(passed, explanation). A path that does not exist fails."""
    m = _CHECK.match(check)
    if not m:
        raise ValueError(f"not a check: {check!r}")
    path, op, raw = m.groups()
    expected = json.loads(raw)
    actual = resolve(result, path)
    if actual is _MISSING:
        return False, f"{check}: {path} does not exist"
    if op in ("==", "!="):
        if _is_number(actual) and _is_number(expected):
            ok = _OPS[op](actual, expected)
        else:
            ok = _OPS[op](type(actual) is type(expected) and actual == expected, True)
    else:
        if not (_is_number(actual) and _is_number(expected)):
            return False, f"{check}: {path} = {actual!r} cannot be ordered against {expected!r}"
        ok = _OPS[op](actual, expected)
    return ok, f"{check}: {path} = {actual!r}"
