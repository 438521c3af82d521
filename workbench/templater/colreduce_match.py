"""Recognising a column reduction to partial rows on the parse, or refusing it with the line.

The family (:mod:`workbench.templater.colreduce` says what is lifted): each thread owns
one column ``col = blockIdx.x * BX + threadIdx.x`` of a row-major matrix and sums the
elements of some rows of it into a local accumulator; the block's row chunk
(``blockIdx.y``) writes one partial row, ``out[blockIdx.y * LD + col]``. Recognised by
roles, with every index read as an integer polynomial (single-assignment locals, row
pointers such as ``const float* row = m + r * ld`` and macros expanded, casts ignored), so
``m[(size_t)r * ncols + col]``, ``row[col]`` and ``*(m + col + r * ld)`` are the same read:

* the rows a thread adds: a grid-stride walk ``r = blockIdx.y * BY + threadIdx.y; r < N;
  r += gridDim.y * BY`` (the grid's y extent a literal: the partial rows written), or a
  fixed slice ``r = blockIdx.y * RPB + threadIdx.y`` while ``r < min(blockIdx.y * RPB + RPB,
  N)`` (or ``r < end && r < N``), stepping by ``BY`` (the grid's y extent ``ceil_div(N,
  RPB)``); ``for`` or ``while``; ``BY`` the block's y size (1 for a 1-D block);
* one accumulation ``acc += E`` (or ``acc = acc + E``) into a local that starts at zero, E
  reading kernel pointers only at ``(r, col)`` (``r * LD + col``) and otherwise only
  kernel scalars, macros and literals; or
  several such sums in the same row loop (``sg += v * x[..]; sb += v;``) are one walk
  feeding several partial rows, each sum then stored directly (no fold) and all of one type;
* the column checked against the width (``if (col < W) {...}`` around the walk, or
  ``if (col >= W) return;`` before it where the kernel has no barrier);
* the block's ``BY`` sums of a column folded through one ``__shared__`` array at
  ``[threadIdx.y][threadIdx.x]`` (or the flat ``[threadIdx.y * BX + threadIdx.x]``) by a
  halving tree over ``threadIdx.y`` or by thread row 0 adding the ``BY`` slots in order;
  with ``BY = 1`` the accumulator is stored directly;
* one store to global memory a sum: ``out[blockIdx.y * LD + col]``, by thread row 0, under the
  column check.

Every other top-level statement must be a declaration free of side effects: a statement
the analysis does not know refuses the lift, naming its line.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    chain,
    declared_name,
    int_value,
    strip,
    text,
    walk,
)
from workbench.templater.colreduce_fold import FoldCheck
from workbench.templater.colreduce_parts import (
    _PURE_CALLS,
    ColumnRead,
    ColumnReduction,
    PartialSum,
    _c_type,
    _ceil_div_by,
    _column_poly,
    _condition,
    _enclosing_loop,
    _expression,
    _free,
    _increment,
    _Index,
    _is_param,
    _is_row0,
    _mul_atom,
    _only_return,
    _poly_c,
    _statements,
    _target,
    _zero,
    inside_consequence,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, render
from workbench.templater.rules import literal
from workbench.templater.stencil import Poly, add, derivative, scale


class _Matcher:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.stmts = _statements(plan.body)
        self.bx = literal(plan.block[0]) or 0
        self.by = (literal(plan.block[1]) or 0) if len(plan.block) > 1 else 1
        self.width: str | None = None
        self.early: set[int] = set()  # the column checks that return early

    # -- the accumulation and its loop ----------------------------------------------------

    def accumulations(self) -> list[tuple[Node, str, Node]]:
        """(the ``acc += E`` expression, acc, E) of each update of a local scalar inside a
        loop (one row walk may feed several sums), all in the same loop."""
        found = []
        for n in walk(self.plan.body):
            if n.type != "assignment_expression":
                continue
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            op = text(n.child_by_field_name("operator"))
            if left is None or right is None or left.type != "identifier" or (
                    n.parent is not None and n.parent.type == "for_statement"):
                continue  # a loop's own step
            acc = text(left)
            d = self.plan.facts.defs.get(acc)
            if d is None or d.is_shared or d.is_pointer or any(
                    n.type == "identifier" and (e := self.plan.facts.defs.get(text(n)))
                    is not None and e.is_shared for n in walk(right)):
                continue  # the fold's sum of shared slots, not the walk's
            if op == "+=":
                found.append((n, acc, right))
            elif op == "=":
                parts = binary(right)
                if parts is not None and parts[1] == "+" and text(strip(parts[0])) == acc:
                    found.append((n, acc, parts[2]))
                elif parts is not None and parts[1] == "+" and text(strip(parts[2])) == acc:
                    found.append((n, acc, parts[0]))
        loops = [f for f in found if _enclosing_loop(f[0], self.plan.body) is not None]
        if not loops:
            raise Refused("expected a sum into a local accumulator inside a loop, found none")
        first = _enclosing_loop(loops[0][0], self.plan.body)
        for f in loops[1:]:
            if _enclosing_loop(f[0], self.plan.body) != first:
                raise Refused(f"`{text(f[0])}` sums in another loop than `{text(loops[0][0])}`"
                              " (one row walk is modelled)", f[0])
        accs = [acc for _n, acc, _v in loops]
        for _n, acc, _v in loops:
            if accs.count(acc) != 1:
                raise Refused(f"`{acc}` is summed into twice in the row loop", _n)
        return loops

    def run(self) -> ColumnReduction:
        plan = self.plan
        if not self.bx or not self.by:
            raise Refused("the block size is not a literal")
        found = self.accumulations()
        loop = _enclosing_loop(found[0][0], plan.body)
        assert loop is not None
        acc_type = self.acc_type([acc for _u, acc, _v in found])
        values = [value for _u, _acc, value in found]
        var, start, bound_cond, step, body_locals = self.loop_parts(
            loop, {u.start_byte for u, _acc, _v in found})
        ix = _Index(plan, {var})
        col = _column_poly(ix)
        reads = self.reads(ix, values, var, col, body_locals)
        if acc_type not in ("float", "double"):
            for value in values:
                _integer_sum(acc_type, value, reads, [v for _d, v in body_locals])
        mode, chunks, rpb, rows = self.rows(ix, loop, var, start, bound_cond, step)
        stores = self.stores(ix, [acc for _u, acc, _v in found], col)
        sums, fold_parts, trees = [], [], set()
        for (_u, acc, value), (out, out_ld, out_type, final) in zip(found, stores, strict=True):
            if not self.guarded(ix, loop, col) or not self.guarded(ix, final, col, row0=True):
                raise Refused("the column is not checked against the matrix width (`if (col "
                              "< W)` around the walk and the store, or `if (col >= W) "
                              "return;`)", loop)
            tree, parts = FoldCheck(plan, self.bx, self.by).fold(ix, acc, final)
            trees.add(tree)
            fold_parts += parts
            sums.append(PartialSum(value, out, out_ld, out_type, final))
        if len(sums) > 1 and trees != {"none"}:
            raise Refused("several sums whose block rows are folded through shared memory "
                          "(only several sums each stored directly are modelled)", loop)
        self.others(loop, [s.store for s in sums], fold_parts)
        assert self.width is not None
        return ColumnReduction(acc_type, tuple(sums), tuple(reads),
                               tuple(d for d, _v in body_locals), self.width, rows, self.bx,
                               self.by, mode, chunks, rpb, loop, trees.pop())

    def acc_type(self, accs: list[str]) -> str:
        """The accumulators' one C type; each starts at zero and changes only by its sum."""
        types = set()
        for acc in accs:
            d = self.plan.facts.defs[acc]
            acc_type = " ".join(text(d.decl.child_by_field_name("type")).split())
            if acc_type not in ("float", "double", "int", "unsigned", "unsigned int",
                                "long long", "unsigned long long"):
                raise Refused(f"the accumulator `{acc}` is a {acc_type}", d.decl)
            if not _zero(d.value) or sum(1 for n in walk(self.plan.body)
                                          if n.type in ("assignment_expression",
                                                        "update_expression")
                                          and text(n.child_by_field_name("left") or
                                                   n.child_by_field_name("argument")) == acc
                                          ) != 1:
                raise Refused(f"`{acc}` must start at zero and change only by the sum", d.decl)
            types.add(acc_type)
        if len(types) != 1:
            raise Refused(f"the sums `{'`, `'.join(accs)}` are of different types "
                          f"({', '.join(sorted(types))})", self.plan.facts.defs[accs[0]].decl)
        return types.pop()

    def loop_parts(self, loop: Node, updates: set[int]) -> tuple[str, Node, Node, Node | str,
                                                                 list[tuple[Node, Node]]]:
        """(row variable, start, condition, step, the loop body's value locals as
        (declaration, initialiser)); its pointer locals are read through as addresses."""
        body = loop.child_by_field_name("body")
        assert body is not None
        inner = _statements(body)
        var_from_while = None
        if loop.type == "for_statement":
            init, cond = loop.child_by_field_name("initializer"), \
                loop.child_by_field_name("condition")
            inc = loop.child_by_field_name("update")
            if init is None or cond is None or inc is None or init.type != "declaration":
                raise Refused("the row loop is not `for (int r = start; r < end; r += step)`",
                              loop)
            var, _d, start = declared_name(init)
            step = _increment(inc, var)
            rest = inner
        elif loop.type == "while_statement":
            cond = _condition(loop)
            last = _expression(inner[-1]) if inner else None
            var_from_while = _target(last) if last is not None else None
            if var_from_while is None:
                raise Refused("the while loop does not end by stepping its row", loop)
            var = var_from_while
            step = _increment(last, var)  # type: ignore[arg-type]
            decl = self.plan.facts.defs.get(var)
            start = decl.value if decl is not None else None
            rest = inner[:-1]
        else:
            raise Refused("the row loop is a do loop", loop)
        if start is None or step is None:
            raise Refused("the row loop is not `for (int r = start; r < end; r += step)`", loop)
        assigned = [n for n in walk(self.plan.body) if n.type in ("assignment_expression",
                                                                   "update_expression")
                    and text(n.child_by_field_name("left") or
                             n.child_by_field_name("argument")) == var]
        if len(assigned) != 1:
            raise Refused(f"the row `{var}` changes other than by the loop's step", loop)
        locals_: list[tuple[Node, Node]] = []
        for s in rest:
            if s.type == "declaration":
                name, _dn, v = declared_name(s)
                if v is None or len(s.children_by_field_name("declarator")) != 1:
                    raise Refused(f"`{text(s)}` in the row loop is not one initialised local",
                                  s)
                if not (self.plan.facts.defs.get(name) and self.plan.facts.defs[name]
                        .is_pointer):
                    locals_.append((s, v))
            elif (e := _expression(s)) is None or e.start_byte not in updates:
                raise Refused(f"`{text(s)[:60]}` in the row loop is neither a local nor the "
                              "sum", s)
        return var, start, cond, step, locals_

    def reads(self, ix: _Index, values: list[Node], var: str, col: Poly,
              body_locals: list[tuple[Node, Node]]) -> list[ColumnRead]:
        local_names = {declared_name(d)[0] for d, _v in body_locals}
        out: list[ColumnRead] = []
        scan = [*(v for _d, v in body_locals), *values]
        covered: list[Node] = []
        for root in scan:
            for n in walk(root):
                if any(c.start_byte <= n.start_byte and n.end_byte <= c.end_byte
                       for c in covered):
                    continue
                if n.type in ("assignment_expression", "update_expression"):
                    raise Refused(f"`{text(root)[:60]}` has side effects", n)
                if n.type == "call_expression" and \
                        text(n.child_by_field_name("function")) not in _PURE_CALLS:
                    raise Refused(f"`{text(n)[:60]}` calls a function the analysis does not "
                                  "know to be pure", n)
                if n.type in ("subscript_expression", "pointer_expression") and \
                        text(n.child_by_field_name("operator")) != "&":
                    el = ix.element(n)
                    if el is None:
                        continue
                    ptr, index = el
                    ld = derivative(index, var)
                    rest = add(index, scale(_mul_atom(ld, var), -1))
                    if rest != col or not ld or not _free(ld, {var}):
                        raise Refused(f"`{text(n)}` is not read at the thread's column of row "
                                      f"`{var}` (`{var} * LD + col`)", n)
                    out.append(ColumnRead(n, ptr, _poly_c(ld), _c_type(self.plan, ptr)))
                    covered.append(n)
                if n.type == "identifier" and n.parent is not None and \
                        n.parent.type != "call_expression" and \
                        not any(c.start_byte <= n.start_byte < c.end_byte for c in covered):
                    name = text(n)
                    if name in local_names or self.plan.pointer(name) or \
                            int_value(n) is not None:
                        continue
                    try:
                        self.plan.kernel.param(name)
                        continue
                    except KeyError:
                        pass
                    raise Refused(f"the summed value reads `{name}`, which is neither a "
                                  "kernel argument, a macro nor the matrix at (row, column)", n)
        if not out:
            raise Refused(f"the sum `{text(values[0])[:60]}` reads no kernel array at (row, "
                          "column)", values[0])
        return out

    def rows(self, ix: _Index, loop: Node, var: str, start: Node, cond: Node,
             step: Node | str) -> tuple[str, int, int, str]:
        plan = self.plan
        sp = ix.of(start)
        stp = {(): 1} if isinstance(step, str) else ix.of(step)
        by = self.by
        thread = {("threadIdx.y",): 1} if by > 1 else {}
        per_block = sp.get(("blockIdx.y",), 0)
        if add(sp, scale({("blockIdx.y",): per_block}, -1)) != thread or per_block <= 0:
            raise Refused(f"the row walk starts at `{text(start)}`, not blockIdx.y * R + "
                          "threadIdx.y", loop)
        bounds = [b for b in chain(cond, "&&")]
        ends: list[Node] = []
        for b in bounds:
            parts = binary(b)
            if parts is None or parts[1] != "<" or text(strip(parts[0])) != var:
                raise Refused(f"the row loop's condition `{text(cond)}` is not `{var} < end`",
                              loop)
            e = strip(parts[2])
            for _ in range(6):  # a local end (`r1 = min(r0 + RPB, rows)`): its value
                if e.type != "identifier" or text(e) not in ix.values:
                    break
                e = strip(ix.values[text(e)])
            call = e.child_by_field_name("function") if e.type == "call_expression" else None
            args = e.child_by_field_name("arguments")
            if call is not None and text(call) == "min" and args is not None and \
                    len(args.named_children) == 2:
                ends += [strip(a) for a in args.named_children]
            else:
                ends.append(e)
        if stp == {("gridDim.y",): by} and per_block == by:
            if len(ends) != 1 or not _free(ix.of(ends[0]), {var}):
                raise Refused(f"the grid-stride row walk's end `{text(cond)}` is not one "
                              "bound fixed for the kernel", loop)
            chunks = literal(plan.grid[1])
            if chunks is None:
                raise Refused(f"the grid's y extent `{plan.grid[1]}` (the partial rows "
                              "written) is not a literal", loop)
            return "stride", chunks, 0, self.c_text(ends[0])
        if stp == {(): by}:
            slice_end = {("blockIdx.y",): per_block, (): per_block}
            tops = [e for e in ends if ix.of(e) == slice_end]
            others = [e for e in ends if e not in tops]
            if len(tops) != 1 or len(others) != 1 or not _free(ix.of(others[0]), {var}):
                raise Refused(f"the row slice's end `{text(cond)}` is not min(first + "
                              f"{per_block}, rows)", loop)
            rows_rule = _ceil_div_by(plan.grid[1], per_block)
            end = strip(others[0])
            launched = plan.scalars.get(text(end)) if end.type == "identifier" else None
            if rows_rule is None or launched is None or \
                    rows_rule.replace(" ", "") != launched.replace(" ", ""):
                raise Refused(f"the grid's y extent `{plan.grid[1]}` is not ceil_div(`"
                              f"{text(end)}`, {per_block}) (one block row per slice of the "
                              "rows the walk stops at)", loop)
            return "slice", 0, per_block, self.c_text(others[0])
        raise Refused(f"the row loop steps by `{step if isinstance(step, str) else text(step)}`: neither gridDim.y times the "
                      f"block's rows ({by}) nor the block's rows", loop)

    def c_text(self, node: Node) -> str:
        """C text of an expression over kernel scalars and macros (locals expanded)."""
        ix = _Index(self.plan, set())

        def sub(n: Node) -> str | None:
            if n.type == "identifier" and text(n) in ix.values:
                return "(" + render(self.plan.source.data, ix.values[text(n)], sub) + ")"
            return None

        for n in walk(node):
            if n.type == "identifier" and text(n) not in ix.values and \
                    int_value(n) is None and not _is_param(self.plan, text(n)):
                raise Refused(f"`{text(node)}` reads `{text(n)}`, not a kernel argument or "
                              "a macro", node)
            if builtin(n, "threadIdx") or builtin(n, "blockIdx"):
                raise Refused(f"`{text(node)}` depends on the thread", node)
        return render(self.plan.source.data, node, sub)

    # -- the guard, the fold and the store -------------------------------------------------

    def guarded(self, ix: _Index, node: Node, col: Poly, row0: bool = False) -> bool:
        """``node`` runs only where the column is inside the matrix: an ``if`` around it
        whose conditions are all that check (and, with ``row0``, ``threadIdx.y == 0``), or
        an early return of the columns outside. Any other condition around it is refused:
        the regenerated kernel would run what the kernel as written skips."""
        found = False
        p = node.parent
        while p is not None and p != self.plan.body:
            if p.type == "if_statement" and inside_consequence(node, p):
                for c in chain(_condition(p), "&&"):
                    if self.column_check(ix, c, col, "<"):
                        found = True
                    elif not (row0 and _is_row0(self.plan, c)):
                        raise Refused(f"`{text(c)}` also decides whether the "
                                      f"{'store' if row0 else 'walk'} runs (only the column "
                                      "check and, for the store, thread row 0 are modelled)",
                                      p)
            p = p.parent
        if found:
            return True
        if "__syncthreads" in calls(self.plan.body):
            return False  # an early return would skip the block's barriers
        for s in self.stmts:
            if s.start_byte >= node.start_byte:
                break
            if s.type == "if_statement" and _only_return(s) and \
                    self.column_check(ix, _condition(s), col, ">="):
                self.early.add(s.start_byte)
                return True
        return False

    def column_check(self, ix: _Index, cond: Node, col: Poly, op: str) -> bool:
        parts = binary(cond)
        if parts is None or parts[1] != op or ix.of(parts[0]) != col:
            return False
        width = self.c_text(parts[2])
        if self.width is not None and self.width.replace(" ", "") != width.replace(" ", ""):
            raise Refused(f"the column is checked against two widths ({self.width}, {width})",
                          cond)
        self.width = width
        return True

    def stores(self, ix: _Index, accs: list[str], col: Poly) -> list[tuple[str, str, str,
                                                                           Node]]:
        """The partial row each sum of ``accs`` is stored to (out, LD, type, the store), in
        their order: one store to global memory a sum; with several sums, each stores its
        accumulator itself (``out[blockIdx.y * LD + col] = acc``)."""
        stores = [n for n in walk(self.plan.body) if n.type == "assignment_expression"
                  and ix.element(n.child_by_field_name("left")) is not None]  # type: ignore[arg-type]
        if len(stores) != len(accs):
            def partial_row(n: Node) -> bool:
                el = ix.element(n.child_by_field_name("left"))  # type: ignore[arg-type]
                return el is not None and derivative(el[1], "blockIdx.y") != {}
            odd = [n for n in stores if not partial_row(n)] or stores
            raise Refused(f"expected one store to global memory (the partial row) a sum, "
                          f"found {len(stores)} for {len(accs)}", odd[0] if stores else None)
        if len(accs) == 1:
            return [self.store(ix, stores[0], col)]
        by_acc = {text(strip(n.child_by_field_name("right"))): n  # type: ignore[arg-type]
                  for n in stores}
        for acc in accs:
            if acc not in by_acc:
                raise Refused(f"no store of `{acc}` itself to a partial row (each of several "
                              "sums stored directly is modelled)", stores[0])
        return [self.store(ix, by_acc[acc], col) for acc in accs]

    def store(self, ix: _Index, st: Node, col: Poly) -> tuple[str, str, str, Node]:
        if text(st.child_by_field_name("operator")) != "=":
            raise Refused(f"`{text(st)}` is not a plain store", st)
        el = ix.element(st.child_by_field_name("left"))  # type: ignore[arg-type]
        assert el is not None
        out, index = el
        ld = derivative(index, "blockIdx.y")
        if add(index, scale(_mul_atom(ld, "blockIdx.y"), -1)) != col or not ld or \
                not _free(ld, set()):
            raise Refused(f"`{text(st.child_by_field_name('left'))}` is not the partial row's "
                          "element (blockIdx.y * LD + col)", st)
        param = self.plan.kernel.param(out)
        if param.is_const:
            raise Refused(f"`{out}` is const", st)
        return out, _poly_c(ld), param.base_type, st

    def others(self, loop: Node, finals: list[Node], fold_parts: list[Node]) -> None:
        """Every statement is a part the analysis knows (the walk, the fold, the stores, the
        checks around them) or a declaration free of side effects."""
        known = {loop.start_byte, *(n.start_byte for n in fold_parts)}
        for final in finals:
            final_stmt = final.parent if final.parent is not None and \
                final.parent.type == "expression_statement" else final
            known |= {final.start_byte, final_stmt.start_byte}
        self._only_known(self.plan.body, known)

    def _only_known(self, node: Node, known: set[int]) -> None:
        for s in _statements(node) if node.type == "compound_statement" else [node]:
            if s.start_byte in known and s.type != "compound_statement" and \
                    s.type != "if_statement":
                continue
            if s.type == "declaration":
                if any(n.type in ("assignment_expression", "update_expression") or (
                        n.type == "call_expression" and
                        text(n.child_by_field_name("function")) not in _PURE_CALLS)
                       for n in walk(s)):
                    raise Refused(f"`{text(s)[:60]}` has side effects", s)
                continue
            if s.type == "if_statement" and _only_return(s):
                if s.start_byte not in self.early:
                    raise Refused(f"`{text(s)[:60]}` returns early other than for a column "
                                  "outside the matrix", s)
                continue
            if s.type == "if_statement" and s.child_by_field_name("alternative") is None:
                cond = _condition(s)
                if any(n.type in ("assignment_expression", "update_expression",
                                  "call_expression") for n in walk(cond)):
                    raise Refused(f"`{text(cond)[:60]}` has side effects", s)
                self._only_known(s.child_by_field_name("consequence"), known)  # type: ignore[arg-type]
                continue
            if s.type == "compound_statement":
                self._only_known(s, known)
                continue
            raise Refused(f"`{text(s)[:60]}` is not part of the column sum", s)


def recognise(plan: Plan) -> ColumnReduction:
    """The column reduction ``plan``'s kernel is, or Refused naming the part that differs."""
    return _Matcher(plan).run()


_INTEGER = {"int", "unsigned", "unsigned int", "long long", "unsigned long long", "short",
            "unsigned short", "char", "signed char", "unsigned char", "int32_t", "uint32_t",
            "int64_t", "uint64_t", "int8_t", "uint8_t", "int16_t", "uint16_t"}


def _integer_sum(acc_type: str, value: Node, reads: list[ColumnRead],
                 locals_: list[Node]) -> None:
    """An integer accumulator must add integer values: ``acc += 0.5f * m[..]`` truncates at
    every step, so regrouping the rows (the block rows, the block's rows, rows in flight)
    would change the sum, not only its rounding."""
    for r in reads:
        if r.c_type not in _INTEGER:
            raise Refused(f"the {acc_type} accumulator adds `{text(r.node)}`, a {r.c_type}: "
                          "truncated at every step, the sum depends on how the rows are "
                          "grouped", r.node)
    for root in [value, *locals_]:
        for n in walk(root):
            raw = text(n).lower()
            if n.type == "number_literal" and not raw.startswith("0x") and (
                    "." in raw or "e" in raw or raw.endswith("f")):
                raise Refused(f"the {acc_type} accumulator adds a floating value (`{text(n)}`)",
                              n)
            if n.type == "call_expression" and \
                    text(n.child_by_field_name("function")) not in ("min", "max", "abs"):
                raise Refused(f"the {acc_type} accumulator adds `{text(n)}`, which may not "
                              "be an integer", n)
            cast = text(n.child_by_field_name("type")) if n.type == "cast_expression" else ""
            if "float" in cast or "double" in cast or "half" in cast:
                raise Refused(f"the {acc_type} accumulator adds `{text(n)}`, a floating "
                              "value", n)


__all__ = ["ColumnRead", "ColumnReduction", "PartialSum", "recognise"]
