"""The fold of a column-partials kernel (:mod:`.colreduce_match`): how the block's
row sums of a column become the one partial thread row 0 stores, checked on the
parse: none (one thread row), a halving tree over ``threadIdx.y`` through one
``__shared__`` array, or thread row 0 adding the slots in order."""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    calls,
    chain,
    declared_name,
    int_value,
    strip,
    text,
    walk,
)
from workbench.templater.colreduce_parts import (
    _condition,
    _expression,
    _extents,
    _Index,
    _is_row0,
    _is_sync,
    _norm,
    _shared_base,
    _shared_index,
    _statements,
    _top,
    _zero,
    inside_consequence,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.stencil import Poly, add


class FoldCheck:
    """Checks one kernel's fold; ``bx`` x ``by`` the block as written."""

    def __init__(self, plan: Plan, bx: int, by: int) -> None:
        self.plan = plan
        self.stmts = _statements(plan.body)
        self.bx, self.by = bx, by

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
            if p.type == "if_statement" and inside_consequence(final, p) and \
                    any(_is_row0(self.plan, c) for c in chain(_condition(p), "&&")):
                return
            p = p.parent
        raise Refused("the partial row is not stored by thread row 0 alone "
                      "(`if (threadIdx.y == 0 ...)`)", final)
