"""Launch-rule rewriting in the workbench's expression language (Python syntax, via ``ast``).

The rules are the kernel folder's grid/block strings; a transform that changes how much work
a block does scales the divisor of the grid's ``ceil_div`` (or ``(X + L - 1) // L``) by name.
"""

from __future__ import annotations

import ast


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
    """``rule`` with every ``ceil_div(X, old)`` made ``ceil_div(X, new)``; None if none."""
    tree = ast.parse(rule, mode="eval")
    fix = _Divisor(ast.parse(old, mode="eval").body, ast.parse(new, mode="eval").body)
    out = fix.visit(tree)
    return ast.unparse(out) if fix.hits else None


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
