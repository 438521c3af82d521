"""Vector (16-byte) loads of a register-tiled GEMM's shared tiles (the VEC knob of
:mod:`.regtile`): four floats, or eight halves.

A tile's cooperative store, as the author wrote it, gives the tile element at position
``(r, c)`` (``c`` along the tile's inner extent) as ``guard ? X[idx] : other``, as an if/else
of the two, or as ``X[idx]``; ``X`` a pointer to ``float``. At ``VEC == 4`` each thread takes
four neighbouring positions ``c .. c + 3`` of one row and loads them with one 16-byte load
only where, at run time, all of the following hold -- otherwise it runs the store as written
at each of the four positions:

- the guard holds at all four positions (so the kernel as written reads all four elements);
- ``&X[idx(c + q)] == &X[idx(c)] + q`` for ``q = 1 .. 3`` (the four are one contiguous run);
- ``&X[idx(c)]`` is 16-byte aligned (a leading dimension or batch offset that is not a
  multiple of four floats falls back to the store as written, never to a misaligned load).

Each thread loads a fixed number of vectors per tile (a loop the compiler unrolls). It first
tests all of them (a loop kept rolled: its tests are not held in registers across the
product); where every one passes -- an interior tile with aligned rows -- it issues all the
16-byte loads of the tiles stored together with no test or branch between them, then stores
them; otherwise each vector decides alone as above.

So every config reads exactly the elements the kernel as written reads, and writes the same
values; the constraint ``<inner extent> % 4 == 0`` keeps the runs inside a tile row. Stores
of any other form (a computed value, a load of another type, an index that does not run
along the tile's row) are refused with their line and keep the scalar loop.

Half precision: ``X`` a pointer to ``__half``, the value stored ``X[idx]`` or ``*address``
as is (a half tile) or converted by ``__half2float`` (a float tile). ``VEC == 8``: eight
neighbouring positions a thread, one 16-byte load (a ``uint4``) under the same three run-time
tests (all eight in bounds, one contiguous run, 16-byte aligned); half q is the low (even q)
or high 16 bits of word q / 2 (little-endian), taken from the register and converted as the
kernel as written converts it, so each position gets the bits it gets as written. The
constraint is then ``<inner extent> % 8 == 0``. A kernel whose tiles would need both widths
keeps the second width's loads scalar (one VEC knob, one meaning). Whether a load runs along
the row is evaluated on the address (a local pointer that moves with the thread position
included).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import strip, text, walk
from workbench.templater.plan import Plan

VEC_WIDTH = 4
#: the one spelling of a 16-byte load of the run at ``wb_p`` (the host tests count them by it)
VECTOR_LOAD = "const float4 wb_v = *reinterpret_cast<const float4*>(wb_p);"
#: halves per 16-byte load, and its one spelling (eight halves in the four words of a uint4)
HALF_WIDTH = 8
HALF_VECTOR_LOAD = "const uint4 wb_v = *reinterpret_cast<const uint4*>(wb_p);"
HALF_TYPES = frozenset({"__half", "half"})
#: the calls that convert one loaded half to float as it is stored (the value is exact)
HALF_CONVERSIONS = frozenset({"__half2float"})


class NotVector(WorkbenchError):
    """A store the vector path cannot take, with its reason (recorded as a VEC finding)."""


@dataclass(frozen=True)
class VectorStore:
    """The parts of one cooperative store: the tile element written, the guard (None: none
    written), the global load and the whole statement (its scalar form)."""

    target: Node
    guard: Node | None
    load: Node
    statement: Node
    width: int = VEC_WIDTH  # elements per 16-byte load: 4 floats or 8 halves
    convert: str | None = None  # the conversion around a half load (``__half2float``)
    address: bool = False  # ``load`` is the element's address (``__ldg(A + i)``'s ``A + i``)

    def pointer(self, rendered: str) -> str:
        """The element's address from ``load`` rendered at a position."""
        return f"({rendered})" if self.address else f"&{rendered}"

    @property
    def elem(self) -> str:
        return "float" if self.width == VEC_WIDTH else "__half"


def _assignment(stmt: Node) -> Node | None:
    if stmt.type == "compound_statement":
        inner = [c for c in stmt.named_children if c.type != "comment"]
        return _assignment(inner[0]) if len(inner) == 1 else None
    if stmt.type == "expression_statement" and stmt.named_child_count == 1:
        e = strip(stmt.named_children[0])
        if e.type == "assignment_expression" and text(e.child_by_field_name("operator")) == "=":
            return e
    return None


def float_pointers(plan: Plan, body: Node, types: frozenset[str] = frozenset({"float"}),
                   dtype: str = "f32") -> set[str]:
    """Names declared as pointers to (const) float (or to ``types`` whose kernel-parameter
    dtype is ``dtype``): kernel parameters and locals."""
    out = {p.name for p in plan.kernel.params if p.is_pointer and p.dtype == dtype}
    for n in walk(body):
        if n.type != "declaration" or text(n.child_by_field_name("type")) not in types:
            continue
        for d in n.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if inner is not None and inner.type == "pointer_declarator":
                name = inner.child_by_field_name("declarator")
                if name is not None and name.type == "identifier":
                    out.add(text(name))
    return out


class _Unknown(WorkbenchError):
    """An expression the unit-stride probe does not evaluate (caught by :func:`unit_stride`)."""


_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: int(a / b) if b else 0, "%": lambda a, b: a - b * int(a / b) if b else 0,
    "<<": lambda a, b: a << b if 0 <= b < 63 else _unknown(f"<< {b}"),
    ">>": lambda a, b: a >> b if 0 <= b < 63 else _unknown(f">> {b}"),
}


def _unknown(what: str) -> int:
    raise _Unknown(what)


def evaluate(node: Node, leaf: Callable[[Node], int | Node | None],
             seen: dict[str, int], rng: random.Random) -> int:
    """The integer value of an index expression (C's truncating / and %). ``leaf(n)``
    answers a leaf's value, an expression to evaluate in its place (an inlined local), or
    None: an unknown block-uniform value, drawn at random once per spelling."""
    node = strip(node)
    known = leaf(node)
    if isinstance(known, int):
        return known
    if known is not None:
        return evaluate(known, leaf, seen, rng)
    if node.type == "number_literal":
        digits = text(node).rstrip("uUlL")
        if digits.isdigit():
            return int(digits)
        raise _Unknown(text(node))
    if node.type in ("identifier", "field_expression"):
        return seen.setdefault(text(node), rng.randrange(1, 500))
    if node.type == "cast_expression":
        value = node.child_by_field_name("value")
        if value is not None:
            return evaluate(value, leaf, seen, rng)
    if node.type == "unary_expression" and text(node.child_by_field_name("operator")) in "-+":
        arg = node.child_by_field_name("argument")
        if arg is not None:
            sign = -1 if text(node.child_by_field_name("operator")) == "-" else 1
            return sign * evaluate(arg, leaf, seen, rng)
    if node.type == "binary_expression":
        op = text(node.child_by_field_name("operator"))
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in _OPS and left is not None and right is not None:
            return _OPS[op](evaluate(left, leaf, seen, rng), evaluate(right, leaf, seen, rng))
    raise _Unknown(text(node))


def unit_stride(index: Node, at: Callable[[int, int], Callable[[Node], int | Node | None]],
                trials: int = 4, width: int = VEC_WIDTH,
                pointer: Node | None = None) -> bool | None:
    """Whether ``index`` at tile position (r, c + q) is ``index(r, c) + q`` for q < width,
    on random values of everything block-uniform (None: an expression it cannot evaluate).
    ``at(r, c)`` is the leaf lookup with the thread position at (r, c); ``pointer``, where
    given, is added to the index (a local pointer that moves with the position)."""
    rng = random.Random(28)

    def address(r: int, c: int, seen: dict[str, int]) -> int:
        moved = evaluate(pointer, at(r, c), seen, rng) if pointer is not None else 0
        return moved + evaluate(index, at(r, c), seen, rng)
    try:
        for _ in range(trials):
            seen: dict[str, int] = {}
            r, c = rng.randrange(0, 64), rng.randrange(0, 64) * width
            base = address(r, c, seen)
            if any(address(r, c + q, seen) != base + q for q in range(1, width)):
                return False
    except _Unknown:
        return None
    return True


def analyse_store(stmt: Node, pointers: set[str], tiles: set[str],
                  runs_along_row: Callable[[Node, int, Node | None], bool | None],
                  halves: set[str] | None = None) -> VectorStore:
    """The parts of ``stmt`` the vector path needs; NotVector with the reason otherwise.
    ``runs_along_row(idx, width, pointer)``: the load's index plus its pointer (or a
    ``*address`` load's address) is the position along the tile's row plus a value fixed for
    the row, over ``width`` positions (None: an index the probe could not evaluate). ``pointers``: pointers to
    float; ``halves``: pointers to half (eight a load, each stored as written or converted
    by ``__half2float``)."""
    guard: Node | None = None
    if stmt.type == "if_statement":
        cond = stmt.child_by_field_name("condition")
        cons = stmt.child_by_field_name("consequence")
        if cond is None or cons is None:
            raise NotVector("an if without a condition or body")
        assign = _assignment(cons)
        guard = strip(cond)
        if guard.type == "condition_clause" and guard.named_child_count == 1:
            guard = strip(guard.named_children[0])
    else:
        assign = _assignment(stmt)
    if assign is None:
        raise NotVector("the store is not one assignment of the tile element")
    target, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    assert target is not None and value is not None
    value = strip(value)
    if guard is None and value.type == "conditional_expression":
        guard = value.child_by_field_name("condition")
        value = strip(value.child_by_field_name("consequence"))  # type: ignore[arg-type]
    convert = _conversion(value)
    if convert is not None:
        value = strip(value.child_by_field_name("arguments").named_children[0])  # type: ignore[union-attr]
    value = _read_only_load(value)
    address = _ldg_address(value)
    index: Node | None
    if address is not None:  # __ldg(A + i): the element *(A + i), its address as written
        value = address
        array, index = _load_parts_of_address(address)
    else:
        array, index = _load_parts(value)
    halves = halves or set()
    width = HALF_WIDTH if text(array) in halves else VEC_WIDTH
    if array.type != "identifier" or text(array) in tiles or \
            text(array) not in (halves if convert is not None else pointers | halves):
        raise NotVector(f"`{text(array)}` is not a pointer to float (float4 loads need "
                        "4-byte elements) nor to half (eight a 16-byte load)")
    along = runs_along_row(index, width, array if value.type == "subscript_expression"
                           else None) if index is not None else None
    if along is None:
        raise NotVector(f"the index of `{text(value)}` is not an integer expression the "
                        "analysis evaluates")
    if not along:
        raise NotVector(f"the index of `{text(value)}` does not step by one element along "
                        "the tile's row (its inner position)")
    for n in walk(value):
        if n.type in ("call_expression", "assignment_expression", "update_expression"):
            raise NotVector(f"`{text(n)}` in the load has effects or calls")
    if guard is not None and any(n.type in ("call_expression", "assignment_expression",
                                            "update_expression") for n in walk(guard)):
        raise NotVector(f"the guard `{text(guard)}` has effects or calls")
    return VectorStore(target, guard, value, stmt, width, convert, address is not None)


def _conversion(value: Node) -> str | None:
    """The name of a one-argument half-to-float conversion ``value`` is a call of, or None."""
    if value.type != "call_expression":
        return None
    fn, args = value.child_by_field_name("function"), value.child_by_field_name("arguments")
    if fn is None or args is None or text(fn) not in HALF_CONVERSIONS or \
            args.named_child_count != 1:
        return None
    return text(fn)


def _read_only_load(value: Node) -> Node:
    """The load ``X[index]`` (or ``*p``) of ``__ldg(&X[index])``, ``value`` itself otherwise:
    the read-only path's hint names the same element, and the 16-byte load takes the element's
    address (the store as written, which the ragged runs keep, keeps the hint)."""
    fn, args = value.child_by_field_name("function"), value.child_by_field_name("arguments")
    if value.type != "call_expression" or fn is None or args is None or \
            text(fn) != "__ldg" or args.named_child_count != 1:
        return value
    address = strip(args.named_children[0])
    if address.type != "pointer_expression" or \
            text(address.child_by_field_name("operator")) != "&":
        return value
    load = strip(address.child_by_field_name("argument"))  # type: ignore[arg-type]
    return load if load.type in ("subscript_expression", "pointer_expression") else value


def _ldg_address(value: Node) -> Node | None:
    """The address ``__ldg(A + i)`` (or ``__ldg(p)``) loads through, where it is not
    ``&X[index]`` (:func:`_read_only_load` reads that one as the load ``X[index]``)."""
    fn, args = value.child_by_field_name("function"), value.child_by_field_name("arguments")
    if value.type != "call_expression" or fn is None or args is None or \
            text(fn) != "__ldg" or args.named_child_count != 1:
        return None
    return strip(args.named_children[0])


def _load_parts_of_address(address: Node) -> tuple[Node, Node]:
    """(pointer, address) of the element at ``address`` (``X``, ``X + e`` or ``X + e + f``:
    the leftmost operand of its sums)."""
    pointer = address
    while pointer.type == "binary_expression" and \
            text(pointer.child_by_field_name("operator")) == "+":
        pointer = strip(pointer.child_by_field_name("left"))  # type: ignore[arg-type]
    return pointer, address


def _load_parts(value: Node) -> tuple[Node, Node | None]:
    """(pointer, index) of a load ``X[index]``, (pointer, address) of ``*X`` or
    ``*(X + e)``; NotVector for any other value."""
    if value.type == "subscript_expression":
        array = strip(value.child_by_field_name("argument"))  # type: ignore[arg-type]
        index = value.child_by_field_name("indices") or value.child_by_field_name("index")
        if index is not None and index.type == "subscript_argument_list":
            index = index.named_children[0] if index.named_child_count == 1 else None
        return array, index
    if value.type == "pointer_expression" and \
            text(value.child_by_field_name("operator")) == "*":
        return _load_parts_of_address(
            strip(value.child_by_field_name("argument")))  # type: ignore[arg-type]
    raise NotVector(f"the stored value `{text(value)}` is not a load `X[index]`")


def per_thread_loop(rows: str, cols: str, threads: str, body: list[str], *,
                    width: int = 1, unroll: str = "") -> list[str]:
    """A loop of every thread over the ``rows x cols / width`` positions of a tile with a
    trip count fixed at compile time (``#pragma unroll``: each thread's loads of a tile are
    independent, so they are issued together rather than one per iteration); ``wb_e`` is the
    position, ``body`` runs where it is inside the tile (a test the compiler drops where the
    block's threads divide the positions). ``unroll="1"`` keeps it a loop (the tests of
    :func:`vector_section`: unrolled, the compiler keeps every vector's loop-invariant part
    of them live across the product loop, past the registers of two blocks per SM)."""
    n = f"(({rows}) * (({cols}) / {width}))" if width > 1 else f"(({rows}) * ({cols}))"
    return [f"#pragma unroll {unroll}".rstrip(),
            f"for (int wb_s = 0; wb_s < ({n} + ({threads}) - 1) / ({threads}); ++wb_s) {{",
            f"  const int wb_e = wb_tid + wb_s * ({threads});",
            f"  if ({n} % ({threads}) == 0 || wb_e < {n}) {{",
            *("    " + x for x in body),
            "  }",
            "}"]


@dataclass(frozen=True)
class VectorLoop:
    """The float4 path of one cooperative store, in the pieces :func:`vector_section` puts
    together: ``check`` clears ``wb_fast`` unless every vector the thread loads is one aligned
    run the kernel as written reads whole; ``loads`` / ``stores`` are the straight-line fast
    path (``wb_v<tag>`` holds the thread's vectors); ``guarded`` decides per vector (one
    16-byte load, or the store as written at each of its four positions)."""

    check: list[str]
    loads: list[str]
    stores: list[str]
    guarded: list[str]


def vector_loop(v: VectorStore, at: Callable[[Node, str], str], scalar: str, *, rows: str,
                cols: str, threads: str, tag: str) -> VectorLoop:
    """The ``#if VEC == <width>`` path of one store. ``at(node, c)`` renders ``node`` at the
    row ``wb_r`` and the inner position ``c``; ``scalar`` is the store as written at
    (wb_r, wb_c); ``tag`` makes the register array's name unique in the body."""
    w = v.width
    half = w != VEC_WIDTH
    load, vtype = (HALF_VECTOR_LOAD, "uint4") if half else (VECTOR_LOAD, "float4")
    pos = ["wb_c4"] + [f"(wb_c4 + {q})" for q in range(1, w)]
    checks = ["((unsigned long long)wb_p & 15) == 0"]
    if v.guard is not None:
        checks += [f"({at(v.guard, c)})" for c in pos]
    checks += [f"{v.pointer(at(v.load, c))} == wb_p + {q}" for q, c in enumerate(pos) if q]
    ok = "\n    && ".join(checks)
    every = "\n    & ".join(f"({c})" for c in checks)  # no branch between the tests
    lanes = "xyzw"
    per = f"((({rows}) * (({cols}) / {w}) + ({threads}) - 1) / ({threads}))"
    # wb_e >= 0: unsigned / and % (a shift and a mask for power-of-two extents)
    place = [f"const int wb_r = (int)((unsigned)wb_e / (unsigned)(({cols}) / {w})), "
             f"wb_c4 = (int)((unsigned)wb_e % (unsigned)(({cols}) / {w})) * {w};",
             f"const {v.elem}* wb_p = {v.pointer(at(v.load, pos[0]))};"]

    def element(src: str, q: int) -> str:
        if not half:
            return f"{src}.{lanes[q]}"
        # half q of the run: the low (even q) or high half of word q / 2 (little-endian),
        # taken from the register as is, converted where the kernel as written converts
        bits = f"__ushort_as_half((unsigned short)({src}.{lanes[q // 2]} >> {16 * (q % 2)}))"
        return f"{v.convert}({bits})" if v.convert is not None else bits

    def put(src: str) -> list[str]:
        return [f"{at(v.target, c)} = {element(src, q)};" for q, c in enumerate(pos)]

    def loop(body: list[str]) -> list[str]:
        return per_thread_loop(rows, cols, threads, body, width=w)
    guarded = [
        *place,
        f"// one 16-byte load where the {'four' if w == 4 else 'eight'} elements are the "
        "ones the kernel as written",
        "// reads, one aligned run; the store as written at each position otherwise",
        f"if ({ok}) {{",
        "  " + load,
        *("  " + x for x in put("wb_v")),
        "} else {",
        f"  for (int wb_q = 0; wb_q < {w}; ++wb_q) {{",
        "    const int wb_c = wb_c4 + wb_q;",
        f"    {scalar}",
        "  }",
        "}"]
    return VectorLoop(
        check=per_thread_loop(rows, cols, threads, [*place, f"wb_fast &= {every};"], width=w,
                              unroll="1"),
        loads=[f"{vtype} wb_v{tag}[{per}];",
               *loop([*place, load, f"wb_v{tag}[wb_s] = wb_v;"])],
        stores=loop([place[0], *put(f"wb_v{tag}[wb_s]")]),
        guarded=loop(guarded))


def vector_section(loops: list[VectorLoop], vec: str) -> list[str]:
    """The ``#if VEC == 4`` body of consecutive vector stores: where every vector this thread
    loads for them passes its test (interior tiles, aligned rows), their global loads are
    issued together with no test and no branch between them, then stored; elsewhere (a
    tile at the matrix's edge, a row that is not 16-byte aligned) each vector decides alone.
    Each path writes what the kernel as written writes."""
    return ["bool wb_fast = true;  // every vector of this thread one aligned run read whole",
            *(x for lp in loops for x in lp.check),
            "if (wb_fast) {",
            *("  " + x for lp in loops for x in lp.loads),
            *("  " + x for lp in loops for x in lp.stores),
            "} else {",
            *("  " + x for lp in loops for x in lp.guarded),
            "}"]
