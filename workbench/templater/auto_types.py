"""The concrete type of a local declared ``auto``, for a transform that gives it one copy per
item (``const auto x = xy[2 * i];`` -> ``float x[ITEMS];``).

C++ deduces ``auto`` only for one object from its initialiser: ``auto x[N]`` is not C++
(nvcc: "auto type cannot appear in top-level array type"), so a transform that turns such a
local into an array must write the type out. It is the type C++ deduces for a plain value
(references dropped, top-level ``const`` dropped, arrays decayed to pointers), read from the
initialiser on the parse (:func:`value_type`):

- literals by their form and suffix (``0.5f`` float, ``2.0`` double, ``16`` int, ``1u``
  unsigned int, ``true`` bool); ``sizeof`` size_t; ``threadIdx.x`` and the other launch
  geometry unsigned int;
- a name by its declaration: a kernel parameter, a local of the kernel, a variable of the
  file (a ``__constant__`` table, a ``constexpr``), an object-like macro by its body, a
  local already given a type here (``known``), another ``auto`` local by its own
  initialiser;
- ``p[i]`` and ``*p`` the element of a pointer or array; ``v.x`` the component of a CUDA
  vector (``float2``, ``int4``, ..); ``p + i`` a pointer;
- casts (``(float)v``, ``static_cast<int>(..)``), ``make_float2(..)`` its vector;
- operators by C++'s usual arithmetic conversions (integer promotion, then the wider or
  unsigned operand: ``int * unsigned int`` is unsigned int, ``float * int`` float,
  ``float * 2.0`` double); comparisons and ``!``, ``&&``, ``||`` bool; ``?:`` both sides'
  common type;
- calls: CUDA single-precision math (``expf``, ``fmaxf``, ``__expf``) float; <cmath>'s
  unsuffixed math (``exp``, ``fmax``) float on float arguments, double on double ones;
  ``min``/``max``/``abs`` on one type that type, on integers their common type;
  ``__ldg(&x)`` x's type; conversion intrinsics (``__float2int_rn``) their target; a
  ``__device__`` function of the file (one definition, no template) its declared result.

Anything else (a lambda's or functor's call, a template, an unknown typedef, mixed
arguments where an overload decides) is not known: None. :func:`typed_autos` then leaves
the ``auto`` as written, and ITEMS_PER_THREAD (:func:`item_types`) refuses with the line
rather than guess; any other family that would copy it (regtile, conv, centre, ..) is undone
and refused with the line by :class:`~.auto_refuse.AutoGuard`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from workbench.core.cuda_source import (
    CudaSource,
    CudaSourceError,
    KernelSignature,
    function_definitions,
    parse_cuda,
)
from workbench.templater.analysis import ancestors, in_lambda, strip, text, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.vector import Illegal

_Typer = Callable[[Node], "str | None"]


class Scope(Protocol):
    """Where names are looked up: the file and the kernel (a plan is one)."""

    @property
    def source(self) -> CudaSource: ...

    @property
    def kernel(self) -> KernelSignature: ...


@dataclass(frozen=True)
class Parsed:
    """A :class:`Scope` of one parse."""

    source: CudaSource
    kernel: KernelSignature

#: integer types by (rank, unsigned, bits), the names C++ spells them with
_INTEGERS = {
    "bool": (0, False, 1), "char": (1, False, 8), "signed char": (1, False, 8),
    "unsigned char": (1, True, 8), "short": (2, False, 16), "unsigned short": (2, True, 16),
    "int": (3, False, 32), "unsigned int": (3, True, 32), "long": (4, False, 64),
    "unsigned long": (4, True, 64), "long long": (5, False, 64),
    "unsigned long long": (5, True, 64)}
_FLOATING = ("float", "double")
#: spellings -> the name above (size_t and the fixed-width types as on CUDA's 64-bit hosts)
_ALIASES = {
    "unsigned": "unsigned int", "signed": "int", "signed int": "int", "short int": "short",
    "long int": "long", "long long int": "long long", "unsigned long int": "unsigned long",
    "unsigned long long int": "unsigned long long", "size_t": "unsigned long",
    "ptrdiff_t": "long", "int8_t": "signed char", "uint8_t": "unsigned char",
    "int16_t": "short", "uint16_t": "unsigned short", "int32_t": "int",
    "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long",
    "uint": "unsigned int"}
_VECTOR = re.compile(r"(u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])")
#: words of a declaration that are not its type
_STORAGE = frozenset({"__constant__", "__device__", "__shared__", "__managed__", "static",
                      "constexpr", "extern", "register", "inline", "__restrict__",
                      "__restrict", "restrict", "__forceinline__", "__noinline__",
                      "__host__", "__global__"})
_GEOMETRY = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
_COMPARE = frozenset({"<", ">", "<=", ">=", "==", "!=", "&&", "||"})
_SHIFT = frozenset({"<<", ">>"})
_ARITH = frozenset({"+", "-", "*", "/", "%", "&", "|", "^"})
#: <cmath>'s functions C++ (and CUDA) overload for float: float on float arguments, double
#: on double ones (mixed or integer arguments: not told here)
_UNSUFFIXED = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "sin",
    "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "fabs", "fmax", "fmin", "fma", "floor", "ceil", "trunc", "round", "rint",
    "nearbyint", "copysign", "fmod", "remainder", "hypot", "erf", "erfc", "lgamma", "tgamma",
    "fdim"})
#: CUDA's single-precision math and intrinsics (float whatever the arguments' types)
_FLOAT_MATH = frozenset({*(f + "f" for f in _UNSUFFIXED), "rsqrtf", "exp10f", "sinpif",
                         "cospif", "erfinvf", "erfcinvf", "normcdff", "normcdfinvf", "rcbrtf",
                         "__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__powf",
                         "__sinf", "__cosf", "__tanf", "__fdividef", "__saturatef",
                         "__tanhf", "__exp2f", "__int2float_rn", "__uint2float_rn",
                         "__fsqrt_rn", "__frsqrt_rn", "__frcp_rn", "__fmaf_rn", "__fmul_rn",
                         "__fadd_rn", "__fsub_rn", "__fdiv_rn", "__half2float",
                         "__bfloat162float"})
#: CUDA's double-precision intrinsics
_DOUBLE_MATH = frozenset({"__dmul_rn", "__dadd_rn", "__dsub_rn", "__ddiv_rn", "__drcp_rn",
                          "__dsqrt_rn", "__fma_rn"})
_CONVERT = re.compile(r"__(float|double|int|uint|ll|ull)2(float|double|int|uint|ll|ull)_r[nzdu]")
_CONVERTED = {"float": "float", "double": "double", "int": "int", "uint": "unsigned int",
              "ll": "long long", "ull": "unsigned long long"}
_INT_CALLS = {"__popc": "int", "__popcll": "int", "__clz": "int", "__clzll": "int",
              "__ffs": "int", "__ffsll": "int", "__mul24": "int", "__mulhi": "int",
              "__umul24": "unsigned int", "__umulhi": "unsigned int",
              "__brev": "unsigned int"}
_MAX_DEPTH = 8


def type_name(written: str) -> str | None:
    """``const float *`` -> ``const float*``, ``size_t`` -> ``unsigned long``, ``float4``
    as written; None for a type this module does not know (a struct, a template)."""
    words = [w for w in written.replace("*", " * ").split() if w not in _STORAGE]
    stars = words.count("*")
    const = "const" in words[:len(words) - stars] and stars > 0
    # the const of a pointer's target stays, any other cv is the variable's own
    base = " ".join(w for w in words if w not in ("*", "const", "volatile", "struct"))
    base = _ALIASES.get(base, base)
    if base not in _INTEGERS and base not in _FLOATING and not _VECTOR.fullmatch(base):
        return None
    return ("const " if const else "") + base + "*" * stars


def value_type(plan: Scope, value: Node, known: Mapping[str, str], depth: int = 0
               ) -> str | None:
    """The type ``auto v = value;`` gives ``v`` (see the module doc), or None."""
    if depth > _MAX_DEPTH:
        return None

    def again(n: Node) -> str | None:
        return value_type(plan, n, known, depth + 1)

    node = strip(value) if value.type == "parenthesized_expression" else value
    kind = node.type
    if kind == "number_literal":
        return _literal(text(node))
    if kind in ("true", "false"):
        return "bool"
    if kind == "char_literal":
        return "char"
    if kind == "sizeof_expression":
        return "unsigned long"
    if kind == "identifier":
        return _name_type(plan, text(node), known, depth)
    if kind == "field_expression":
        obj = node.child_by_field_name("argument")
        if text(obj) in _GEOMETRY:
            return "unsigned int"
        whole = again(obj) if obj is not None else None
        vec = _VECTOR.fullmatch(whole or "")
        field = text(node.child_by_field_name("field"))
        return _component(vec.group(1)) if vec and field in "xyzw" and text(
            node.child_by_field_name("operator")) == "." else None
    if kind in ("subscript_expression", "pointer_expression"):
        inner = node.child_by_field_name("argument")
        if inner is None:
            return None
        if kind == "pointer_expression" and text(node.child_by_field_name("operator")) != "*":
            return None  # `&x`: a pointer to a local, not a value
        base = again(inner)
        return base.removeprefix("const ")[:-1] if base and base.endswith("*") else None
    if kind == "cast_expression":
        return type_name(text(node.child_by_field_name("type")))
    if kind == "unary_expression":
        op = text(node.child_by_field_name("operator"))
        inner = node.child_by_field_name("argument")
        if op == "!":
            return "bool"
        found = again(inner) if inner is not None else None
        return _promoted(found) if found is not None and not found.endswith("*") else None
    if kind == "binary_expression":
        return _binary(node, again)
    if kind == "conditional_expression":
        sides = [t for n in (node.child_by_field_name("consequence"),
                             node.child_by_field_name("alternative"))
                 if n is not None and (t := again(n)) is not None]
        return None if len(sides) != 2 else sides[0] if sides[0] == sides[1] else \
            _common(sides)
    if kind == "call_expression":
        return _call_type(plan, node, again)
    return None


def _binary(node: Node, again: _Typer) -> str | None:
    op = text(node.child_by_field_name("operator"))
    if op in _COMPARE:
        return "bool"
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    a = again(left) if left is not None else None
    b = again(right) if right is not None else None
    if a is None or b is None:
        return None
    pointers = [s for s in (a, b) if s.endswith("*")]
    if pointers:  # p + i, i + p, p - i: the pointer; p - q is a difference (ptrdiff_t)
        if op == "-" and len(pointers) == 2:
            return "long"
        return pointers[0] if len(pointers) == 1 and op in ("+", "-") and \
            (a == pointers[0] or op == "+") and \
            _promoted(b if a.endswith("*") else a) in _INTEGERS else None
    if op in _SHIFT:
        return _promoted(a)
    return _common([a, b]) if op in _ARITH else None


def _call_type(plan: Scope, node: Node, again: _Typer) -> str | None:
    fn = node.child_by_field_name("function")
    listed = node.child_by_field_name("arguments")
    args = [a for a in (listed.named_children if listed is not None else [])
            if a.type != "comment"]
    if fn is not None and fn.type == "template_function":  # static_cast<int>(..)
        name = text(fn.child_by_field_name("name"))
        targs = fn.child_by_field_name("arguments")
        if name in ("static_cast", "reinterpret_cast", "const_cast") and targs is not None \
                and targs.named_child_count == 1:
            return type_name(text(targs.named_children[0]))
        return None
    name = text(fn)
    if name == "__ldg" and len(args) == 1 and args[0].type == "pointer_expression" and \
            (inner := args[0].child_by_field_name("argument")) is not None:
        return again(inner)  # __ldg(&p[i]): the element
    if name.startswith("make_") and _VECTOR.fullmatch(name[5:]):
        return name[5:]
    if (m := _CONVERT.fullmatch(name)) is not None:
        return _CONVERTED[m.group(2)]
    if name in _INT_CALLS:
        return _INT_CALLS[name]
    if name in _FLOAT_MATH:
        return "float"
    if name in _DOUBLE_MATH:
        return "double"
    types = [again(a) for a in args]
    if name in _UNSUFFIXED:  # <cmath>'s overloads: float on floats, double on doubles
        return types[0] if types and types[0] in _FLOATING and len(set(types)) == 1 else None
    if name in ("min", "max", "abs") and types and all(t is not None for t in types):
        same = len(set(types)) == 1  # CUDA's overloads: one type, or integers of any two
        return types[0] if same else _common(types) if all(  # type: ignore[arg-type]
            _promoted(t) in _INTEGERS for t in types) else None
    defined = plan.source.function_definitions().get(name)
    overloads = sum(1 for n, _ in function_definitions(plan.source.tree.root_node)
                    if n == name)
    if defined is None or overloads != 1:
        return None
    template = next((t for t in ancestors(defined) if t.type == "template_declaration"), None)
    if template is not None:
        return _deduced_return(template, defined, types)
    return type_name(" ".join(text(c) for c in defined.children
                              if c.type in ("primitive_type", "type_identifier",
                                            "sized_type_specifier", "type_qualifier")))


def _deduced_return(template: Node, defined: Node, types: list[str | None]) -> str | None:
    """The return type of a call to a function template that returns one of its type
    parameters, ``T``, taken by value or by reference (``T x``, ``const T& x``): the type
    deduced from the arguments at those parameters (``ema(m[i], gi, hp.beta1)`` with
    ``m[i]`` a float: float). Every deduction of T agrees where the call compiles, so one
    known argument type suffices; two known that differ, none known, a return type that is
    no bare type parameter, or a count of arguments other than the parameters': None."""
    listed = template.child_by_field_name("parameters")
    names = {text(c) for p in (listed.named_children if listed is not None else [])
             if p.type == "type_parameter_declaration" for c in p.named_children
             if c.type == "type_identifier"}
    returned = defined.child_by_field_name("type")
    declarator = defined.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    if returned is None or text(returned) not in names or params is None or \
            any(c.type == "type_qualifier" or (c.type.endswith("_declarator") and
                c.type != "function_declarator") for c in defined.children):
        return None
    declared = [p for p in params.named_children if p.type == "parameter_declaration"]
    if len(declared) != len(types) or len(declared) != params.named_child_count:
        return None
    deduced = set()
    for param, arg in zip(declared, types, strict=True):
        kind = param.child_by_field_name("type")
        inner = param.child_by_field_name("declarator")
        if kind is None or text(kind) != text(returned) or arg is None or inner is None:
            continue
        if inner.type == "reference_declarator" and text(inner).startswith("&&"):
            return None  # a forwarding reference deduces a reference type
        if inner.type in ("identifier", "reference_declarator"):
            deduced.add(arg)
    return deduced.pop() if len(deduced) == 1 else None


def _name_type(plan: Scope, name: str, known: Mapping[str, str], depth: int) -> str | None:
    """A name's type by its declarations in the file: one type however many there are
    (``for (auto k = 0; ..)`` twice), else None (a name declared with two types, or not)."""
    if name in known:
        return known[name]
    found = {type_name(p.type_text) for p in plan.kernel.params if p.name == name}
    for decl in walk(plan.source.tree.root_node):
        if decl.type == "declaration":
            found |= {_declared_type(plan, decl, d, known, depth)
                      for d in decl.children_by_field_name("declarator")
                      if _declared_as(d) == name}
        elif decl.type == "preproc_def" and text(decl.child_by_field_name("name")) == name:
            found.add(_macro_type(plan, decl, known, depth))  # #define SCALE 0.5f
    return found.pop() if len(found) == 1 else None


def _macro_type(plan: Scope, define: Node, known: Mapping[str, str], depth: int
                ) -> str | None:
    """The type of an object-like macro's body read as one parenthesised expression."""
    body = define.child_by_field_name("value")
    if body is None:
        return None
    try:
        parsed = parse_cuda(f"void wb_f() {{ wb_v = ({text(body)}); }}")
    except CudaSourceError:
        return None
    value = next((n.child_by_field_name("right") for n in walk(parsed.tree.root_node)
                  if n.type == "assignment_expression"), None)
    return value_type(plan, value, known, depth + 1) if value is not None and not any(
        n.type == "ERROR" for n in walk(parsed.tree.root_node)) else None


def _declared_type(plan: Scope, decl: Node, declarator: Node, known: Mapping[str, str],
                   depth: int) -> str | None:
    typ = decl.child_by_field_name("type")
    inner = declarator.child_by_field_name("declarator") \
        if declarator.type == "init_declarator" else declarator
    if typ is None or inner is None:
        return None
    if typ.type == "placeholder_type_specifier":
        value = declarator.child_by_field_name("value") \
            if declarator.type == "init_declarator" else None
        deduced = value_type(plan, value, known, depth + 1) if value is not None else None
        return deduced if placeholder(inner, deduced) is not None else None
    written = " ".join(text(c) for c in decl.children
                       if c.type in ("type_qualifier", "primitive_type", "type_identifier",
                                     "sized_type_specifier"))
    stars = 0  # a pointer's `*`s, and an array's dimensions (it decays to a pointer)
    while inner.type in ("pointer_declarator", "array_declarator"):
        stars += 1
        nxt = inner.child_by_field_name("declarator")
        assert nxt is not None
        inner = nxt
    return type_name(written + " *" * stars) if inner.type == "identifier" else None


def placeholder(declarator: Node, deduced: str | None) -> str | None:
    """What ``auto`` stands for in ``auto <declarator> = v`` with v of type ``deduced``:
    ``deduced`` for ``x``, one ``*`` less for ``*p``; None for a reference, an array or a
    pointer declarator the value is not a pointer for."""
    if deduced is None:
        return None
    while declarator.type == "pointer_declarator":
        if not deduced.endswith("*"):
            return None
        deduced = deduced[:-1]
        inner = declarator.child_by_field_name("declarator")
        assert inner is not None
        declarator = inner
    return deduced if declarator.type == "identifier" else None


def _declared_as(d: Node) -> str:
    while d.type in ("init_declarator", "pointer_declarator", "array_declarator",
                     "reference_declarator"):
        inner = d.child_by_field_name("declarator") or (
            d.named_children[0] if d.named_children else None)
        if inner is None:
            return ""
        d = inner
    return text(d) if d.type == "identifier" else ""


def _literal(raw: str) -> str | None:
    raw = raw.replace("'", "").lower().lstrip("+-")  # `-1.0e30f` is one literal
    if (m := re.fullmatch(r"(0x[0-9a-f]+?)([ul]*)", raw)) is not None:
        return _integer_literal(int(m.group(1), 16), m.group(2), hexadecimal=True)
    if (m := re.fullmatch(r"(\d+)([ul]*)", raw)) is not None:
        return _integer_literal(int(m.group(1)), m.group(2), hexadecimal=False)
    if re.fullmatch(r"(\d+\.?\d*|\.\d+)(e[+-]?\d+)?f", raw):
        return "float"
    if re.fullmatch(r"(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", raw):
        return "double"
    return None  # long double, a hex float, a user literal


def _integer_literal(value: int, suffix: str, *, hexadecimal: bool) -> str | None:
    unsigned = "u" in suffix
    longs = suffix.count("l")
    order = ["int", "long", "long long"][longs:]
    for t in order:
        bits = _INTEGERS[t][2]
        if not unsigned and value < 2 ** (bits - 1):
            return t
        if (unsigned or hexadecimal) and value < 2 ** bits:
            return "unsigned " + t
    return None


def _component(vector: str) -> str:
    base = vector.removeprefix("u")
    name = {"longlong": "long long"}.get(base, base)
    return ("unsigned " if vector.startswith("u") else "") + name


def _promoted(t: str | None) -> str | None:
    if t is None or t in _FLOATING:
        return t
    if t not in _INTEGERS:
        return None
    rank, _unsigned, bits = _INTEGERS[t]
    return "int" if rank < 3 and bits < 32 else t


def _common(types: list[str]) -> str | None:
    """C++'s usual arithmetic conversions of the operands' types (None for others)."""
    promoted = [_promoted(t) for t in types]
    if any(t is None for t in promoted):
        return None
    for wide in ("double", "float"):
        if wide in promoted:
            return wide
    a, b = promoted[0], promoted[-1]
    assert a is not None and b is not None
    if len(promoted) > 2:
        rest = _common([t for t in promoted[1:] if t is not None])
        return _common([a, rest]) if rest is not None else None
    if a == b:
        return a
    (ra, ua, _bits), (rb, ub, _bits) = _INTEGERS[a], _INTEGERS[b]
    if ua == ub:
        return a if ra > rb else b
    unsigned, signed = (a, b) if ua else (b, a)
    if _INTEGERS[unsigned][0] >= _INTEGERS[signed][0]:
        return unsigned
    if _INTEGERS[signed][2] > _INTEGERS[unsigned][2]:
        return signed
    return "unsigned " + signed


def typed_autos(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each local of ``entry`` declared ``auto`` (or ``const auto``) whose
    initialiser tells its type (:func:`value_type`) declared with that type: the same
    program, each family then reads a typed local (and copies one per item, per output, per
    tap as a typed array). Left as written: a reference or pointer declarator, a structured
    binding, a lambda, a declaration inside a lambda's body (its parameters are names the
    lookup does not see), declarators deducing different types, an unknown type."""
    try:
        source = parse_cuda(current.text, current.file)
        kernel = source.kernel(entry)
        body = source.body(kernel)
    except CudaSourceError:
        return current
    scope = Parsed(source, kernel)
    edits: list[tuple[int, int, str]] = []
    for decl in walk(body):
        typ = decl.child_by_field_name("type") if decl.type == "declaration" else None
        if typ is None or text(typ) != "auto" or in_lambda(decl, body):
            continue
        found: set[str | None] = set()
        for d in decl.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            inner = d.child_by_field_name("declarator") if value is not None else None
            found.add(value_type(scope, value, {}) if inner is not None and
                      inner.type == "identifier" and value is not None else None)
        deduced = found.pop() if len(found) == 1 else None
        if deduced is not None:
            edits.append((typ.start_byte, typ.end_byte, deduced))
    return current.edited(edits) if edits else current


def item_types(plan: Scope, region: list[Node], arrays: set[str]) -> dict[int, str]:
    """For each declaration in ``region`` written with ``auto`` that declares one of
    ``arrays`` (a local that gets one copy per item): the placeholder's first byte -> the
    type written in its place. Raises :class:`~.vector.Illegal` with the declaration
    where the initialiser's type is not known (see the module doc)."""
    out: dict[int, str] = {}
    known: dict[str, str] = {}
    decls = [d for stmt in region for d in walk(stmt) if d.type == "declaration"]
    for decl in sorted(decls, key=lambda d: d.start_byte):
        typ = decl.child_by_field_name("type")
        if typ is None or typ.type != "placeholder_type_specifier":
            continue
        stands: set[str | None] = set()
        for d in decl.children_by_field_name("declarator"):
            name = _declared_as(d)
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            deduced = value_type(plan, value, known) if value is not None else None
            if deduced is not None and inner is not None and \
                    (meant := placeholder(inner, deduced)) is not None:
                known[name] = deduced
                stands.add(meant)
            elif name in arrays:
                raise Illegal(f"`{text(decl)[:60]}`: the type `auto` stands for is not known "
                              "from the initialiser (read: literals, casts, declared names, "
                              "elements, operators, CUDA math, the file's functions), and "
                              f"the copy of `{name}` per item must be declared with it "
                              "(`auto x[N]` is not C++)", decl)
            else:
                stands.add(None)
        names = {_declared_as(d) for d in decl.children_by_field_name("declarator")}
        if names & arrays:
            if len(stands) != 1 or None in stands:
                raise Illegal(f"`{text(decl)[:60]}`: its declarators deduce different "
                              "types", decl)
            meant = stands.pop()
            assert meant is not None
            if "const" in {text(c) for c in decl.children if c.type == "type_qualifier"}:
                # `const auto* p = (const T*)q`: the written const is the target's already
                meant = meant.removeprefix("const ")
            out[typ.start_byte] = meant
    return out
