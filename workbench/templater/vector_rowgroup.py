"""Row-group loads of a vectorized one-element region (:mod:`.vector`): a gather whose
index walks a row's columns with the flat index, as one vector.

A flat region often splits its index ``t`` into a row and a column by a run-time extent
``D`` (``i = t / D; c = t - i * D`` or ``c = t % D``) and reads another array at a row of its
own and that column: ``src[(size_t)idx[i] * D + c]`` (a row gather), ``table[ids[t / dim] *
dim + t % dim]`` (an embedding lookup). The vector's lanes ``t0 .. t0 + VEC - 1`` (``t0`` a
multiple of VEC) lie in one row whenever every divisor of ``t`` is a multiple of VEC, a
run-time test made once a vector (:meth:`RowGroups.lanes`). Under it every lane reads the
same ``t / D`` (and everything computed from it and from the kernel's scalars, reads of
arrays the kernel never writes at such indices included: ``r = idx[i]``), its column is lane
0's plus the lane, and the lane rewrite's quotients and remainders carry nothing
(``wb_row_div``: one division and one ``idx[i]`` a vector, as the compiler sees the same
expression in every lane). A read whose index is one step a lane (:meth:`_Reading.step`)
then loads as one vector in lane 0 where its address is a whole vector's (checked at run
time: base pointers are not assumed aligned), lane ``k`` taking element ``k``; else every
lane reads its own element. A read under a test (``r in range ? src[..] : 0``) needs its
test to read only lane-invariant values: lane 0 then reads exactly where every lane does.
The read must not sit in a loop of the element's statements. Where the test fails (``D``
odd), the lanes run as the vector family writes them (each its own element and carry).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    int_value,
    strip,
    text,
    unparenthesized,
    walk,
    writer,
)
from workbench.templater.inline_bind import written
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector_access import Access, elem_bytes, elem_type
from workbench.templater.vector_regions import Region

ROW_LANE = """\
// lane k's element of a row group (every lane of the vector in one row): lane 0 loads the
// group's N elements as one vector where its address is a whole vector's; the other lanes
// take theirs from it, or read their own
template <typename T, int N>
__device__ __forceinline__ T wb_row_lane(const T* at, int k, WbVec<T, N>& group,
                                         bool& loaded) {
  if (k == 0) {
    loaded = (unsigned long long)(const void*)at % sizeof(WbVec<T, N>) == 0;
    if (loaded)
      group = *reinterpret_cast<const WbVec<T, N>*>(at);
  }
  return loaded ? group.v[k] : *at;
}
// a lane's quotient and remainder where every lane of the vector is in one row (base a
// multiple of N, e of N: no carry), the same quotient in every lane
template <typename B, typename E>
__device__ __forceinline__ int wb_row_carry(B, int, E) {
  return 0;
}
template <typename B, typename E>
__device__ __forceinline__ auto wb_row_div(B base, int k, E e) -> decltype((base + k) / e) {
  return (decltype((base + k) / e))(base / e);
}
template <typename B, typename E>
__device__ __forceinline__ auto wb_row_mod(B base, int k, E e) -> decltype((base + k) % e) {
  return (decltype((base + k) % e))(base % e + k);
}"""

_INTEGER_WORDS = ("int", "long", "short", "char", "size_t", "ptrdiff_t", "unsigned", "signed",
                  "int32_t", "int64_t", "uint32_t", "uint64_t", "intptr_t", "uintptr_t")
_INVARIANT_OPS = ("*", "&", "|", "^", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
_LOOPS = ("for_statement", "while_statement", "do_statement", "lambda_expression")


@dataclass(frozen=True)
class RowRead:
    """A gather read of a flat region loaded as one vector a row group."""

    node: Node  # the subscript expression
    array: str
    index: Node
    elem: str  # the element type
    divisors: tuple[Node, ...]  # the divisors whose multiples of VEC keep lanes in one row


@dataclass(frozen=True)
class RowGroups:
    """The region's row-group reads, the registers they need and the run-time test that
    puts a vector's lanes in one row."""

    reads: tuple[RowRead, ...]
    names: tuple[str, ...]  # each read's register stem (wb_g<n>, wb_gok<n>)
    divisors: tuple[str, ...]  # every divisor of the region's index, as written

    def lanes(self, grouped: str, plain: str) -> str:
        """The vector's lanes: ``grouped`` (the lane body with the row-group reads) where
        every divisor of the index is a multiple of VEC, its lanes' quotients and
        remainders without a carry; ``plain`` (the lanes as the vector family writes them)
        otherwise."""
        test = " && ".join(f"({d}) % VEC == 0" for d in self.divisors)
        regs = "".join(f"          WbVec<{r.elem}, VEC> wb_g{s};\n          bool wb_gok{s} = "
                       "false;\n" for r, s in zip(self.reads, self.names, strict=True))
        rows = re.sub(r"\bwb_lane_(div|mod|carry)\(", r"wb_row_\1(", grouped)
        return (f"        if ({test}) {{  // the vector's lanes in one row\n{regs}"
                f"#pragma unroll\n          for (int wb_v = 0; wb_v < VEC; ++wb_v) {rows}\n"
                f"        }} else {{\n"
                f"#pragma unroll\n          for (int wb_v = 0; wb_v < VEC; ++wb_v) {plain}\n"
                f"        }}\n")


class _Reading:
    """One read's analysis: the divisors relied on, and the region it runs in."""

    def __init__(self, plan: Plan, region: Region) -> None:
        self.plan, self.region = plan, region
        self.divisors: list[Node] = []

    def step(self, node: Node, depth: int = 0) -> int | None:
        """How ``node`` changes from one lane to the next of a row group: 0 (the same in every
        lane), 1 (one more a lane), None (not shown either)."""
        if depth > 12:
            return None
        node = unparenthesized(node)
        kind = node.type
        if kind == "cast_expression":
            inner = node.child_by_field_name("value")
            s = self.step(inner, depth + 1) if inner is not None else None
            typ = text(node.child_by_field_name("type"))
            return s if s == 0 or any(w in typ.split() for w in _INTEGER_WORDS) else None
        if kind in ("number_literal", "true", "false", "sizeof_expression", "char_literal"):
            return 0
        if kind == "field_expression":
            arg = node.child_by_field_name("argument")
            return 0 if arg is not None and text(arg) in ("threadIdx", "blockIdx", "blockDim",
                                                          "gridDim") else None
        if kind == "identifier":
            return self._name(node, depth)
        if kind == "subscript_expression":
            return self._memory(node, depth)
        if kind == "unary_expression":
            arg = node.child_by_field_name("argument")
            return 0 if arg is not None and self.step(arg, depth + 1) == 0 else None
        if kind == "conditional_expression":
            parts = [node.child_by_field_name(f) for f in ("condition", "consequence",
                                                           "alternative")]
            return 0 if all(p is not None and self.step(p, depth + 1) == 0 for p in parts) \
                else None
        parts3 = binary(node) if kind == "binary_expression" else None
        if parts3 is None:
            return None
        left, op, right = parts3
        if op in ("/", "%"):
            return self._divide(left, op, right, depth)
        a, b = self.step(left, depth + 1), self.step(right, depth + 1)
        if a is None or b is None:
            return None
        if op == "+":
            return a + b if a + b <= 1 else None
        if op == "-":
            return a - b if a - b in (0, 1) else None
        return 0 if op in _INVARIANT_OPS and a == b == 0 else None

    def _name(self, node: Node, depth: int) -> int | None:
        name = text(node)
        if name == self.region.var:
            return 1
        d = self.plan.facts.defs.get(name)
        if d is None:
            try:
                return 0 if self.plan.kernel.param(name).is_scalar and \
                    not written(self.plan.body, name) else None
            except KeyError:
                return 0 if int_value(node) is not None else None
        if d.assigned or d.value is None or d.is_shared or d.is_pointer:
            return None
        if not self.region.holds(d.decl):
            return 0  # declared before the region: the thread's one value (thread_state_before)
        return self.step(d.value, depth + 1)

    def _memory(self, node: Node, depth: int) -> int | None:
        """A read of an array the region does not write, at an index the same in every lane."""
        arg = node.child_by_field_name("argument")
        idx = node.child_by_field_name("indices")
        index = idx.named_children[0] if idx is not None and idx.named_children else None
        if arg is None or index is None or arg.type != "identifier" or \
                not read_only_pointer(self.plan, text(arg)) or \
                writer(node, address=True) is not None:
            return None
        return 0 if self.step(index, depth + 1) == 0 else None

    def _divide(self, left: Node, op: str, right: Node, depth: int) -> int | None:
        """``a / e`` and ``a % e``: invariant operands stay invariant; the region's own index
        by a divisor ``e`` the same in every lane is its row (0) and its column (1) where ``e``
        is a multiple of VEC (the run-time test lane 0 makes)."""
        a, b = self.step(left, depth + 1), self.step(right, depth + 1)
        if b != 0 or a is None:
            return None
        if a == 0:
            return 0
        if not (strip(left).type == "identifier" and text(strip(left)) == self.region.var) or \
                not self.hoistable(right):
            return None
        self.divisors.append(right)
        return 0 if op == "/" else 1

    def hoistable(self, divisor: Node) -> bool:
        """The divisor reads only kernel scalars never written, integer constants and locals
        declared before the region: lane 0 can test it where its read is."""
        for n in walk(divisor):
            if n.type != "identifier":
                continue
            d = self.plan.facts.defs.get(text(n))
            if d is not None:
                if d.assigned or self.region.holds(d.decl):
                    return False
                continue
            try:
                if not self.plan.kernel.param(text(n)).is_scalar or \
                        written(self.plan.body, text(n)):
                    return False
            except KeyError:
                if int_value(n) is None:
                    return False
        return True

    def guard_invariant(self, node: Node) -> bool:
        """Whether every test ``node`` runs under, up to the element's statements, is the same
        in every lane of a row group, and no loop of the element's holds it."""
        below, up = node, node.parent
        tops = {(s.start_byte, s.end_byte, s.type) for s in
                [*self.region.statements(), self.region.body]}
        while up is not None and (below.start_byte, below.end_byte, below.type) not in tops:
            if up.type in _LOOPS:
                return False
            if up.type in ("conditional_expression", "if_statement"):
                test = up.child_by_field_name("condition")
                if test is not None and test.type == "condition_clause":  # if (..)
                    if below == test:
                        below, up = up, up.parent
                        continue
                    test = test.child_by_field_name("value")
                    if test is None:
                        return False
                if test is not None and below != test and self.step(test) != 0:
                    return False
            elif up.type == "binary_expression":
                parts = binary(up)
                if parts is not None and parts[1] in ("&&", "||") and below == parts[2] and \
                        self.step(parts[0]) != 0:
                    return False
            elif up.type == "switch_statement":
                return False
            below, up = up, up.parent
        return True


def read_only_pointer(plan: Plan, name: str) -> bool:
    """``name`` is a pointer parameter the kernel never writes through, steps or assigns:
    a read of it at one index is the same value in every lane."""
    if not plan.pointer(name) or plan.facts.defs.get(name) is not None or \
            written(plan.body, name):
        return False
    for n in walk(plan.body):
        if n.type == "subscript_expression" and writer(n, address=True) is not None:
            arg = n.child_by_field_name("argument")
            if arg is not None and text(strip(arg)) == name:
                return False
        if n.type == "pointer_expression" and text(n).startswith("*") and \
                writer(n) is not None and name in text(n):
            return False
    return True


def row_reads(plan: Plan, region: Region, streams: list[Access]) -> list[RowRead]:
    """The reads of ``region`` (a flat one-element region) that load as row groups."""
    if region.loop:
        return []
    stream_nodes = {a.node.start_byte for a in streams}
    out: list[RowRead] = []
    for n in region.walk():
        if n.type != "subscript_expression" or n.start_byte in stream_nodes or \
                writer(n, address=True) is not None:
            continue
        arg = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices")
        index = idx.named_children[0] if idx is not None and idx.named_children else None
        if arg is None or index is None or arg.type != "identifier" or \
                not read_only_pointer(plan, text(arg)):
            continue
        reading = _Reading(plan, region)
        if reading.step(index) != 1 or not reading.divisors or \
                not reading.guard_invariant(n) or elem_bytes(plan, text(arg)) is None:
            continue
        out.append(RowRead(n, text(arg), index, elem_type(plan, text(arg)),
                           tuple(reading.divisors)))
    # a read inside another's index (never a unit step, but kept out all the same)
    return [r for r in out if not any(o is not r and o.index.start_byte <= r.node.start_byte <
                                      o.index.end_byte for o in out)]


def apply_row_reads(plan: Plan, region: Region, streams: list[Access]) -> RowGroups | None:
    """Rewrite each row-group read of ``region`` through ``wb_row_lane``; returns the
    registers its vectors need and the row test, None where the region has none (or a
    division of its index that lane 0 cannot test). Its constraints: ``VEC * bytes <= 16``
    for each array read so."""
    reads = row_reads(plan, region, streams)
    divisors = _index_divisors(plan, region)
    if not reads or divisors is None:
        return None
    from workbench.templater.vector import VEC_STRUCT  # it calls this module

    taken = {text(n) for n in walk(plan.body) if n.type == "identifier"}
    names: list[str] = []
    k = 0
    for _read in reads:
        while f"wb_g{k}" in taken or f"wb_gok{k}" in taken:
            k += 1
        names.append(str(k))
        k += 1
    for r, s in zip(reads, names, strict=True):
        plan.rw.replace_span(r.node.start_byte, r.node.end_byte, make=_lane_read(r, s))
        plan.constrain(f"VEC * {elem_bytes(plan, r.array)} <= 16")
    plan.helper(VEC_STRUCT)
    plan.helper(ROW_LANE)
    return RowGroups(tuple(reads), tuple(names), divisors)


def _index_divisors(plan: Plan, region: Region) -> tuple[str, ...] | None:
    """Every divisor of the region's index (``var / E``, ``var % E``), as written, once each:
    the lane rewrite's quotients and remainders (:mod:`.vector_lanes`) carry nothing where
    each is a multiple of VEC; None where one reads what lane 0's test cannot (a local of
    the element's statements)."""
    reading = _Reading(plan, region)
    out: list[str] = []
    for n in region.walk():
        parts = binary(n) if n.type == "binary_expression" else None
        if parts is None or parts[1] not in ("/", "%") or \
                not (strip(parts[0]).type == "identifier" and
                     text(strip(parts[0])) == region.var):
            continue
        if not reading.hoistable(parts[2]):
            return None
        spelled = " ".join(text(parts[2]).split())
        if spelled not in out:
            out.append(spelled)
    return tuple(out)


def _lane_read(read: RowRead, stem: str) -> Callable[[Rewriter], str]:
    """The read as lane ``wb_v``'s element of its row group."""
    def make(rw: Rewriter) -> str:
        return (f"wb_row_lane<{read.elem}, VEC>(&{read.array}[{rw.text(read.index)}], wb_v, "
                f"wb_g{stem}, wb_gok{stem})")
    return make
