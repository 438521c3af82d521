"""A recognised grid-stride reduction: its operator, its parts, and each operator's identity.

:class:`Reduction` is what :mod:`workbench.templater.reduce_match` finds in a kernel and
:mod:`workbench.templater.reduce_rewrite` transforms; :func:`identity` is the value that
leaves a sum, max or min unchanged, as CUDA text per accumulator type (the fill for slots of
blocks not launched, and the start of each extra accumulator).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

_INF = {"float": "__int_as_float(0x7f800000)", "double": "__longlong_as_double(0x7ff0000000000000LL)"}
# The operator's identity per accumulator type (None: unknown, the fill is refused).
_IDENTITY: dict[str, dict[str, str]] = {
    "sum": {},  # (T)0 for every arithmetic type
    "max": {"float": f"(-{_INF['float']})", "double": f"(-{_INF['double']})",
            "int": "(-2147483647 - 1)", "unsigned": "0u", "unsigned int": "0u",
            "long long": "(-9223372036854775807LL - 1)", "unsigned long long": "0ull"},
    "min": {"float": _INF["float"], "double": _INF["double"], "int": "2147483647",
            "unsigned": "0xffffffffu", "unsigned int": "0xffffffffu",
            "long long": "9223372036854775807LL", "unsigned long long": "0xffffffffffffffffull"},
}
ARITHMETIC = {"float", "double", "int", "unsigned", "unsigned int", "long long",
              "unsigned long long", "long", "unsigned long", "short", "char"}
SHUFFLED = {"float", "double", "int", "unsigned", "unsigned int", "long long",
            "unsigned long long"}


@dataclass(frozen=True)
class Op:
    """The reduction's operator: its kind and, for max/min, the author's function."""

    kind: str  # "sum" | "max" | "min"
    func: str = ""

    def combine(self, a: str, b: str) -> str:
        return f"{a} + {b}" if self.kind == "sum" else f"{self.func}({a}, {b})"


@dataclass(frozen=True)
class Reduction:
    """The recognised kernel: its loop, accumulation, tree and final store."""

    acc: str
    acc_type: str
    var: str
    var_type: str
    loop: Node  # the for / while statement
    loop_decl: Node | None  # the while form's ``int i = g;``
    bound: Node
    update: Node  # the accumulation expression (``s += E`` / ``s = f(s, E)``)
    value: Node  # E
    op: Op
    buf: str
    store: Node  # ``buf[tid] = s;``
    tree: Node
    final: Node  # the thread-0 if statement
    out: str
    atomic: bool
    walk_base: str | None = None  # a pointer walk: the array the pointer ``var`` walks
    # the author's own block stage, kept as written (:mod:`.reduce_tail`): ``buf`` is empty,
    # ``store`` its first statement, ``tree`` and ``final`` its last; no FINAL, no block size
    kept_tail: bool = False
    prelude: tuple[Node, ...] = ()  # as Head's


@dataclass(frozen=True)
class Head:
    """The grid-stride loop and its accumulation: what every block stage starts from."""

    acc: str
    acc_type: str
    var: str
    var_type: str
    loop: Node
    decl: Node | None
    bound: Node
    update: Node
    value: Node
    op: Op
    walk_base: str | None = None
    # the const locals the loop body declares before its accumulation (``{ const float v =
    # x[i]; s += v * v; }``), written before it in every copy of the accumulation
    prelude: tuple[Node, ...] = ()


def identity(op: Op, typ: str) -> str | None:
    """The operator's identity for ``typ`` as CUDA text, or None where it is not known."""
    if op.kind == "sum":
        return f"({typ})0" if typ in ARITHMETIC else None
    return _IDENTITY[op.kind].get(typ)




INTEGER = ARITHMETIC - {"float", "double"}


def exactness(red: Reduction) -> str:
    """Why a new order of the operator gives the kernel's result, or how far it may move.

    Integer sums (two's complement, wrapping) and every max / min are associative and
    commutative: each order gives the same bits. A float sum's rounding depends on the order
    (every knob but the defaults changes it): the reduce family allows it and the gate checks
    the result within the folder's tolerance, as for every float reduction."""
    if red.op.kind != "sum" or red.acc_type in INTEGER:
        return f"the {red.op.kind} of {red.acc_type} values is exact in any order"
    return (f"a {red.acc_type} sum in another order rounds differently (checked by the gate "
            "within the folder's tolerance)")
