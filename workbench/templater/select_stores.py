"""A shared tile's guarded fill written as an ``if`` / ``else`` reads as one select per
element, before the analysis (issue 28: first contact).

``if (row < M && k < K) { as[ty][tx] = A[..]; } else { as[ty][tx] = 0.0f; }`` stages the same
element as ``as[ty][tx] = (row < M && k < K) ? A[..] : 0.0f;``: the families that tile a
product or a window read a tile's store as one assignment per element (its position, its
value, its guard inside the value), so the same kernel lifted or was refused by how its
author spelled the zero fill. A complex GEMM staging real and imaginary parts apart writes
two such stores a side; each becomes its own select, in the order written.

Rewritten only where the two are the same program: the ``if`` has an ``else`` and its
condition is an expression (no declaration) that assigns nothing, calls nothing and reads
none of the arrays the branches store; each branch is one or more ``L = v;`` statements
(plain ``=``, a value that is not itself an assignment) whose targets are elements of
``__shared__`` arrays; and both branches store the same elements (the targets' text) in the
same order, each once. Each select then runs where the taken branch's store ran, after the
same earlier stores, with the condition's value unchanged (nothing it reads was written), and
evaluates only the taken side, so it makes the loads the kernel as written makes and no
other. Where only the ``else`` side loads (``if (out of range) s[i] = 0; else s[i] =
A[j];``) the condition is negated and the load written first, as a fill in range is
spelled, so the families reading the select read the load and its bounds alike. The ``if``
line and the ``else`` lines become blank and each select keeps its statement's line, so
every line keeps its number; an ``if`` that is the whole body of a loop or another ``if``
keeps its braces. Comments inside stay on their lines.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import strip, text, tree_root, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body


def select_stores(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each ``if`` / ``else`` of ``entry`` that stores the same shared
    elements on both sides written as one conditional store per element (unchanged when
    there is none, or the kernel cannot be found: the analysis reports that itself)."""
    body = entry_body(current, entry)
    if body is None:
        return current
    root = tree_root(body)
    shared = _shared_arrays(root)  # the kernel's own and file-scope ones
    data = current.text.encode()
    edits = [(n, new) for n in walk(body) if n.type == "if_statement"
             and (new := _rewritten(n, shared)) is not None]
    if not edits:
        return current
    # an if nested in an if that is rewritten is inside its edit; the outer one rewrites
    # only stores, so a rewritten if never contains another
    for n, new in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        start = n.start_byte
        line_start = data.rfind(b"\n", 0, start) + 1
        if new.startswith("\n") and not data[line_start:start].strip():
            start = line_start  # the if's line left empty, not indented
        data = data[:start] + new.encode() + data[n.end_byte:]
    return InlinedSource(data.decode(), current.file, current.findings, current.origin)


def _shared_arrays(root: Node) -> set[str]:
    """The names every ``__shared__`` declaration under ``root`` declares."""
    out: set[str] = set()
    for decl in walk(root):
        if decl.type != "declaration" or not any(text(c) == "__shared__" for c in decl.children):
            continue
        for declarator in decl.children_by_field_name("declarator"):
            d: Node | None = declarator
            while d is not None and d.type != "identifier":  # under [] and initialisers
                d = d.child_by_field_name("declarator")
            if d is not None:
                out.add(text(d))
    return out


def _stores(branch: Node | None, shared: set[str]) -> list[tuple[Node, Node, Node]] | None:
    """(statement, target, value) of each store of a branch made only of ``L = v;`` stores
    into shared arrays; None when it is anything else."""
    if branch is None:
        return None
    stmts = [c for c in branch.named_children if c.type != "comment"] \
        if branch.type == "compound_statement" else [branch]
    out = []
    for s in stmts:
        e = s.named_children[0] if s.type == "expression_statement" and \
            s.named_child_count == 1 else None
        if e is None or e.type != "assignment_expression" or \
                text(e.child_by_field_name("operator")) != "=":
            return None
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        if left is None or right is None or strip(right).type == "assignment_expression":
            return None
        array = strip(left)
        while array.type == "subscript_expression":
            array = strip(array.child_by_field_name("argument"))  # type: ignore[arg-type]
        if strip(left).type != "subscript_expression" or array.type != "identifier" or \
                text(array) not in shared:
            return None
        out.append((s, left, right))
    return out or None


def _rewritten(stmt: Node, shared: set[str]) -> str | None:
    """The text replacing ``stmt`` (one select per stored element, lines kept), or None
    when ``stmt`` is not a select of shared stores."""
    alternative = stmt.child_by_field_name("alternative")
    clause = stmt.child_by_field_name("condition")
    if alternative is None or clause is None:
        return None
    cond = clause.named_children[-1] if clause.type == "condition_clause" else clause
    if clause.type == "condition_clause" and (
            clause.named_child_count != 1 or cond.type in ("declaration", "init_statement")):
        return None
    orelse = alternative.named_children[-1] if alternative.type == "else_clause" else alternative
    then = _stores(stmt.child_by_field_name("consequence"), shared)
    other = _stores(orelse, shared)
    if then is None or other is None:
        return None
    targets = [" ".join(text(t).split()) for _s, t, _v in then]
    if targets != [" ".join(text(t).split()) for _s, t, _v in other] or \
            len(set(targets)) != len(targets):
        return None
    stored = {text(n) for _s, t, _v in then for n in walk(t) if n.type == "identifier"} & shared
    if any(n.type in ("assignment_expression", "update_expression", "call_expression")
           or (n.type == "identifier" and text(n) in stored) for n in walk(cond)):
        return None
    condition = " ".join(text(strip(cond)).split())
    rows = [""] * (stmt.end_point.row - stmt.start_point.row + 1)

    def put(node: Node, piece: str) -> None:
        row = node.start_point.row - stmt.start_point.row
        lead = " " if rows[row] else (" " * node.start_point.column if row else "")
        rows[row] += lead + piece

    for (s, target, value), (_s, _t, zero) in zip(then, other, strict=True):
        if _reads_memory(zero) and not _reads_memory(value):  # the load first, as written
            put(s, f"{text(target)} = !({condition}) ? {_arm(zero)} : {_arm(value)};")
        else:
            put(s, f"{text(target)} = ({condition}) ? {_arm(value)} : {_arm(zero)};")
    for n in walk(stmt):
        if n.type == "comment":
            put(n, text(n))
    if stmt.parent is None or stmt.parent.type != "compound_statement":
        rows[0] = "{ " + rows[0]
        rows[-1] += " }"
    return "\n".join(rows)


def _reads_memory(value: Node) -> bool:
    """``value`` loads (``a[i]``, ``*p``, ``p->f``) or calls a function (``__ldg(p)``)."""
    return any(n.type in ("subscript_expression", "call_expression", "field_expression")
               or (n.type == "pointer_expression" and text(n).startswith("*"))
               for n in walk(value))


def _arm(value: Node) -> str:
    """``value`` as a side of ``?:`` (parenthesized where it is itself a select)."""
    v = text(value)
    return f"({v})" if strip(value).type == "conditional_expression" else v
