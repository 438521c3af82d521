"""What inlining a ``__device__`` body into its kernel must bind: the callee's template and
call parameters, each to what the call site gives it, and the names the callee declares.

Read on the parse only (:mod:`workbench.core.cuda_source`); :mod:`.inline_calls` decides
whether the inlining is legal and writes it. A binding is one of: a *rename* (the callee's
name reads the caller's: a pointer or reference parameter bound to a plain identifier, a
value parameter bound to a caller variable of the same type it never writes, a template
parameter bound to a named integer constant of its type), a *copy* (a ``const`` local of
the parameter's type initialised with the argument, evaluated once, as the call did), a
*define* (a non-type template parameter bound to an integer: ``#define TILE 16``, the record
a ``#define`` the author wrote produces, so every family reads it) or a *type* (a template
type parameter bound to ``float``: substituted where the callee names it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import function_definitions
from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import inside, text, walk, writer

#: Spellings of one integer type, read as one (``unsigned`` is ``unsigned int``).
_ALIASES = {"unsigned": "unsigned int", "signed": "int", "signed int": "int",
            "long int": "long", "long long int": "long long", "short int": "short",
            "unsigned long int": "unsigned long", "unsigned long long int": "unsigned long long",
            "unsigned short int": "unsigned short", "int32_t": "int", "uint32_t": "unsigned int",
            "int64_t": "long", "uint64_t": "unsigned long", "size_t": "unsigned long"}
#: The literal suffix that gives an integer literal a template parameter's type.
_SUFFIX = {"int": "", "short": "", "char": "", "long": "l", "long long": "ll",
           "unsigned int": "u", "unsigned short": "u", "unsigned long": "ul",
           "unsigned long long": "ull"}
_QUALIFIERS = ("const", "volatile", "__restrict__", "__restrict", "restrict")
_DECLARATORS = ("pointer_declarator", "reference_declarator", "array_declarator",
                "init_declarator", "parenthesized_declarator", "function_declarator")


class Refused(WorkbenchError):
    """Inlining is not legal here: ``reason``, about ``node``'s line (internal: it becomes a
    finding, never reaches a user as an exception)."""

    def __init__(self, reason: str, node: Node) -> None:
        super().__init__(reason, reason=reason)
        self.reason = reason
        self.line = node.start_point.row + 1


@dataclass(frozen=True)
class TemplateParam:
    """One parameter of ``template <...>``: a type (``typename T``) or a value (``int TILE``,
    its type normalised), with its default's node."""

    name: str
    is_type: bool
    type_key: str
    default: Node | None
    node: Node


@dataclass(frozen=True)
class CallParam:
    """One parameter of the callee: name, normalised type, pointer/reference, its node."""

    name: str
    type_key: str
    indirect: bool  # a pointer, an array (a pointer) or a reference
    reference: bool
    node: Node  # the parameter declaration
    declarator: Node  # its declarator (the span a copy's declaration takes)
    default: Node | None


def type_key(type_node: Node | None, declarator: Node | None) -> str:
    """A declaration's type without qualifiers, aliases normalised, one ``*`` per pointer or
    array level and ``&`` for a reference (``const float* __restrict__ x`` -> ``float*``)."""
    words = [w for w in text(type_node).split() if w not in _QUALIFIERS]
    base = " ".join(words)
    base = _ALIASES.get(base, base)
    stars = ""
    d = declarator
    while d is not None and d.type in _DECLARATORS:
        if d.type in ("pointer_declarator", "array_declarator"):
            stars += "*"
        elif d.type == "reference_declarator":
            stars += "&"
        d = d.child_by_field_name("declarator") or (d.named_children[0] if d.type in (
            "reference_declarator", "parenthesized_declarator") and d.named_children else None)
    return base + stars


def declarator_name(d: Node | None) -> Node | None:
    """The identifier a declarator chain declares (``*x``, ``x[16]``, ``&x``, ``x = 0``)."""
    while d is not None and d.type != "identifier":
        if d.type not in _DECLARATORS:
            return None
        inner = d.child_by_field_name("declarator")
        if inner is None and d.type in ("reference_declarator", "parenthesized_declarator"):
            inner = next((c for c in d.named_children if c.type != "type_qualifier"), None)
        d = inner
    return d


def declared_counts(node: Node) -> dict[str, int]:
    """Each name a declaration in ``node`` declares (at any depth, a ``for`` loop's own
    included) -> how many times."""
    out: dict[str, int] = {}
    for n in walk(node):
        if n.type == "declaration":
            for d in n.children_by_field_name("declarator"):
                name = declarator_name(d)
                if name is not None:
                    out[text(name)] = out.get(text(name), 0) + 1
    return out


def template_params(outer: Node) -> list[TemplateParam]:
    """The ``template <...>`` parameters of a definition (``outer``: its template
    declaration; none when it is a plain function); refuses a parameter pack."""
    if outer.type != "template_declaration":
        return []
    plist = outer.child_by_field_name("parameters")
    out: list[TemplateParam] = []
    for p in plist.named_children if plist is not None else []:
        if p.type in ("variadic_type_parameter_declaration", "variadic_parameter_declaration"):
            raise Refused(f"its template parameter `{text(p)}` is a pack", p)
        if p.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
            name = p.child_by_field_name("name") or next(
                (c for c in p.named_children if c.type == "type_identifier"), None)
            out.append(TemplateParam(text(name), True, "", p.child_by_field_name("default_type"),
                                     p))
        elif p.type in ("parameter_declaration", "optional_parameter_declaration"):
            decl = p.child_by_field_name("declarator")
            key = type_key(p.child_by_field_name("type"), decl)
            out.append(TemplateParam(text(declarator_name(decl)), False, key,
                                     p.child_by_field_name("default_value"), p))
        else:
            raise Refused(f"its template parameter `{text(p)}` is not a type or an integer", p)
    return out


def call_params(fn: Node) -> list[CallParam]:
    """The callee's parameters in order (``void`` alone: none); refuses ``...``."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out: list[CallParam] = []
    for p in plist.named_children if plist is not None else []:
        if p.type == "variadic_parameter" or text(p) == "...":
            raise Refused("it takes a variable argument list", p)
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        d = p.child_by_field_name("declarator")
        name = declarator_name(d)
        if d is None or name is None:
            if text(p.child_by_field_name("type")) == "void":
                continue
            raise Refused(f"its parameter `{text(p)}` has no name", p)
        key = type_key(p.child_by_field_name("type"), d)
        out.append(CallParam(text(name), key, key.endswith(("*", "&")), key.endswith("&"), p, d,
                             p.child_by_field_name("default_value")))
    return out


def declared(scope: Node) -> dict[str, list[Node]]:
    """Every name declared under ``scope`` (locals, loop variables, parameters) -> the
    identifier nodes that declare it."""
    out: dict[str, list[Node]] = {}
    for n in walk(scope):
        if n.type not in ("declaration", "parameter_declaration", "optional_parameter_declaration",
                          "for_range_loop", "condition_clause"):
            continue
        for d in n.children_by_field_name("declarator"):
            name = declarator_name(d)
            if name is not None:
                out.setdefault(text(name), []).append(name)
    return out


def declared_types(fn: Node) -> dict[str, str]:
    """A function's parameters and locals -> their type (:func:`type_key`); a name declared
    twice with different types is left out (which one a use reads needs scopes)."""
    out: dict[str, str] = {}
    twice: set[str] = set()
    for n in walk(fn):
        if n.type not in ("declaration", "parameter_declaration", "optional_parameter_declaration"):
            continue
        for d in n.children_by_field_name("declarator"):
            name = declarator_name(d)
            if name is None:
                continue
            key = type_key(n.child_by_field_name("type"), d)
            if out.setdefault(text(name), key) != key:
                twice.add(text(name))
    return {k: v for k, v in out.items() if k not in twice}


def names_in(node: Node) -> Iterator[Node]:
    """The identifiers and type names under ``node`` (not members: ``p.x``'s ``x``)."""
    return (n for n in walk(node) if n.type in ("identifier", "type_identifier"))


def written(body: Node, name: str, *, address: bool = True) -> bool:
    """Whether ``body`` assigns ``name``, steps it (``++``) or, with ``address``, takes its
    address (a pointer may write it then)."""
    return any(n.type == "identifier" and text(n) == name and
               (w := writer(n, address=address)) is not None and inside(w, body)
               for n in walk(body))


def addressed(scope: Node, name: str) -> bool:
    """Whether ``scope`` takes ``name``'s address (``&name``): a pointer may then write it."""
    return any(n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "&"
               and text(n.child_by_field_name("argument")) == name for n in walk(scope))


def integer_literal(value: str, key: str) -> str | None:
    """``value`` (an integer literal, ``true``/``false`` for a bool) spelled as a literal of
    the template parameter's type ``key`` (``16`` as ``16u`` for ``unsigned``), or None."""
    if key == "bool" and value in ("true", "false"):
        return value
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)", value)
    if m is None or key not in _SUFFIX:
        return None
    return value if m.group(2) else m.group(1) + _SUFFIX[key]


def signed_int(key: str) -> bool:
    """Whether a parameter of type ``key`` reads a plain ``int`` constant without a change
    of type (a named ``#define`` or ``constexpr int`` stands for it by name)."""
    return key == "int"


def fresh(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``... the first not in ``taken`` (which it joins)."""
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def function_name(fn: Node) -> str:
    """The plain name a ``function_definition`` declares (through pointer and reference
    declarators); empty for anything else or a qualified name."""
    d = fn.child_by_field_name("declarator") if fn.type == "function_definition" else None
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    name = d.child_by_field_name("declarator") if d is not None else None
    return text(name) if name is not None and name.type == "identifier" else ""


def callee_name(call: Node) -> str:
    """The called function's plain name (``f`` of ``f(x)`` and of ``f<16>(x)``; "" for a
    qualified or computed callee)."""
    function = call.child_by_field_name("function")
    if function is not None and function.type == "template_function":
        function = function.child_by_field_name("name")
    return text(function) if function is not None and function.type == "identifier" else ""


def template_arguments(call: Node) -> list[Node]:
    """The template arguments a call names (``<16, float>``)."""
    function = call.child_by_field_name("function")
    args = function.child_by_field_name("arguments") if function is not None and \
        function.type == "template_function" else None
    return list(args.named_children) if args is not None else []


def spelled_targs(call: Node) -> str:
    """The call's template argument list as written (``<16>``; "" when none)."""
    function = call.child_by_field_name("function")
    args = function.child_by_field_name("arguments") if function is not None and \
        function.type == "template_function" else None
    return "" if args is None else flat(args)


def statements(body: Node, comments: bool = False) -> list[Node]:
    """A compound statement's statements (and its comments, with ``comments``)."""
    return [c for c in body.children if c.type not in ("{", "}") and
            (comments or c.type != "comment")]


def flat(node: Node) -> str:
    """``node``'s text on one line."""
    return " ".join(text(node).split())


def words(raw: str, subs: Mapping[str, str]) -> str:
    """``raw`` with each whole word in ``subs`` replaced (a type's or a macro's text)."""
    if not subs:
        return raw
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, subs)) + r")\b")
    return pattern.sub(lambda m: subs[m[1]], raw)


def int_constants(root: Node) -> set[str]:
    """Names of ``int`` constants: macros and unscoped enumerators defined once as a plain
    ``int`` literal, and ``const``/``constexpr int`` with a literal value."""
    values: dict[str, list[str]] = {}
    for n in walk(root):
        if n.type == "preproc_def":
            value = re.sub(r"//[^\n]*|/\*.*?\*/", "", text(n.child_by_field_name("value")),
                           flags=re.S).strip().strip("()").strip()
            values.setdefault(text(n.child_by_field_name("name")), []).append(value)
    for n in walk(root):  # an unscoped enum's enumerator reads as an int where it is bound
        if n.type == "enumerator" and n.child_by_field_name("value") is not None and \
                n.parent is not None and n.parent.parent is not None and not any(
                    c.type in ("class", "struct") for c in n.parent.parent.children):
            values.setdefault(text(n.child_by_field_name("name")), []).append(
                text(n.child_by_field_name("value")))
    ints = {k for k, v in values.items()
            if len(v) == 1 and re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", v[0])}
    for decl in walk(root):
        if decl.type != "declaration" or not {"const", "constexpr"} & {
                text(c) for c in decl.children}:
            continue
        for d in decl.children_by_field_name("declarator"):
            init = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if init is not None and init.type == "number_literal" and text(init).isdigit() and \
                    type_key(decl.child_by_field_name("type"), d) == "int":
                ints.add(text(d.child_by_field_name("declarator")))
    return ints


def file_scope_names(root: Node) -> set[str]:
    """Macros, functions and file-scope declarations: what a callee may read by name."""
    names = {n for n, _ in function_definitions(root)}
    for top in root.children:
        for n in walk(top):
            if n.type in ("preproc_def", "preproc_function_def"):
                names.add(text(n.child_by_field_name("name")))
        if top.type == "declaration":
            names |= set(declared(top))
    return names
