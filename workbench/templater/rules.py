"""Launch-rule rewriting in the workbench's expression language (Python syntax, via ``ast``).

The rules are the kernel folder's grid/block strings; a transform that changes how much work
a block does scales the divisor of the grid's ``ceil_div`` (or ``(X + L - 1) // L``) by name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping


class _Divisor(ast.NodeTransformer):
    def __init__(self, old: ast.expr, new: ast.expr) -> None:
        self.old, self.new, self.hits = ast.dump(old), new, 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "ceil_div" and \
                len(node.args) == 2 and ast.dump(node.args[1]) == self.old:
            self.hits += 1
            node.args[1] = self.new
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        # (X + (L - 1)) // L with a literal L: the long spelling of ceil_div
        right, left = node.right, node.left
        if isinstance(node.op, ast.FloorDiv) and ast.dump(right) == self.old and \
                isinstance(right, ast.Constant) and isinstance(right.value, int) and \
                isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add) and \
                isinstance(left.right, ast.Constant) and left.right.value == right.value - 1:
            self.hits += 1
            return ast.Call(ast.Name("ceil_div", ast.Load()), [left.left, self.new], [])
        return node


def scale_divisor(rule: str, old: str, new: str) -> str | None:
    """``rule`` with every ``ceil_div(X, old)`` made ``ceil_div(X, new)``; None if none (or
    ``old`` is not an expression of the rules' language). ``old`` and ``new`` are CUDA text:
    an integer literal's suffix (``4u``, ``8UL``) is dropped, its value is the rules'."""
    old, new = _plain_ints(old), _plain_ints(new)
    tree = ast.parse(rule, mode="eval")
    try:
        fix = _Divisor(ast.parse(old, mode="eval").body, ast.parse(new, mode="eval").body)
    except SyntaxError:
        return None
    out = fix.visit(tree)
    return ast.unparse(out) if fix.hits else None


def _plain_ints(expr: str) -> str:
    return re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)


def min_cap(rule: str, name: str) -> tuple[str, int] | None:
    """``min(X, L)`` with a literal L -> (``min(X, name)``, L), else None."""
    tree = ast.parse(rule, mode="eval")
    node = tree.body
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "min" and len(node.args) == 2:
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                value = arg.value
                node.args[i] = ast.Name(name, ast.Load())
                return ast.unparse(tree), value
    return None


def literal(rule: str) -> int | None:
    """The rule's value when it is a plain integer literal."""
    try:
        node = ast.parse(rule.strip(), mode="eval").body
    except SyntaxError:
        return None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) \
        else None


class _Substitute(ast.NodeTransformer):
    """Replace the sub-expressions ``match`` accepts with ``new``, counting them."""

    def __init__(self, match: Callable[[ast.AST, ast.AST | None], bool], new: ast.expr) -> None:
        self.match, self.new, self.hits = match, new, 0
        self.parent: ast.AST | None = None

    def visit(self, node: ast.AST) -> ast.AST:
        if self.match(node, self.parent):
            self.hits += 1
            return self.new
        outer, self.parent = self.parent, node
        try:
            return self.generic_visit(node)
        finally:
            self.parent = outer


def _substitute(rule: str, match: Callable[[ast.AST, ast.AST | None], bool],
                name: str) -> str | None:
    tree = ast.parse(rule, mode="eval")
    fix = _Substitute(match, ast.Name(name, ast.Load()))
    out = fix.visit(tree)
    return ast.unparse(out) if fix.hits else None


def _int(node: ast.AST, value: int) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == value


def replace_cap(rule: str, value: int, name: str) -> str | None:
    """``rule`` with each literal ``value`` that is an argument of a ``min(...)`` call made
    ``name`` (``ceil_div(min(1024, x), 32)`` -> ``ceil_div(min(BLOCK_THREADS, x), 32)``)."""
    def cap(node: ast.AST, parent: ast.AST | None) -> bool:
        return _int(node, value) and isinstance(parent, ast.Call) and \
            isinstance(parent.func, ast.Name) and parent.func.id == "min" and node in parent.args
    return _substitute(rule, cap, name)


def replace_divisor(rule: str, value: int, name: str) -> str | None:
    """``rule`` with the literal divisor ``value`` made ``name``, in ``ceil_div(X, value)``
    (and its long spelling) and in ``X // value``; None where there is none."""
    scaled = scale_divisor(rule, str(value), name)
    text = scaled if scaled is not None else rule

    def floor(node: ast.AST, parent: ast.AST | None) -> bool:
        return _int(node, value) and isinstance(parent, ast.BinOp) and \
            isinstance(parent.op, ast.FloorDiv) and parent.right is node
    floored = _substitute(text, floor, name)
    return floored if floored is not None else scaled


def replace_ratio(rule: str, numerator: int, denominator: str, name: str) -> str | None:
    """``rule`` with ``numerator // denominator`` made ``name // denominator``
    (``16 // elem_bytes`` -> ``VEC_BYTES // elem_bytes``); None where there is none."""
    def ratio(node: ast.AST, parent: ast.AST | None) -> bool:
        return _int(node, numerator) and isinstance(parent, ast.BinOp) and \
            isinstance(parent.op, ast.FloorDiv) and parent.left is node and \
            isinstance(parent.right, ast.Name) and parent.right.id == denominator
    return _substitute(rule, ratio, name)


def divided_names(rule: str, numerator: int, denominator: str) -> list[str]:
    """The names X in ``X // (numerator // denominator)`` (``d // (16 // elem_bytes)``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(rule, mode="eval")):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and \
                isinstance(node.left, ast.Name) and isinstance(node.right, ast.BinOp) and \
                isinstance(node.right.op, ast.FloorDiv) and _int(node.right.left, numerator) \
                and isinstance(node.right.right, ast.Name) and \
                node.right.right.id == denominator and node.left.id not in found:
            found.append(node.left.id)
    return found


_C_OPS: dict[type, str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}


def rule_in_c(rule: str, names: Mapping[str, str]) -> str | None:
    """A launch rule as CUDA integer arithmetic (``ceil_div``, ``min``, ``+ - * //`` of
    integers), each name read through ``names`` (a size's name -> the kernel's scalar
    argument that holds it); None where it reads anything else."""
    try:
        tree = ast.parse(rule.strip(), mode="eval").body
    except SyntaxError:
        return None

    def c(n: ast.expr) -> str | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and \
                not isinstance(n.value, bool):
            return str(n.value)
        if isinstance(n, ast.Name):
            return names.get(n.id)
        if isinstance(n, ast.BinOp) and type(n.op) in _C_OPS:
            a, b = c(n.left), c(n.right)
            return None if a is None or b is None else f"({a} {_C_OPS[type(n.op)]} {b})"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and len(n.args) == 2 \
                and not n.keywords:
            a, b = c(n.args[0]), c(n.args[1])
            if a is None or b is None:
                return None
            if n.func.id == "ceil_div":
                return f"(({a} + {b} - 1) / {b})"
            if n.func.id == "min":
                return f"({a} < {b} ? {a} : {b})"
        return None

    return c(tree)


def scalar_sizes(scalars: Mapping[str, object]) -> dict[str, str]:
    """A kernel's scalar arguments by the size each holds (``{"n": "n_elems"}`` from the
    plan's argument -> size map), for :func:`rule_in_c`."""
    return {str(size).strip(): arg for arg, size in scalars.items()}
