"""ITEMS_PER_THREAD with independent state: several items per thread, interleaved (ILP).

A compute-bound per-element kernel (``i = blockIdx.x * B + threadIdx.x``, a guard, then a
loop of the same length for every item, such as a sum over a table) gains little from
doing its items one after another: each item's loop is a chain of dependent latencies.
This transform gives each thread ``ITEMS_PER_THREAD`` items, ``B`` apart (coalesced), and
keeps one copy of every item-dependent local per item (``x`` becomes ``x[ITEMS_PER_THREAD]``,
registers once the item loops are unrolled). Statements that do not depend on the item (a
table entry, the loop counter) run once per thread; statements that do run in an unrolled
loop over the items at the place they were written, so inside the shared loop the items'
chains interleave. ``ITEMS_PER_THREAD = 1`` is the kernel as written.

Item dependence is computed on the parse: the item index, and every local assigned from an
item-dependent value or under item-dependent control. Legal only where the analysis shows
(each refusal names the line): the items along x (on a 2-D or 3-D block they share the
thread's y and z; a 1-D block reads no ``blockIdx.y/z``); statements before the index assign
only the thread's own locals (their fields and elements), which its items share as the
thread as written ran them once; no shared memory or barrier but a table the block
stages before the index (:mod:`.table_prologue`), no warp intrinsic or atomic, no call of a ``__device__`` function of the file that :mod:`.purity` does not prove
pure (its effects would run once per thread, or in another order); ``blockIdx.x`` read once; the index never reassigned; an early exit only as a
top-level ``if (C) return;`` or one final ``if (C) {...}`` (both become a per-item ``live``
flag); no ``break``/``continue``/``return`` under item-dependent control inside a shared
loop; statements that do not depend on the item assign only locals; a name that
takes the item's value is declared from the index on (a parameter advanced to the
item's row would be one variable the items share); memory written only at
item-dependent places. Applied only where a loop of item-independent length does
item-dependent work (the compute loop the items interleave in); straight-line kernels keep
items by wrapping (:mod:`.wrap`). The shared loops get an unroll knob (``UNROLL``:
0 leaves the compiler's choice or the author's bare ``#pragma unroll``, as written; a loop
of constant trip count up to 64 may be unrolled whole, so a table read at a constant place
becomes an operand).

An item past the end runs the statements that are safe for it (:func:`_safe_when_done`:
arithmetic, known pure math, loads at shared places; never a load through the item's
own pointer, which is null for an item that ended) on its zeroed locals without testing
its ``live`` flag, so the items' statements stay one block the compiler interleaves.
Escape-time loops (a ``for`` of item-independent length with ``if (C) break;`` or
``if (C) { A...; break; }`` on the item's state directly in its body, its counter declared in
its header) and loops on the item's state in any spelling (``while``, ``do``/``while``,
``for (;;)``, a ``for`` testing the item: :mod:`.ilp_loops`, which names the line of each
loop it refuses) give each item a ``done`` flag: the items share the loop until every one
has left it. A loop on the item's state is rendered rotated (its first test before it, each
trip's at the end) so nvcc still hoists each item's loop-invariant work, and where items
share one, ``B * ITEMS_PER_THREAD <= 2048`` keeps each item about the registers of a thread
as written. Where every statement of the body is safe for an item in any state, the items'
statements run unguarded and an item that left keeps its state by a select, so the items'
chains stay one block the compiler interleaves (:mod:`.ilp_exits`). A per-item ``if`` of a
shared loop may have its items' tests OR-ed ahead of its item loop, which then runs only when
one holds (``ANY_BRANCH``: :mod:`.ilp_any_branch`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    block_offset,
    builtin,
    calls,
    declared_name,
    inside,
    line,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.auto_types import item_types
from workbench.templater.ilp_any_branch import any_parts, find_any_ifs, wrapped
from workbench.templater.ilp_calls import (
    callee_name,
    effect_free,
    loop_in_call,
    method_call_refusal,
)
from workbench.templater.ilp_exits import (
    SharedExit,
    keep_at_exit,
    keep_init,
    restore,
    shared_exit,
)
from workbench.templater.ilp_gridstride import (
    OnceLoop,
    in_rounds,
    item_block,
    items_grid,
    once_loop,
)
from workbench.templater.ilp_loops import ItemLoop, LoopRefusal, candidate, read_loop
from workbench.templater.ilp_series_exit import (
    GROUP,
    SeriesExit,
    group_series_exits,
    shared_counters,
)
from workbench.templater.ilp_series_exit import NAME as CHECK_EVERY
from workbench.templater.item_objects import member_in_registers
from workbench.templater.item_state import (
    CONTROL,
    LOOPS,
    MAX_FULL_UNROLL,
    assigned_in_body,
    assigned_names,
    declarator_name,
    declarators,
    escape_if_of,
    escape_loops,
    exit_actions,
    header,
    is_item_stmt,
    item_names,
    mentions,
    safe_when_done,
    shared_holder,
    span,
    statements,
    trip_count,
    under_item_control,
)
from workbench.templater.plan import Plan
from workbench.templater.purity import device_purity, why_not_pure
from workbench.templater.table_lookup import constant_table, walks
from workbench.templater.table_prologue import prologue_write, staged_tables
from workbench.templater.vector import Illegal

NAME = "ITEMS_PER_THREAD"
IT = "wb_it"
LIVE = "wb_live"
DONE = "wb_done"
ALL_DONE = "wb_all_done"
ALL_LIVE = "wb_all_live"
#: the label after an own loop, where an exit jumps at one item (_Render.one_item)
LEFT = "wb_left_"
LEAVE = "wb_leave"
INTERLEAVE = "loop(s) of item-independent length interleave the items"  # the finding
_PREPROC = ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif")
_STATEMENTS = ("declaration", "expression_statement", "if_statement", "for_statement",
               "while_statement", "do_statement", "compound_statement", "return_statement",
               "break_statement", "continue_statement", "switch_statement")
_WARP = ("__shfl", "__syncwarp", "__ballot", "__any", "__all", "__activemask", "__reduce",
         "__match", "atomic", "__syncthreads", "__threadfence")


@dataclass
class _Scan:
    """What the analysis found: the item-dependent names and the loops items interleave in."""

    index: str
    items: set[str]
    declared: dict[str, Node] = field(default_factory=dict)  # item local -> its declaration
    compute_loops: list[Node] = field(default_factory=list)
    # loops an item leaves by `if (C) break;` (escape time), and those ifs: by byte span
    escapes: set[tuple[int, int]] = field(default_factory=set)
    escape_ifs: set[tuple[int, int]] = field(default_factory=set)
    # every loop items leave one by one (escape-time `for`s and item `while`s): how shared
    exits: dict[tuple[int, int], SharedExit] = field(default_factory=dict)
    region: list[Node] = field(default_factory=list)  # the statements from the index on
    # loops on the item's state the items cannot share: each item runs them whole
    refused: list[LoopRefusal] = field(default_factory=list)
    # top-level `if (C) { A...; return; }`: the item's own exit after its last actions
    exit_returns: set[tuple[int, int]] = field(default_factory=set)
    # an item local declared `auto`: its placeholder's first byte -> the type written there
    auto_types: dict[int, str] = field(default_factory=dict)


def _index_declaration(plan: Plan) -> tuple[int, Node, str, Node] | None:
    """(position, declaration, name, block-offset node) of ``T i = blockIdx.x * B +
    threadIdx.x`` at the top level of the body."""
    for k, stmt in enumerate(statements(plan.body)):
        if stmt.type != "declaration":
            continue
        name, _d, value = declared_name(stmt)
        off = index_offset(plan, value) if value is not None else None
        if off is not None:
            return k, stmt, name, off
    return None


def index_offset(plan: Plan, value: Node) -> Node | None:
    """The block-offset term of ``blockIdx.x * B + threadIdx.x`` (either order), else None."""
    parts = terms(value)
    offs = [t for _s, t in parts if block_offset(t, "x") is not None or _blockdim_offset(t)]
    if len(parts) == 2 and len(offs) == 1 and any(plan.facts.is_thread(t, "x")
                                                  for _s, t in parts):
        return offs[0]
    return None


def _blockdim_offset(node: Node) -> bool:

    parts = binary(node)
    return parts is not None and parts[1] == "*" and (
        (builtin(parts[0], "blockIdx") == "x" and builtin(parts[2], "blockDim") == "x") or
        (builtin(parts[2], "blockIdx") == "x" and builtin(parts[0], "blockDim") == "x"))


def _guards(region: list[Node], index_items: set[str]) -> tuple[list[Node], list[Node]]:
    """(top-level ``if (C) return;`` statements, the region with a final ``if (C) {...}``
    unwrapped: its body's statements)."""
    returns = []
    for stmt in region:
        if True:
            if _is_return_guard(stmt):
                returns.append(stmt)
    last = region[-1]
    if last.type == "if_statement" and last.child_by_field_name("alternative") is None and \
            not _is_return_guard(last) and len(region) > 1 and \
            (cond := last.child_by_field_name("condition")) is not None and \
            mentions(cond, index_items) and \
            (body := last.child_by_field_name("consequence")) is not None and \
            body.type == "compound_statement":
        # `if (i < n) { rest }`: the same as `if (!(i < n)) return;` then rest
        returns.append(last)
        region = [*region[:-1], last, *_statements_with_comments(body)]
    return returns, region


def _exit_return(stmt: Node, items: set[str]) -> bool:
    """``if (C) { A...; return; }`` on the item (no else; its one ``return``, with no value,
    last; A leaves nothing else: no ``break``/``continue`` outside its own loops)."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None \
            or _is_return_guard(stmt):
        return False
    cond, body = stmt.child_by_field_name("condition"), stmt.child_by_field_name("consequence")
    if cond is None or body is None or body.type != "compound_statement" or \
            not mentions(cond, items):
        return False
    inner = statements(body)
    if not inner or inner[-1].type != "return_statement" or inner[-1].named_children:
        return False
    for n in walk(body):
        if n.type == "return_statement" and n != inner[-1]:
            return False
        if n.type in ("break_statement", "continue_statement", "goto_statement") and \
                not _owned_inside(n, body):
            return False
    return True


def _owned_inside(jump: Node, body: Node) -> bool:
    up = jump.parent
    while up is not None and up != body:
        if up.type in (*LOOPS, "switch_statement"):
            return True
        up = up.parent
    return False


def _is_return_guard(stmt: Node) -> bool:
    """``if (C) return;`` (no value, no else)."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return False
    body = stmt.child_by_field_name("consequence")
    inner = statements(body) if body is not None and body.type == "compound_statement" \
        else [body] if body is not None else []
    return len(inner) == 1 and inner[0].type == "return_statement" and \
        not inner[0].named_children


def _check(plan: Plan, region: list[Node], scan: _Scan, returns: list[Node]) -> None:
    items = scan.items
    holder = shared_holder(region, items)
    if holder is not None:
        raise Illegal(f"`{text(holder)[:60]}` gives the item's value to a name declared "
                      "outside the item's statements (a parameter, or a local before the "
                      "index): the thread's items would share it", holder)
    for stmt in region:
        for n in walk(stmt):
            if n.type == "return_statement" and not any(n.start_byte >= r.start_byte and
                                                        n.end_byte <= r.end_byte
                                                        for r in returns) and \
                    not (n.parent is not None and n.parent.parent is not None and
                         span(n.parent.parent) in scan.exit_returns):
                raise Illegal("`return` other than a top-level `if (...) return;` guard", n)
            if n.type == "break_statement" and n.parent is not None and \
                    span(escape_if_of(n)) in scan.escape_ifs:
                continue  # the item's own exit: a per-item `done` flag
            if n.type in ("break_statement", "continue_statement", "goto_statement"):
                loop = n.parent
                while loop is not None and loop.type not in (*LOOPS, "switch_statement"):
                    loop = loop.parent
                if loop is None or (not is_item_stmt(loop, items) and
                                    under_item_control(n, loop, items)):
                    raise Illegal(f"`{text(n)}` under item-dependent control leaves a loop "
                                  "the items share", n)
    for stmt in region:
        _check_writes(stmt, items)
    declared = set(declarators(region))
    for n in walk(plan.body):
        why = method_call_refusal(plan, n, declared) if n.type == "call_expression" else None
        if why is not None:
            raise Illegal(why, n)


def _check_writes(stmt: Node, items: set[str]) -> None:
    """Every memory write's place depends on the item (a place shared by all items was
    written once per item and would now be written once per thread)."""
    for n in walk(stmt):
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if target is not None and target.type != "identifier" and \
                    not mentions(target, items):
                raise Illegal(f"`{text(n)[:60]}` writes memory at a place shared by all "
                              "items", n)


class _Render:
    """Produces the rewritten region (a lazy edit: the other transforms' edits show)."""

    def __init__(self, plan: Plan, scan: _Scan, arrays: set[str], returns: list[Node],
                 guarded: bool) -> None:
        self.plan, self.scan, self.arrays = plan, scan, arrays
        self.returns = {(r.start_byte, r.end_byte) for r in returns}
        self.final = {(r.start_byte, r.end_byte) for r in returns
                      if not _is_return_guard(r)}  # `if (C) { rest }`: C false ends the item
        self.guarded = guarded
        # statement -> safe for a done item; decided now, while the pass reads the file's
        # integer macros (the render runs after the pass, when it no longer does)
        self.safe = {span(n): safe_when_done(n, scan.items, plan)
                     for stmt in scan.region for n in walk(stmt) if n.type in _STATEMENTS}
        self.escape_depth = 0  # inside an escape-time loop: items test their `done` flag
        self.split_depth = 0  # inside a loop split on the items' `live` flags (split_live)
        self.exit: SharedExit | None = None  # the loop whose body is being rendered
        self.pragmas: dict[tuple[int, int], str] = {}  # own loop -> its `#pragma unroll`
        # a series loop testing its convergence once every CHECK_EVERY trips
        self.grouped: dict[tuple[int, int], SeriesExit] = {}
        self.left: set[tuple[int, int]] = set()  # own loops an exit leaves by their label
        self.any_ifs: dict[tuple[int, int], Node] = {}  # ANY_BRANCH's ifs -> conditions
        self.return_at_one = True  # an item's end returns at one item (leave_at_one)

    def one_item(self, found: SharedExit) -> str:
        """The config at which ``found``'s loop is the loop as written: one item, and one
        trip between the all-left tests. There an item's trip starts only while it is in
        the loop, so an exit leaves by a jump (:meth:`exit_test`) and nothing is restored."""
        grouped = f" && {CHECK_EVERY} == 1" if span(found.loop) in self.grouped else ""
        return f"{NAME} == 1{grouped}"

    @staticmethod
    def label(found: SharedExit) -> str:
        """Where an exit of ``found``'s loop jumps at :meth:`one_item`: after the loop."""
        return f"{LEFT}{found.loop.start_byte}"

    def carried_pragma(self, stmt: Node, rest: list[Node]) -> bool:
        """``stmt`` is the ``#pragma unroll`` of the next statement, a loop on the items'
        state: kept for its ``while (true)`` (before the rotated loop's first test it would
        precede no loop)."""
        after = next((r for r in rest if r.type != "comment"), None)
        found = self.scan.exits.get(span(after)) if after is not None else None
        if stmt.type not in ("preproc_call", "comment") or found is None or \
                found.kind == "escape" or not text(stmt).startswith("#pragma") or \
                "unroll" not in text(stmt):
            return False
        self.pragmas[span(after)] = text(stmt).strip()
        return True

    def block(self, stmts: list[Node], indent: str) -> str:
        out: list[str] = []
        run: list[Node] = []

        def flush() -> None:
            for part, cond in any_parts(run, self.any_ifs):
                loop = self.item_loop(part, indent)
                out.append(loop if cond is None else
                           wrapped(loop, self.plan.rw.text(cond), IT, NAME, indent))
            run.clear()

        for k, stmt in enumerate(stmts):
            if self.carried_pragma(stmt, stmts[k + 1:]):
                continue  # it goes with its loop, onto the items' `while (true)`
            if stmt.type == "comment":
                if run:
                    run.append(stmt)
                else:
                    out.append(indent + text(stmt) + "\n")
                continue
            if self.is_item(stmt):
                run.append(stmt)
            else:
                flush()
                out.append(self.shared(stmt, indent))
        flush()
        return "".join(out)

    def is_item(self, stmt: Node) -> bool:
        if stmt.type in _PREPROC:
            return mentions(stmt, self.scan.items)
        if stmt.type in CONTROL and not is_item_stmt(stmt, self.scan.items):
            return False
        if span(stmt) in self.scan.exits:
            return False  # an item `while`: one shared loop the items leave one by one
        return is_item_stmt(stmt, self.scan.items)

    def shared(self, stmt: Node, indent: str) -> str:
        rw = self.plan.rw
        found = self.scan.exits.get(span(stmt))
        if found is not None and found.kind != "escape":
            return self.item_while(found, indent)
        if stmt.type in CONTROL and mentions(stmt, self.scan.items):
            escape = span(stmt) in self.scan.escapes
            split = self.splits(stmt)
            self.split_depth += split
            parts: list[str] = []
            pos = stmt.start_byte
            for body in _bodies(stmt):
                # a pragma before a brace-less body (a comment node: cuda_source) goes
                # inside the braces added here, before the statement it is about
                lead = body
                while body.type != "compound_statement" and lead.prev_sibling is not None \
                        and lead.prev_sibling.type == "comment":
                    lead = lead.prev_sibling
                parts.append(rw.render(pos, lead.start_byte))
                pre = rw.render(lead.start_byte, body.start_byte).rstrip() + "\n" \
                    if lead != body else ""
                inner = _statements_with_comments(body) if body.type == "compound_statement" \
                    else [body]
                outer, self.exit = self.exit, found if body.type == "compound_statement" \
                    else None
                self.escape_depth += escape
                rendered = pre + self.block(inner, indent + "  ")
                self.escape_depth -= escape
                self.exit = outer
                if escape:  # the loop ends when every item has left it
                    rendered += self.all_done(indent)
                parts.append("{\n" + rendered + indent + "}")
                pos = body.end_byte
            parts.append(rw.render(pos, stmt.end_byte))
            self.split_depth -= split
            if escape:  # in a block of its own: the next such loop declares its own flags
                left = f"{indent}{self.label(found)}:;\n" \
                    if found is not None and span(stmt) in self.left else ""
                return (f"{indent}{{\n" + self.done_flags(indent) + indent + "".join(parts)
                        + f"\n{left}{indent}}}\n")
            if split:
                return split_live("".join(parts), indent)
            return indent + "".join(parts) + "\n"
        return indent + rw.text(stmt) + "\n"

    def splits(self, stmt: Node) -> bool:
        """``stmt`` is a loop the items share in which some item statement runs under its
        ``live`` flag: it is rendered twice (:func:`split_live`), the flags tested once
        before it. Not inside another split loop or a loop the items leave one by one, not
        after the author's own ``#pragma`` (it stays on its loop), and not where the two
        copies would differ in what threads share: a barrier or warp collective (threads of
        a block may take either copy), a ``__shared__`` or ``static`` local, a label."""
        if not self.guarded or self.split_depth or self.escape_depth or \
                self.exit is not None or stmt.type not in LOOPS:
            return False
        before = stmt.prev_sibling
        if before is not None and text(before).lstrip().startswith("#pragma"):
            return False
        if any(c.startswith(_WARP) for c in calls(stmt)) or \
                any("__syncthreads" in e.text for e in self.plan.rw.edits
                    if stmt.start_byte <= e.start and e.end <= stmt.end_byte) or any(
                n.type in ("labeled_statement", "goto_statement") or
                (n.type == "declaration" and re.search(r"\b(__shared__|static)\b", text(n)))
                for n in walk(stmt)):
            return False
        return any(span(s) in self.returns or span(s) in self.scan.exit_returns or
                   not self.safe.get(span(s), False) for s in self.item_statements(stmt))

    def item_statements(self, stmt: Node) -> list[Node]:
        """The item statements a shared control statement holds, through the shared control
        statements inside it (each rendered in an item loop of its own)."""
        found: list[Node] = []
        for body in _bodies(stmt):
            inner = _statements_with_comments(body) if body.type == "compound_statement" \
                else [body]
            for s in inner:
                if s.type == "comment" or s.type in _PREPROC:
                    continue
                if self.is_item(s):
                    found.append(s)
                elif s.type in CONTROL:
                    found += self.item_statements(s)
        return found

    def done_flags(self, indent: str) -> str:
        start = f"!{LIVE}[{IT}]" if self.guarded else "false"
        return (f"{indent}bool {DONE}[{NAME}];  // items that left the loop below\n"
                f"{indent}#pragma unroll\n{indent}for (int {IT} = 0; {IT} < {NAME}; "
                f"++{IT}) {DONE}[{IT}] = {start};\n")

    def all_done(self, indent: str) -> str:
        return (f"{indent}  bool {ALL_DONE} = true;\n{indent}  #pragma unroll\n"
                f"{indent}  for (int {IT} = 0; {IT} < {NAME}; ++{IT}) "
                f"{ALL_DONE} = {ALL_DONE} && {DONE}[{IT}];\n"
                f"{indent}  if ({ALL_DONE}) break;\n")

    def item_while(self, found: SharedExit, indent: str) -> str:
        """A loop on the item's state (:mod:`.ilp_loops`) -> one ``while (true)`` the items
        share: each leaves when its own test is false (at the top of a trip, or at its end
        for a ``do``) or by an exit (its ``done`` flag), the loop ends when every item has
        left. A ``for``'s initializer runs per item before, its update per item at the end
        of each trip, as written."""
        loop, cond = found.loop, found.header_exit
        body = loop.child_by_field_name("body")
        assert body is not None
        rw = self.plan.rw
        each = f"#pragma unroll\n{indent}  for (int {IT} = 0; {IT} < {NAME}; ++{IT}) "
        test = ""
        if cond is not None:
            written = rw.text(cond)
            if cond.type not in ("condition_clause", "parenthesized_expression"):
                written = f"({written})"
            test = (f"{indent}  {each}{DONE}[{IT}] = {DONE}[{IT}] | !{written};"
                    "  // its condition, as written\n")
        init = ""
        if found.init is not None:
            run = rw.text(found.init).rstrip(";") + ";"
            if found.init.type == "declaration":  # a counter of its own per item
                declared, assigns = self.array_declaration(found.init)
                init, run = f"{indent}{declared}\n", " ".join(assigns)
            run = run if run.count(";") == 1 else f"{{ {run} }}"
            init += (f"{indent}#pragma unroll\n{indent}for (int {IT} = 0; {IT} < {NAME}; ++{IT})"
                     f" if (!{DONE}[{IT}]) {run}  // its initializer, as written\n")
        update = (f"{indent}  {each}if (!{DONE}[{IT}]) {rw.text(found.update)};"
                  "  // its update, as written\n") if found.update is not None else ""
        series = self.grouped.get(span(loop))
        inner = [s for s in _statements_with_comments(body)
                 if series is None or s != series.exit_if]
        deeper = indent + ("    " if series is not None else "  ")
        outer, self.exit = self.exit, found
        self.escape_depth += 1
        rendered = self.block(inner, deeper)
        self.escape_depth -= 1
        self.exit = outer
        if series is not None:  # the trips of a group between two tests, as written
            update = update.replace(f"\n{indent}  ", f"\n{deeper}")
            update = (deeper + update[len(indent) + 2:]) if update else ""
            bound = "" if series.bound is None else (
                f"{deeper}if ({GROUP} > 0 && {'!' if series.bound_goes_on else ''}"
                f"({rw.text(series.bound)})) break;  // its counter's bound, every trip\n")
            # an exact group tests each item's header after every trip, not after the group
            each_trip = (deeper + test[len(indent) + 2:].replace(
                f"\n{indent}  ", f"\n{deeper}")) if series.exact and test else ""
            rendered = (f"{indent}  #pragma unroll\n{indent}  for (int {GROUP} = 0; {GROUP} < "
                        f"{CHECK_EVERY}; ++{GROUP}) {{\n" + bound + rendered + update + each_trip
                        + f"{indent}  }}\n")
            update = ""
        # rotated: the first test before the loop, each trip's test at its end, so a trip's
        # body runs whenever the loop is entered and nvcc hoists the item's loop-invariant
        # work out of it as it does for the loop as written (a `while (true)` testing first
        # kept sqrtf, logf and expf of the item's inputs in the loop: implied_vol_bisect)
        first = "" if found.kind == "do" else test.replace(f"\n{indent}  ", f"\n{indent}")[2:]
        if series is not None and series.exact:
            test = ""  # tested in every trip of the group
        if series is not None and series.exit_if is not None:  # its exit after the group
            exit_cond = series.exit_if.child_by_field_name("condition")
            assert exit_cond is not None
            test = (f"{indent}  {each}{DONE}[{IT}] = {DONE}[{IT}] | (bool){rw.text(exit_cond)};"
                    "  // its exit, as written\n")
        carried = self.pragmas.get(span(loop))
        pragma = f"{carried}  // as written, on the loop\n" if carried else ""
        ends = (f"{indent}  {ALL_DONE} = true;\n{indent}  #pragma unroll\n"
                f"{indent}  for (int {IT} = 0; {IT} < {NAME}; ++{IT}) "
                f"{ALL_DONE} = {ALL_DONE} && {DONE}[{IT}];\n{indent}  if ({ALL_DONE}) break;\n")
        return (f"{indent}{{\n" + self.done_flags(indent) + init + first
                + f"{indent}bool {ALL_DONE} = true;\n{indent}#pragma unroll\n"
                f"{indent}for (int {IT} = 0; {IT} < {NAME}; ++{IT}) "
                f"{ALL_DONE} = {ALL_DONE} && {DONE}[{IT}];\n"
                f"{indent}if (!{ALL_DONE})\n{pragma}{indent}while (true) {{\n"
                + rendered + update + test + ends + f"{indent}}}\n"
                + (f"{indent}{self.label(found)}:;\n" if span(loop) in self.left else "")
                + f"{indent}}}\n")

    def item_loop(self, run: list[Node], indent: str) -> str:
        hoisted: list[str] = []
        body: list[str] = []
        pure = True
        # an item that left the loop runs on (safe for any state) and gets its state back
        straight = self.exit if self.exit is not None and self.exit.straight else None
        if straight is not None:
            body += [indent + "    " + k + "\n" for k in keep_init(straight.state, IT)]
        for stmt in run:
            if stmt.type == "declaration" and _declared(stmt) & self.arrays:
                decl, assigns = self.array_declaration(stmt)
                hoisted.append(indent + decl + "\n")
                body += [indent + "    " + a + "\n" for a in assigns]
            elif stmt.type == "comment":
                body.append(indent + "    " + text(stmt) + "\n")
                continue
            elif (stmt.start_byte, stmt.end_byte) in self.returns:
                cond = stmt.child_by_field_name("condition")
                assert cond is not None
                test = self.plan.rw.text(cond)
                if stmt.type == "for_statement":  # a grid-stride loop run once: its test
                    test = f"({test})"
                if (stmt.start_byte, stmt.end_byte) in self.final:
                    test = f"(!{test})"
                # the item's remaining statements of this run must not execute either
                # (they index with the value the test just found out of range)
                body.append(f"{indent}    if {test} {{{self.leave()} {LIVE}[{IT}] = false; "
                            "continue; }  // this item is done\n")
                pure = False
            elif span(stmt) in self.scan.escape_ifs:
                body += self.exit_test(stmt, straight, indent + "    ")
            elif span(stmt) in self.scan.exit_returns:
                body.append(self.exit_return(stmt, indent + "    "))
                pure = False
            else:
                rendered = self.plan.rw.text(stmt)
                body.append(indent + "    " + rendered + "\n")
            if not self.safe.get(span(stmt), False):
                pure = False
        guard = (f"{indent}  if ({LIVE}[{IT}]) {{\n", f"{indent}  }}\n") \
            if self.guarded and not pure else ("", "")
        if self.escape_depth:  # an item that left the loop must not change its state
            guard = (f"{indent}  if (!{DONE}[{IT}]) {{\n", f"{indent}  }}\n")
        if straight is not None:  # ... by a select at the end, not a branch
            restores = "".join(indent + "      " + r + "\n"
                               for r in restore(straight.state, DONE, IT))
            body.append(f"{indent}    if (!({self.one_item(straight)})) {{  // one item: "
                        f"it is in the loop here\n{restores}{indent}    }}\n")
            guard = ("", "")
        return ("".join(hoisted) + f"{indent}#pragma unroll\n"
                f"{indent}for (int {IT} = 0; {IT} < {NAME}; ++{IT}) {{\n" + guard[0]
                + "".join(body) + guard[1] + f"{indent}}}\n")

    def exit_test(self, stmt: Node, straight: SharedExit | None, indent: str) -> list[str]:
        """An item's exit ``if (C) { A...; break; }`` in its turn of the shared loop."""
        cond = stmt.child_by_field_name("condition")
        assert cond is not None
        test = self.plan.rw.text(cond)
        actions = [self.plan.rw.text(a) for a in exit_actions(stmt)]
        if straight is None:
            return [f"{indent}if {test} {{ " + "".join(a + " " for a in actions) +
                    f"{DONE}[{IT}] = true; continue; }}  // this item leaves the loop\n"]
        keep = [indent + k + "\n" for k in keep_at_exit(straight.state, DONE, IT)]
        self.left.add(span(straight.loop))
        leave = (f"{indent}if (({self.one_item(straight)}) && {DONE}[{IT}]) "
                 f"goto {self.label(straight)};  // one item: it leaves here, as written\n")
        if not actions:
            # `|`, not `||`: the test is safe for any state, and no branch is made
            return [*keep, f"{indent}{DONE}[{IT}] = {DONE}[{IT}] | (bool){test};"
                    "  // this item leaves the loop\n", leave]
        # the actions only for the item leaving here; then the state it leaves with is kept
        return [f"{indent}{{\n{indent}const bool {LEAVE} = !{DONE}[{IT}] & (bool){test};"
                "  // this item leaves the loop\n",
                f"{indent}if ({LEAVE}) {{ " + " ".join(actions) + " }\n", *keep,
                f"{indent}{DONE}[{IT}] = {DONE}[{IT}] | {LEAVE};\n{indent}}}\n", leave]

    def exit_return(self, stmt: Node, indent: str) -> str:
        """``if (C) { A...; return; }`` -> the item does A and is done (its later statements
        test its ``live`` flag)."""
        cond, body = stmt.child_by_field_name("condition"), stmt.child_by_field_name("consequence")
        assert cond is not None and body is not None
        actions = "".join(f"{indent}  {self.plan.rw.text(a)}\n"
                          for a in _statements_with_comments(body)[:-1])
        return (f"{indent}if {self.plan.rw.text(cond)} {{\n{actions}"
                f"{indent} {self.leave()} {LIVE}[{IT}] = false; continue;  // this item is done\n"
                f"{indent}}}\n")

    def leave(self) -> str:
        """The mark :func:`leave_at_one` makes a return at one item, where the thread as
        written returns; none where a thread runs rounds of items (a later round's item may
        be live)."""
        return f" {LEAVE_MARK}" if self.return_at_one else ""


    def array_declaration(self, stmt: Node) -> tuple[str, list[str]]:
        """``float x = a, y = b;`` -> (``float x[N] = {}, y[N] = {};``, [``x[it] = a;``...])."""
        rw = self.plan.rw
        declarators = stmt.children_by_field_name("declarator")
        pointers = [any(c.type == "pointer_declarator" for c in walk(d)) for d in declarators]
        prefix: list[str] = []
        for c in stmt.children:
            if c.start_byte >= declarators[0].start_byte:
                break
            if c.type == "type_qualifier" and text(c) == "const" and not any(pointers):
                continue
            prefix.append(self.scan.auto_types.get(c.start_byte, rw.text(c)))
        names, assigns = [], []
        for d in declarators:
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            assert inner is not None
            name = declarator_name(inner)
            shape = _with_items(inner)
            names.append(f"{shape} = {{}}")
            if value is not None:
                assigns.append(f"{name}[{IT}] = {rw.text(value)};")
        return " ".join(prefix) + " " + ", ".join(names) + ";", assigns


#: where an item ends (:meth:`_Render.leave`): a return at one item, or nothing
LEAVE_MARK = "/* wb: the thread as written returns here */"
#: what a thread that returned early would leave the block or warp short of
_TOGETHER = ("__syncthreads", "__syncwarp", "__shfl", "__ballot", "__any_sync", "__all_sync",
             "__reduce", "__match", "bar.sync", "barrier", "this_thread_block", "cg::",
             "__activemask")


def leave_at_one(rendered: str) -> str:
    """The lifted file with each item's end (:data:`LEAVE_MARK`) a return at one item
    (``if (ITEMS_PER_THREAD == 1) return;``): nothing after an item's end has an effect for a
    thread whose items are all done, so at one item the thread returns where it returns as
    written, and its code after the end knows the item live. Without it, the default kept
    one item's ``live`` flag, tested in every shared loop and each split loop
    (:func:`split_live`) in two copies, the doubled body unrolled otherwise than as written
    (nhwc_conv5x5_c3to4 on sm_90: 1004 SASS instructions as written, 177 at the default,
    the 5 x 5 taps left rolled). The marks are dropped where a barrier or a warp collective
    (a transform after the items', such as STAGE or a walk in rounds, may add one the thread
    as written never reached) could run after a thread returned: :func:`_together_before`."""
    if LEAVE_MARK not in rendered:
        return rendered
    if not _together_before(rendered, rendered.index(LEAVE_MARK)):
        return rendered.replace(f" {LEAVE_MARK}", "")
    return rendered.replace(LEAVE_MARK, f"if ({NAME} == 1) return;")


def _together_before(rendered: str, first: int) -> bool:
    """Every barrier or warp collective of the file runs before the first item's end at
    ``first``: in the function holding it, at its body's top level or in a block closed
    before ``first`` that no block still open there holds (a loop around both would reach
    the barrier again after the return). Braces read with comments and strings blanked;
    anything not read so is not shown (False)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"",
                  lambda m: " " * len(m.group(0)), rendered, flags=re.S)
    depth, depths, start = 0, [], -1
    for k, ch in enumerate(code):
        if ch == "{":
            depth += 1
            if depth == 1 and k < first:
                start = k  # the function (body) holding the mark opens here
        elif ch == "}":
            depth -= 1
            if depth < 0:
                return False
        depths.append(depth)
    if start < 0 or depths[first] < 1:
        return False
    for word in _TOGETHER:
        for found in re.finditer(re.escape(word), code):
            at = found.start()
            if at > first or at < start or min(depths[at:first + 1]) > 1:
                return False
    return True


def split_live(loop: str, indent: str) -> str:
    """``loop`` once for every item running, with no test of the items' flags left in it
    (nvcc folds each ``if (wb_live[...])`` to true there: at one item the loop as written),
    and once, as rendered, for the others (at one item: its shared statements only). Either
    way the loop runs once, as written. The second copy's labels (:meth:`_Render.label`) get
    names of their own. (Also :mod:`.walk_rounds`' walk inside a round, whose barriers stay
    outside the split.)"""
    copy = loop.replace(LEFT, f"{LEFT}else_")
    return (f"{indent}{{\n{indent}bool {ALL_LIVE} = true;\n"
            f"{indent}#pragma unroll\n{indent}for (int {IT} = 0; {IT} < {NAME}; ++{IT}) "
            f"{ALL_LIVE} = {ALL_LIVE} && {LIVE}[{IT}];\n"
            f"{indent}if ({ALL_LIVE}) {{  // every item running: no item test in the loop\n"
            f"{indent}{loop}\n{indent}}} else {{\n{indent}{copy}\n"
            f"{indent}}}\n{indent}}}\n")


def _with_items(declarator: Node) -> str:
    """``x`` -> ``x[N]``, ``*p`` -> ``*p[N]``, ``v[4]`` -> ``v[N][4]``."""
    name = declarator
    while name.type in ("pointer_declarator", "array_declarator"):
        inner = name.child_by_field_name("declarator")
        assert inner is not None
        name = inner
    whole = text(declarator)
    at = name.end_byte - declarator.start_byte
    return whole[:at] + f"[{NAME}]" + whole[at:]


def _bodies(stmt: Node) -> list[Node]:
    """The statements a loop or if runs (consequence, else branch, loop body)."""
    out = [b for b in (stmt.child_by_field_name("body"),
                       stmt.child_by_field_name("consequence")) if b is not None]
    alt = stmt.child_by_field_name("alternative")
    if alt is not None:
        inner = alt.named_children[-1] if alt.type == "else_clause" and alt.named_children \
            else alt
        out.append(inner)  # an `else if` is a statement of the else branch
    return out


def _declared(stmt: Node) -> set[str]:
    return {declarator_name(d) for d in stmt.children_by_field_name("declarator")}


def _refuse_shadowed(region: list[Node], arrays: set[str]) -> None:
    """Illegal where an inner block declares a name an item local already holds: the items'
    rewrite reads names, so it would index the inner variable as the item's array."""
    seen: list[tuple[str, Node]] = []
    for stmt in region:
        for n in walk(stmt):
            if n.type not in ("declaration", "parameter_declaration") or \
                    any(d.start_byte == n.start_byte for _k, d in seen):
                continue  # (a statement the region also holds unwrapped: walked once)
            for name in _declared(n) & arrays:
                outer = next((d for k, d in seen if k == name and d.parent is not None and
                              inside(n, d.parent)), None)
                if outer is not None:
                    raise Illegal(f"`{' '.join(text(n).split())[:60]}` declares `{name}` again "
                                  f"inside the scope of the item local declared at line "
                                  f"{line(outer)} (a name for two variables)", n)
                seen.append((name, n))


def _statements_with_comments(body: Node) -> list[Node]:
    return [c for c in body.named_children]


def interleaves(plan: Plan) -> bool:
    """This transform applied to ``plan`` (compute loops the items share), rather than
    another transform's ITEMS_PER_THREAD (a memory walk's)."""
    return any(f.transform == NAME and f.applied and INTERLEAVE in f.reason
               for f in plan.findings)


def gave_items(plan: Plan) -> bool:
    """This transform gave each thread its items, in any form: the statements from the
    index on are rewritten whole, so no other items loop may wrap them (a 2-D block's
    ``ITEMS_Y`` would wrap the items' own statements)."""
    return any(f.transform == NAME and f.applied for f in plan.findings)


def apply_ilp(plan: Plan) -> bool:
    """Apply where legal and useful (see the module doc); True when applied."""
    if NAME in plan.params:
        return False
    # a compute loop this transform would interleave items in, in a per-element kernel (no
    # shared memory or warp intrinsic): where it does not apply, the note says why
    loop = next((n for n in walk(plan.body) if n.type in LOOPS), None) or next(
        (m for n in walk(plan.body) if n.type == "call_expression"
         and (m := loop_in_call(plan.source, n)) is not None), None) if not (
        any(d.is_shared for d in plan.facts.defs.values()) or
        any(c.startswith(_WARP) for c in calls(plan.body))) else None
    found = _index_declaration(plan)
    once: OnceLoop | None = None
    if found is None:
        try:  # a grid-stride loop the launch runs once per thread: the guarded item it is
            once = once_loop(plan, lambda value: index_offset(plan, value))
        except Illegal as exc:
            plan.note(NAME, False, f"items with independent state: {exc.reason}",
                      exc.node)
            return False
        if once is None:
            if loop is not None:
                plan.note(NAME, False, "items with independent state: no top-level `T i = "
                          "blockIdx.x * B + threadIdx.x` (nor a grid-stride loop from it) "
                          "gives the item's place", loop)
            return False
        off = index_offset(plan, once.start)
        assert off is not None
        found = (once.position, once.decl, once.index, off)
    k, decl, index, off = found
    stmts = statements(plan.body)
    try:
        scan, returns, arrays, region = _analyse(plan, stmts, k, index, once)
    except Illegal as exc:
        plan.note(NAME, False, f"items with independent state: {exc.reason}",
                  exc.node or decl)
        return False
    called = _called_loops(plan, region, scan.items) if not scan.compute_loops else []
    if not scan.compute_loops and not called:
        for refusal in scan.refused:  # why the loop on the item's state is not shared
            plan.note(NAME, False, f"items with independent state: the loop at line "
                      f"{line(refusal.loop)} is not shared: {refusal}", refusal.node)
        return False  # straight-line: wrapping (wrap.py) gives the same work per thread
    for refusal in scan.refused:
        plan.note(NAME, False, f"the loop at line {line(refusal.loop)} runs whole per item, "
                  f"not shared: {refusal}", refusal.node)
    divisor_node = _offset_divisor(off)
    divisor = plan.block[0] if builtin(divisor_node, "blockDim") == "x" else \
        plan.rw.text(divisor_node)
    new = items_grid(plan, once, divisor, NAME)
    if new is None:
        plan.note(NAME, False, f"grid rule {plan.grid[0] if plan.grid else '?'} does not "
                  f"divide by the block offset {divisor}", decl)
        return False
    plan.grid[0] = new
    # the item's place: (blockIdx.x * ITEMS + it) * B + threadIdx.x, B apart (coalesced)
    bid = next(n for n in walk(off) if builtin(n, "blockIdx") == "x" and
               n.type == "field_expression")
    plan.rw.replace(bid, item_block(once, NAME, IT))
    for n in walk(plan.body):
        if n.type == "identifier" and text(n) in arrays and n.parent is not None and \
                not _is_declarator_name(n):
            plan.rw.replace(n, f"{text(n)}[{IT}]")
    exits = bool(returns) or bool(scan.exit_returns)
    render = _Render(plan, scan, arrays, returns, guarded=exits)
    render.return_at_one = once is None or once.span == 1
    start, end = stmts[k].start_byte, stmts[-1].end_byte
    live = (f"bool {LIVE}[{NAME}];  // items still running (the guard below)\n"
            f"#pragma unroll\n  for (int {IT} = 0; {IT} < {NAME}; ++{IT}) {LIVE}[{IT}] = true;\n  "
            if exits else "")
    plan.rw.replace_span(start, end, make=lambda rw: in_rounds(
        plan, once, divisor, NAME, live + render.block(region, "  ").lstrip()))
    # 1 to 8 items: the practice for compute-bound per-element kernels (each item keeps its
    # locals in registers; past 8 the registers of a long loop body spill or cap occupancy),
    # with the block size any multiple of 32 up to 1024 (lift_block) and UNROLL 0 to 8 or
    # the whole loop of up to 64 trips (_unroll_knobs)
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": f"items per thread, {divisor} apart, each with its "
                                         "own registers, interleaved in the shared loops "
                                         "(as written: 1)"},
                   f"{line(decl)}: {text(decl)[:60]}")
    own = [e for e in scan.exits.values() if e.kind != "escape"]
    if own:
        # each item sharing a loop on its state carries that state and a whole trip's
        # temporaries (a solve's call chain): about the registers of one thread as written.
        # __launch_bounds__(B) caps a thread at 65536 / B registers, so B * items stays
        # within the 2048 threads' worth of an SM's registers (past it, the items spill)
        # (B the block's threads: every dimension of a 2-D or 3-D block)
        block = " * ".join(d if " " not in d else f"({d})" for d in plan.block)
        plan.constrain(f"{block} * {NAME} <= 2048")
    work = f"{len(scan.compute_loops)} {INTERLEAVE}" if scan.compute_loops else \
        "the items' calls of " + ", ".join(f"`{callee_name(c)}` (its loop at line {line(lp)})"
                                           for c, lp in called) + \
        " run in one unrolled loop over the items"
    plan.note(NAME, True, f"{len(arrays)} item-dependent local(s) ({', '.join(sorted(arrays))})"
              f" get one copy per item; {work}" +
              "".join(f"; the {e.kind} loop at line {line(e.loop)} is left by each item on its"
                      f" own ({'a select keeps' if e.straight else 'a branch skips'} an item"
                      " that left)" for e in own), decl)
    render.grouped = group_series_exits(plan, own, scan.escape_ifs)
    render.any_ifs = find_any_ifs(plan, scan.compute_loops, scan.items, arrays,
                                  {*render.returns, *scan.exits, *scan.escape_ifs,
                                   *scan.exit_returns}, NAME)
    if scan.compute_loops:
        _unroll_knobs(plan, scan)
    return True


def _called_loops(plan: Plan, region: list[Node], items: set[str]) -> list[tuple[Node, Node]]:
    """(call, loop) for each call in an item's statement of a file function whose loop is
    the item's work (``x = kepler<24>(m, e)``, a series in a helper): straight-line in the
    kernel, so wrapping would apply, but the work per item is a loop the compiler inlines;
    the items' calls in one unrolled loop are independent chains it may interleave."""
    out: list[tuple[Node, Node]] = []
    for stmt in region:
        if not is_item_stmt(stmt, items):
            continue
        for n in walk(stmt):
            if n.type == "call_expression" and mentions(n, items) and \
                    all(c != n for c, _lp in out):  # a statement nested in one listed
                loop = loop_in_call(plan.source, n)
                if loop is not None:
                    out.append((n, loop))
    return out


def would_interleave(plan: Plan) -> Node | None:
    """The compute loop items with independent state would interleave in, were this
    transform applied to ``plan`` now (the analysis only: nothing is rewritten), else None.
    A per-element body with such a loop is compute-bound: VEC's lanes would run it one after
    another, where the items' chains interleave (vector.py leaves it to this transform)."""
    if len(plan.block) != 1 or NAME in plan.params:
        return None
    found = _index_declaration(plan)
    once = None
    if found is None:
        try:
            once = once_loop(plan, lambda value: index_offset(plan, value))
        except Illegal:
            return None
        if once is None:
            return None
        off = index_offset(plan, once.start)
        if off is None:
            return None
        found = (once.position, once.decl, once.index, off)
    k, _decl, index, off = found
    try:
        scan, _returns, _arrays, region = _analyse(plan, statements(plan.body), k, index, once)
    except Illegal:
        return None
    divisor_node = _offset_divisor(off)
    divisor = plan.block[0] if builtin(divisor_node, "blockDim") == "x" else \
        plan.rw.text(divisor_node)
    if items_grid(plan, once, divisor, NAME) is None:
        return None  # the items' grid could not be written: VEC keeps the element
    if scan.compute_loops:
        return scan.compute_loops[0]
    # a helper's loop the items' calls run (a series, a solve): the same compute-bound work
    # as a loop in the body, whether the block is a literal or blockDim.x
    called = _called_loops(plan, region, scan.items)
    return called[0][1] if called else None


def _region_nodes(body: Node, start: int, end: int) -> list[Node]:
    return [c for c in body.named_children if c.start_byte >= start and c.end_byte <= end]


def _is_declarator_name(n: Node) -> bool:
    parent = n.parent
    return parent is not None and (
        (parent.type in ("init_declarator", "pointer_declarator", "array_declarator") and
         parent.child_by_field_name("declarator") == n) or
        (parent.type == "declaration" and any(d == n for d in
                                              parent.children_by_field_name("declarator"))))


def _offset_divisor(off: Node) -> Node:

    parts = binary(off)
    assert parts is not None
    return strip(parts[2] if builtin(parts[0], "blockIdx") == "x" else parts[0])


def _analyse(plan: Plan, stmts: list[Node], k: int, index: str, once: OnceLoop | None = None
             ) -> tuple[_Scan, list[Node], set[str], list[Node]]:
    staged = staged_tables(plan, stmts[:k], stmts[k:])  # a table filled before the items
    bad = sorted(c for c in calls(plan.body) if c.startswith(_WARP) and
                 not (staged and c == "__syncthreads"))
    if bad:
        raise Illegal(f"the kernel calls {bad[0]}, which must run once per thread")
    if any(d.is_shared for d in plan.facts.defs.values()) and not staged:
        raise Illegal("the block shares __shared__ memory")
    purity = device_purity(plan.source)
    free = effect_free(plan.source)
    for n in walk(plan.body):
        callee = callee_name(n) if n.type == "call_expression" else None
        if callee is not None and purity.get(callee) is not None and free.get(callee):
            # its effects would run once per thread where shared, or interleaved across
            # items (a call free of effects runs per live item: safe_when_done guards it)
            raise Illegal(f"the kernel calls {why_not_pure(plan.source, callee)}; it is not "
                          f"free of effects either: {free[callee]}", n)
    uses = [n for n in walk(plan.body) if builtin(n, "blockIdx") == "x" and
            n.type == "field_expression"]
    if len(uses) != 1:
        raise Illegal("blockIdx.x is read more than once", uses[1] if len(uses) > 1 else None)
    if len(plan.block) == 1 and any(builtin(n, "blockIdx") in ("y", "z") for n in walk(plan.body)):
        # (legal too: the items share the thread's y and z; kept for the 1-D block, whose
        # batch index the generic wrap gives its items as before)
        raise Illegal("the kernel reads blockIdx.y/z")
    d = plan.facts.defs.get(index)
    if d is None or (d.assigned and once is None):  # (once_loop: only its step assigns it)
        raise Illegal(f"the index `{index}` is reassigned", stmts[k])
    before = {name for stmt in stmts[:k] for name in _declared(stmt)}
    for stmt in stmts[:k]:
        for n in walk(stmt):
            if n.type == "return_statement" or (
                    n.type in ("assignment_expression", "update_expression") and
                    _local_root(plan, n) not in before and not prologue_write(stmt, n, staged)):
                raise Illegal(f"`{text(n)[:60]}` runs before the index is known", n)
    if once is not None:  # `T i = g; if (i < n) BODY`: the loop's test is the final guard
        body = once.loop.child_by_field_name("body")
        assert body is not None
        inner = _statements_with_comments(body) if body.type == "compound_statement" \
            else [body]
        returns, region = [once.loop], [once.decl, once.loop, *inner]
    else:
        returns, region = _guards(stmts[k:], {index})
    plain = [s for s in region if not any(s == r for r in returns)]
    local_arrays = frozenset(d.name for d in plan.facts.defs.values()
                             if not d.is_pointer and not d.is_shared)
    items = item_names(plain, index, local_arrays)
    escapes = escape_loops(plain, items)
    own = [s for s in plain if span(s) not in escapes and candidate(s, items)]
    # what a loop items leave one by one assigns is the item's state when it leaves
    # (and, for a loop on the item's state, what its header assigns: a counter read after)
    seeds = frozenset(name for loop in [*(lp for lp, _ifs in escapes.values()), *own]
                      for name in assigned_in_body(loop, local_arrays)) | frozenset(
        name for loop in own for h in header(loop) for name in assigned_names(h, local_arrays))
    if seeds:
        grown = item_names(plain, index, local_arrays, seeds)
        if any(mentions(h, grown) for loop, _ifs in escapes.values() for h in header(loop)):
            own += [lp for lp, _ifs in escapes.values()]  # its own control is per item
            escapes = {}
        items = grown
    items -= shared_counters(plan, own)  # one per thread: every live item's trip count
    shapes: list[ItemLoop] = []
    refused: list[LoopRefusal] = []
    for loop in own:
        found = read_loop(plan, loop, items)
        if _streams(plan, loop, items):
            continue  # a walk over memory per item: a per-item statement (WALK_SPLIT, VEC)
        if isinstance(found, LoopRefusal):
            if not is_item_stmt(loop, items):  # shared control an item's break would leave
                raise Illegal(str(found), found.node)
            refused.append(found)  # each item runs it whole, in its turn
        else:
            shapes.append(found)
    scan = _Scan(index, items, region=region, refused=refused)
    scan.exit_returns = {span(s) for s in plain if _exit_return(s, items)}
    scan.escapes = set(escapes)
    scan.escape_ifs = {span(i) for _loop, ifs in escapes.values() for i in ifs} | \
        {span(i) for shape in shapes for i in shape.exits}
    _check(plan, region, scan, returns)
    for stmt in plain:
        for n in walk(stmt):
            if n.type in LOOPS and not any(mentions(h, items) for h in header(n)) and \
                    mentions(n, items) and not _inside_item_stmt(n, region, items) and \
                    not _streams(plan, n, items) and \
                    not any(n == shape.loop for shape in shapes):
                scan.compute_loops.append(n)
    scan.compute_loops += [shape.loop for shape in shapes]
    arrays = _arrays(plain, items, frozenset(span(shape.loop) for shape in shapes))
    arrays |= {name for shape in shapes if shape.init is not None and
               shape.init.type == "declaration" for name in _declared(shape.init)}
    _refuse_shadowed(region, arrays)
    scan.auto_types = item_types(plan, region, arrays)  # `auto x[N]` is not C++
    for loop, _ifs in escapes.values():
        scan.exits[span(loop)] = shared_exit(plan, loop, items, arrays, scan.escape_ifs, None)
    for shape in shapes:
        scan.exits[span(shape.loop)] = shared_exit(plan, shape.loop, items, arrays,
                                                   scan.escape_ifs, shape.test, shape)
    return scan, returns, arrays, region


def _local_root(plan: Plan, assignment: Node) -> str | None:
    """The local an assignment changes, through its fields (``v.step = ..``) and its
    elements: the thread's own register state, which the thread's items share as the
    thread as written ran it once (None for memory: a pointer's target, a reference's, a
    parameter's, a shared array's)."""
    target = assignment.child_by_field_name("left") or \
        assignment.child_by_field_name("argument")
    while target is not None and (
            target.type in ("parenthesized_expression", "subscript_expression") or
            (target.type == "field_expression" and text(target.child(1)) == ".")):
        target = target.named_children[0] if target.named_children else None
    d = plan.facts.defs.get(text(target)) if target is not None and \
        target.type == "identifier" else None
    return d.name if d is not None and not d.is_pointer and not d.is_shared and not any(
        n.type == "reference_declarator" for n in walk(d.decl)) else None


def _streams(plan: Plan, loop: Node, items: set[str]) -> bool:
    """The loop reads or writes memory at item-dependent places (a walk over memory per
    item: memory-bound, left to WALK_SPLIT / VEC), rather than computing on the item's
    registers with shared operands (a table)."""
    moving = assigned_names(loop)  # a place that changes with the trips is a walk; one
    # that does not (the item's own input, read each trip) is a repeated load
    for n in walk(loop):
        # `*p` with p an item's pointer the trips step (`p += cols`): the same walk
        if n.type == "pointer_expression" and text(n).startswith("*") and \
                (ptr := n.child_by_field_name("argument")) is not None and \
                mentions(ptr, items) and mentions(ptr, moving):
            return True
        if n.type == "subscript_expression":
            array = n.child_by_field_name("argument")
            while array is not None and array.type == "subscript_expression":
                array = array.child_by_field_name("argument")  # m[r][c]: an element of m
            local = plan.facts.defs.get(text(array))
            if (local is not None and not local.is_pointer and not local.is_shared) or (
                    array is not None and member_in_registers(plan.source, plan.facts.defs,
                                                              array)):
                continue  # a local array, or a local object's array member (registers)
            if array is not None and constant_table(plan, array):
                continue  # a lookup into a __constant__ table: an operand, not a walk
            index = n.child_by_field_name("indices")
            if index is not None and walks(plan, index, items, moving, loop):  # not a lookup
                return True
    return False


def _inside_item_stmt(node: Node, region: list[Node], items: set[str]) -> bool:
    up = node.parent
    while up is not None:
        if any(up == r for r in region):  # (a final guard `if` is in the region too)
            return False
        if up.type in CONTROL and any(mentions(h, items) for h in header(up)):
            return True
        up = up.parent
    return False


def _arrays(region: list[Node], items: set[str],
            shared: frozenset[tuple[int, int]] = frozenset()) -> set[str]:
    """Item locals declared at a level the items' loops split (every item-dependent
    declaration directly in the region or in a shared loop/if body: ``shared`` names the
    loops on the item's state the items share)."""
    out: set[str] = set()

    def visit(stmts: list[Node]) -> None:
        for s in stmts:
            if s.type == "declaration" and _declared(s) & items:
                out.update(_declared(s))
            elif s.type in CONTROL and (span(s) in shared or not any(
                    mentions(h, items) for h in header(s))):
                for c in walk(s):
                    if c.type == "compound_statement" and c.parent is not None and \
                            (c.parent == s or c.parent.type == "else_clause"):
                        visit(statements(c))
    visit(region)
    return out


def _unroll_knobs(plan: Plan, scan: _Scan) -> None:
    """UNROLL: ``#pragma unroll (N)`` on the shared loop the items interleave in (0 leaves
    the compiler's choice, as written); nvcc reads a constexpr there, not a macro. The same
    knob unrolls each other shared loop beside it (none inside another: a max pass and a
    sum pass over the same table, as one hand would unroll them both); a value past a loop's
    trips unrolls it whole, so the largest trip count up to 64 is the value for all of them
    whole (nvcc then folds a term both passes compute once)."""
    loop = scan.compute_loops[0]
    if not _unrollable(scan, loop):
        # a loop on the item's state becomes the items' `while (true)`: its trips are data-dependent
        # and each ends in the test of every item, which unrolling would only repeat
        return
    bare = _bare_pragma(loop)  # the author's `#pragma unroll` with no factor: 0 keeps it
    if bare is False:
        plan.note("UNROLL", False, "the loop has its own #pragma unroll", loop)
        return
    name = "UNROLL" if "UNROLL" not in plan.params else "UNROLL_2"
    plan.helper(f"constexpr int wb_unroll = {name};  // #pragma unroll reads a constant, "
                "not a macro")
    loops = [loop]
    for other in scan.compute_loops[1:]:
        if _unrollable(scan, other) and _bare_pragma(other) is not False and not any(
                inside(other, lp) or inside(lp, other) for lp in loops):
            loops.append(other)
    for lp in loops:
        own = _bare_pragma(lp)
        unroll = f"\n#if {name} > 0\n#pragma unroll (wb_unroll)\n" + \
            ("#else\n#pragma unroll\n" if own is not None else "") + "#endif\n"
        if isinstance(own, Node):
            plan.rw.replace_span(own.start_byte, own.end_byte, unroll.lstrip("\n"))
        else:
            plan.rw.insert(lp.start_byte, unroll)
    values = [0, 1, 2, 4, 8]
    trips = max((t for lp in loops if (t := trip_count(lp)) is not None and
                 8 < t <= MAX_FULL_UNROLL), default=None)
    whole = ""
    if trips is not None:
        # the whole loop: a table read at a constant place becomes an operand, no load
        values.append(trips)
        whole = f"; {trips}: the whole loop" + ("s" if len(loops) > 1 else "")
    plan.add_param(name, {"kind": "choice", "values": values, "default": 0,
                          "description": "unroll factor of the shared loop"
                                         + ("s" if len(loops) > 1 else "") + " (0: "
                                         + ("its bare #pragma unroll" if bare is not None
                                            else "the compiler's choice")
                                         + f", as written{whole})"},
                   f"{line(loop)}: {text(loop).splitlines()[0][:60]}")
    plan.note(name, True, "unroll factor of the loop the items share (any value is correct)"
              + (f"; its {trips} trips known, so the whole loop is one of the values"
                 if whole and len(loops) == 1 else "")
              + (f"; the same factor for the shared loop(s) at line(s) "
                 f"{', '.join(str(line(lp)) for lp in loops[1:])}"
                 + (f" ({trips}: each whole)" if whole else "") if len(loops) > 1 else ""),
              loop)


def _unrollable(scan: _Scan, loop: Node) -> bool:
    """Not a ``while`` and not a loop on the item's state (:func:`_unroll_knobs`)."""
    found = scan.exits.get(span(loop))
    return loop.type != "while_statement" and (found is None or found.kind == "escape")


def _bare_pragma(loop: Node) -> Node | bool | None:
    """The author's bare ``#pragma unroll`` before ``loop``; False where the pragma gives a
    factor; None where there is none."""
    prev = loop.prev_sibling
    # (a pragma between an outer loop's header and this loop is a comment node: cuda_source)
    if prev is not None and prev.type in ("preproc_call", "comment") and \
            text(prev).startswith("#pragma") and "unroll" in text(prev):
        return prev if text(prev).split() == ["#pragma", "unroll"] else False
    return None
