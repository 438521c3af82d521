"""FAST_DIV: fp32 divisions as ``__fdividef``, a knob of compute-bound per-element kernels.

An IEEE fp32 division is a reciprocal approximation, a few fused multiply-adds and a test
that branches to a slow path for extreme operands: about ten instructions, and a branch
that splits the items' interleaved code (ITEMS_PER_THREAD) into blocks the compiler
schedules one at a time. ``__fdividef(a, b)`` is a reciprocal and a multiply, within 2 ulp
for ``|b|`` in [2^-126, 2^126] (and 0 above it). This is what nvcc's ``-prec-div=false``
does for a whole file; here it is one knob, apart from FAST_MATH (the gate may keep one and
refuse the other: a Newton step divides by a slope that may be small, a library call's
argument may not be). ``FAST_DIV = 0`` is the kernel as written.

Only a division in the repeated work (in a loop of the kernel, or in a function the kernel
calls in a loop) that the parse proves fp32 is touched: each leaf of both operands a ``float``
local, parameter or file constant, an element of an array declared ``float`` (in the
function, its class for a method, or the file: ``a[q][q]`` of ``float a[3][3]``), a float
literal (``f`` suffix), an integer literal, an fp32 math call, or such a value cast to
``float`` (``s / (float)k``, a series' term over its int counter); no other cast, no other
memory access (through a pointer), no ``double`` anywhere; and at least one
float leaf (so C's conversions make it a float division); a macro counts as the literal it
pastes when every definition of it is the same ``f``-suffixed literal. The
functions called in a loop include those they call in turn. A division an earlier FAST_MATH
rewrite already owns (``1.0f / sqrtf(x)``, ``e / r`` of a root) is left to it.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.analysis import inside_loop, text, walk
from workbench.templater.item_objects import method_name
from workbench.templater.item_state import declarator_name
from workbench.templater.plan import Plan
from workbench.templater.purity import FLOAT_CALLS

NAME = "FAST_DIV"
_MACRO = (f"#if {NAME}\n#define WB_DIV(a, b) __fdividef((a), (b))\n#else\n"
          "#define WB_DIV(a, b) ((a) / (b))\n#endif")
#: fp32 math calls (a ``float`` result): the ``f``-suffixed functions and the intrinsics
_FP32_CALLS = frozenset(c for c in FLOAT_CALLS if c.endswith("f") or (c.startswith("__") and
                        not c.startswith(("__d", "__half", "__bfloat"))))


def apply_fastdiv(plan: Plan, functions: dict[str, Node]) -> bool:
    """Route every fp32 division in ``functions`` (name -> body) through ``WB_DIV``; True
    when one was."""
    if NAME in plan.params:
        return False
    constants = {**_macro_types(plan.source.tree.root_node),
                 **_types(plan.source.tree.root_node, top_only=True)}
    count = 0
    per_helper: list[str] = []
    looped = _called_in_loops(plan.body, functions)
    folded = _file_constants(plan.source.tree.root_node)
    for name, body in functions.items():
        before = count
        fn = body.parent
        # a method's object: its data members (a class's field declarations) are its own
        members = _types(fn.parent, top_only=True) if fn is not None and \
            fn.parent is not None and fn.parent.type == "field_declaration_list" else {}
        types = {**constants, **members,
                 **_types(fn if fn is not None else body, top_only=False)}
        for n in walk(body):
            if n.type == "binary_expression" and \
                    text(n.child_by_field_name("operator")) == "/" and \
                    (name in looped or inside_loop(n, body)) and \
                    _fp32_division(plan, n, types):
                if _folded(n, folded):
                    plan.note(NAME, False, f"`{text(n)[:50]}` divides constants: the "
                              "compiler folds it, so it is no knob", n)
                    continue
                _rewrite(plan, n)
                count += 1
            elif n.type == "binary_expression" and \
                    text(n.child_by_field_name("operator")) == "/" and \
                    (name in looped or inside_loop(n, body)) and _double_leaf(n, types):
                plan.note(NAME, False, f"`{text(n)[:50]}` is a double division "
                          f"(`{_double_leaf(n, types)}` is double): __fdividef is fp32 "
                          "only", n)
        if name != plan.kernel.name and count > before:
            per_helper.append(f"`{name}` {count - before}")
    if not count:
        return False
    plan.helper(_MACRO)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the {count} fp32 division(s) as __fdividef "
                                         "(2 ulp; 0 for divisors above 2^126; the gate "
                                         "checks the tolerance); 0: IEEE division, as "
                                         "written"}, f"{plan.kernel.line}: fp32 divisions")
    where = f" ({', '.join(per_helper)} in the helpers the kernel calls)" if per_helper else ""
    plan.note(NAME, True, f"{count} fp32 division(s){where} as __fdividef behind the knob "
              "(the gate checks the tolerance)")
    return True


def _called_in_loops(body: Node, functions: dict[str, Node]) -> set[str]:
    """The functions the kernel ``body`` calls inside a loop, and those they call (a helper
    of a helper runs every trip too), among ``functions``."""
    found = {method_name(n) or text(n.child_by_field_name("function")) for n in walk(body)
             if n.type == "call_expression" and inside_loop(n, body)}
    todo = [f for f in found if f in functions]
    while todo:
        for n in walk(functions[todo.pop()]):
            callee = method_name(n) or text(n.child_by_field_name("function")) \
                if n.type == "call_expression" else ""
            if callee in functions and callee not in found:
                found.add(callee)
                todo.append(callee)
    return found


_FLOAT_LITERAL = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fF]")


def _macro_types(root: Node) -> dict[str, str]:
    """Object-like macros whose every definition is the same ``f``-suffixed literal:
    ``#define RATE 0.03f`` is a float (the literal the preprocessor pastes). An integer
    macro stays unknown (its uses are as often sizes a build may define otherwise)."""
    bodies: dict[str, set[str]] = {}
    for n in walk(root):
        macro, value = n.child_by_field_name("name"), n.child_by_field_name("value")
        if n.type == "preproc_def" and macro is not None:
            bodies.setdefault(text(macro), set()).add(
                text(value).strip().strip("()").strip() if value is not None else "")
    return {name: "float" for name, found in bodies.items()
            if len(found) == 1 and _FLOAT_LITERAL.fullmatch(next(iter(found)))}


def _types(scope: Node, *, top_only: bool) -> dict[str, str]:
    """Name -> declared type of the plain scalar declarations (and parameters, and a
    class's data members) in ``scope``, a local array's with one ``[]`` a dimension
    (``float a[3][3]``: ``float[][]``); a name declared twice with different types is left
    out."""
    found: dict[str, str] = {}
    twice: set[str] = set()
    nodes = scope.named_children if top_only else list(walk(scope))
    for n in nodes:
        if n.type not in ("declaration", "parameter_declaration", "field_declaration"):
            continue
        typ = text(n.child_by_field_name("type"))
        for d in n.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if inner is None:
                continue
            name = declarator_name(inner)
            dims = 0
            while inner.type == "array_declarator" and \
                    (within := inner.child_by_field_name("declarator")) is not None:
                inner, dims = within, dims + 1
            # (a parameter's array is a pointer: its elements are memory)
            plain = inner.type in ("identifier", "field_identifier") and not (
                dims and n.type == "parameter_declaration")
            kind = typ + "[]" * dims if plain else "?"
            if found.get(name, kind) != kind:
                twice.add(name)
            found[name] = kind
    return {k: v for k, v in found.items() if k not in twice}


def _fp32_division(plan: Plan, div: Node, types: dict[str, str]) -> bool:
    left, op, right = (div.child_by_field_name(f) for f in ("left", "operator", "right"))
    if left is None or op is None or right is None:
        return False
    lo, hi = left.end_byte, right.start_byte
    # an edit within the division reaching its operator (an edit around it, such as the
    # items' region, is rendered with this one inside)
    if any(div.start_byte <= e.start and e.end <= div.end_byte and
           ((e.start < hi and e.end > lo) or (e.start == e.end and lo < e.start < hi))
           for e in plan.rw.edits):
        return False  # a FAST_MATH rewrite owns it
    return _kind(div, types) == "float"


def _folded(div: Node, constants: frozenset[str]) -> bool:
    """Every leaf of ``div`` a number literal or a name in ``constants``: the compiler
    divides at build time, so ``__fdividef`` would change nothing a run does."""
    return all(n.type == "number_literal" or (n.type == "identifier" and text(n) in constants)
               for n in walk(div) if n.is_named and not n.named_children)


def _file_constants(root: Node) -> frozenset[str]:
    """Names whose value the compiler knows: a macro whose every definition is one ``f``
    literal (:func:`_macro_types`), and a file-scope ``const`` / ``constexpr`` scalar set
    to a literal (``constexpr float kDt = 0.01f;``)."""
    names = set(_macro_types(root))
    for n in root.named_children:
        if n.type != "declaration" or not any(
                c.type == "type_qualifier" and text(c) in ("const", "constexpr")
                for c in n.children):
            continue
        for d in n.children_by_field_name("declarator"):
            name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if d.type == "init_declarator" and name is not None and \
                    name.type == "identifier" and value is not None and \
                    value.type == "number_literal":
                names.add(text(name))
    return frozenset(names)


def _combine(*kinds: str) -> str:
    """C's arithmetic conversions over fp32 and int: float if any operand is."""
    return "bad" if "bad" in kinds else "float" if "float" in kinds else "int"


def _kind(node: Node, types: dict[str, str]) -> str:
    """"float", "int" or "bad" (anything else: double, a cast, a memory access, an
    unknown name or call) for the value of ``node`` (see the module doc); an element of an
    array declared in ``types`` is its declared element type."""
    t = node.type
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _kind(inner[0], types) if len(inner) == 1 else "bad"
    if t == "binary_expression":
        op = text(node.child_by_field_name("operator"))
        sides = [_kind(c, types) for c in (node.child_by_field_name("left"),
                                            node.child_by_field_name("right"))
                 if c is not None]
        if op in ("+", "-", "*", "/"):
            return _combine(*sides)
        if op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
            return "bad" if "bad" in sides else "int"
        return "int" if sides == ["int", "int"] else "bad"  # %, shifts, bitwise
    if t == "unary_expression":
        op = text(node.child_by_field_name("operator"))
        arg = node.child_by_field_name("argument")
        value = _kind(arg, types) if arg is not None else "bad"
        if op in ("-", "+"):
            return value
        return "int" if value != "bad" and (op == "!" or value == "int") else "bad"
    if t == "conditional_expression":
        parts = [node.child_by_field_name(f) for f in ("condition", "consequence",
                                                        "alternative")]
        if any(p is None for p in parts):
            return "bad"
        cond, yes, no = (_kind(p, types) for p in parts if p is not None)
        return "bad" if cond == "bad" else _combine(yes, no)
    if t == "call_expression":
        callee = node.child_by_field_name("function")
        return "float" if callee is not None and callee.type == "identifier" and \
            text(callee) in _FP32_CALLS else "bad"
    if t == "cast_expression":  # (float)k: an int or float value converted to float
        to, of = node.child_by_field_name("type"), node.child_by_field_name("value")
        return "float" if to is not None and of is not None and \
            _kind_of(text(to)) == "float" and _kind(of, types) != "bad" else "bad"
    if t == "number_literal":
        raw = text(node).lower()
        if raw.startswith("0x"):
            return "int"
        if raw.endswith("f"):
            return "float"
        return "bad" if any(c in raw for c in ".e") else "int"
    if t == "subscript_expression":  # an element of an array of a declared element type
        root, dims = node, 0
        while root.type == "subscript_expression" and \
                (array := root.child_by_field_name("argument")) is not None:
            root, dims = array, dims + 1
        typ = types.get(text(root), "?") if root.type == "identifier" else "?"
        return _kind_of(typ[:-2 * dims]) if typ.endswith("[]" * dims) and \
            not typ.endswith("[]" * (dims + 1)) else "bad"
    if t == "identifier":
        return _kind_of(types.get(text(node), "?"))
    return "bad"


def _double_leaf(node: Node, types: dict[str, str]) -> str:
    """The first leaf of ``node`` that is a ``double``: a cast to it, a name declared
    ``double``, an unsuffixed floating literal; "" when none is."""
    for n in walk(node):
        typ = text(n.child_by_field_name("type")) if n.type == "cast_expression" else \
            types.get(text(n), "") if n.type == "identifier" else ""
        raw = text(n).lower() if n.type == "number_literal" else ""
        if "double" in typ.split() or (raw and not raw.startswith("0x") and
                                       not raw.endswith("f") and any(c in raw for c in ".e")):
            return text(n)
    return ""


def _kind_of(typ: str) -> str:
    """:func:`_kind` of a value declared ``typ``."""
    for word in ("const", "constexpr", "static"):
        typ = typ.replace(word, "")
    typ = typ.strip()
    return "float" if typ == "float" else "int" if typ in ("int", "unsigned") else "bad"


def _rewrite(plan: Plan, div: Node) -> None:
    """``a / b`` -> ``WB_DIV(a, b)``."""
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    assert left is not None and right is not None
    plan.rw.insert(div.start_byte, "WB_DIV(")
    plan.rw.replace_span(left.end_byte, right.start_byte, ", ")
    plan.rw.insert(div.end_byte, ")")

