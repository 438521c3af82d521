"""Does a tree halve the block? Followed into the ``__device__`` helpers the kernel calls.

A shared-memory tree that halves a count starting from the block size (``s = N / 2, N / 4,
.. 1``) adds every slot only when the block size is a power of two: at 96 threads the
halves are 48, 24, 12, 6, 3, 1 and the slot 2 of the 3-step is never added. The block-size
lift (:mod:`.block`) must then offer powers of two only. This module finds such a tree
wherever the block size reaches it:

* in the kernel body, or in a ``__device__`` helper the kernel calls with the block size as a
  template argument (``block_sum<ROW_THREADS>(v, buf)``), as a call argument
  (``block_sum(v, buf, 256)``) or reading ``blockDim.x`` or a file-scope name of the size
  (``#define BLOCK 256``, read as ``half = BLOCK / 2`` in the helper); helpers called by helpers
  are followed the same way (a few levels deep, each function once);
* the halving spelled as ``s >>= 1``, ``s /= 2``, ``s = s / 2``, ``s = s >> 1`` in a ``for``,
  ``while`` or ``do`` loop whose count starts from an expression of the block size (its
  ``for`` initializer or the declaration of the halved variable);
* a helper template that calls itself with half its size (``tree<N / 2>`` or ``tree<(N >>
  1)>``): a recursive tree;
* an unrolled ladder: two or more ``if`` tests of the block size against different powers of
  two (``if (N >= 512) ...; if (N >= 256) ...``), the textbook unrolled tree.

Anything found is reported by its node (the line the note names); ``None`` means no tree
halves the block as far as these shapes go.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import builtin, int_value, strip, text, walk
from workbench.templater.ilp_calls import callee_name
from workbench.templater.plan import Plan

#: How deep helper calls are followed (kernel -> helper -> helper -> helper).
_DEPTH = 3


def _is_size(node: Node, size: int, names: frozenset[str]) -> bool:
    """``node`` is the block size: its literal, a name carrying it, or ``blockDim.x``."""
    node = strip(node)
    return int_value(node) == size or text(node) in names or builtin(node, "blockDim") == "x"


def _mentions_size(node: Node | None, size: int, names: frozenset[str]) -> bool:
    return node is not None and any(_is_size(n, size, names) for n in walk(node))


def halving_update(node: Node) -> str | None:
    """The variable an assignment halves (``s >>= 1``, ``s /= 2``, ``s = s / 2``, ``s = s >>
    1``), else None."""
    if node.type != "assignment_expression":
        return None
    left, op = node.child_by_field_name("left"), text(node.child_by_field_name("operator"))
    right = node.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier":
        return None
    if (op == ">>=" and int_value(right) == 1) or (op == "/=" and int_value(right) == 2):
        return text(left)
    inner = strip(right)
    if op == "=" and inner.type == "binary_expression" and \
            text(inner.child_by_field_name("left")) == text(left):
        how, by = text(inner.child_by_field_name("operator")), \
            int_value(inner.child_by_field_name("right"))
        if (how, by) in ((">>", 1), ("/", 2)):
            return text(left)
    return None


def _start_of(var: str, loop: Node, fn: Node) -> list[Node]:
    """Where ``var`` gets its first value: the loop's own initializer, and any declaration of
    ``var`` in the function with a value."""
    found: list[Node] = []
    init = loop.child_by_field_name("initializer")
    if init is not None:
        found.append(init)
    for n in walk(fn):
        if n.type == "init_declarator" and text(n.child_by_field_name("declarator")) == var:
            value = n.child_by_field_name("value")
            if value is not None:
                found.append(value)
    return found


def _size_copies(fn: Node, size: int, names: frozenset[str]) -> frozenset[str]:
    """``names`` with the locals ``fn`` declares as a copy of the block size (``const int
    count = blockDim.x;``: a helper's parameter after its call was inlined)."""
    copies = set(names)
    for n in walk(fn):
        if n.type == "init_declarator":
            value = n.child_by_field_name("value")
            declarator = n.child_by_field_name("declarator")
            if value is not None and declarator is not None and \
                    declarator.type == "identifier" and _is_size(value, size, names):
                copies.add(text(declarator))
    return frozenset(copies)


def _halving_loop(fn: Node, size: int, names: frozenset[str]) -> Node | None:
    loops = ("for_statement", "while_statement", "do_statement")
    names = _size_copies(fn, size, names)
    for loop in walk(fn):
        if loop.type not in loops:
            continue
        for n in walk(loop):
            var = halving_update(n)
            if var is not None and any(_mentions_size(s, size, names)
                                       for s in _start_of(var, loop, fn)):
                return loop
    return None


def _ladder(fn: Node, size: int, names: frozenset[str]) -> Node | None:
    """Two or more ``if`` tests comparing the block size with different powers of two."""
    tests: dict[int, Node] = {}
    for n in walk(fn):
        if n.type != "if_statement":
            continue
        cond = n.child_by_field_name("condition")
        for c in walk(cond) if cond is not None else []:
            if c.type != "binary_expression" or text(c.child_by_field_name("operator")) not in (
                    ">=", ">", "<", "<="):
                continue
            left, right = c.child_by_field_name("left"), c.child_by_field_name("right")
            if left is None or right is None:
                continue
            for a, b in ((left, right), (right, left)):
                value = int_value(b)
                if _is_size(a, size, names) and value is not None and value > 1 and \
                        value & (value - 1) == 0:
                    tests.setdefault(value, n)
    return next(iter(tests.values())) if len(tests) >= 2 else None


def _template_params(fn: Node) -> list[str]:
    outer = fn.parent
    if outer is None or outer.type != "template_declaration":
        return []
    plist = outer.child_by_field_name("parameters")
    out: list[str] = []
    for p in plist.named_children if plist is not None else []:
        decl = p.child_by_field_name("declarator")
        out.append(text(decl) if decl is not None else "")
    return out


def _call_params(fn: Node) -> list[str]:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out: list[str] = []
    for p in plist.named_children if plist is not None else []:
        d = p.child_by_field_name("declarator")
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("declarator")
        out.append(text(d) if d is not None else "")
    return out


def _recursive(fn: Node, name: str, names: frozenset[str]) -> Node | None:
    """A call of ``name<X / 2>`` or ``name<X >> 1>`` inside ``fn`` itself, X a carried name."""
    for n in walk(fn):
        if n.type != "template_function" or text(n.child_by_field_name("name")) != name:
            continue
        args = n.child_by_field_name("arguments")
        for a in args.named_children if args is not None else []:
            flat = "".join(text(a).split()).strip("()")
            if any(flat in (f"{x}/2", f"{x}>>1", f"({x}/2)", f"({x}>>1)") for x in names):
                return n
    return None


def _carried(call: Node, fn: Node, size: int, names: frozenset[str]) -> frozenset[str]:
    """The helper's names that hold the block size at ``call``: its template parameters and
    call parameters whose argument is the block size."""
    held: set[str] = set()
    function = call.child_by_field_name("function")
    targs = function.child_by_field_name("arguments") \
        if function is not None and function.type == "template_function" else None
    for pname, arg in zip(_template_params(fn), targs.named_children if targs else [],
                          strict=False):
        if pname and _is_size(arg, size, names):
            held.add(pname)
    args = call.child_by_field_name("arguments")
    for pname, arg in zip(_call_params(fn), args.named_children if args else [], strict=False):
        if pname and _is_size(arg, size, names):
            held.add(pname)
    return frozenset(held)


def tree_halving(plan: Plan, size: int, names: frozenset[str]) -> Node | None:
    """A tree that halves the block of ``size`` threads in the kernel or a helper it calls
    (``names``: the macros and constants equal to ``size``), else None."""
    defs = plan.source.function_definitions()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[Node, str, frozenset[str], int]] = [(plan.body, "", names, 0)]
    while todo:
        fn, name, held, depth = todo.pop()
        found = _halving_loop(fn, size, held) or _ladder(fn, size, held) or \
            (_recursive(fn, name, held) if name else None)
        if found is not None:
            return found
        if depth >= _DEPTH:
            continue
        for call in walk(fn):
            if call.type != "call_expression":
                continue
            callee = callee_name(call)
            helper = defs.get(callee)
            if helper is None or helper.child_by_field_name("body") is None:
                continue
            carried = _carried(call, helper, size, held)
            # the helper reads blockDim.x, or a file-scope name holding the size (`BLOCK`)
            reads = any(builtin(n, "blockDim") == "x" or
                        (n.type == "identifier" and text(n) in names) for n in walk(helper))
            if (carried or reads) and (callee, carried) not in seen:
                seen.add((callee, carried))
                todo.append((helper, callee, carried | names, depth + 1))
    return None
