"""Tap reads that do not change with the channel, loaded once and kept in registers across
the channels of an outermost channel loop (:mod:`.conv`; a best match over candidates,
:mod:`.conv_fold`: ``for (d) { cost = 0; for (i) for (j) cost += |left[y+i][x+j] -
right[y+i][x+j-d]|; fold }`` reads the left window once per disparity as written).

Read by what a read depends on, not by its spelling: a read ``p[e]`` (or ``*(p + e)``, or
a call of a read-only helper of the file handed a pointer, :mod:`.conv_reads`) in the tap
value or in the window loops' declarations is kept where its address does not
depend on the channel's variable (single-assignment locals expanded), ``p`` is a pointer
parameter or a local pointer into exactly one (its element type is the kept value's; a
helper's: the type it returns), the
read is evaluated on every tap the kernel adds (not one side of a ``?:``, ``&&`` or
``||`` in the value) and the condition the tap is added under does not depend on the
channel either. Such a read returns the same element for every channel: the window loops
write no memory and a fold writes only locals (both checked by :mod:`.conv`), and a kernel
folder's inputs and outputs are distinct buffers. Each kept read becomes an array of the
``(KS + OUT_Y - 1) x (KS + OUT_X - 1)`` window inputs of the thread, filled before the
channel loop where the tap would read it (the first output that needs the input passes the
bounds check and the tap's condition holds) and read from registers in every channel.
The window's declarations the address needs are repeated in the fill as written (each must
not depend on the channel)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import line, strip, text, walk
from workbench.templater.conv_reads import call_arguments, read_only_functions
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.warp_regs import _min_blocks_follows

#: the names a node reads, single-assignment locals expanded (:class:`.conv._Expr`)
NamesOf = Callable[[Node], set[str]]
_WIDE = frozenset({"double", "long long", "unsigned long long", "long",
                   "unsigned long", "int64_t", "uint64_t"})
#: addresses, bounds and the loops' own values a thread keeps beside its windows' registers
_OVERHEAD = 16
#: operators whose right operand (or either branch) is evaluated only on some taps
_SHORT = ("&&", "||")


@dataclass(frozen=True)
class Kept:
    """The reads kept across channels: each read's node (an element read or a call of a
    read-only helper given a pointer; its text is its key), the element type of its array, and the window declarations the fill repeats (row loop's, column
    loop's)."""

    reads: tuple[Node, ...]
    elems: tuple[str, ...]
    row_decls: tuple[Node, ...]
    col_decls: tuple[Node, ...]

    def array(self, node: Node) -> str | None:
        """The register array that holds ``node``'s value at this tap (None: not kept)."""
        keys = [text(r) for r in self.reads]
        return f"wb_keep{keys.index(text(node))}[wb_r][wb_c]" \
            if node.type in ("subscript_expression", "pointer_expression", "call_expression") \
            and text(node) in keys else None


def kept_reads(plan: Plan, names: NamesOf, loops: tuple[str, str],
               bodies: tuple[list[Node], ...], parts: list[Node], conditions: list[Node]
               ) -> Kept:
    """The reads of ``parts`` (the tap value's factors) and of the window loops'
    declarations that do not depend on ``channel``; ``bodies``: the channel loop's, the
    row loop's and the column loop's statements; ``loops``: the channel's and the columns'
    variables. Refused (with the first node in the way) where none is kept or the fill
    cannot repeat what the reads need."""
    channel, column = loops
    channel_body, row_body, col_body = bodies
    for c in conditions:
        if channel in names(c):
            raise Refused(f"the tap is added under `{text(c)}`, which depends on {channel}: "
                          "a read kept for every channel would be read where the kernel "
                          "does not", c)
    decls = [s for s in [*row_body, *col_body] if s.type == "declaration"]
    declared = {declared_name(d): s for s in decls for d in s.children_by_field_name("declarator")}
    found: dict[str, tuple[Node, str]] = {}
    for part in [*parts, *decls]:
        for n in walk(part):
            if text(n) in found or channel in names(n) or conditional(n, part):
                continue
            elem = read_type(plan, names, n)
            if elem is not None:
                found[text(n)] = (n, elem)
    if not found:
        raise Refused(f"no read of the tap is both the same for every {channel} and read on "
                      "every tap", parts[0])
    needed = {m for n, _ in found.values() for m in names(n)}
    for s in channel_body:
        if s.type == "declaration" and needed & {
                declared_name(d) for d in s.children_by_field_name("declarator")}:
            raise Refused(f"`{text(s)}` in the channel loop declares what a read kept "
                          "across the channels needs: the fill runs before that loop", s)
    needed &= set(declared)
    for name in sorted(needed):
        s = declared[name]
        if channel in names(s) or reads_memory(plan, names, s):
            raise Refused(f"`{text(s)}` declares {name}, which a read kept across the "
                          f"channels needs, with a value that depends on {channel} or reads "
                          "memory (the fill repeats it for every window input)", s)
    keep = {declared[m].id for m in needed}
    cols = {declared_name(d) for s in col_body if s.type == "declaration"
            for d in s.children_by_field_name("declarator")} | {column}
    for s in row_body:  # the fill opens the rows first: a row's declaration sees no column
        if s.id in keep and names(s) & cols:
            raise Refused(f"`{text(s)}` (the window rows' loop) reads the column of a read "
                          "kept across the channels: the fill walks the rows outside the "
                          "columns", s)
    reads = tuple(n for n, _ in found.values())
    return Kept(reads, tuple(e for _, e in found.values()),
                tuple(s for s in row_body if s.id in keep),
                tuple(s for s in col_body if s.id in keep))


def declared_name(declarator: Node) -> str:
    d = declarator.child_by_field_name("declarator") or declarator
    while d.child_by_field_name("declarator") is not None:
        d = d.child_by_field_name("declarator")  # type: ignore[assignment]
    return text(d)


def _is_read(n: Node) -> bool:
    """``p[e]`` or ``*(p + e)`` read as a value (not an address taken, not written)."""
    is_deref = n.type == "pointer_expression" and \
        text(n.child_by_field_name("operator")) == "*"
    if n.type != "subscript_expression" and not is_deref:
        return False
    up = n.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    return not (up is not None and up.type == "pointer_expression" and
                text(up.child_by_field_name("operator")) == "&")


def read_type(plan: Plan, names: NamesOf, n: Node) -> str | None:
    """The type of the value ``n`` reads from an input (None: ``n`` is not such a read): an
    element read's element type, a read-only helper's return type."""
    if n.type == "call_expression":
        return _returned(plan, names, n)
    return _element(plan, names, n) if _is_read(n) else None


def reads_memory(plan: Plan, names: NamesOf, node: Node) -> bool:
    """``node`` reads an input (an element, or through a read-only helper)."""
    return any(_is_read(m) or (m.type == "call_expression" and
                               _returned(plan, names, m) is not None) for m in walk(node))


def conditional(n: Node, top: Node) -> bool:
    """``n`` is evaluated on some taps only: a branch of ``?:`` or the right side of
    ``&&`` / ``||`` between it and ``top``."""
    child, up = n, n.parent
    while up is not None and child.id != top.id:
        if up.type == "conditional_expression" and \
                child.id != (up.child_by_field_name("condition") or up).id:
            return True
        if up.type == "binary_expression" and \
                text(up.child_by_field_name("operator")) in _SHORT and \
                child.id == (up.child_by_field_name("right") or up).id:
            return True
        child, up = up, up.parent
    return False


def _returned(plan: Plan, names: NamesOf, call: Node) -> str | None:
    """The type a read-only function of the file returns (:mod:`.conv_reads`) where
    ``call`` hands it a pointer parameter (a ``pixel(img, r, c)`` helper): the read the
    call makes."""
    callee = text(call.child_by_field_name("function"))
    if read_only_functions(plan.source).get(callee, "") is not None or not any(
            plan.pointer(m) for a in call_arguments(plan.source, call) for m in names(a)):
        return None
    typ = plan.source.function_definitions()[callee].child_by_field_name("type")
    return None if typ is None else text(typ)


def _element(plan: Plan, names: NamesOf, read: Node) -> str | None:
    """The element type of the one pointer parameter ``read`` reads through."""
    base = read.child_by_field_name("argument")
    if base is None:
        return None
    pointers = {m for m in names(strip(base) if read.type == "subscript_expression" else base)
                if plan.pointer(m)}
    if len(pointers) != 1:
        return None
    return plan.kernel.param(pointers.pop()).base_type


def fill(kept: Kept, heads: tuple[str, str], decls: tuple[str, str], tap: str,
         arrays: tuple[str, str], show: Callable[[Node], str] = text) -> str:
    """The arrays of kept reads, filled before the channel loop: ``heads`` open the row and
    column loops (their variables and ``wb_first``, ``wb_first_c``), ``decls`` are the
    declarations each repeats, ``tap`` the condition a read is taken under, ``arrays`` the
    arrays' row and column counts, ``show`` a read's text (from a shared tile)."""
    rows, cols = arrays
    declare = "".join(f"  {e} wb_keep{k}[{rows}][{cols}];  // `{text(r)}`: the same for "
                      "every channel\n" for k, (r, e) in enumerate(zip(kept.reads, kept.elems,
                                                                        strict=True)))
    loads = "".join(f"        wb_keep{k}[wb_r][wb_c] = {tap} ? ({e})({show(r)}) : ({e})0;\n"
                    for k, (r, e) in enumerate(zip(kept.reads, kept.elems, strict=True)))
    return (f"{declare}#pragma unroll\n  for (int wb_r = 0; wb_r < {rows}; ++wb_r) {{\n"
            f"{heads[0]}    {decls[0]}\n"
            f"#pragma unroll\n      for (int wb_c = 0; wb_c < {cols}; ++wb_c) {{\n"
            f"{heads[1]}        {decls[1]}\n{loads}      }}\n  }}\n")


def live_registers(kept: Kept, states: int, window: tuple[int, int],
                   outs: tuple[str, str]) -> str:
    """The registers a thread keeps live through the channel loop, as an expression of the
    outputs per thread ``outs`` (rows, columns): per window input of the thread its kept
    reads (two registers an element of 8 bytes) and the channel's own value, per output an
    accumulator and ``states`` fold locals, and the addresses and bounds besides (sm_90
    ptxas at 32 threads, stereo_sad64's 5 x 5 window: 64 .. 196 registers used where this
    gives 69 .. 208)."""
    (n, m), (oy, ox) = window, outs
    per = 1 + sum(2 if e in _WIDE else 1 for e in kept.elems)
    return (f"{per} * ({n} + {oy} - 1) * ({m} + {ox} - 1) + {1 + states} * {oy} * {ox} + "
            f"{_OVERHEAD}")


def kept_constraints(plan: Plan, live: str, threads: str) -> list[str]:
    """The block's threads keep ``live`` registers each without spilling: at most 65536 a
    block, 255 a thread, and under a minimum of resident blocks (MIN_BLOCKS_PER_SM, where
    the block's ``__launch_bounds__`` lifts it) its share of the SM's registers (a minimum whose
    share is 255 registers anyway, MIN 1's twin, leaves every space in semantic)."""
    rules = [f"{threads} * ({live}) <= 65536", f"{live} <= 255"]
    if _min_blocks_follows(plan):
        rules.append(f"MIN_BLOCKS_PER_SM == 0 or {live} <= 65536 // (({threads}) * "
                     "MIN_BLOCKS_PER_SM)")
    return rules


def kept_note(kept: Kept, channel: str, live: str) -> str:
    """KEPT_READS' finding."""
    reads = ", ".join(f"`{text(r)}`" for r in kept.reads)
    verb = "does" if len(kept.reads) == 1 else "do"
    return (f"{reads} (line {line(kept.reads[0])}) {verb} not depend on {channel}: loaded "
            f"once per window input before the loop over {channel} and kept in registers "
            f"for every {channel}; the threads of a block keep {live} registers each "
            "(at most 65536 a block, 255 a thread, the share of a minimum of resident "
            "blocks)")


def interior_split(last_passes: str, interior: str, general: str) -> str:
    """The channel loop twice: where the thread's last output passes the bounds check (the
    check bounds the point from above only, so every output of the thread passes it and
    every window input is one a passing output reads, as the kernel as written does) the
    copy whose taps are read without the per-tap test, else the loop as lifted. The test
    is the same for every channel: evaluated per tap inside the loop it cost sm_90 ptxas
    772 instructions a disparity of stereo_sad64 at 16 x 8 threads, 8 pixels a thread (519
    without it)."""
    return (f"if ({last_passes}) {{  // every output of this thread passes the check: no "
            f"test per tap\n  {interior}\n  }} else {{\n  {general}\n  }}")
