"""ROW_VEC: :mod:`.row_blocks`' threads as written ROW_VEC consecutive elements a thread,
each run of the row's streams moved as one 8- or 16-byte vector (``WbVec``, :mod:`.vector`'s
aligned type).

A row's thread ``t`` of the template runs, for each of its ROW_ITEMS steps ``k``, the threads
as written ``(t + k * lanes) * ROW_VEC + v``, ``v < ROW_VEC`` (``lanes = B / (ROW_ITEMS *
ROW_VEC)``), in an unrolled loop. Every stream the thread as written reaches through its
index (a *run access*: ``A[I]`` or ``*(A + I)``, ``A`` a pointer parameter, its cast
``reinterpret_cast<const __half2 *>(x)`` or a single-assignment local pointer ``A + J`` of
one) is read once as the run's vector at ``v = 0`` into a register copy, its elements taken
at each ``v``; a write puts the element into a copy stored whole at ``v = ROW_VEC - 1``.
That is the kernel as written where (else refused with the reason and the line):

- the index of each run access, single-assignment locals expanded (with a local pointer's
  offset), is ``threadIdx.x + R``: the thread's elements are consecutive, and every
  coefficient of ``R`` (its constant too) divides by the row's width ``B``: with ``B %
  (ROW_ITEMS * ROW_VEC) == 0`` (a constraint) the run's first element is a multiple of
  ROW_VEC, so from a ``cudaMalloc`` pointer (256-byte aligned) the vector is aligned; any
  other read (``pos[tok]``, the table's row) leaves the thread's place out of its index and
  reads the same element at every ``v``;
- every condition of the body (``if``, ``?:``, ``&&``, ``||``, loops, ``switch``) leaves the
  thread's place out (directly or through a local computed from it): all ``v`` of a run take
  one path, so the run's reads and its write happen for all of them or for none (a
  ``return;`` that ends one ends all); no run access is inside a loop, ``?:``, ``&&`` or
  ``||`` (each happens at most once a ``v``), nor under ``&`` (only its value is read);
- no pointer written is read in the body (the vector read early and the write late see no
  element of another ``v``), a write is a plain ``A[I] = value;`` statement, and every other
  use of a pointer is a local pointer's initialiser (a helper handed a pointer is refused);
- the element types' sizes are known (:data:`.vector_access.CAST_BYTES`, the parameters'
  dtypes): ROW_VEC takes those of 1, 2, 4 and 8 that divide ``B`` and keep a run within 16
  bytes.

The run is read and written through :data:`RUN_MOVES` as a ``WbVec`` of plain words of the
element's size, its bytes copied: an element type with its own copy operators (``__half2``)
would otherwise move element by element (rope_rotate_f16 at ROW_VEC 4: ``ld.global.v4.u32``
and ``st.global.v4.u32`` for the head, ``ld.global.v4.u32`` for the tables, in the PTX).

At 1 each run is one element: the kernel as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, builtin, strip, text, walk
from workbench.templater.apron_loads import expression_macros
from workbench.templater.plan import Plan
from workbench.templater.regtile import single_assignment_values
from workbench.templater.rewrite import Rewriter
from workbench.templater.stencil import Poly, add, poly_of
from workbench.templater.vector import VEC_STRUCT
from workbench.templater.vector_access import CAST_BYTES, Illegal, cast_stream

KNOB = "ROW_VEC"
_LANE = "threadIdx.x"
_CONDITIONS = ("if_statement", "conditional_expression", "switch_statement", *LOOPS)


@dataclass(frozen=True)
class Pointer:
    """A pointer expression resolved to its root parameter: element type and size, and
    its offset from the parameter in elements."""

    root: str
    elem: str
    size: int
    offset: Poly


@dataclass(frozen=True)
class RunAccess:
    node: Node  # the subscript or dereference
    elem: str
    size: int
    store: Node | None  # the statement ``A[I] = value;`` of a write, else None


@dataclass(frozen=True)
class RowVec:
    values: list[int]
    accesses: list[RunAccess]


def plan_row_vec(plan: Plan, width: int) -> RowVec:
    """The run accesses of the row's body and ROW_VEC's values; raises Illegal."""
    body = plan.body
    values = {**expression_macros(plan.source.tree.root_node, divide=True),
              **single_assignment_values(body, set())}
    derived = _lane_derived(body)
    for n in walk(body):
        cond = _condition(n)
        if cond is not None and _mentions_lane(cond, derived):
            raise Illegal(f"the condition `{text(cond)}` reads the thread's place: a run's "
                          "elements would take different paths", n)
    pointers = {p.name for p in plan.kernel.params if p.is_pointer}
    local_ptrs = _local_pointers(body, values, pointers)
    accesses: list[RunAccess] = []
    read_roots: set[str] = set()
    written_roots: set[str] = set()
    seen: set[int] = set()
    for n in walk(body):
        found = _access(n)
        if found is None:
            continue
        ptr_node, index = found
        ptr = _resolve(plan, ptr_node, values, pointers, local_ptrs)
        if ptr is None:
            if any(text(i) in pointers | set(local_ptrs) for i in walk(ptr_node)
                   if i.type == "identifier"):
                raise Illegal(f"`{text(n)}`: its pointer is not a parameter, its cast or a "
                              "local pointer of one", n)
            continue
        seen.update(i.start_byte for i in walk(n) if i.type == "identifier")
        store = _store(n)
        if store is None:
            read_roots.add(ptr.root)
        else:
            written_roots.add(ptr.root)
        if not _mentions_lane(n, derived):
            continue  # the same element at every v
        full = add(ptr.offset, poly_of(index, values, divide=True) if index is not None
                   else {})
        if any(_names_lane(atom, derived) for m, c in full.items() if m != (_LANE,)
               for atom in m):
            raise Illegal(f"`{text(n)}`: its index reads the thread's place other than "
                          "added at unit stride", n)
        if full.get((_LANE,), 0) != 1 or sum(1 for m in full if _LANE in m) != 1:
            raise Illegal(f"`{text(n)}`: its index is not the thread's place at unit stride",
                          n)
        if any(c % width for m, c in full.items() if m != (_LANE,)):
            raise Illegal(f"`{text(n)}`: its row offset is not a multiple of the row's width "
                          f"{width} (a run's vector would not be aligned)", n)
        _once(n, body)
        accesses.append(RunAccess(n, ptr.elem, ptr.size, store))
    for n in walk(body):
        if n.type == "identifier" and text(n) in pointers | set(local_ptrs) and \
                n.start_byte not in seen and not _in_pointer_init(n, local_ptrs) and \
                n.parent is not None and n.parent.type != "pointer_declarator":
            raise Illegal(f"`{text(n)}` is used other than through an element read or "
                          "write", n)
    both = sorted(read_roots & written_roots)
    if both:
        raise Illegal(f"`{both[0]}` is written and read in the body", body)
    if not accesses:
        raise Illegal("no stream is read or written at the thread's place", body)
    widest = max(a.size for a in accesses)
    offered = [v for v in (1, 2, 4, 8) if width % v == 0 and v * widest <= 16]
    if len(offered) < 2:
        raise Illegal(f"no run of {widest}-byte elements fits a 16-byte vector and the "
                      f"row's width {width}", body)
    return RowVec(offered, accesses)


def _condition(n: Node) -> Node | None:
    """The test of a branching construct (``&&``/``||``: the whole expression)."""
    if n.type in _CONDITIONS:
        return n.child_by_field_name("condition") or n
    if n.type == "binary_expression" and \
            text(n.child_by_field_name("operator")) in ("&&", "||"):
        return n
    return None


def _lane_derived(body: Node) -> set[str]:
    """The locals computed from the thread's place (declared or assigned from it)."""
    derived: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in walk(body):
            pairs: list[tuple[Node | None, Node | None]] = []
            if n.type == "init_declarator":
                pairs.append((n.child_by_field_name("declarator"),
                              n.child_by_field_name("value")))
            elif n.type == "assignment_expression":
                pairs.append((n.child_by_field_name("left"), n.child_by_field_name("right")))
            for target, value in pairs:
                if target is None or value is None:
                    continue
                names = [text(i) for i in walk(target) if i.type == "identifier"]
                if names and names[-1] not in derived and _mentions_lane(value, derived):
                    derived.add(names[-1])
                    changed = True
    return derived


def _names_lane(atom: str, derived: set[str]) -> bool:
    """An index polynomial's atom (a name or an opaque text) that reads the thread's place."""
    return "threadIdx" in atom or any(re.search(rf"\b{re.escape(d)}\b", atom)
                                      for d in derived)


def _mentions_lane(node: Node, derived: set[str]) -> bool:
    return any(builtin(i, "threadIdx") == "x" or
               (i.type == "identifier" and text(i) in derived) for i in walk(node))


def _local_pointers(body: Node, values: dict[str, Node], pointers: set[str]
                    ) -> dict[str, Node]:
    """Single-assignment locals initialised from a pointer parameter (name -> initialiser)."""
    out: dict[str, Node] = {}
    for name, value in values.items():
        decl = value.parent.child_by_field_name("declarator") if value.parent else None
        if decl is not None and decl.type == "pointer_declarator" and any(i.type == "identifier" and text(i) in pointers | set(out)
               for i in walk(value)):
            out[name] = value
    return out


def _in_pointer_init(n: Node, local_ptrs: dict[str, Node]) -> bool:
    return any(v.start_byte <= n.start_byte and n.end_byte <= v.end_byte
               for v in local_ptrs.values())


def _access(n: Node) -> tuple[Node, Node | None] | None:
    """(pointer, index) of ``P[I]``, ``*(P + I)`` or ``*P``; else None."""
    if n.type == "subscript_expression":
        arg = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices") or n.child_by_field_name("index")
        if idx is not None and idx.type == "subscript_argument_list" and \
                idx.named_child_count == 1:
            idx = idx.named_children[0]
        return (arg, idx) if arg is not None and idx is not None else None
    if n.type == "pointer_expression" and text(n).startswith("*"):
        arg = n.child_by_field_name("argument")
        if arg is None:
            return None
        inner = strip(arg)
        if inner.type == "binary_expression" and \
                text(inner.child_by_field_name("operator")) == "+":
            left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
            if left is not None and right is not None:
                return left, right
        return arg, None
    return None


def _resolve(plan: Plan, node: Node, values: dict[str, Node], pointers: set[str],
             local_ptrs: dict[str, Node], depth: int = 0) -> Pointer | None:
    """The root parameter, element and offset of a pointer expression; None: not one."""
    cast = cast_stream(text(node))
    if cast is not None and cast[1] in pointers:
        return Pointer(cast[1], cast[0], CAST_BYTES[cast[0]], {})
    bare = node
    while bare.type == "parenthesized_expression" and bare.named_child_count == 1:
        bare = bare.named_children[0]
    if bare.type == "identifier" and text(bare) in pointers:
        size = plan.elem_bytes(text(bare))
        if size is None or not size.isdigit():
            return None
        return Pointer(text(bare), plan.kernel.param(text(bare)).base_type, int(size), {})
    if bare.type == "identifier" and text(bare) in local_ptrs and depth < 8:
        return _resolve(plan, local_ptrs[text(bare)], values, pointers, local_ptrs,
                        depth + 1)
    if bare.type == "binary_expression" and text(bare.child_by_field_name("operator")) == "+":
        left, right = bare.child_by_field_name("left"), bare.child_by_field_name("right")
        if left is None or right is None:
            return None
        base = _resolve(plan, left, values, pointers, local_ptrs, depth + 1)
        if base is None:
            return None
        return Pointer(base.root, base.elem, base.size,
                       add(base.offset, poly_of(right, values, divide=True)))
    return None


def _store(n: Node) -> Node | None:
    """The statement ``n = value;`` where ``n`` is the left of a plain assignment; raises
    Illegal for a compound one, a write inside an expression, or a taken address."""
    up = n.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    if up is None:
        return None
    if up.type == "pointer_expression" and text(up).startswith("&"):
        raise Illegal(f"`{text(up)}` takes an element's address", up)
    if up.type == "update_expression":
        raise Illegal(f"`{text(up)}` updates an element in place", up)
    if up.type != "assignment_expression" or up.child_by_field_name("left") is None or \
            strip(up.child_by_field_name("left")) != n:  # type: ignore[arg-type]
        return None
    if text(up.child_by_field_name("operator")) != "=":
        raise Illegal(f"`{text(up)}` reads and writes an element", up)
    if up.parent is None or up.parent.type != "expression_statement":
        raise Illegal(f"`{text(up)}` writes inside an expression", up)
    return up.parent


def _once(n: Node, body: Node) -> None:
    """Raise where a run access may happen more or less than once a thread as written."""
    up = n.parent
    while up is not None and up != body:
        if up.type in (*LOOPS, "conditional_expression", "switch_statement") or \
                (up.type == "binary_expression" and
                 text(up.child_by_field_name("operator")) in ("&&", "||")):
            raise Illegal(f"`{text(n)}` is inside `{text(up).split(chr(10))[0]}`: not once "
                          "a thread", n)
        up = up.parent


#: A run moved as one vector of plain words of its elements' size (``__half2``'s own copy
#: operators would move a ``WbVec`` of them element by element).
RUN_MOVES = """template <int B> struct WbWordOf;  // a plain word of B bytes
template <> struct WbWordOf<1> { typedef unsigned char type; };
template <> struct WbWordOf<2> { typedef unsigned short type; };
template <> struct WbWordOf<4> { typedef unsigned int type; };
template <> struct WbWordOf<8> { typedef unsigned long long type; };
template <int N, typename T>
__device__ __forceinline__ WbVec<T, N> wb_run_load(const T* p) {  // one aligned vector read
  typedef WbVec<typename WbWordOf<sizeof(T)>::type, N> W;
  const W w = *reinterpret_cast<const W*>(p);
  WbVec<T, N> v;
  __builtin_memcpy((void*)&v, (const void*)&w, sizeof(W));
  return v;
}
template <int N, typename T>
__device__ __forceinline__ void wb_run_store(T* p, const WbVec<T, N>& v) {  // one write
  typedef WbVec<typename WbWordOf<sizeof(T)>::type, N> W;
  W w;
  __builtin_memcpy((void*)&w, (const void*)&v, sizeof(W));
  *reinterpret_cast<W*>(p) = w;
}"""


def rewrite_row_vec(plan: Plan, vec: RowVec) -> str:
    """Replace the run accesses; the declarations of their register copies (placed before
    the loop over v)."""
    plan.helper(VEC_STRUCT)
    plan.helper(RUN_MOVES)
    decls = []
    for k, a in enumerate(vec.accesses):
        name, vtype = f"wb_run{k}", f"WbVec<{a.elem}, {KNOB}>"
        decls.append(f"  {vtype} {name};  // `{text(a.node)}` of the run\n")
        node = a.node
        if a.store is None:
            plan.rw.replace_span(node.start_byte, node.end_byte,
                                 make=_read(node, name))
        else:
            plan.rw.replace_span(a.store.start_byte, a.store.end_byte,
                                 make=_write(a.store, node, name))
    return "".join(decls)


def _read(node: Node, name: str) -> Callable[[Rewriter], str]:
    def make(rw: Rewriter) -> str:
        at = rw.render(node.start_byte, node.end_byte)
        return (f"(wb_v == 0 ? ({name} = wb_run_load<{KNOB}>(&({at})), "
                f"{name}.v[0]) : {name}.v[wb_v])")
    return make


def _write(stmt: Node, node: Node, name: str) -> Callable[[Rewriter], str]:
    assign = stmt.named_children[0]
    while assign.type == "parenthesized_expression":
        assign = assign.named_children[0]
    right = assign.child_by_field_name("right")
    assert right is not None

    def make(rw: Rewriter) -> str:
        at = rw.render(node.start_byte, node.end_byte)
        value = rw.render(right.start_byte, right.end_byte)
        return (f"{{ {name}.v[wb_v] = ({value}); if (wb_v == {KNOB} - 1) "
                f"wb_run_store<{KNOB}>(&({at}) - ({KNOB} - 1), {name}); }}")
    return make
