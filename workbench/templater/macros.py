"""Object-like integer macros (``#define BLOCK 256``), lifted with every use they govern.

Every transform reads a use of such a macro as the integer it stands for
(:func:`~workbench.templater.analysis.integer_macros`), so ``j += BLOCK``,
``partial[BLOCK]`` and ``blockIdx.x * BLOCK`` are recognised exactly like the literal.
Afterwards, where transforms turned uses of one macro into one parameter, the ``#define``
itself becomes that parameter (``#define BLOCK BLOCK_THREADS``) and the uses keep the
author's name: every use of the macro follows, including the ones no transform had to
recognise (``BLOCK / 32`` warps, ``tid < BLOCK / 2``), because the author's naming says they
are one quantity. A macro whose uses map to different parameters is left as written and
reported. A file-scope integer constant (``constexpr int kTile = 128;``, ``const int``), which
every transform reads as its value too (:func:`.semantic.file_constants`), follows by the
same rule: its definition reads the parameter (``constexpr int kTile = BLOCK_THREADS;``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import _CONSTANTS, text, walk
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Edit


@dataclass(frozen=True)
class IntegerMacro:
    """``#define NAME VALUE`` with an integer VALUE, defined once in the file."""

    name: str
    value: int
    definition: Node  # the preproc_def
    value_node: Node  # its preproc_arg


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def macro_texts(root: Node) -> dict[str, list[str]]:
    """Each object-like macro's name -> the texts it is defined with (one a ``#define``, in
    file order), comments dropped (``#define KR 2  // filter radius`` is ``2``)."""
    out: dict[str, list[str]] = {}
    for node in walk(root):
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if node.type == "preproc_def" and name is not None and value is not None:
            out.setdefault(text(name), []).append(_COMMENT.sub(" ", text(value)).strip())
    return out


def macro_integer(raw: str) -> int | None:
    """The integer a macro's text spells (``256``, ``(64u)``, ``264  // blocks``), or None."""
    body = _COMMENT.sub(" ", raw).strip()
    while body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    try:
        return int(body.rstrip("uUlL"), 0)
    except ValueError:
        return None


def integer_macros(source: CudaSource) -> dict[str, IntegerMacro]:
    """The file's object-like integer macros (a name defined twice, or under ``#if``
    branches more than once, is not one constant and is skipped)."""
    found: dict[str, list[IntegerMacro]] = {}
    for node in walk(source.tree.root_node):
        if node.type != "preproc_def":
            continue
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        number = macro_integer(text(value)) if value is not None else None
        if name is not None and value is not None and number is not None:
            found.setdefault(text(name), []).append(IntegerMacro(text(name), number, node, value))
    return {name: defs[0] for name, defs in found.items() if len(defs) == 1}


def derived_macros(source: CudaSource, known: Mapping[str, int]) -> dict[str, int]:
    """The file's object-like macros whose text is an integer expression of literals,
    ``known`` names and each other (``#define R (K / 2)``, ``#define LINE (BS + 2 * R)``)
    -> their values, for reading only: such a macro is never lifted (:func:`lift_macros`
    lifts literal ones), so it keeps following the names it is written in. C's ``/`` on
    operands that are not negative; a macro defined twice is left out."""
    texts = macro_texts(source.tree.root_node)
    pending = {k: v[0] for k, v in texts.items() if len(v) == 1 and k not in known}
    values = dict(known)
    out: dict[str, int] = {}
    while True:
        got = {k: n for k, t in pending.items() if (n := _int_expression(t, values)) is not None}
        if not got:
            return out
        out.update(got)
        values.update(got)
        pending = {k: t for k, t in pending.items() if k not in got}


_INT_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)|(.))")


#: A cast to an integer type of 32 bits or more (``(unsigned int)``, ``(size_t)``): the
#: binding an inlined helper's template argument gets (``#define N ((unsigned int)(kBlock))``,
#: :mod:`.inline_bind`); read only where the value it casts fits 0 .. 2^31 - 1.
_WIDE_CAST = re.compile(r"\(\s*(?:(?:unsigned|signed|int|long|size_t)\s*)+\)")


def _int_expression(raw: str, names: Mapping[str, int]) -> int | None:
    """The value of ``raw`` (+ - * / and parentheses over integer literals and ``names``,
    wide integral casts), else None: a small recursive-descent reader, nothing is evaluated
    by Python."""
    uncast = _WIDE_CAST.sub(" ", raw)
    if uncast != raw:
        value = _int_expression(uncast, names)
        return value if value is not None and 0 <= value < 2 ** 31 else None
    tokens: list[int | str] = []
    pos = 0
    while pos < len(raw.rstrip()):
        m = _INT_TOKEN.match(raw, pos)
        if m is None or m.end() == pos:
            return None
        number, name, op = m.groups()
        if number is not None:
            tokens.append(int(number, 0))
        elif name is not None:
            if name not in names:
                return None
            tokens.append(names[name])
        elif op in "+-*/()":
            tokens.append(op)
        else:
            return None
        pos = m.end()
    at = 0

    def atom() -> int | None:
        nonlocal at
        if at >= len(tokens):
            return None
        tok = tokens[at]
        at += 1
        if isinstance(tok, int):
            return tok
        if tok == "(":
            v = sum_()
            if v is None or at >= len(tokens) or tokens[at] != ")":
                return None
            at += 1
            return v
        return None

    def product() -> int | None:
        nonlocal at
        v = atom()
        while v is not None and at < len(tokens) and tokens[at] in ("*", "/"):
            op = tokens[at]
            at += 1
            w = atom()
            if w is None or (op == "/" and (w <= 0 or v < 0)):
                return None
            v = v * w if op == "*" else v // w
        return v

    def sum_() -> int | None:
        nonlocal at
        v = product()
        while v is not None and at < len(tokens) and tokens[at] in ("+", "-"):
            op = tokens[at]
            at += 1
            w = product()
            v = None if w is None else v + w if op == "+" else v - w
        return v

    value = sum_()
    return value if at == len(tokens) else None


def lift_macros(plan: Plan, macros: dict[str, IntegerMacro]) -> None:
    """Make each macro, then each file-scope integer constant, the parameter its uses were
    lifted to (see the module doc)."""
    for macro in macros.values():
        uses = plan.uses(macro.name)
        if macro.name in plan.params and not _edited(plan, macro):
            guard_define(plan, macro, macro.value)  # a family named its knob after the macro
            continue  # (conv's BLOCK_X as ``TW``): the -D must win, not be redefined
        if not uses or macro.name in plan.params or _edited(plan, macro):
            continue  # a switch (lift_switches) or lifted already (:mod:`.named`)
        edits, targets = _use_edits(plan, macro.name)
        if not targets:
            plan.note(f"#define {macro.name}", False, f"{macro.name} = {macro.value} governs "
                      "nothing a transform lifted; left as written", macro.definition)
            continue
        param = next(iter(targets))
        if len(targets) > 1 or param not in plan.params or \
                plan.params[param].spec.get("default") != macro.value:
            held = _hold_at_value(plan, macro.name, macro.value, targets)
            plan.note(f"#define {macro.name}", False, f"its uses were lifted to different "
                      f"parameters ({', '.join(sorted(targets))}); left as written, so "
                      + (held or "the gate decides"), macro.definition)
            continue
        plan.rw.discard(edits)  # the uses keep the author's name
        if param == macro.name:  # the parameter is the macro itself: a guarded default
            guard_define(plan, macro, macro.value)
        else:
            plan.rw.replace(macro.value_node, param)
        plan.note(f"#define {macro.name}", True, f"{macro.name} = {macro.value} is {param}: "
                  f"the #define now reads {param}, so its {len(uses)} use(s) follow",
                  macro.definition)
    _follow_file_constants(plan, macros)


def _hold_at_value(plan: Plan, name: str, value: int, targets: set[str]) -> str:
    """Where a constant left as written (a ``#define``, a file-scope constant) is still read
    where no transform rewrote it (in the kernel, or through another constant read there: a
    tile extent ``WIN = (BS + 2 * R)``, a flat thread index ``ty * BS + tx``), a config that
    moves a parameter its other uses were lifted to mixes two sizes: each such parameter is
    held at ``value`` (a constraint), and the reason is returned; "" where every read
    follows its parameter."""
    def unrewritten(constant: str) -> list[Node]:
        return [n for n in plan.uses(constant) if not any(
            e.start <= n.start_byte and n.end_byte <= e.end for e in plan.rw.edits)]

    root = plan.source.tree.root_node
    functions = [(f.start_byte, f.end_byte) for f in walk(root) if f.type == "function_definition"]
    word = re.compile(rf"\b{re.escape(name)}\b")
    through = {text(n) for d in walk(root)
               if d.type in ("preproc_def", "init_declarator")
               and not any(a <= d.start_byte < b for a, b in functions)
               and (n := d.child_by_field_name("name" if d.type == "preproc_def"
                                               else "declarator")) is not None
               and text(n) != name and (v := d.child_by_field_name("value")) is not None
               and word.search(text(v))}
    left = sorted(unrewritten(name) + [n for other in through for n in unrewritten(other)],
                  key=lambda n: n.start_byte)
    held = sorted(t for t in targets if t in plan.params
                  and plan.params[t].spec.get("default") == value)
    if not left or not held:
        return ""
    for t in held:
        plan.constrain(f"{t} == {value}")
    return (f"{', '.join(held)} held at {value}: `{name}` is also read where no transform "
            f"lifted it (line {left[0].start_point.row + 1})")


def _use_edits(plan: Plan, name: str) -> tuple[list[Edit], set[str]]:
    """(the edits that replaced a use of ``name`` in the kernel, the texts they put there)."""
    spans = {(n.start_byte, n.end_byte) for n in plan.uses(name)}
    edits = [e for e in plan.rw.edits if (e.start, e.end) in spans and e.make is None]
    return edits, {e.text for e in edits}


def followed_parameter(plan: Plan, name: str, value: int) -> str | None:
    """The parameter a named constant of ``value`` (a ``#define``, a file-scope constant, a
    qualified member) will read once :func:`lift_macros` and :func:`follow_named` have run:
    the one parameter its uses were lifted to, where its default is ``value``; else None
    (the constant stays as written; a bare enumerator no rule rewrites, one not of a
    file-scope enum, too)."""
    if any(n.type == "enumerator" and text(n.child_by_field_name("name")) == name and
           not _file_scope_enum(n) for n in walk(plan.source.tree.root_node)):
        return None
    _, targets = _use_edits(plan, name)
    param = next(iter(targets)) if len(targets) == 1 else ""
    lifted = plan.params.get(param)
    return param if lifted is not None and lifted.spec.get("default") == value else None


def file_constant_values(plan: Plan, macros: dict[str, IntegerMacro]) -> dict[str, Node]:
    """name -> value node of each file-scope integer constant (``constexpr int``, an
    unscoped enum's enumerator) defined once that the transforms read as its value (not a
    macro's name)."""
    root = plan.source.tree.root_node
    functions = [(n.start_byte, n.end_byte) for n in walk(root)
                 if n.type == "function_definition"]
    known = _CONSTANTS.get() or {}
    found: dict[str, list[Node]] = {}
    for d in walk(root):
        name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
        if d.type == "enumerator":  # enum { BLOCK = 256 }; read by its bare name
            name = d.child_by_field_name("name") if _file_scope_enum(d) else None
        if d.type in ("init_declarator", "enumerator") and name is not None and \
                name.type == "identifier" and value is not None and text(name) in known and \
                text(name) not in macros and not any(a <= d.start_byte < b for a, b in functions):
            found.setdefault(text(name), []).append(value)
    return {name: values[0] for name, values in found.items() if len(values) == 1}


def _file_scope_enum(enumerator: Node) -> bool:
    """Whether ``enumerator`` belongs to an unscoped enum declared at file scope (its bare
    name is the file's constant; a struct's or namespace's enumerator is read qualified)."""
    up = enumerator.parent.parent if enumerator.parent is not None else None
    if up is None or any(c.type in ("class", "struct") for c in up.children):
        return False
    while up is not None and up.type in ("enum_specifier", "declaration"):
        up = up.parent
    return up is not None and up.type == "translation_unit"


def _follow_file_constants(plan: Plan, macros: dict[str, IntegerMacro]) -> None:
    """The macros' rule for file-scope constants: where transforms lifted the uses of one to
    one parameter at its value, its definition reads that parameter and the uses keep the
    author's name, so every use follows (a walk over tiles ``base += kTile`` beside a tile
    ``tile[kTile]`` the block lift resized)."""
    known = _CONSTANTS.get() or {}
    for name, value in file_constant_values(plan, macros).items():
        edits, targets = _use_edits(plan, name)
        param = followed_parameter(plan, name, known[name])
        if any((e.start, e.end) == (value.start_byte, value.end_byte) for e in plan.rw.edits):
            continue  # bound to its parameter already (:func:`.named.bind_block_constants`)
        if param is None:
            if len(targets) > 1:
                held = _hold_at_value(plan, name, known[name], targets)
                plan.note(name, False, f"its uses were lifted to different parameters "
                          f"({', '.join(sorted(targets))}); left as written, so "
                          + (held or "the gate decides"), value)
            continue
        plan.rw.discard(edits)  # the uses keep the author's name
        plan.rw.replace(value, param)
        plan.note(name, True, f"{name} = {known[name]} is {param}: its definition now reads "
                  f"{param}, so its {len(plan.uses(name))} use(s) follow", value)


def _edited(plan: Plan, macro: IntegerMacro) -> bool:
    """Whether a transform already rewrote ``macro``'s definition or value."""
    spans = {(macro.definition.start_byte, macro.definition.end_byte),
             (macro.value_node.start_byte, macro.value_node.end_byte)}
    return any((e.start, e.end) in spans for e in plan.rw.edits)


# -- guarded defaults and the kernel's own #if switches -------------------------------------

_CONDITIONS = ("preproc_if", "preproc_elif")


def guarded(macro: IntegerMacro) -> bool:
    """``#ifndef NAME`` / ``#define NAME v`` / ``#endif``: a default the build may override."""
    parent = macro.definition.parent
    return (parent is not None and parent.type == "preproc_ifdef"
            and text(parent.children[0]) == "#ifndef"
            and text(parent.child_by_field_name("name")) == macro.name)


def guard_define(plan: Plan, macro: IntegerMacro, value: str | int) -> None:
    """Make ``#define NAME v`` a guarded default (``#ifndef NAME`` ...) reading ``value``:
    the template's injected ``#define NAME`` then wins, with no redefinition."""
    if guarded(macro):
        if str(value) != text(macro.value_node).strip():
            plan.rw.replace(macro.value_node, str(value))
        return
    newline = "\n" if text(macro.definition).endswith("\n") else ""
    plan.rw.replace(macro.definition, f"#ifndef {macro.name}\n#define {macro.name} {value}\n"
                                      f"#endif{newline}")


@dataclass
class _Switch:
    name: str
    values: set[int]
    defined_test: list[Node]  # #ifdef / #ifndef / defined(NAME): rewritten to a value test
    value_test: bool  # also read as a value (#if NAME, NAME == k)
    first: Node
    compared: bool = False  # NAME == k somewhere: a value none names takes the #else


def _condition_names(cond: Node, found: dict[str, _Switch], owner: Node) -> set[str]:
    """Record the switch names of one #if/#elif condition; returns names read otherwise
    (a condition the lifter does not model: NAME < 3, NAME * 2, ...)."""
    other: set[str] = set()
    for n in walk(cond):
        if n.type != "identifier":
            continue
        name, parent = text(n), n.parent
        sw = found.setdefault(name, _Switch(name, set(), [], False, owner))
        if parent is not None and parent.type == "preproc_defined":
            sw.defined_test.append(parent)
        elif parent is not None and parent.type == "binary_expression" and \
                text(parent.child_by_field_name("operator")) in ("==", "!=") and \
                (k := macro_integer(text(parent.child_by_field_name("right")))) is not None:
            sw.values.add(k)
            sw.value_test = sw.compared = True
        elif parent is None or parent.type in ("unary_expression", "binary_expression",
                                                "parenthesized_expression", *_CONDITIONS):
            if parent is not None and parent.type == "binary_expression" and \
                    text(parent.child_by_field_name("operator")) not in ("&&", "||"):
                other.add(name)
                continue
            sw.values |= {0, 1}
            sw.value_test = True
        else:
            other.add(name)
    return other


def lift_switches(plan: Plan, macros: dict[str, IntegerMacro]) -> None:
    """Lift each ``#if NAME`` / ``#ifdef NAME`` / ``#if NAME == k`` switch as a choice knob.

    A switch name is one the code never reads as a value (only conditions test it), not a
    reserved or compiler name (``__CUDA_ARCH__``) and not an include guard. Its default is
    the kernel as written: the macro's value, 1 for ``#define NAME`` (empty), 0 when it is
    never defined. ``#ifdef NAME`` becomes ``#if NAME`` (a template always defines its
    parameters), and an unguarded ``#define NAME v`` becomes a guarded default."""
    root = plan.source.tree.root_node
    found: dict[str, _Switch] = {}
    unmodelled: set[str] = set()
    spans: list[tuple[int, int]] = []
    empty_defs: dict[str, Node] = {}
    for n in walk(root):
        if n.type in _CONDITIONS and (cond := n.child_by_field_name("condition")) is not None:
            unmodelled |= _condition_names(cond, found, n)
            spans.append((cond.start_byte, cond.end_byte))
        elif n.type == "preproc_ifdef":
            name_node = n.child_by_field_name("name")
            name = text(name_node)
            body = [c for c in n.named_children if c.type != "comment" and
                    (name_node is None or c.start_byte != name_node.start_byte)]
            if text(n.children[0]) == "#ifndef" and body and body[0].type == "preproc_def" and \
                    text(body[0].child_by_field_name("name")) == name:
                continue  # a guarded default (or an include guard), not a switch
            sw = found.setdefault(name, _Switch(name, set(), [], False, n))
            sw.defined_test.append(n)
            if name_node is not None:
                spans.append((name_node.start_byte, name_node.end_byte))
        elif n.type == "preproc_def" and n.child_by_field_name("value") is None:
            empty_defs.setdefault(text(n.child_by_field_name("name")), n)
    code_uses = {text(n) for n in walk(root) if n.type == "identifier" and
                 not any(a <= n.start_byte < b for a, b in spans) and
                 (n.parent is None or n.parent.type not in ("preproc_def", "preproc_ifdef"))}
    for sw in found.values():
        name = sw.name
        if name.startswith("_") or name in plan.params or name in code_uses or \
                name in unmodelled or _is_include_guard(name, empty_defs):
            continue
        macro = macros.get(name)
        if sw.defined_test and (sw.value_test or (macro is not None and
                                                  name not in empty_defs)):
            plan.note(name, False, f"`{name}` is tested both for being defined and for its "
                      "value; the switch is left as written", sw.first)
            continue
        if sw.defined_test:
            default = 1 if name in empty_defs else 0
            for test in sw.defined_test:
                _value_test(plan, test, name)
            if name in empty_defs:
                d = empty_defs[name]
                plan.rw.replace(d, f"#ifndef {name}\n#define {name} 1\n#endif\n")
            values = [0, 1]
        else:
            if name in empty_defs:
                continue  # `#define NAME` then `#if NAME`: not valid as written
            default = macro.value if macro is not None else 0
            values = sorted(sw.values | {default})
            if sw.compared:  # a value no test names: the #else branch
                values = sorted({*values, next(v for v in range(len(values) + 1)
                                               if v not in values)})
            if macro is not None:
                guard_define(plan, macro, default)
        plan.add_param(name, {"kind": "choice", "values": values, "default": default,
                              "description": f"the kernel's own #if switch {name} "
                                             f"(as written: {default})"},
                       f"{sw.first.start_point.row + 1}: {text(sw.first).splitlines()[0]}")
        plan.note(name, True, f"the kernel's #if switch {name} is a choice of "
                  f"{', '.join(map(str, values))} (as written: {default})", sw.first)


def _is_include_guard(name: str, empty_defs: dict[str, Node]) -> bool:
    return name in empty_defs and name.endswith(("_H", "_H_", "_HPP", "_CUH", "_INCLUDED"))


def _value_test(plan: Plan, node: Node, name: str) -> None:
    """``#ifdef NAME`` -> ``#if NAME``, ``#ifndef NAME`` -> ``#if !NAME``,
    ``defined(NAME)`` -> ``(NAME)``."""
    if node.type == "preproc_defined":
        plan.rw.replace(node, f"({name})")
        return
    directive, name_node = node.children[0], node.child_by_field_name("name")
    assert name_node is not None
    negate = "!" if text(directive) == "#ifndef" else ""
    plan.rw.replace_span(directive.start_byte, name_node.end_byte, f"#if {negate}{name}")



def follow_named(plan: Plan, values: dict[str, int], spelled: dict[str, str],
                 literals: dict[str, tuple[int, int]]) -> None:
    """The rule of :func:`lift_macros` for a named constant a qualified name reads (a
    struct's ``static constexpr int ROWS = 16``, read as ``Tile::ROWS``; an enumerator):
    where transforms turned its uses into one parameter whose default is its value, its
    definition reads that parameter (``ROWS = BLOCK_Y``, at the byte span ``literals`` gives)
    and the uses keep the author's name, so every use follows, the ones no transform had to
    recognise included (``h = Tile::THREADS / 2``, a device helper's). Uses lifted to
    different parameters are reported; ``spelled`` gives each name as the author wrote it."""
    for name, value in values.items():
        uses = plan.uses(name)
        spans = {(n.start_byte, n.end_byte) for n in uses}
        edits = [e for e in plan.rw.edits if (e.start, e.end) in spans and e.make is None]
        targets = {e.text for e in edits}
        written = spelled.get(name, name)
        if not targets or name not in literals:
            continue
        param = next(iter(targets))
        if len(targets) > 1 or param not in plan.params or \
                plan.params[param].spec.get("default") != value:
            plan.note(written, False, f"its uses were lifted to different parameters "
                      f"({', '.join(sorted(targets))}); left as written, so the gate decides",
                      uses[0])
            continue
        plan.rw.discard(edits)  # the uses keep the author's name
        plan.rw.replace_span(*literals[name], param)
        plan.note(written, True, f"{written} = {value} is {param}: its definition now reads "
                  f"{param}, so its {len(uses)} use(s) follow", uses[0])
