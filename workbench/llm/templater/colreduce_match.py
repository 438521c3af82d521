"""Recognising a column reduction to partial rows on the parse, or refusing it with the line.

The family (:mod:`workbench.llm.templater.colreduce` says what is lifted): each thread owns
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
  kernel scalars, macros and literals;
* the column checked against the width (``if (col < W) {...}`` around the walk, or
  ``if (col >= W) return;`` before it where the kernel has no barrier);
* the block's ``BY`` sums of a column folded through one ``__shared__`` array at
  ``[threadIdx.y][threadIdx.x]`` (or the flat ``[threadIdx.y * BX + threadIdx.x]``) by a
  halving tree over ``threadIdx.y`` or by thread row 0 adding the ``BY`` slots in order;
  with ``BY = 1`` the accumulator is stored directly;
* one store to global memory: ``out[blockIdx.y * LD + col]``, by thread row 0, under the
  column check.

Every other top-level statement must be a declaration free of side effects: a statement
the analysis does not know refuses the lift, naming its line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.llm.templater.analysis import (
    binary,
    builtin,
    calls,
    declared_name,
    int_value,
    line,
    strip,
    text,
    walk,
)
from workbench.llm.templater.plan import Plan
from workbench.llm.templater.regtile import Refused, render, single_assignment_values
from workbench.llm.templater.rules import literal
from workbench.llm.templater.stencil import Poly, add, derivative, poly_of, scale

_ZERO = {"0", "0.0", "0.f", "0.0f", "0.0F", "0u", "0.", "0L", "0LL", "0ll", "0l"}
_PURE_CALLS = {"min", "max", "fminf", "fmaxf", "fmin", "fmax", "fabsf", "fabs", "abs",
               "sqrtf", "sqrt", "expf", "exp", "logf", "log", "__ldg"}


@dataclass(frozen=True)
class ColumnRead:
    """One read of a kernel pointer at the thread's (row, column): ``ptr[r * ld + col]``."""

    node: Node
    ptr: str
    ld: str  # C text of the row stride in elements
    c_type: str  # the pointee's C type


@dataclass(frozen=True)
class ColumnReduction:
    """A recognised column reduction: what the regenerated kernel needs, as C text."""

    acc_type: str
    value: Node  # E of ``acc += E``
    reads: tuple[ColumnRead, ...]
    locals_: tuple[Node, ...]  # the row loop's value locals (declarations), in order
    width: str  # C text of the column bound W (``col < W``)
    rows: str  # C text of the row bound N
    out: str
    out_ld: str  # C text of the partial row stride
    out_type: str
    block_x: int
    block_y: int
    mode: str  # "stride" | "slice"
    chunks: int  # stride: the grid's y extent as written (partial rows)
    rows_per_chunk: int  # slice: rows per block as written
    loop: Node
    tree: str  # "none" | "halving" | "serial"
    store: Node  # the partial row's store


def _c_type(plan: Plan, ptr: str) -> str:
    return plan.kernel.param(ptr).base_type


def _zero(node: Node | None) -> bool:
    return node is not None and text(strip(node)).strip() in _ZERO


class _Index:
    """Index polynomials of one kernel, with the block sizes as literals."""

    def __init__(self, plan: Plan, keep: set[str]) -> None:
        self.plan = plan
        self.values = single_assignment_values(plan.body, keep)
        self.sizes: dict[str, int] = {
            "x": literal(plan.block[0]) or 0,
            "y": (literal(plan.block[1]) or 0) if len(plan.block) > 1 else 1}

    def leaf(self, node: Node) -> Poly | None:
        dim = builtin(node, "blockDim")
        if dim in ("x", "y") and self.sizes[dim]:
            return {(): self.sizes[dim]}
        if dim == "z":
            return {(): 1}
        return None

    def of(self, node: Node) -> Poly:
        return poly_of(node, self.values, leaf=self.leaf, divide=True)

    def address(self, node: Node) -> tuple[str, Poly] | None:
        """(kernel pointer, element index) of a pointer expression, or None."""
        node = strip(node)
        if node.type == "identifier":
            name = text(node)
            if self.plan.pointer(name):
                return name, {}
            value = self.values.get(name)
            return None if value is None else self.address(value)
        parts = binary(node)
        if parts is not None and parts[1] in ("+", "-"):
            left = self.address(parts[0])
            if left is not None:
                off = self.of(parts[2])
                return left[0], add(left[1], off if parts[1] == "+" else scale(off, -1))
            right = self.address(parts[2])
            if right is not None and parts[1] == "+":
                return right[0], add(right[1], self.of(parts[0]))
        if node.type == "pointer_expression" and text(node.child_by_field_name("operator")) \
                == "&":
            arg = node.child_by_field_name("argument")
            return None if arg is None else self.element(arg)
        return None

    def element(self, node: Node) -> tuple[str, Poly] | None:
        """(kernel pointer, element index) of ``p[i]`` / ``*(p + i)``, or None."""
        node = strip(node)
        if node.type == "subscript_expression":
            base = self.address(node.child_by_field_name("argument"))  # type: ignore[arg-type]
            idx = node.child_by_field_name("indices")
            if base is None or idx is None or len(idx.named_children) != 1:
                return None
            return base[0], add(base[1], self.of(idx.named_children[0]))
        if node.type == "pointer_expression" and text(node.child_by_field_name("operator")) \
                == "*":
            arg = node.child_by_field_name("argument")
            return None if arg is None else self.address(arg)
        return None


def _column_poly(ix: _Index) -> Poly:
    return {("blockIdx.x",): ix.sizes["x"], ("threadIdx.x",): 1}


def _free(p: Poly, banned: set[str]) -> bool:
    return not any(a in banned or a.startswith(("threadIdx", "blockIdx", "gridDim", "#"))
                   for m in p for a in m)


def _poly_c(p: Poly) -> str:
    """C text of a polynomial over kernel scalars (an ``int`` expression)."""
    out = []
    for m, c in sorted(p.items()):
        parts = ([] if c == 1 and m else [str(c)]) + [f"({a})" if not a.isidentifier() else a
                                                      for a in m]
        out.append(" * ".join(parts))
    return "(" + " + ".join(out) + ")" if out else "0"


def _statements(node: Node) -> list[Node]:
    """The statements of a block (comments and ``#pragma`` lines left out: the body is
    regenerated, so an author's unroll hint changes nothing it computes)."""
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment" and not (
            c.type == "preproc_call" and text(c).lstrip("# \t").startswith("pragma"))]
    return [node]


def _expression(stmt: Node) -> Node | None:
    inner = _statements(stmt)
    if len(inner) != 1 or inner[0].type != "expression_statement" or \
            not inner[0].named_children:
        return None
    return inner[0].named_children[0]


def _is_sync(stmt: Node) -> bool:
    e = _expression(stmt)
    return e is not None and e.type == "call_expression" and \
        text(e.child_by_field_name("function")) == "__syncthreads"


def _conjuncts(cond: Node) -> list[Node]:
    parts = binary(cond)
    if parts is not None and parts[1] == "&&":
        return _conjuncts(parts[0]) + _conjuncts(parts[2])
    return [strip(cond)]


def _condition(stmt: Node) -> Node:
    cond = stmt.child_by_field_name("condition")
    assert cond is not None
    if cond.type in ("condition_clause", "parenthesized_expression") and cond.named_children:
        return cond.named_children[0]
    return cond


class _Matcher:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.stmts = _statements(plan.body)
        self.bx = literal(plan.block[0]) or 0
        self.by = (literal(plan.block[1]) or 0) if len(plan.block) > 1 else 1
        self.width: str | None = None
        self.early: set[int] = set()  # the column checks that return early

    # -- the accumulation and its loop ----------------------------------------------------

    def accumulation(self) -> tuple[Node, str, Node]:
        """(the ``acc += E`` expression, acc, E): the only update of a zero-started local
        scalar inside a loop."""
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
        if len(loops) != 1:
            raise Refused(f"expected one sum into a local accumulator inside a loop, found "
                          f"{len(loops)}", loops[1][0] if len(loops) > 1 else None)
        return loops[0]

    def run(self) -> ColumnReduction:
        plan = self.plan
        if not self.bx or not self.by:
            raise Refused("the block size is not a literal")
        update, acc, value = self.accumulation()
        loop = _enclosing_loop(update, plan.body)
        assert loop is not None
        d = plan.facts.defs[acc]
        acc_type = " ".join(text(d.decl.child_by_field_name("type")).split())
        if acc_type not in ("float", "double", "int", "unsigned", "unsigned int", "long long",
                            "unsigned long long"):
            raise Refused(f"the accumulator `{acc}` is a {acc_type}", d.decl)
        if not _zero(d.value) or sum(1 for n in walk(plan.body)
                                      if n.type in ("assignment_expression",
                                                    "update_expression")
                                      and text(n.child_by_field_name("left") or
                                               n.child_by_field_name("argument")) == acc) != 1:
            raise Refused(f"`{acc}` must start at zero and change only by the sum", d.decl)
        var, start, bound_cond, step, body_locals = self.loop_parts(loop, update)
        ix = _Index(plan, {var})
        col = _column_poly(ix)
        reads = self.reads(ix, value, var, col, body_locals)
        mode, chunks, rpb, rows = self.rows(ix, loop, var, start, bound_cond, step)
        out, out_ld, out_type, final = self.store(ix, acc, col)
        if not self.guarded(ix, loop, col) or not self.guarded(ix, final, col):
            raise Refused("the column is not checked against the matrix width (`if (col < "
                          "W)` around the walk and the store, or `if (col >= W) return;`)",
                          loop)
        tree, fold_parts = self.fold(ix, acc, final)
        self.others(loop, final, fold_parts)
        assert self.width is not None
        return ColumnReduction(acc_type, value, tuple(reads), tuple(d for d, _v in body_locals),
                               self.width, rows, out, out_ld, out_type, self.bx, self.by,
                               mode, chunks, rpb, loop, tree, final)

    def loop_parts(self, loop: Node, update: Node) -> tuple[str, Node, Node, Node | str,
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
            elif _expression(s) != update:
                raise Refused(f"`{text(s)[:60]}` in the row loop is neither a local nor the "
                              "sum", s)
        return var, start, cond, step, locals_

    def reads(self, ix: _Index, value: Node, var: str, col: Poly,
              body_locals: list[tuple[Node, Node]]) -> list[ColumnRead]:
        local_names = {declared_name(d)[0] for d, _v in body_locals}
        out: list[ColumnRead] = []
        scan = [*(v for _d, v in body_locals), value]
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
            raise Refused(f"the sum `{text(value)[:60]}` reads no kernel array at (row, "
                          "column)", value)
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
        bounds = [b for b in _conjuncts(cond)]
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
            if not _ceil_div_by(plan.grid[1], per_block):
                raise Refused(f"the grid's y extent `{plan.grid[1]}` is not ceil_div(rows, "
                              f"{per_block}) (one block row per slice)", loop)
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

    def guarded(self, ix: _Index, node: Node, col: Poly) -> bool:
        """``node`` runs only where the column is inside the matrix."""
        p = node.parent
        while p is not None and p != self.plan.body:
            if p.type == "if_statement" and inside_consequence(node, p):
                for c in _conjuncts(_condition(p)):
                    if self.column_check(ix, c, col, "<"):
                        return True
            p = p.parent
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

    def store(self, ix: _Index, acc: str, col: Poly) -> tuple[str, str, str, Node]:
        stores = [n for n in walk(self.plan.body) if n.type == "assignment_expression"
                  and ix.element(n.child_by_field_name("left")) is not None]  # type: ignore[arg-type]
        if len(stores) != 1:
            def partial_row(n: Node) -> bool:
                el = ix.element(n.child_by_field_name("left"))  # type: ignore[arg-type]
                return el is not None and derivative(el[1], "blockIdx.y") != {}
            odd = [n for n in stores if not partial_row(n)] or stores
            raise Refused(f"expected one store to global memory (the partial row), found "
                          f"{len(stores)}", odd[0] if stores else None)
        st = stores[0]
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

    def fold(self, ix: _Index, acc: str, final: Node) -> tuple[str, list[Node]]:
        """How the block's row sums of a column become one (``none``: one row per block,
        ``halving`` or ``serial``) and the top-level statements that do it."""
        value = strip(final.child_by_field_name("right"))  # type: ignore[arg-type]
        if self.by == 1 and text(value) == acc:
            if "__syncthreads" in calls(self.plan.body):
                raise Refused("a 1-row block that also synchronises: the analysis does not "
                              "know what the barrier orders", final)
            return "none", []
        shared = [d for d in self.plan.facts.defs.values() if d.is_shared]
        if len(shared) != 1:
            raise Refused("the block's row sums are not folded through one __shared__ array",
                          final)
        sh = shared[0]
        ext = _extents(ix, sh.decl)
        if ext is None:
            raise Refused(f"`{text(sh.decl)}`'s extents are not constants", sh.decl)
        flat: Poly = {("threadIdx.y",): self.bx, ("threadIdx.x",): 1}
        t = " ".join(text(sh.decl.child_by_field_name("type")).split()).replace(
            "__shared__", "").strip()
        acc_type = " ".join(text(self.plan.facts.defs[acc].decl.child_by_field_name("type"))
                            .split())
        if t != acc_type:
            raise Refused(f"the shared array `{sh.name}` holds {t}, the accumulator is "
                          f"{acc_type}", sh.decl)
        uses = [n for n in walk(self.plan.body) if n.type == "subscript_expression"
                and _shared_base(n) == sh.name and (n.parent is None or
                                                    n.parent.type != "subscript_expression")]
        polys = {n.start_byte: _shared_index(ix, n, ext) for n in uses}
        writes = [n for n in uses if n.parent is not None and
                  n.parent.type == "assignment_expression" and
                  n.parent.child_by_field_name("left") == n]
        first = next((w for w in writes if polys[w.start_byte] == flat and _norm(
            w.parent.child_by_field_name("right")) == acc), None)  # type: ignore[union-attr]
        if first is None:
            raise Refused(f"the accumulator is not stored at `{sh.name}[threadIdx.y]"
                          "[threadIdx.x]`", sh.decl)
        top = _top(first, self.plan.body)
        k = self.stmts.index(top)
        if k + 1 >= len(self.stmts) or not _is_sync(self.stmts[k + 1]):
            raise Refused("no barrier after the store into shared memory", top)
        after = self.stmts[k + 2:]
        final_top = _top(final, self.plan.body)
        if len(after) == 2 and after[0].type == "for_statement" and after[1] == final_top:
            self.halving(ix, after[0], sh.name, ext, flat)
            if _shared_base(value) != sh.name or \
                    _shared_index(ix, value, ext) != {("threadIdx.x",): 1}:
                raise Refused(f"the partial stored is `{text(value)}`, not row 0 of "
                              f"`{sh.name}` at the thread's column", final)
            self.row_zero(ix, final)
            return "halving", [top, self.stmts[k + 1], after[0]]
        if len(after) == 1 and after[0] == final_top:
            parts = self.serial(ix, final, sh.name, ext, value)
            self.row_zero(ix, final)
            return "serial", [top, self.stmts[k + 1], *parts]
        raise Refused("after the barrier expected the halving tree over threadIdx.y and the "
                      "store, or thread row 0 adding the rows and storing",
                      after[0] if after else top)

    def halving(self, ix: _Index, tree: Node, sh: str, ext: list[int], flat: Poly) -> None:
        init, cond = tree.child_by_field_name("initializer"), tree.child_by_field_name(
            "condition")
        inc = tree.child_by_field_name("update")
        bad = Refused(f"the tree `{text(tree).splitlines()[0][:70]}` does not halve from "
                      f"{self.by // 2} to 1 over threadIdx.y", tree)
        if init is None or cond is None or inc is None or init.type != "declaration":
            raise bad
        h, _d, start = declared_name(init)
        if start is None or ix.of(start) != {(): self.by // 2}:
            raise bad
        c = binary(cond)
        if c is None or text(strip(c[0])) != h or not (
                (c[1] == ">" and int_value(c[2]) == 0) or (c[1] == ">=" and
                                                          int_value(c[2]) == 1)):
            raise bad
        op = text(inc.child_by_field_name("operator"))
        if text(inc.child_by_field_name("left")) != h or not (
                (op == ">>=" and int_value(inc.child_by_field_name("right")) == 1) or
                (op == "/=" and int_value(inc.child_by_field_name("right")) == 2)):
            raise bad
        body = _statements(tree.child_by_field_name("body"))  # type: ignore[arg-type]
        if len(body) != 2 or not _is_sync(body[1]) or body[0].type != "if_statement" or \
                body[0].child_by_field_name("alternative") is not None:
            raise Refused("the tree's body is not `if (threadIdx.y < h) ...; "
                          "__syncthreads();`", tree)
        g = binary(_condition(body[0]))
        if g is None or g[1] != "<" or not self.plan.facts.is_thread(g[0], "y") or \
                text(strip(g[2])) != h:
            raise Refused("the tree's guard is not `threadIdx.y < h`", body[0])
        step = _expression(body[0].child_by_field_name("consequence"))  # type: ignore[arg-type]
        if step is None or step.type != "assignment_expression":
            raise Refused("the tree's step is not one addition", body[0])
        left = step.child_by_field_name("left")
        right = strip(step.child_by_field_name("right"))  # type: ignore[arg-type]
        ops = text(step.child_by_field_name("operator"))
        other: Node | None = None
        if ops == "+=":
            other = right
        elif ops == "=" and binary(right) is not None and binary(right)[1] == "+":  # type: ignore[index]
            a, _o, b = binary(right)  # type: ignore[misc]
            other = b if _norm(a) == _norm(left) else a if _norm(b) == _norm(left) else None
        hp: Poly = {(h,): self.bx}
        if left is None or other is None or _shared_base(left) != sh or \
                _shared_base(other) != sh or _shared_index(ix, left, ext) != flat or \
                _shared_index(ix, other, ext) != add(flat, hp):
            raise Refused(f"the tree's step `{text(step)}` is not `{sh}[ty][tx] += "
                          f"{sh}[ty + h][tx]`", step)

    def serial(self, ix: _Index, final: Node, sh: str, ext: list[int], value: Node
               ) -> list[Node]:
        """``if (ty == 0 ...) { T t = 0; for (k = 0; k < BY; ++k) t += sh[k][tx]; ...
        out = t; }``: the declaration and the loop."""
        block = final.parent
        while block is not None and block.type != "compound_statement":
            block = block.parent
        stmts = _statements(block) if block is not None and block != self.plan.body else []
        bad = Refused("thread row 0 does not add the block's rows in one loop and store the "
                      "total", final)
        if len(stmts) != 3 or block is None or stmts[2] != _top(final, block) or \
                stmts[0].type != "declaration" or stmts[1].type != "for_statement":
            raise bad
        name, _d, init = declared_name(stmts[0])
        if not _zero(init) or text(value) != name:
            raise bad
        loop = stmts[1]
        li, lc = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
        lu = loop.child_by_field_name("update")
        if li is None or lc is None or lu is None or li.type != "declaration":
            raise bad
        k, _dk, k0 = declared_name(li)
        c = binary(lc)
        if k0 is None or int_value(k0) != 0 or c is None or c[1] != "<" or \
                text(strip(c[0])) != k or ix.of(c[2]) != {(): self.by} or \
                text(lu).replace(" ", "") not in (f"++{k}", f"{k}++", f"{k}+=1"):
            raise bad
        add_e = _expression(loop.child_by_field_name("body"))  # type: ignore[arg-type]
        if add_e is None or text(add_e.child_by_field_name("operator")) != "+=" or \
                text(add_e.child_by_field_name("left")) != name:
            raise bad
        r = strip(add_e.child_by_field_name("right"))  # type: ignore[arg-type]
        if _shared_base(r) != sh or _shared_index(ix, r, ext) != {(k,): self.bx,
                                                                  ("threadIdx.x",): 1}:
            raise bad
        return stmts[:2]

    def row_zero(self, ix: _Index, final: Node) -> None:
        p = final.parent
        while p is not None and p != self.plan.body:
            if p.type == "if_statement" and inside_consequence(final, p):
                for c in _conjuncts(_condition(p)):
                    parts = binary(c)
                    if parts is not None and parts[1] == "==" and \
                            self.plan.facts.is_thread(parts[0], "y") and \
                            int_value(parts[2]) == 0:
                        return
            p = p.parent
        raise Refused("the partial row is not stored by thread row 0 alone "
                      "(`if (threadIdx.y == 0 ...)`)", final)

    def others(self, loop: Node, final: Node, fold_parts: list[Node]) -> None:
        """Every statement is a part the analysis knows (the walk, the fold, the store, the
        checks around them) or a declaration free of side effects."""
        known = {loop.start_byte, final.start_byte, *(n.start_byte for n in fold_parts)}
        final_stmt = final.parent if final.parent is not None and \
            final.parent.type == "expression_statement" else final
        known.add(final_stmt.start_byte)
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


def _mul_atom(p: Poly, atom: str) -> Poly:
    return {tuple(sorted((*m, atom))): c for m, c in p.items()}


def _increment(node: Node, var: str) -> Node | str | None:
    """The step of ``var += S`` (the node S), ``"1"`` for ``++var`` / ``var++``, else None."""
    if node.type == "assignment_expression" and text(node.child_by_field_name("left")) == var \
            and text(node.child_by_field_name("operator")) == "+=":
        return node.child_by_field_name("right")
    if node.type == "update_expression" and text(node.child_by_field_name("argument")) == var \
            and "++" in text(node):
        return "1"
    return None


def _target(node: Node) -> str | None:
    left = node.child_by_field_name("left") or node.child_by_field_name("argument")
    return text(left) if left is not None and left.type == "identifier" else None


def _enclosing_loop(node: Node, body: Node) -> Node | None:
    p = node.parent
    while p is not None and p != body:
        if p.type in ("for_statement", "while_statement", "do_statement"):
            return p
        p = p.parent
    return None


def inside_consequence(node: Node, stmt: Node) -> bool:
    cons = stmt.child_by_field_name("consequence")
    return cons is not None and cons.start_byte <= node.start_byte and \
        node.end_byte <= cons.end_byte


def _only_return(stmt: Node) -> bool:
    cons = stmt.child_by_field_name("consequence")
    inner = _statements(cons) if cons is not None else []
    return len(inner) == 1 and inner[0].type == "return_statement" and \
        stmt.child_by_field_name("alternative") is None


def _top(node: Node, body: Node) -> Node:
    while node.parent is not None and node.parent != body:
        node = node.parent
    return node


def _is_param(plan: Plan, name: str) -> bool:
    try:
        plan.kernel.param(name)
    except KeyError:
        return False
    return True


def _extents(ix: _Index, decl: Node) -> list[int] | None:
    d = decl.child_by_field_name("declarator")
    out: list[int] = []
    while d is not None and d.type == "array_declarator":
        size_node = d.child_by_field_name("size")
        size = None if size_node is None else ix.of(size_node)
        if size is None or set(size) - {()} or size.get((), 0) <= 0:
            return None
        out.insert(0, size[()])
        d = d.child_by_field_name("declarator")
    return out or None


def _shared_base(node: Node) -> str | None:
    node = strip(node)
    while node.type == "subscript_expression":
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    return text(node) if node.type == "identifier" else None


def _shared_index(ix: _Index, node: Node, ext: list[int]) -> Poly | None:
    """The flat element index of ``sh[a][b]`` / ``sh[i]`` (row-major over ``ext``)."""
    idx: list[Node] = []
    node = strip(node)
    while node.type == "subscript_expression":
        i = node.child_by_field_name("indices")
        if i is None or len(i.named_children) != 1:
            return None
        idx.insert(0, i.named_children[0])
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    if len(idx) != len(ext):
        return None
    out: Poly = {}
    for k, i in enumerate(idx):
        stride = 1
        for e in ext[k + 1:]:
            stride *= e
        out = add(out, scale(ix.of(i), stride))
    return out


def _norm(node: Node | None) -> str:
    return "" if node is None else "".join(text(strip(node)).split())


def _ceil_div_by(rule: str, k: int) -> bool:
    try:
        tree = ast.parse(rule, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and \
        tree.func.id == "ceil_div" and len(tree.args) == 2 and \
        isinstance(tree.args[1], ast.Constant) and tree.args[1].value == k


def recognise(plan: Plan) -> ColumnReduction:
    """The column reduction ``plan``'s kernel is, or Refused naming the part that differs."""
    return _Matcher(plan).run()


Analyse = Callable[[], ColumnReduction]
__all__ = ["ColumnRead", "ColumnReduction", "line", "recognise"]
