"""Expressions over a job's resolved config, for fix values computed from the user's own numbers.

The grammar is a small safe subset of Python: numbers, dotted config keys (``data.train_batch_size``),
``+ - * / //``, parentheses, and ``min``, ``max``, ``ceil``, ``gcd``, ``lcm``. It is parsed with :mod:`ast` and
evaluated by walking the tree; nothing is ever passed to ``eval``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping


def _int_fn(fn: Callable[[int, int], int]) -> Callable[..., float]:
    def call(*args: float) -> float:
        if any(not float(a).is_integer() for a in args):
            raise ExprError("gcd/lcm take whole numbers")
        return float(fn(*(int(a) for a in args)))

    return call


_FUNCS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "gcd": _int_fn(math.gcd),
    "lcm": _int_fn(math.lcm),
}
_BINOPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
}


class ExprError(ValueError):
    pass


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id not in _FUNCS:
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"not an expression: {exc.msg}") from None
    return tree.body


def _walk(node: ast.expr, key: Callable[[str], float | None]) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    dotted = _dotted(node)
    if dotted is not None:
        return key(dotted)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _walk(node.left, key), _walk(node.right, key)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Div | ast.FloorDiv) and b == 0:
            return None
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _walk(node.operand, key)
        return None if v is None else -v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        args = [_walk(a, key) for a in node.args]
        if not args or any(a is None for a in args):
            return None
        return _FUNCS[node.func.id](*args)
    raise ExprError(f"unsupported syntax: {ast.dump(node)[:80]}")


def expr_keys(text: str) -> list[str]:
    """The config keys ``text`` reads, in order; raises :class:`ExprError` if it is not a valid expression."""
    keys: list[str] = []

    def collect(k: str) -> float:
        if k not in keys:
            keys.append(k)
        return 1.0

    _walk(_parse(text), collect)
    return keys


def evaluate(text: str, values: Mapping[str, float]) -> float | None:
    """``text`` evaluated with ``values`` (key → number); None when a key it needs has no value."""
    return _walk(_parse(text), values.get)
