"""REG_STAGES for :mod:`.block_phases`: the leading stages of a barrier loop in registers.

A block-per-row kernel whose barrier loop runs a fixed sequence of stages over a shared row
(a butterfly's ``h = 1, 2, .., 512``) is read by evaluating it, not its spelling: the loop's
uniform locals are stepped from their first values through its condition and updates, and at
every stage every work item's shared indices are evaluated. A stage qualifies when the
items' index sets partition the row (each element read and written by exactly one item, an
item touching only its own set: a pairing, so the items may run in any order on any thread).

With REG_STAGES 1 and ``B`` threads a row, thread ``c`` owns the ``L / B`` consecutive
elements from ``c * L / B`` in registers and runs the items ``c * I / B ..`` in turn (``I``
items, consecutive chunks). A stage runs in registers, with no shared memory and no barrier,
where for every thread and item of its chunk each shared index is the thread's first
element plus the index of the same item of thread 0: the thread then runs thread 0's items
(compile-time indices into its registers) on its own elements. The leading stages that do
so run first; the thread then writes its chunk back and the loop goes on from the stage
after them through shared memory as written. Legal only where the item's place is read in
nothing but the shared indices (else thread 0's items would compute something else: a
bitonic sort's direction ``(i & k) == 0``), refused with the line.

SHFL (with REG_STAGES): a stage past the register ones where every item pairs the same
element ``j`` of threads ``c`` and ``c ^ d`` (``d`` a power of two below 32: lanes of one
warp, a row's threads a multiple of 32), the lower element in the thread with bit ``d``
clear, and each shared access of the item is always its pair's lower or always its higher
element, runs as ``__shfl_xor_sync`` by ``d``: both lanes hold the pair, run the item with
its accesses on the pair's two values, and each keeps its own element (the same adds in the
same order in both). The leading stages that run in registers or so continue the prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, strip, text, walk
from workbench.templater.block_phases_vec import Evaluator
from workbench.templater.inline_bind import written
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.rewrite import Rewriter

NAME = "REG_STAGES"
_MAX_STAGES = 64
_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_UPDATE: dict[str, Callable[[int, int], int]] = {
    "=": lambda a, b: b, "+=": lambda a, b: a + b, "-=": lambda a, b: a - b,
    "*=": lambda a, b: a * b, "<<=": lambda a, b: a << b, ">>=": lambda a, b: a >> b,
    "/=": lambda a, b: int(a / b), "|=": lambda a, b: a | b, "&=": lambda a, b: a & b,
    "^=": lambda a, b: a ^ b}


@dataclass(frozen=True)
class RegStages:
    """The barrier loop, its stage run, and per threads-a-row value (and SHFL) how many
    leading stages run in registers or shuffles, which, and the loop's locals after them."""

    loop: Node
    run: tuple[Node, ...]
    shared: Node  # the shared array's identifier at the run's first access
    length: int  # elements of the row
    items: int
    carried: tuple[str, ...]  # the locals the loop assigns, declared before it or in it
    types: dict[str, str]  # a carried or stage-declared uniform local -> its declared type
    stages: tuple[dict[str, int], ...]  # those locals' values at each stage
    lead: dict[tuple[int, int], int]  # (threads a row, SHFL) -> leading stages in a warp
    in_regs: dict[int, int]  # threads a row -> bit s set: stage s in registers
    dist: dict[int, dict[int, int]]  # stage -> threads a row -> its shuffle's lane distance
    roles: tuple[tuple[str, ...] | None, ...]  # a stage -> each site's element: lo or hi
    sites: tuple[Node, ...]  # the run's shared accesses
    ctype: str  # the shared row's element type
    after: dict[tuple[int, int], dict[str, int]]  # the carried locals after the lead
    in_header: dict[str, Node]  # a carried local declared in a for's init -> its value
    place_decls: tuple[Node, ...] | None  # the run's declarations of index locals


def register_stages(plan: Plan, loops: list[Node], runs: list[list[Node]],
                    derived: list[Node], uniform: set[str], shared: set[str], items: int,
                    threads: list[int]) -> RegStages:
    """The stage loop's analysis (see the module); raises :class:`Refused` with the line."""
    evaluator = Evaluator(plan.source.tree.root_node)
    staged = [r for r in runs if any(_within(r[0], lp) for lp in loops)]
    derived_names = {_decl_name(d) for d in derived}
    places = [_check_places(run, derived_names, shared) for run in staged]
    if len(loops) != 1 or len(staged) != 1:
        raise Refused(f"{len(loops)} barrier loops with {len(staged)} runs of work: the "
                      "stages are no single loop of one phase", loops[-1] if loops
                      else plan.body)
    loop, run, place_decls = loops[0], staged[0], places[0]
    fixed = _fixed_values(plan, evaluator, uniform, loop)
    carried, types, in_header, env = _carried(plan, evaluator, loop, run, fixed)
    stages, final = _stages(evaluator, loop, run, carried, {**fixed, **env}, types)
    sites = [n for s in run for n in walk(s) if n.type == "subscript_expression" and
             text(n.child_by_field_name("argument")) in shared]
    array = sites[0].child_by_field_name("argument") if sites else None
    if array is None:
        raise Refused("the stage reads no shared row", run[0])
    length = _row_length(plan, evaluator, text(array))
    table = [_indices(evaluator, derived, run, sites, {**fixed, **stage}, items, length)
             for stage in stages]
    roles = tuple(_roles(rows) for rows in table)
    lead: dict[tuple[int, int], int] = {}
    in_regs: dict[int, int] = {}
    dist: dict[int, dict[int, int]] = {}
    after: dict[tuple[int, int], dict[str, int]] = {}
    for b in threads:
        if length % b or items % b:
            raise Refused(f"{b} threads do not split the {length} elements and {items} "
                          "items of a row evenly", loop)
        kinds: list[int | None] = []  # 0: in registers; d > 0: a shuffle d lanes apart
        for s, rows in enumerate(table):
            d = _in_warp(rows, roles[s], b, length // b)
            kinds.append(0 if _in_chunks(rows, b, length // b, items // b) else d)
            if d is not None:
                dist.setdefault(s, {})[b] = d
        in_regs[b] = sum(1 << s for s, k in enumerate(kinds) if k == 0)
        for shfl in (0, 1):
            count = 0
            while count < len(kinds) and kinds[count] is not None and \
                    (shfl or kinds[count] == 0):
                count += 1
            lead[b, shfl] = count
            after[b, shfl] = dict(stages[count]) if count < len(stages) else final
    return RegStages(loop, tuple(run), array, length, items, tuple(carried), types,
                     tuple(stages), lead, in_regs, dist, roles, tuple(sites),
                     _element_type(plan, text(array)), after, in_header, place_decls)


def _within(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _decl_name(decl: Node) -> str:
    d = decl.child_by_field_name("declarator")
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator")
    return text(d)


def _check_places(run: list[Node], derived: set[str], shared: set[str]
                  ) -> tuple[Node, ...] | None:
    """The item's place (threadIdx.x, the thread-derived locals and the run's locals built
    from them) is read only in the shared indices and those locals' own values; the run's
    declarations of such locals (None where one also declares another: then they stay)."""
    def index_spans(node: Node) -> list[Node]:
        return [i for n in walk(node) if n.type == "subscript_expression" and
                text(n.child_by_field_name("argument")) in shared
                for i in [n.child_by_field_name("indices") or n.child_by_field_name("index")]
                if i is not None]
    spans = [s for stmt in run for s in index_spans(stmt)]
    places = set(derived)
    values: list[Node] = []
    decls: list[Node] = []
    mixed = False
    for stmt in run:
        for n in walk(stmt):
            if n.type in ("call_expression", "for_statement", "while_statement",
                          "do_statement", "pointer_expression", "field_expression") and \
                    not builtin(n, "threadIdx") == "x":
                raise Refused(f"`{text(n)[:50]}` in a stage: only arithmetic on the shared "
                              "row is evaluated", n)
            if n.type == "subscript_expression" and \
                    text(n.child_by_field_name("argument")) not in shared:
                raise Refused(f"`{text(n)[:50]}`: a stage reads memory beyond its shared row",
                              n)
        if stmt.type == "declaration":
            for d in stmt.children_by_field_name("declarator"):
                value = d.child_by_field_name("value")
                if value is not None and _reads_place(value, places, spans):
                    places.add(_decl_name_of(d))
                    values.append(value)
            declared = [_decl_name_of(d) in places
                        for d in stmt.children_by_field_name("declarator")]
            if any(declared):
                decls.append(stmt)
                mixed = mixed or not all(declared)
    for stmt in run:
        for n in walk(stmt):
            if _is_place(n, places) and not any(_within(n, s) for s in spans + values):
                raise Refused(f"`{text(n)}` at line {n.start_point.row + 1} carries the item's "
                              "place into what the stage computes, not only into which "
                              "elements it pairs: a thread's items would not compute as "
                              "the first thread's", n)
    return None if mixed else tuple(decls)


def _is_place(n: Node, places: set[str]) -> bool:
    return (n.type == "identifier" and text(n) in places and
            (n.parent is None or n.parent.type != "init_declarator" or
             n.parent.child_by_field_name("declarator") != n)) or \
        builtin(n, "threadIdx") == "x"


def _reads_place(value: Node, places: set[str], spans: list[Node]) -> bool:
    return any(_is_place(n, places) and not any(_within(n, s) for s in spans)
               for n in walk(value))


def _fixed_values(plan: Plan, evaluator: Evaluator, uniform: set[str],
                  loop: Node) -> dict[str, int]:
    """Uniform locals declared once before the loop and never assigned, evaluated."""
    out: dict[str, int] = {}
    for n in walk(plan.body):
        if n.type != "init_declarator" or n.start_byte >= loop.start_byte:
            continue
        name, value = text(n.child_by_field_name("declarator")), n.child_by_field_name("value")
        if name in uniform and value is not None and not written(plan.body, name, address=False):
            result = evaluator.value(value, out)
            if result is not None:
                out[name] = result
    return out


def _carried(plan: Plan, evaluator: Evaluator, loop: Node, run: list[Node],
             fixed: Mapping[str, int]
             ) -> tuple[list[str], dict[str, str], dict[str, Node], dict[str, int]]:
    """The locals the loop assigns outside its run: names, types, those its for-init
    declares (their values), and their values on entry."""
    names: list[str] = []
    for n in walk(loop):
        if any(_within(n, stmt) for stmt in run):
            continue
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if target is not None and target.type == "identifier" and \
                    text(target) not in names:
                names.append(text(target))
    types: dict[str, str] = {}
    in_header: dict[str, Node] = {}
    env: dict[str, int] = {}
    init = loop.child_by_field_name("initializer")
    for name in names:
        decls = [d for d in walk(plan.body) if d.type == "declaration" and any(
            _decl_name_of(x) == name for x in d.children_by_field_name("declarator"))]
        if len(decls) != 1 or not (decls[0].end_byte <= loop.start_byte or
                                   (init is not None and decls[0] == init)):
            raise Refused(f"`{name}`, which the stage loop writes, is not declared once "
                          "before it or in its header", loop)
        d = next(x for x in decls[0].children_by_field_name("declarator")
                 if _decl_name_of(x) == name)
        value = d.child_by_field_name("value")
        start = evaluator.value(value, {**fixed, **env}) if value is not None else None
        if start is None or _writes_outside(plan.body, name, loop, d):
            raise Refused(f"`{text(decls[0])[:50]}`: the stage loop's `{name}` has no "
                          "value known on entry", decls[0])
        env[name] = start
        types[name] = text(decls[0].child_by_field_name("type"))
        if init is not None and decls[0] == init:
            in_header[name] = value  # type: ignore[assignment]
    return names, types, in_header, env


def _decl_name_of(d: Node) -> str:
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator")  # type: ignore[assignment]
    return text(d)


def _writes_outside(body: Node, name: str, loop: Node, decl: Node) -> bool:
    return any(n.type in ("assignment_expression", "update_expression") and
               text(n.child_by_field_name("left") or n.child_by_field_name("argument")) ==
               name and not _within(n, loop) for n in walk(body)) or decl is None


def _stages(evaluator: Evaluator, loop: Node, run: list[Node], carried: list[str],
            env: dict[str, int], types: dict[str, str]
            ) -> tuple[list[dict[str, int]], dict[str, int]]:
    """Steps the loop: the carried values and those of the uniform locals the body declares
    before its run at each stage (their types into ``types``), and the carried after the
    last."""
    body = loop.child_by_field_name("body")
    assert body is not None
    steps = [c for c in body.named_children if c.type != "comment"]
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    stages: list[dict[str, int]] = []
    while _truth(evaluator, cond, env):
        fresh: list[str] = []
        for stmt in steps:
            if stmt == run[0]:
                stages.append({c: env[c] for c in [*carried, *fresh]})
            elif stmt.type == "declaration" and stmt not in run:
                for d in stmt.children_by_field_name("declarator"):
                    value = d.child_by_field_name("value")
                    result = evaluator.value(value, env) if value is not None else None
                    if result is None:
                        raise Refused(f"the stage loop's `{text(d)[:50]}` does not evaluate",
                                      stmt)
                    env[_decl_name_of(d)] = result
                    fresh.append(_decl_name_of(d))
                    types[_decl_name_of(d)] = text(stmt.child_by_field_name("type"))
            elif stmt.type == "expression_statement" and stmt not in run and \
                    text(stmt).replace(" ", "") != "__syncthreads();":
                _apply(evaluator, stmt.named_children[0], env, stmt)
        if update is not None:
            _apply(evaluator, update, env, loop)
        if len(stages) > _MAX_STAGES:
            raise Refused(f"the stage loop runs past {_MAX_STAGES} stages", loop)
    return stages, {c: env[c] for c in carried}


def _truth(evaluator: Evaluator, cond: Node | None, env: Mapping[str, int]) -> bool:
    if cond is None:
        raise Refused("a stage loop with no condition", cond)
    node = strip(cond.named_children[0] if cond.type == "condition_clause" else cond)
    parts = binary(node)
    if parts is not None and parts[1] in ("&&", "||"):
        left = _truth(evaluator, parts[0], env)
        return (left and _truth(evaluator, parts[2], env)) if parts[1] == "&&" else \
            (left or _truth(evaluator, parts[2], env))
    if parts is not None and parts[1] in _COMPARE:
        a, b = evaluator.value(parts[0], env), evaluator.value(parts[2], env)
        if a is not None and b is not None:
            return _COMPARE[parts[1]](a, b)
    value = evaluator.value(node, env)
    if value is None:
        raise Refused(f"the stage loop's `{text(node)[:50]}` does not evaluate", node)
    return value != 0


def _apply(evaluator: Evaluator, expr: Node, env: dict[str, int], where: Node) -> None:
    if expr.type == "comma_expression":
        for part in expr.named_children:
            _apply(evaluator, part, env, where)
        return
    if expr.type == "update_expression":
        name = text(expr.child_by_field_name("argument"))
        step = 1 if "++" in text(expr.child_by_field_name("operator")) else -1
        env[name] += step
        return
    if expr.type == "assignment_expression":
        name = text(expr.child_by_field_name("left"))
        op = text(expr.child_by_field_name("operator"))
        right = expr.child_by_field_name("right")
        value = evaluator.value(right, env) if right is not None else None
        if name in env and op in _UPDATE and value is not None:
            env[name] = _UPDATE[op](env[name], value)
            return
    raise Refused(f"the stage loop's `{text(expr)[:50]}` does not evaluate", where)


def _row_length(plan: Plan, evaluator: Evaluator, name: str) -> int:
    for decl in walk(plan.body):
        if decl.type == "declaration" and _decl_name(decl) == name:
            d = decl.child_by_field_name("declarator")
            size = d.child_by_field_name("size") if d is not None else None
            inner = d.child_by_field_name("declarator") if d is not None else None
            if d is not None and d.type == "array_declarator" and size is not None and \
                    inner is not None and inner.type == "identifier":
                value = evaluator.value(size, {})
                if value is not None:
                    return value
            raise Refused(f"`{text(decl)[:50]}`: the shared row is not one array of a "
                          "known length", decl)
    raise Refused(f"`{name}` is not declared in the kernel", plan.body)


def _indices(evaluator: Evaluator, derived: list[Node], run: list[Node], sites: list[Node],
             stage: dict[str, int], items: int, length: int) -> list[list[int]]:
    """Every item's shared index at each site; refused where the items do not partition
    the row."""
    out: list[list[int]] = []
    owner: dict[int, int] = {}
    for item in range(items):
        env = {**stage, "threadIdx.x": item}
        for decl in [*derived, *(s for s in run if s.type == "declaration")]:
            for d in decl.children_by_field_name("declarator"):
                value = d.child_by_field_name("value")
                result = evaluator.value(value, env) if value is not None else None
                if result is not None:
                    env[_decl_name_of(d)] = result
        row: list[int] = []
        for site in sites:
            index = site.child_by_field_name("indices") or site.child_by_field_name("index")
            if index is not None and index.type == "subscript_argument_list":
                index = index.named_children[0]
            at = evaluator.value(index, env) if index is not None else None
            if at is None or not 0 <= at < length:
                raise Refused(f"`{text(site)}` at line {site.start_point.row + 1} does not "
                              f"evaluate inside the row for item {item} at {stage}", site)
            if owner.setdefault(at, item) != item:
                raise Refused(f"items {owner[at]} and {item} both touch element {at} "
                              f"at {stage} (`{text(site)}`, line {site.start_point.row + 1}):"
                              " the stage is no pairing", site)
            row.append(at)
        out.append(row)
    if len(owner) != length:
        raise Refused(f"the items touch {len(owner)} of the {length} elements at {stage}",
                      sites[0])
    return out


def _in_chunks(table: list[list[int]], threads: int, elems: int, per: int) -> bool:
    """Every thread's items touch its own elements, each at thread 0's index plus its
    first element."""
    return all(table[c * per + k][s] == c * elems + table[k][s] and
               0 <= table[k][s] < elems
               for c in range(threads) for k in range(per) for s in range(len(table[k])))


def _roles(rows: list[list[int]]) -> tuple[str, ...] | None:
    """Each site's element in every item's pair, the lower or the higher; None where an
    item touches no pair or a site's role differs between items."""
    out: set[tuple[str, ...]] = set()
    for row in rows:
        if len(set(row)) != 2:
            return None
        out.add(tuple("lo" if at == min(row) else "hi" for at in row))
    return out.pop() if len(out) == 1 else None


def _in_warp(rows: list[list[int]], roles: tuple[str, ...] | None, threads: int,
             elems: int) -> int | None:
    """The lane distance ``d`` (a power of two below 32) where every pair is the same
    element of threads ``c`` and ``c ^ d`` of a warp, the lower in the thread with bit ``d``
    clear; else None."""
    if roles is None or threads % 32:
        return None
    ds = {(min(r) // elems) ^ (max(r) // elems) for r in rows}
    d = ds.pop() if len(ds) == 1 else 0
    if not 0 < d < 32 or d & (d - 1):
        return None
    ok = all(min(r) % elems == max(r) % elems and (min(r) // elems) & d == 0 for r in rows)
    return d if ok else None


def _element_type(plan: Plan, name: str) -> str:
    for decl in walk(plan.body):
        if decl.type == "declaration" and _decl_name(decl) == name:
            return text(decl.child_by_field_name("type"))
    raise Refused(f"`{name}` is not declared in the kernel", plan.body)


def _chain(threads: str, values: Mapping[int, int]) -> str:
    pairs = sorted(values.items())
    out = str(pairs[-1][1])
    for b, v in reversed(pairs[:-1]):
        out = f"{threads} == {b} ? {v} : {out}"
    return f"({out})"


def emit_register_stages(plan: Plan, regs: RegStages, threads: str, knob: str, shfl: str,
                         needed: list[Node]) -> None:
    """The leading stages before the loop (under ``#if knob``): in registers, or with
    ``shfl`` through warp shuffles; the loop resumed after them."""
    elems = f"({regs.length} / {threads})"
    first, last = regs.run[0], regs.run[-1]
    count = max(regs.lead.values())

    def lead(rw: Rewriter) -> str:
        shared = rw.text(regs.shared)
        decls = "".join(rw.render(d.start_byte, d.end_byte) + "\n" for d in needed)

        def body(roles: tuple[str, ...] | None) -> str:
            sub = Rewriter(rw.data)
            sub.edits = [e for e in rw.edits if not (e.start == e.end and (
                e.start == first.start_byte or e.start == last.end_byte))]
            if roles is None:
                out = sub.render(first.start_byte, last.end_byte)
                return re.sub(rf"(?<![\w.]){re.escape(shared)}\s*\[", "wb_r[", out)
            for site, role in zip(regs.sites, roles, strict=True):
                sub.replace(site, f"wb_{role}")
            for decl in regs.place_decls or ():
                sub.replace(decl, "")  # the indices they computed are gone
            return sub.render(first.start_byte, last.end_byte)
        def consts(s: int, read: set[str] | None) -> str:
            """Stage ``s``'s uniform locals (those in ``read``, where given)."""
            return " ".join(f"const {regs.types[n]} {n} = {v};"
                            for n, v in regs.stages[s].items() if read is None or n in read)
        kept = [x for x in [*regs.run, *needed] if regs.place_decls is None or
                (x not in regs.place_decls and x not in needed)]
        read = {text(n) for x in kept for n in walk(x) if n.type == "identifier" and
                not any(_within(n, site) for site in regs.sites)}  # sites: the pair's values
        counts = {b: regs.lead[b, 0] for b, _ in regs.lead}
        if shfl:
            counts_shfl = {b: regs.lead[b, 1] for b, _ in regs.lead}
            total = f"({shfl} ? {_chain(threads, counts_shfl)} : {_chain(threads, counts)})"
        else:
            total = _chain(threads, counts)
        lines = [f"\n#if {knob}\n  {{  // the leading stages in registers, "
                 f"{elems} elements a thread\n",
                 f"    constexpr int wb_lead = {total};\n",
                 f"    constexpr unsigned wb_in_regs = {_chain(threads, regs.in_regs)};\n",
                 f"    {regs.ctype} wb_r[{elems}];\n#pragma unroll\n",
                 f"    for (int wb_j = 0; wb_j < {elems}; ++wb_j) "
                 f"wb_r[wb_j] = {shared}[threadIdx.x * {elems} + wb_j];\n"]
        for s in range(count):
            in_regs = (f"      {consts(s, None)}\n#pragma unroll\n      for (int wb_k = 0; "
                       f"wb_k < {regs.items} / {threads}; ++wb_k) {{ const int wb_t = wb_k;\n"
                       f"{decls}{body(None)}\n      }}\n")
            warp = ""
            places = "" if regs.place_decls is not None else \
                f" const int wb_t = 0;  // indices unread: the pair's values are given\n{decls}"
            if shfl and s in regs.dist:
                t = regs.ctype
                warp = (f"      constexpr int wb_d = {_chain(threads, regs.dist[s])};  // lanes\n"
                        f"      const bool wb_up = (threadIdx.x & wb_d) != 0;\n#pragma unroll\n"
                        f"      for (int wb_j = 0; wb_j < {elems}; ++wb_j) {{\n"
                        f"        const {t} wb_p = __shfl_xor_sync(0xffffffffu, wb_r[wb_j], "
                        f"wb_d);\n        {t} wb_lo = wb_up ? wb_p : wb_r[wb_j];\n"
                        f"        {t} wb_hi = wb_up ? wb_r[wb_j] : wb_p;\n"
                        f"        {{ {consts(s, read)}\n"
                        f"{places}{body(regs.roles[s])}\n        }}\n"
                        f"        wb_r[wb_j] = wb_up ? wb_hi : wb_lo;\n      }}\n")
            if not any(m >> s & 1 for m in regs.in_regs.values()):
                stage = warp
            elif warp:
                stage = (f"      if ((wb_in_regs >> {s}) & 1u) {{\n{in_regs}      }} else {{\n"
                         f"{warp}      }}\n")
            else:
                stage = in_regs
            lines.append(f"    if ({s} < wb_lead) {{\n{stage}    }}\n")
        lines.append(f"#pragma unroll\n    for (int wb_j = 0; wb_j < {elems}; ++wb_j) "
                     f"{shared}[threadIdx.x * {elems} + wb_j] = wb_r[wb_j];\n  }}\n"
                     "  __syncthreads();\n")
        for name in regs.carried:
            if name not in regs.in_header:
                lines.append(f"  {name} = {resumed(name)};\n")
        return "".join(lines) + "#endif\n  "

    def resumed(name: str) -> str:
        plain = _chain(threads, {b: v[name] for (b, f), v in regs.after.items() if f == 0})
        if not shfl:
            return plain
        warp = _chain(threads, {b: v[name] for (b, f), v in regs.after.items() if f == 1})
        return f"({shfl} ? {warp} : {plain})"

    plan.rw.replace_span(regs.loop.start_byte, regs.loop.start_byte, make=lead)
    for name, value in regs.in_header.items():
        plan.rw.replace(value, f"({knob} ? {resumed(name)} : ({text(value)}))")
