"""SEPARABLE for apron row windows: a thread's output rows share the window rows'
horizontal sums where the window's weights are a row weight times a column weight.

:mod:`.apron_window` gives a thread's OUT_Y outputs of one column a register window of the
tile. Where the one tile read is a term ``acc += F1 * F2 * ... * tile[..][..];``, the only
statement of two loops with constant bounds (one counter in the read's row, the other in its
column, either loop outside), and every factor ``Fk`` is a constant (a float or integer
literal, or an element of a table with a literal initializer: a kernel-local ``const``
array, or a file-level ``const``/``constexpr``/``__constant__`` one that no
``cudaMemcpyToSymbol`` in the file writes; the name's one declaration in the file),
indexed by a constant expression of the counters, the weight ``W(r, c)`` of every tap is
known exactly (float or int tables: an int product converts to float exactly where it is a
float value). It is separable where ``W(r, c) = wy[r] * wx[c]`` exactly, both factors float values and ``W`` itself exact in
float (so the kernel as written multiplies by exactly ``W``): checked on rationals. Then
SEPARABLE 1 sums each window row once, ``h[k] = sum_c wx[c] * win[k][c]`` in the column
counter's order, and each output adds ``wy[r] * h[oy + row(r)]`` in the row counter's
order: ``(OUT_Y + halo) * width + OUT_Y * rows`` multiply-adds for the thread's outputs
where the kernel as written makes ``OUT_Y * rows * width`` (gauss5 at OUT_Y 8: 100 against
200).

The additions are made in another order (row sums first), so float outputs move by
rounding: the folder's tolerances decide (the gate checks every config), which is why the
knob defaults to 0, the sum as written. SEPARABLE 1 is constrained to the configs where the
window is in use. A table that does not factor, a weight that is not a constant, a table
name declared more than once, a double weight or accumulator are refused with the line.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from tree_sitter import Node

from workbench.templater.analysis import binary, int_value, strip, text, walk
from workbench.templater.apron_window import MAX_WINDOW, Window, WindowRead, loop_range
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names

NAME = "SEPARABLE"
_Weight = Callable[[dict[str, int]], Fraction]


@dataclass(frozen=True)
class Separable:
    """The weighted term and its weights factored: ``wy`` over the row counter's values,
    ``wx`` over the column counter's."""

    stmt: Node  # acc += W * read;
    acc: str
    read: WindowRead
    row_var: str
    rows: range
    col_var: str
    cols: range
    wy: tuple[Fraction, ...]
    wx: tuple[Fraction, ...]


def separable_rows(plan: Plan, w: Window, oy_n: str, ctype: str, rows: str) -> str:
    """The column's row sums (text after its window load) with the weighted term made a sum
    of them under SEPARABLE; empty, the reason noted, where the weights do not factor."""
    try:
        s = analyse_separable(plan, w, ctype)
    except Refused as e:
        plan.note(NAME, False, e.reason, e.node if e.node is not None else w.reads[0].node)
        return ""
    knob = fresh_names(plan, [NAME])[NAME]
    r0, c0 = s.rows.start, s.cols.start
    span, ind = (s.stmt.start_byte, s.stmt.end_byte), " " * s.stmt.start_point[1]
    plan.rw.replace_span(*span, make=lambda r: (
        f"if ({knob} && wb_reuse) {{  // the row's sum, once (at its first column)\n"
        f"{ind}  if ({s.col_var} == {c0}) {s.acc} += wb_sy[{_from(s.row_var, r0)}] * "
        f"wb_hs[wb_oy + {s.read.row}];\n{ind}}} else {{\n{ind}  {r.render(*span)}\n{ind}}}"))
    plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each window row's horizontal sum once for the "
                                         "thread's rows, then the vertical taps over the sums "
                                         "(another order of the float additions: the "
                                         "folder's tolerances decide); 0: the sum as written"},
                   f"{s.stmt.start_point[0] + 1}: {text(s.stmt)}")
    plan.constrain(f"{knob} == 0 or ({oy_n} > 1 and ({rows}) * {w.width} <= {MAX_WINDOW})")
    plan.note(NAME, True, f"the weights of `{text(s.stmt)}` are {_show(s.wy)} (rows) times "
              f"{_show(s.wx)} (columns), exactly: SEPARABLE 1 sums each of the ({rows}) "
              f"window rows once and each of the {oy_n} outputs adds {len(s.rows)} row sums "
              "(floats in another order: within the folder's tolerances, the gate checks "
              "them)", s.stmt)
    return (f"    // {knob}: each window row's horizontal sum, once for the column's rows\n"
            f"    const {ctype} wb_sx[{len(s.cols)}] = {{{', '.join(_lit(v) for v in s.wx)}}};\n"
            f"    const {ctype} wb_sy[{len(s.rows)}] = {{{', '.join(_lit(v) for v in s.wy)}}};\n"
            f"    {ctype} wb_hs[{rows}];\n"
            f"    if ({knob} && wb_reuse) {{\n"
            f"#pragma unroll\n"
            f"      for (int wb_r = 0; wb_r < {rows}; ++wb_r) {{\n"
            f"        {ctype} wb_h = 0.0f;\n"
            f"#pragma unroll\n"
            f"        for (int {s.col_var} = {c0}; {s.col_var} < {s.cols.stop}; ++{s.col_var})\n"
            f"          wb_h += wb_sx[{_from(s.col_var, c0)}] * wb_win[wb_r][{s.read.col}];\n"
            f"        wb_hs[wb_r] = wb_h;\n"
            f"      }}\n"
            f"    }}\n")


def analyse_separable(plan: Plan, w: Window, ctype: str) -> Separable:
    """The window's one weighted term with its weights factored, or Refused saying why."""
    if ctype != "float":
        raise Refused(f"the tile holds {ctype}: row sums are made for float tiles")
    if len(w.reads) != 1:
        raise Refused(f"{len(w.reads)} tile reads after the barrier: one weighted term is "
                      "factored", w.reads[0].node)
    read = w.reads[0]
    top = read.node
    while top.parent is not None and (top.parent.type == "parenthesized_expression" or
                                      (binary(top.parent) or (None, ""))[1] == "*"):
        top = top.parent
    assign = top.parent
    if assign is None or assign.type != "assignment_expression" or \
            text(assign.child_by_field_name("operator")) != "+=" or \
            assign.parent is None or assign.parent.type != "expression_statement":
        raise Refused(f"`{text(read.node)}` is not a term `acc += weight * tile[..][..];`",
                      read.node)
    stmt, acc = assign.parent, text(assign.child_by_field_name("left"))
    if not re.fullmatch(r"[A-Za-z_]\w*", acc) or _declared_type(plan, acc) != "float":
        raise Refused(f"the sum `{acc}` is not a float local", stmt)
    inner = _only_in(stmt)
    outer = _only_in(inner) if inner is not None else None
    got = [loop_range(n) for n in (inner, outer) if n is not None]
    if len(got) != 2 or any(g is None for g in got):
        raise Refused(f"`{text(stmt)}` is not the only statement of two loops with constant "
                      "bounds", stmt)
    ranges = dict(g for g in got if g is not None)
    names = set(re.findall(r"[A-Za-z_]\w*", read.row)), set(re.findall(r"[A-Za-z_]\w*",
                                                                       read.col))
    row_var = next((v for v in ranges if names[0] == {v} and v not in names[1]), None)
    col_var = next((v for v in ranges if names[1] == {v} and v not in names[0]), None)
    if row_var is None or col_var is None or row_var == col_var:
        raise Refused(f"`{text(read.node)}`: one loop counter must give its row and the other "
                      "its column", read.node)
    factors = [_weight(plan, f) for f in _factors(top) if f != read.node]
    table: dict[tuple[int, int], Fraction] = {}
    for r, c in product(ranges[row_var], ranges[col_var]):
        value = Fraction(1)
        for f in factors:
            value *= f({row_var: r, col_var: c})
            if not _is_f32(value) or abs(value) >= 2 ** 31:
                raise Refused(f"the weight of `{text(stmt)}` at {row_var} = {r}, {col_var} = "
                              f"{c} ({value}) is rounded in float as written", stmt)
        table[(r, c)] = value
    wy, wx = _factor(table, ranges[row_var], ranges[col_var], stmt)
    return Separable(stmt, acc, read, row_var, ranges[row_var], col_var, ranges[col_var],
                     wy, wx)


def _factor(table: dict[tuple[int, int], Fraction], rows: range, cols: range,
            stmt: Node) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """``wy``, ``wx`` with ``table[r, c] == wy[r] * wx[c]`` exactly, both float values."""
    pivot = next(((r, c) for (r, c), v in table.items() if v != 0), None)
    if pivot is None:
        raise Refused(f"every weight of `{text(stmt)}` is zero", stmt)
    wx = tuple(table[(pivot[0], c)] for c in cols)
    wy = tuple(table[(r, pivot[1])] / table[pivot] for r in rows)
    for (r, c), v in table.items():
        y, x = wy[r - rows.start], wx[c - cols.start]
        if not _is_f32(y) or y * x != v:
            raise Refused(f"the weights of `{text(stmt)}` do not factor as a row weight times "
                          f"a column weight (row {r}, column {c}: {v}, not "
                          f"{y} * {x})", stmt)
    return wy, wx


def _factors(node: Node) -> list[Node]:
    """The operands of a product ``a * (b * c) * d``, parentheses dropped."""
    node = strip(node)
    parts = binary(node)
    if parts is None or parts[1] != "*":
        return [node]
    return _factors(parts[0]) + _factors(parts[2])


def _weight(plan: Plan, node: Node) -> _Weight:
    """A constant factor as a function of the counters' values, or Refused."""
    if node.type == "number_literal":
        value = _number(node)
        return lambda env: value
    if node.type == "subscript_expression":
        idx: list[Node] = []
        base = node
        while base.type == "subscript_expression":
            i = base.child_by_field_name("index") or next(
                (c for c in base.named_children[1:] if c.type != "comment"), None)
            if i is None:
                break
            idx.insert(0, i.named_children[0] if i.type == "subscript_argument_list" else i)
            base = base.child_by_field_name("argument") or base.named_children[0]
        values = _table(plan, text(base), node)

        def at(env: dict[str, int]) -> Fraction:
            v: object = values
            for i in idx:
                k = _index(i, env)
                if k is None or not isinstance(v, list) or not 0 <= k < len(v):
                    raise Refused(f"`{text(node)}`'s index `{text(i)}` is not a constant "
                                  "expression of the loop counters inside the table", node)
                v = v[k]
            if not isinstance(v, Fraction):
                raise Refused(f"`{text(node)}` is not one element of its table", node)
            return v
        return at
    raise Refused(f"`{text(node)}` is not a constant weight (a literal or an element of a "
                  "table with a literal initializer)", node)


def _table(plan: Plan, name: str, use: Node) -> list[object]:
    """The literal initializer of the constant float table ``name`` (nested lists): its one
    declaration in the file (a parameter or another declaration of the name is refused)."""
    data = plan.source.data.decode("utf-8", "replace")
    decls = [d for d in walk(plan.source.tree.root_node)
             if d.type in ("declaration", "parameter_declaration", "field_declaration")
             and any(_declarator_name(x) == name or text(x) == name
                     for x in d.children_by_field_name("declarator"))]
    if len(decls) != 1:
        raise Refused(f"`{text(use)}` reads {name}, declared {len(decls)} times in the file: "
                      "not one table with a literal initializer", use)
    decl = decls[0]
    init = next((d for d in decl.children_by_field_name("declarator")
                 if d.type == "init_declarator" and _declarator_name(d) == name), None)
    if decl.type != "declaration" or init is None:
        raise Refused(f"`{text(use)}` reads {name}, not a table with a literal initializer", use)
    head = text(decl)[:text(decl).find(name)]
    at_file = decl.parent is not None and decl.parent.type == "translation_unit"
    if text(decl.child_by_field_name("type")) not in ("float", "int"):
        raise Refused(f"the table {name} is not float or int", decl)
    if not ("const" in head.split() or "constexpr" in head.split() or
            (at_file and "__constant__" in head.split() and
             f"cudaMemcpyToSymbol({name}" not in data.replace(" ", ""))):
        raise Refused(f"the table {name} may be written (not const)", decl)
    value = init.child_by_field_name("value")
    got = _literals(value) if value is not None else None
    if not isinstance(got, list):
        raise Refused(f"the table {name}'s initializer is not literal numbers", decl)
    return got


def _index(node: Node, env: dict[str, int]) -> int | None:
    """An index's value at the counters ``env`` (literals, integer macros, + - *; the
    counters may be negative), else None."""
    node = strip(node)
    if text(node) in env:
        return env[text(node)]
    if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        arg = node.child_by_field_name("argument")
        inner = None if arg is None else _index(arg, env)
        return None if inner is None else -inner
    parts = binary(node)
    if parts is None:
        return int_value(node)
    a, b = _index(parts[0], env), _index(parts[2], env)
    if a is None or b is None or parts[1] not in ("+", "-", "*"):
        return None
    return a + b if parts[1] == "+" else a - b if parts[1] == "-" else a * b


def _declarator_name(d: Node) -> str:
    inner = d.child_by_field_name("declarator")
    while inner is not None and inner.type == "array_declarator":
        inner = inner.child_by_field_name("declarator")
    return text(inner) if inner is not None else ""


def _literals(node: Node) -> object:
    if node.type == "initializer_list":
        return [_literals(c) for c in node.named_children if c.type != "comment"]
    node = strip(node)
    neg = node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-"
    arg = node.child_by_field_name("argument") if neg else node
    if arg is None or arg.type != "number_literal":
        return None
    value = _number(arg)
    return -value if neg else value


def _number(node: Node) -> Fraction:
    """A float (``f`` suffix) or integer literal, exactly; a double one is Refused."""
    raw = text(node).lower().rstrip("ul")
    if any(ch in raw for ch in ".e") and not raw.startswith("0x"):
        if not raw.endswith("f"):
            raise Refused(f"`{text(node)}` is a double: the weight is not computed in float",
                          node)
        return Fraction(raw[:-1])
    return Fraction(int(raw, 0))


def _is_f32(v: Fraction) -> bool:
    try:
        return Fraction(struct.unpack("f", struct.pack("f", float(v)))[0]) == v
    except OverflowError:
        return False


def _from(var: str, start: int) -> str:
    """The table slot of counter ``var`` whose first value is ``start``."""
    return var if start == 0 else f"{var} - ({start})"


def _lit(v: Fraction) -> str:
    return f"{float(v)!r}f"


def _show(ws: tuple[Fraction, ...]) -> str:
    return "(" + " ".join(str(v) for v in ws) + ")"


def _only_in(node: Node) -> Node | None:
    """The loop whose body is ``node`` alone (braces optional)."""
    up = node.parent
    if up is not None and up.type == "compound_statement":
        if len([c for c in up.named_children if c.type != "comment"]) != 1:
            return None
        up = up.parent
    return up if up is not None and up.type == "for_statement" else None


def _declared_type(plan: Plan, name: str) -> str | None:
    for d in walk(plan.body):
        if d.type == "declaration" and any(_declarator_name(x) == name or text(x) == name
                                           for x in d.children_by_field_name("declarator")):
            return text(d.child_by_field_name("type"))
    return None
