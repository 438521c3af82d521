"""Pure calls: the CUDA math functions, and the ``__device__`` functions of the same file
whose bodies the analysis proves pure.

A call is pure when running it changes nothing but the value it returns and cannot fault,
trap or run forever, whatever its arguments (a dead item's zeroed locals, or the side of an
``if`` the condition did not take): BRANCHLESS (:mod:`.ifconv`) may then run it on the side
not taken, and ITEMS_PER_THREAD (:mod:`.ilp`, :func:`.item_state.safe_when_done`) on an
item past the end. A ``__device__`` function of the file is pure when its body, read on the
parse (not pasted), uses only its value parameters (a ``const`` reference to a value,
``const Vec2<T>& r``, reads the argument's value as a copy would), its own locals and their
members (``r.x``), object-like macros of constants, conversions (``float(x)``, ``T(1)`` of a
template's type parameter, ``static_cast<T>(x)``: :func:`conversion_types`), CUDA's vector
constructors (``make_float2(x, y)``, :data:`VECTOR_MAKERS`) and pure calls
(a fixpoint, so a helper calling a pure helper is pure, recursion never is, nor a name
defined more than once: an overload); it has no loop, ``goto``, asm, memory read or write
(``a[i]``, ``*p``, ``p->f``, ``&x``), pointer or non-const reference parameter, static or
shared local; a class value only where every operator the file defines is pure (``a + b``
may run one); and every ``/`` or ``%`` divides by a float value or a nonzero integer
constant (an integer division by zero traps on the host and is garbage on the GPU).
"""

from __future__ import annotations

import re
import weakref

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource, function_definitions
from workbench.templater.analysis import int_value, line, text, walk

# Side-effect-free device math (CUDA math API and intrinsics).
_PURE_FLOAT = (
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "rsqrt",
    "cbrt", "rcbrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "sinpi", "cospi", "fabs", "fmax", "fmin", "fma",
    "floor", "ceil", "trunc", "round", "rint", "nearbyint", "copysign", "fmod", "remainder",
    "hypot", "erf", "erfc", "erfinv", "erfcinv", "normcdf", "lgamma", "tgamma", "fdim",
    "ldexp", "scalbn", "logb", "norm3d", "rnorm3d", "rhypot")
_FLOAT_INTRINSICS = (
    "__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__powf", "__sinf", "__cosf",
    "__tanf", "__fdividef", "__saturatef", "__fsqrt_rn", "__frsqrt_rn", "__frcp_rn",
    "__fmaf_rn", "__fmul_rn", "__fadd_rn", "__fsub_rn", "__fdiv_rn", "__fma_rn",
    "__dmul_rn", "__dadd_rn", "__drcp_rn", "__dsqrt_rn", "__tanhf", "__exp2f", "fminf",
    "fmaxf", "__int2float_rn", "__half2float", "__bfloat162float")
#: math calls that return a float or double (a division by one cannot trap)
FLOAT_CALLS = frozenset([*_PURE_FLOAT, *(f + "f" for f in _PURE_FLOAT), *_FLOAT_INTRINSICS])
#: CUDA's vector constructors (``make_float2(x, y)``): they build a value from their
#: arguments and nothing else, as a braced initializer does
VECTOR_MAKERS = frozenset(f"make_{base}{n}" for base in (
    "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
    "ulonglong", "float", "double") for n in range(1, 5))
PURE_CALLS = FLOAT_CALLS | VECTOR_MAKERS | frozenset([
    "min", "max", "abs", "__float2int_rn", "__float2half", "__float2bfloat16",
    "__popc", "__clz", "__ffs", "__brev", "__mul24", "__umul24", "__mulhi", "__umulhi"])

_FLOAT_TYPES = ("float", "double")
_FORBIDDEN = {
    "for_statement": "a loop", "while_statement": "a loop", "do_statement": "a loop",
    "goto_statement": "`goto`", "gnu_asm_expression": "inline asm",
    "asm_statement": "inline asm", "new_expression": "`new`", "delete_expression": "`delete`",
    "lambda_expression": "a lambda", "subscript_expression": "a memory access",
    "throw_statement": "`throw`",
}
_NUMBER = re.compile(r"(?<![\w.])(?:\d[\w.]*|\.\d[\w.]*)(?:[eE][+-]?\d+[\w]*)?")
_WORD = re.compile(r"[A-Za-z_]\w*")

_cache: weakref.WeakKeyDictionary[CudaSource, dict[str, str | None]] = \
    weakref.WeakKeyDictionary()


def device_purity(source: CudaSource) -> dict[str, str | None]:
    """Every ``__device__`` function of ``source`` (not ``__global__``) -> None when its
    body is pure (see the module doc), else why not, with the line."""
    if source in _cache:
        return _cache[source]
    macros = constant_macros(source)
    functions = {name: fn for name, fn in source.function_definitions().items()
                 if any(c.type == "__device__" for c in fn.children) and
                 not any(c.type == "__global__" for c in fn.children) and
                 fn.child_by_field_name("body") is not None}
    verdict: dict[str, str | None] = {name: "not yet shown pure" for name in functions}
    overloads = _defined_more_than_once(source)
    changed = True
    while changed:  # a helper is pure once every function it calls is shown pure
        changed = False
        pure = (PURE_CALLS - verdict.keys()) | {n for n, why in verdict.items() if why is None}
        for name, fn in functions.items():
            if verdict[name] is None:
                continue
            # a call may resolve to any of the overloads: none is shown pure by one body
            why = f"defined more than once (line {line(fn)})" if name in overloads \
                else _impurity(source, fn, macros, pure)
            if why != verdict[name]:
                verdict[name] = why
                changed = changed or why is None
    _cache[source] = verdict
    return verdict


def pure_calls(source: CudaSource) -> frozenset[str]:
    """The names a pure call may call in ``source``: the math functions and the file's
    pure ``__device__`` functions."""
    verdict = device_purity(source)
    # a file's own function of a math name (its own `max`) is what a call there reaches
    return frozenset(PURE_CALLS - verdict.keys()) | frozenset(
        n for n, why in verdict.items() if why is None)



def side_effect_free(source: CudaSource, node: Node) -> bool:
    """``node`` assigns nothing and calls only pure functions (:func:`pure_calls`): safe to
    evaluate once for two uses, or in another order."""
    pure = pure_calls(source)
    for n in walk(node):
        if n.type in ("assignment_expression", "update_expression", "comma_expression"):
            return False
        if n.type == "call_expression" and text(n.child_by_field_name("function")) not in pure:
            return False
    return True

#: scalar types a functional cast (``float(x)``) or ``static_cast`` converts to
_SCALAR_TYPES = frozenset((
    "float", "double", "int", "unsigned", "long", "short", "char", "bool", "signed",
    "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t"))


def conversion_types(source: CudaSource, fn: Node) -> frozenset[str]:
    """The type names a call in ``fn`` may name to convert its one argument, not to call a
    function: the scalar types, and the type parameters of the templates around ``fn``
    (``T(1)`` under ``template <typename T>``) where no class of the file writes a
    constructor (a type parameter bound to such a class would run it)."""
    params: set[str] = set()
    up = fn.parent
    while up is not None:
        if up.type == "template_declaration":
            plist = up.child_by_field_name("parameters")
            params.update(text(c) for d in (plist.named_children if plist is not None else [])
                          if d.type == "type_parameter_declaration"
                          for c in d.named_children if c.type == "type_identifier")
        up = up.parent
    return _SCALAR_TYPES | (frozenset() if _constructors(source) else frozenset(params))


def conversion(call: Node, types: frozenset[str]) -> bool:
    """``call`` converts at most one value to one of ``types`` (:func:`conversion_types`):
    ``float(x)``, ``T(1)``, ``static_cast<T>(x)``; a cast, not a call."""
    function = call.child_by_field_name("function")
    arguments = call.child_by_field_name("arguments")
    if function is None or arguments is None or len(arguments.named_children) > 1:
        return False
    if function.type == "template_function" and \
            text(function.child_by_field_name("name")) == "static_cast":
        targets = function.child_by_field_name("arguments")
        return targets is not None and text(targets)[1:-1].strip() in types
    return function.type in ("identifier", "primitive_type", "sized_type_specifier") and \
        text(function) in types


def _constructors(source: CudaSource) -> bool:
    """A class or struct of the file declares a constructor (a member function of its
    name)."""
    for cls in walk(source.tree.root_node):
        name = cls.child_by_field_name("name") if cls.type in ("struct_specifier",
                                                                "class_specifier") else None
        body = cls.child_by_field_name("body") if name is not None else None
        if body is not None and any(n.type == "function_declarator" and
                                    text(n.child_by_field_name("declarator")) == text(name)
                                    for n in walk(body)):
            return True
    return False


def _defined_more_than_once(source: CudaSource) -> set[str]:
    seen: set[str] = set()
    twice: set[str] = set()
    for name, _fn in function_definitions(source.tree.root_node):
        (twice if name in seen else seen).add(name)
    return twice


def why_not_pure(source: CudaSource, name: str) -> str:
    """A finding's reason for a call of ``name`` that is not pure."""
    why = device_purity(source).get(name)
    if name in device_purity(source) and why is not None:
        return f"`{name}`, a __device__ function whose body is not pure: {why}"
    return f"`{name[:40]}`, not a known pure math function or a pure __device__ function " \
        "of this file"


def constant_macros(source: CudaSource) -> set[str]:
    """Object-like macros whose bodies are constants: numbers, operators and other such
    macros (``#define KAPPA 0.8f``, ``#define R2 (RCUT * RCUT)``)."""
    bodies: dict[str, str] = {}
    for node in walk(source.tree.root_node):
        if node.type == "preproc_def":
            macro, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if macro is not None:
                bodies.setdefault(text(macro), text(value) if value is not None else "")
    ok: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name in ok or any(ch in body for ch in "[]&\"'{};"):
                continue
            if all(w in ok for w in _WORD.findall(_NUMBER.sub(" ", body))):
                ok.add(name)
                changed = True
    return ok


def _impurity(source: CudaSource, fn: Node, macros: set[str], pure: frozenset[str] | set[str]
              ) -> str | None:
    types = conversion_types(source, fn)
    params: dict[str, str] = {}
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    for p in plist.named_children if plist is not None else []:
        if p.type == "comment":
            continue
        d = p.child_by_field_name("declarator")
        if p.type == "parameter_declaration" and d is not None and \
                d.type == "reference_declarator" and _read_only(p):
            d = d.named_children[-1]  # `const Vec2<T>& r`: reads the argument's value
        if p.type != "parameter_declaration" or d is None or d.type != "identifier":
            return f"parameter `{text(p)[:40]}` is not a value (line {line(p)})"
        params[text(d)] = text(p.child_by_field_name("type"))
    body = fn.child_by_field_name("body")
    assert body is not None
    locals_: dict[str, str] = {}
    for n in walk(body):
        if n.type == "declaration":
            if any(text(c) in ("static", "__shared__", "extern", "__constant__")
                   for c in n.children):
                return f"a static or shared local (line {line(n)})"
            for d in n.children_by_field_name("declarator"):
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" \
                    else d
                if inner is None or inner.type != "identifier":
                    return f"a local that is not a scalar: `{text(d)[:40]}` (line {line(d)})"
                locals_[text(inner)] = text(n.child_by_field_name("type"))
    names = {**params, **locals_}
    overloads = sorted(o for o in source.function_definitions()
                       if o.startswith("operator") and o not in pure)
    valued = sorted(n for n, typ in names.items()
                    if typ.replace("const", "").strip() not in types)
    if overloads and valued:  # `a + b` of class values may run the file's operator
        return f"`{valued[0]}` is a class value and the file's `{overloads[0]}` is not " \
            f"shown pure (line {line(fn)})"
    for n in walk(body):
        t = n.type
        if t in _FORBIDDEN:
            return f"{_FORBIDDEN[t]}: `{text(n)[:40]}` (line {line(n)})"
        if t in ("pointer_expression", "reference_declarator", "pointer_declarator"):
            return f"a pointer: `{text(n)[:40]}` (line {line(n)})"
        if t == "call_expression":
            callee = n.child_by_field_name("function")
            if conversion(n, types):
                continue
            if callee is None or callee.type != "identifier" or text(callee) not in pure:
                return f"it calls `{text(callee)[:40]}`, not shown pure (line {line(n)})"
        elif t == "field_expression" and value_root(n) not in names:
            return f"a member access through memory: `{text(n)[:40]}` (line {line(n)})"
        elif t in ("assignment_expression", "update_expression"):
            target = value_root(n.child_by_field_name("left") or
                                n.child_by_field_name("argument"))
            if target not in names:
                return f"`{text(n)[:40]}` writes outside its locals (line {line(n)})"
        elif t == "identifier":
            if is_callee(n):
                continue  # checked as a call (``static_cast`` a conversion)
            if text(n) not in names and text(n) not in macros:
                return f"it reads `{text(n)}`, neither a parameter, a local nor a constant " \
                    f"macro (line {line(n)})"
        elif t == "binary_expression" and text(n.child_by_field_name("operator")) in "/%" \
                and not _float_or_nonzero(n, names):
            return f"`{text(n)[:40]}` may divide an integer by zero (line {line(n)})"
    return None


def is_callee(name: Node) -> bool:
    """``name`` names the function a call calls (``f(x)``, ``static_cast<T>(x)``)."""
    up = name.parent
    if up is not None and up.type == "template_function" and \
            up.child_by_field_name("name") == name:
        name, up = up, up.parent
    return up is not None and up.type == "call_expression" and \
        up.child_by_field_name("function") == name


def _read_only(param: Node) -> bool:
    """``param`` declares a const reference to a value (``const Vec2<T>& r``)."""
    return any(c.type == "type_qualifier" and text(c) == "const" for c in param.children)


def value_root(node: Node | None) -> str | None:
    """The name whose value ``node`` is, or a member of (``x``, ``x.a.b``, ``(x).a``); None
    for anything read through memory (``p->a``, ``a[i].b``)."""
    while node is not None and (node.type == "parenthesized_expression" or (
            node.type == "field_expression" and
            text(node.child_by_field_name("operator")) == ".")):
        node = node.named_children[0] if node.type == "parenthesized_expression" else \
            node.child_by_field_name("argument")
    return text(node) if node is not None and node.type == "identifier" else None


def _float_or_nonzero(division: Node, names: dict[str, str]) -> bool:
    """A float division (an operand is float valued) or one by a nonzero integer constant."""
    right = division.child_by_field_name("right")
    value = int_value(right) if right is not None else None
    if value is not None:
        return value != 0
    return text(division.child_by_field_name("operator")) == "/" and any(
        _float_valued(side, names) for side in (division.child_by_field_name("left"), right))


def _float_valued(node: Node | None, names: dict[str, str]) -> bool:
    """Float by C's promotions: a float or double local, float literal or float math call
    in it, and no cast (which may make it an integer: ``(int)x``, ``int(x)``, ``T(x)``,
    ``static_cast<int>(x)``) nor a call of a function of the file (its value's type is not
    read)."""
    if node is None or any(n.type == "cast_expression" or (
            n.type == "call_expression" and
            text(n.child_by_field_name("function")) not in PURE_CALLS) for n in walk(node)):
        return False
    for n in walk(node):
        if n.type == "identifier":
            up = n.parent
            if up is not None and up.type == "call_expression" and \
                    up.child_by_field_name("function") == n:
                if text(n) in FLOAT_CALLS:
                    return True
            elif names.get(text(n), "").replace("const", "").strip() in _FLOAT_TYPES:
                return True
        elif n.type == "number_literal" and not text(n).lower().startswith("0x") and \
                any(ch in text(n) for ch in ".eEfF"):
            return True
    return False
