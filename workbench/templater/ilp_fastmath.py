"""FAST_MATH: cheaper fp32 math for a compute-bound per-element kernel, as a knob.

IEEE ``sqrtf`` and ``/`` are multi-instruction sequences on the GPU (a special-function
approximation, then Newton steps and a slow path); ``rsqrtf`` is one special-function
instruction and a multiply is one. With ``FAST_MATH = 1``:

- ``1.0f / sqrtf(x)`` becomes ``rsqrtf(x)``;
- a local ``r = sqrtf(x)`` (never reassigned, ``x`` side-effect free and nothing in it
  reassigned in the function) becomes ``x * rsqrtf(x)``, and every ``e / r`` in the same
  function ``e * rsqrtf(x)`` (the compiler computes ``rsqrtf(x)`` once);
- a call ``f(sqrtf(x))`` of a pure ``__device__`` function (:mod:`.purity`) that divides by
  that parameter (never reassigned) calls a copy of ``f`` taking ``x``, with ``r = x *
  rsqrtf(x)`` and each ``e / r`` as ``e * (1/r)``;
- ``powf(x, k)`` with ``k`` an integer literal, 2 <= |k| <= 8, becomes ``k`` multiplies
  (and one division for a negative ``k``);
- ``sinf``, ``cosf``, ``tanf``, ``expf``, ``exp10f``, ``logf``, ``log2f``, ``log10f``,
  ``powf`` (any other power) and ``sincosf`` become the hardware approximations
  (``__sinf`` ...: :mod:`.ilp_intrinsics`, which also makes ``sinf(x)`` and ``cosf(x)``
  of one ``x`` one ``sincosf``, exactly, at every value of the knob).

fp32 divisions in the repeated work get a knob of their own, FAST_DIV (:mod:`.ilp_fastdiv`).

The sites are read in the kernel's body and in the ``__device__`` functions of the file it
calls, directly or through one another (:mod:`.ilp_fastmath_helpers`: a helper another
kernel also calls is refused with the line); the finding counts each helper's rewrites.

``FAST_MATH = 0`` is the kernel as written. Only the fp32 functions are touched (``sqrt``,
``pow`` of doubles never are: the results would not be the same). The results differ from
the written ones by a few units in the last place (``x = 0`` gives NaN where ``sqrtf``
gives 0): whether that is within the folder's tolerance is what the space-wide gate checks,
at every config.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import declared_name, int_value, line, strip, text, walk
from workbench.templater.ilp import NAME as ILP_NAME
from workbench.templater.ilp import interleaves
from workbench.templater.ilp_fastdiv import apply_fastdiv
from workbench.templater.ilp_fastmath_helpers import helper_scope
from workbench.templater.ilp_intrinsics import FAST, fast_calls, fast_macros, pair_sincos
from workbench.templater.ilp_recip_root import typed_reciprocal_roots
from workbench.templater.plan import Plan
from workbench.templater.purity import device_purity, side_effect_free
from workbench.templater.rewrite import Rewriter
from workbench.templater.table_terms import assigned_in

NAME = "FAST_MATH"
MAX_POWER = 8
#: the ITEMS_PER_THREAD finding's words where the items call helpers with loops (ilp.py)
_CALLED_LOOPS = "run in one unrolled loop over the items"
_ONE = ("1.0f", "1.f", "1.0F", "1.F", "1f")
_MACROS = (f"#if {NAME}\n#define WB_SQRT(x) ((x) * rsqrtf(x))\n#define WB_OVER(r, inv) * (inv)\n"
           "#define WB_RSQRT_OF(x) rsqrtf(x)\n#define WB_SQ_ARG(x) (x)\n"
           "#define WB_POW(x, k) wb_powi<(int)(k)>(x)\n#else\n#define WB_SQRT(x) sqrtf(x)\n"
           "#define WB_OVER(r, inv) / (r)\n#define WB_RSQRT_OF(x) (1.0f / sqrtf(x))\n"
           "#define WB_SQ_ARG(x) sqrtf(x)\n#define WB_POW(x, k) powf(x, k)\n#endif")
_POWI = ("template <int K> __device__ __forceinline__ float wb_powi(float x) {  // x^K\n"
         "  float r = 1.0f;\n#pragma unroll\n"
         "  for (int j = 0; j < (K < 0 ? -K : K); ++j) r *= x;\n"
         "  return K < 0 ? 1.0f / r : r;\n}")


@dataclass
class _Sites:
    """What the scan found, by kind (for the finding)."""

    rsqrt: int = 0
    root_locals: int = 0
    calls: int = 0
    powers: int = 0
    sincos: int = 0  # sinf/cosf pairs made one sincosf
    fast: set[str] = field(default_factory=set)  # calls routed to hardware approximations
    helpers: list[str] = field(default_factory=list)  # per helper: name, line, rewrites

    def total(self) -> int:
        return self.rsqrt + self.root_locals + self.calls + self.powers + len(self.fast)

    def rewrites(self) -> int:
        """The rewrites counted so far, the calls routed to approximations aside."""
        return self.rsqrt + self.root_locals + self.calls + self.powers + self.sincos

    def replaces(self) -> str:
        """What FAST_MATH 1 replaces, for the knob's description."""
        parts = []
        if self.rsqrt or self.root_locals or self.calls:
            parts.append("1/sqrtf and divisions by a square root as rsqrtf")
        if self.powers:
            parts.append("powf of small integer powers as multiplies")
        if self.fast:
            parts.append(", ".join(("sinf/cosf pairs (one sincosf)" if n == "sincosf" else n)
                                   + f" as {FAST[n]}" for n in sorted(self.fast)))
        return "; ".join(parts)


def apply_fastmath(plan: Plan, *, taps: bool = False) -> bool:
    """Give every site (see the module doc) a FAST_MATH form; True when one did. ``taps``:
    the caller's rewrite runs a compute loop per output (a window's taps, :mod:`.conv_centre`)."""
    if NAME in plan.params or not (taps or interleaves(plan) or _items_call_loops(plan)):
        return False  # compute-bound per-element kernels only (a loop the items share)
    scope = helper_scope(plan)
    applied = _fastmath(plan, scope.functions)
    for name, why, fn in scope.refused:
        plan.note(NAME, False, f"`{name}` (line {line(fn)}), called by the kernel: {why}; "
                  "its calls stay as written", fn)
    # after FAST_MATH: the divisions it rewrites are its own; only where the items share
    # compute loops, in the body or in a helper each item calls (a memory walk's
    # ITEMS_PER_THREAD: the division is not the cost)
    return ((interleaves(plan) or _items_call_loops(plan)) and
            apply_fastdiv(plan, scope.functions)) or applied


def _items_call_loops(plan: Plan) -> bool:
    """ITEMS_PER_THREAD runs the items' calls of helpers with compute loops (the solve is in
    the helper: its loop is the repeated work, as a loop in the body is)."""
    return any(f.transform == ILP_NAME and f.applied and _CALLED_LOOPS in f.reason
               for f in plan.findings)


def _fastmath(plan: Plan, functions: dict[str, Node]) -> bool:
    sites = _Sites()
    specialized: set[str] = set()
    for name, body in functions.items():
        before = sites.rewrites()
        _reciprocal_roots(plan, body, sites)
        sites.rsqrt += typed_reciprocal_roots(plan, body)
        _root_locals(plan, body, sites)
        _powers(plan, body, sites)
        _root_calls(plan, body, sites, specialized)
        # sinf(x) and cosf(x) as one sincosf (exact: not a knob, see ilp_intrinsics)
        paired = pair_sincos(plan, body, fast=True, first=sites.sincos)
        sites.sincos += len(paired) // 2
        routed = fast_calls(plan, body, paired | _integer_powers(body))
        sites.fast |= set(routed)
        count = sites.rewrites() - before + len(routed)
        if name != plan.kernel.name and count:
            sites.helpers.append(f"`{name}` (line {line(body.parent or body)}) {count}" +
                                 (f" ({', '.join(sorted(set(routed)))})" if routed else ""))
    if sites.sincos:
        sites.fast.add("sincosf")
    if not sites.total():
        return False
    plan.helper(_MACROS)
    if sites.fast:
        plan.helper(fast_macros(sites.fast))
    if sites.powers:
        plan.helper(_POWI)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: {sites.replaces()} (fp32, a few ulp or more; "
                                         "the gate checks the tolerance); 0: as written"},
                   f"{plan.kernel.line}: fp32 math")
    plan.note(NAME, True, f"{sites.rsqrt} 1/sqrtf, {sites.root_locals} square-root local(s) "
              f"divided by, {sites.calls} call(s) of a function dividing by a square root, "
              f"{sites.powers} powf of an integer power, hardware approximations of "
              f"{', '.join(sorted(sites.fast)) or 'no call'}"
              + (f"; rewritten calls in the helpers the kernel calls: {', '.join(sites.helpers)}"
                 if sites.helpers else "") + "; the gate checks the tolerance")
    if sites.sincos:
        plan.note("SINCOS", True, f"{sites.sincos} sinf/cosf pair(s) of one argument as one "
                  "sincosf (the same results, one range reduction: applied, not a knob)")
    return True


def _integer_powers(body: Node) -> set[tuple[int, int]]:
    """The ``powf(x, k)`` calls :func:`_powers` makes multiplies."""
    return {(n.start_byte, n.end_byte) for n in walk(body) if n.type == "call_expression"
            and text(n.child_by_field_name("function")) == "powf" and
            len(_call_args(n)) == 2 and _integer_power(_call_args(n)[1]) is not None}


def _call_args(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return [a for a in args.named_children if a.type != "comment"] if args else []


def _is_call(node: Node, name: str) -> bool:
    node = strip(node)
    return node.type == "call_expression" and \
        text(node.child_by_field_name("function")) == name and len(_call_args(node)) == 1


def _reciprocal_roots(plan: Plan, body: Node, sites: _Sites) -> None:
    """``1.0f / sqrtf(x)`` -> ``WB_RSQRT_OF(x)``."""
    for n in walk(body):
        if n.type != "binary_expression" or text(n.child_by_field_name("operator")) != "/":
            continue
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if left is None or right is None or text(strip(left)) not in _ONE or \
                not _is_call(right, "sqrtf"):
            continue
        callee = strip(right).child_by_field_name("function")
        assert callee is not None
        # `1.0f / sqrtf(x)` -> `WB_RSQRT_OF(x)`: the `1.0f /` dropped, the callee renamed
        plan.rw.replace_span(n.start_byte, callee.end_byte, "WB_RSQRT_OF")
        sites.rsqrt += 1


def _root_locals(plan: Plan, body: Node, sites: _Sites) -> None:
    """``T r = sqrtf(x); ... e / r`` -> ``WB_SQRT(x)`` and ``e WB_OVER(r, rsqrtf(x))``."""
    assigned = assigned_in(body)
    declared = _declaration_counts(body)
    for n in walk(body):
        if n.type != "init_declarator":
            continue
        value = n.child_by_field_name("value")
        inner = n.child_by_field_name("declarator")
        if value is None or inner is None or inner.type != "identifier" or \
                not _is_call(value, "sqrtf"):
            continue
        name = text(inner)
        arg = _call_args(strip(value))[0]
        # one `r` and one of each name in x in the function: the `r` divided by and the x
        # written at the division are the ones declared here
        changing = assigned - _fixed_counters(n)
        # in a helper, x reads no memory: the division re-reads x, and a write through
        # another pointer between the two may alias it (the helper's scope is new; the
        # kernel's body keeps its earlier rule)
        if (body != plan.body and _reads_memory(arg)) or \
                name in assigned or declared.get(name, 0) != 1 or \
                not side_effect_free(plan.source, arg) or \
                any(m.type == "identifier" and (text(m) in changing or
                                                declared.get(text(m), 0) > 1)
                    for m in walk(arg)):
            continue
        divisions = _divisions_by(body, name)
        if not divisions:
            continue
        callee = strip(value).child_by_field_name("function")
        assert callee is not None
        plan.rw.replace(callee, "WB_SQRT")
        for div in divisions:
            _over(plan.rw, div, arg)
        sites.root_locals += 1


def _reads_memory(node: Node) -> bool:
    return any(m.type in ("subscript_expression", "field_expression") or
               (m.type == "pointer_expression" and text(m).startswith("*"))
               for m in walk(node))


def _fixed_counters(node: Node) -> set[str]:
    """Counters of the ``for`` loops around ``node``, declared in their headers and
    assigned only by their updates: fixed within one trip, where ``node`` and its uses
    are."""
    out: set[str] = set()
    up = node.parent
    while up is not None:
        init, body = up.child_by_field_name("initializer"), up.child_by_field_name("body")
        if up.type == "for_statement" and init is not None and init.type == "declaration" \
                and body is not None:
            counter = declared_name(init)[0]
            if counter and counter not in assigned_in(body):
                out.add(counter)
        up = up.parent
    return out


def _declaration_counts(body: Node) -> dict[str, int]:
    """How many times each name is declared in ``body`` (a loop's counter included)."""
    counts: dict[str, int] = {}
    for n in walk(body):
        if n.type in ("declaration", "parameter_declaration"):
            for d in n.children_by_field_name("declarator"):
                while d.type in ("init_declarator", "pointer_declarator", "array_declarator",
                                 "reference_declarator"):
                    inner = d.child_by_field_name("declarator") or (
                        d.named_children[0] if d.named_children else None)
                    if inner is None:
                        break
                    d = inner
                counts[text(d)] = counts.get(text(d), 0) + 1
    return counts


def _divisions_by(body: Node, name: str) -> list[Node]:
    return [n for n in walk(body) if n.type == "binary_expression" and
            text(n.child_by_field_name("operator")) == "/" and
            text(strip(n.child_by_field_name("right") or n)) == name and
            (n.child_by_field_name("right") or n).type == "identifier"]


def _over(rw: Rewriter, div: Node, root_arg: Node) -> None:
    """``e / r`` -> ``e WB_OVER(r, rsqrtf(x))`` (lazy: per-item names render inside)."""
    op, right = div.child_by_field_name("operator"), div.child_by_field_name("right")
    assert op is not None and right is not None
    rw.replace_span(op.start_byte, right.end_byte,
                    make=lambda r: f"WB_OVER({r.text(right)}, rsqrtf({r.text(root_arg)}))")


def _powers(plan: Plan, body: Node, sites: _Sites) -> None:
    """``powf(x, k)``, k an integer literal with 2 <= |k| <= 8 -> ``WB_POW(x, k)``."""
    for n in walk(body):
        if n.type != "call_expression" or text(n.child_by_field_name("function")) != "powf":
            continue
        args = _call_args(n)
        if len(args) != 2 or _integer_power(args[1]) is None:
            continue
        callee = n.child_by_field_name("function")
        assert callee is not None
        plan.rw.replace(callee, "WB_POW")
        sites.powers += 1


def _integer_power(node: Node) -> int | None:
    node = strip(node)
    sign = 1
    if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        sign, node = -1, strip(node.child_by_field_name("argument") or node)
    if node.type != "number_literal":
        return None
    raw = text(node).rstrip("fF")
    try:
        value = float(raw) if any(c in raw for c in ".eE") else int_value(node)
    except ValueError:
        return None
    if value is None or value != int(value) or not 2 <= abs(int(value)) <= MAX_POWER:
        return None
    return sign * int(value)


def _root_calls(plan: Plan, body: Node, sites: _Sites, specialized: set[str]) -> None:
    """``f(..., sqrtf(x), ...)`` of a pure function dividing by that parameter -> a copy of
    ``f`` taking ``x`` there (``WB_FN_f_k`` names the copy under FAST_MATH, ``f``
    otherwise)."""
    defs = plan.source.function_definitions()
    verdict = device_purity(plan.source)
    for n in walk(body):
        callee = n.child_by_field_name("function") if n.type == "call_expression" else None
        fn = defs.get(text(callee)) if callee is not None else None
        if callee is None or fn is None or verdict.get(text(callee), "no") is not None:
            continue
        found = _root_argument(plan, fn, _call_args(n))
        if found is None:
            continue
        name, (k, param, arg) = text(callee), found
        copy = f"{name}_wb_rsqrt{k}"
        if copy not in specialized:
            specialized.add(copy)
            plan.rw.insert(fn.end_byte, "\n" + _specialize(fn, copy, k, param))
            plan.helper(f"#if {NAME}\n#define WB_FN_{name}_{k} {copy}\n#else\n"
                        f"#define WB_FN_{name}_{k} {name}\n#endif")
        plan.rw.replace(callee, f"WB_FN_{name}_{k}")
        inner = strip(arg).child_by_field_name("function")
        assert inner is not None
        plan.rw.replace(inner, "WB_SQ_ARG")
        sites.calls += 1
        plan.note(NAME, True, f"`{name}(... {text(arg)[:40]} ...)`: the copy `{copy}` takes "
                  "the square and divides by its root as a multiply", n)


def _root_argument(plan: Plan, fn: Node, args: list[Node]) -> tuple[int, str, Node] | None:
    """(position, parameter, argument) of the first ``sqrtf(x)`` argument (``x`` free of
    side effects) whose parameter is a plain ``float`` that ``fn`` never assigns and
    divides by."""
    params = _float_params(fn)
    body = fn.child_by_field_name("body")
    if body is None or len(params) != len(args):
        return None
    assigned = assigned_in(body)
    for k, (param, arg) in enumerate(zip(params, args, strict=True)):
        if param and _is_call(arg, "sqrtf") and param not in assigned and \
                param not in _declaration_counts(body) and \
                _divisions_by(body, param) and \
                side_effect_free(plan.source, _call_args(strip(arg))[0]):
            return k, param, arg
    return None


def _float_params(fn: Node) -> list[str]:
    """Per parameter of ``fn``: its name when a plain ``float``, else ``""``."""
    decl = next((c for c in walk(fn) if c.type == "function_declarator"), None)
    params = decl.child_by_field_name("parameters") if decl is not None else None
    out = []
    for p in params.named_children if params is not None else []:
        if p.type != "parameter_declaration":
            continue
        d = p.child_by_field_name("declarator")
        plain = text(p.child_by_field_name("type")).replace("const", "").strip() == "float"
        out.append(text(d) if plain and d is not None and d.type == "identifier" else "")
    return out


def _specialize(fn: Node, copy: str, k: int, param: str) -> str:
    """``f``'s definition as ``copy``, its parameter ``k`` (``param``) taken as its square
    ``wb_sq``: ``param`` is ``wb_sq * rsqrtf(wb_sq)`` and each ``e / param`` is
    ``e * wb_inv``."""
    data = fn.text or b""
    base = fn.start_byte
    edits: list[tuple[int, int, str]] = []
    decl = next(c for c in walk(fn) if c.type == "function_declarator")
    fname = decl.child_by_field_name("declarator")
    params = decl.child_by_field_name("parameters")
    body = fn.child_by_field_name("body")
    assert fname is not None and params is not None and body is not None
    edits.append((fname.start_byte, fname.end_byte, copy))
    target = [p for p in params.named_children if p.type == "parameter_declaration"][k]
    edits.append((target.start_byte, target.end_byte, "float wb_sq"))
    edits.append((body.start_byte + 1, body.start_byte + 1,
                  f"\n  const float wb_inv = rsqrtf(wb_sq);  // 1 / {param}\n"
                  f"  const float {param} = wb_sq * wb_inv;"))
    for div in _divisions_by(body, param):
        op, right = div.child_by_field_name("operator"), div.child_by_field_name("right")
        assert op is not None and right is not None
        edits.append((op.start_byte, right.end_byte, "* wb_inv"))
    out, pos = [], 0
    for start, end, new in sorted(edits):
        out.append(data[pos:start - base].decode())
        out.append(new)
        pos = end - base
    out.append(data[pos:].decode())
    return (f"#if {NAME}  // {copy}: the square of `{param}` given (FAST_MATH)\n"
            + "".join(out) + f"\n#endif  // line {line(fn)}\n")
