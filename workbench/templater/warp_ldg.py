"""LDG for a warp family's segment loops: their reads of input arrays through the read-only
data path (``__ldg``).

A segment loop (:mod:`.warp_segments`) gathers through run-time offsets (``x[col_idx[j]]``);
sparse and segmented kernels commonly route such input reads through the read-only (texture)
path, which the compiler only picks by itself where it can prove the data is not written
(``const __restrict__``). ``LDG`` 1 wraps each read ``p[i]`` in the segment loops' bodies
whose array ``p`` is a kernel parameter declared pointer-to-const of an element type
``__ldg`` has an overload for; 0 is the kernel as written.

A segment walked through a local pointer (``const float* p = values + offsets[seg] + lane;
... s += *p; p += 32``) is read the same way: ``*p`` and ``p[k]`` go through the read-only
path where every value the local ever holds points into such a parameter, that is its
initial value and every assignment is a sum with exactly one pointer term (added) that is
the parameter or another such local, its other terms reading pointers only through
subscripts (``offsets[seg]``), and every other change steps it (``p += k``, ``++p``).

Legal where the array is not written while the kernel runs: the kernel promises it for a
``const`` pointee, and a kernel folder's inputs and outputs are distinct buffers (the
runner allocates each argument on its own, as the gate's runs do), so no output aliases
it. Reads through any other local or pointer are left as written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import line, strip, terms, text, walk, writer
from workbench.templater.plan import Plan
from workbench.templater.read_only_loads import LDG_TYPES
from workbench.templater.rewrite import TextFn

NAME = "LDG"
READ_ONLY = ("#if LDG\n#define WB_RO(x) __ldg(&(x))\n#else\n#define WB_RO(x) (x)\n#endif")


def apply_ldg(plan: Plan, segments: list[Node], what: str = "segment loop") -> None:
    """Offer LDG over the read-only input reads of the segment loops (notes why not);
    ``what``: the loops' kind as the notes name it (a whole warp's loop reads alike:
    :func:`.warp._apply_whole_warps`)."""
    reads = [s for loop in segments for s in _reads(plan, loop)]
    if not reads:
        if segments:
            plan.note(NAME, False, f"the {what}s read no array of a pointer-to-const "
                      "parameter, directly or through a local pointer into one", segments[0])
        return
    for sub in reads:
        plan.rw.replace_span(sub.start_byte, sub.end_byte, make=_wrap(sub))
    plan.helper(READ_ONLY)
    names = sorted({_named(plan, text(strip(sub.child_by_field_name("argument") or sub)))
                    for sub in reads})
    plan.note(NAME, True, f"{len(reads)} read(s) of {', '.join(names)} in the {what}s "
              "may go through the read-only path", segments[0])
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the {what}s read {', '.join(names)} "
                                         "through the read-only cache (__ldg) (as written: "
                                         "0)"}, f"{line(segments[0])}: {what}")


def _named(plan: Plan, array: str) -> str:
    """``values``, or ``values through p`` for a local pointer ``p`` into it."""
    root = read_only_root(plan, array)
    return array if root == array else f"{root} through {array}"


def _wrap(sub: Node) -> TextFn:
    return lambda rw: f"WB_RO({rw.render(sub.start_byte, sub.end_byte)})"


def _reads(plan: Plan, loop: Node) -> list[Node]:
    """Reads ``p[i]`` and ``*p`` in the loop's body of a pointer-to-const parameter ``p`` or a
    local pointer into one (:func:`read_only_root`)."""
    body = loop.child_by_field_name("body")
    out: list[Node] = []
    for n in walk(body) if body is not None else []:
        if n.type == "subscript_expression" or (
                n.type == "pointer_expression" and text(n.child_by_field_name("operator"))
                == "*"):
            array = strip(n.child_by_field_name("argument") or n)
            if array.type == "identifier" and read_only_root(plan, text(array)) is not None and \
                    writer(n, address=True) is None and not _dereferenced(n):
                out.append(n)
    return out


def read_only_root(plan: Plan, name: str, depth: int = 0) -> str | None:
    """The pointer-to-const parameter (of an ``__ldg`` type) whose elements every value of
    ``name`` points at: the parameter itself, or a local pointer declared once from one and
    after that only stepped or reassigned from one; None otherwise."""
    d = plan.facts.defs.get(name)
    if d is None:
        try:
            param = plan.kernel.param(name)
        except KeyError:
            return None
        ok = param.is_pointer and param.is_const and param.base_type in LDG_TYPES
        return name if ok else None
    if not d.is_pointer or d.value is None or d.is_shared or depth > 4:
        return None
    base = _base(plan, d.value)
    root = read_only_root(plan, base, depth + 1) if base not in (None, name) else None
    if root is None:
        return None
    for n in walk(plan.facts.body):
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "&" \
                and text(strip(n.child_by_field_name("argument") or n)) == name:
            return None  # its address taken: changed where this does not look
        if n.type == "update_expression" and text(n.child_by_field_name("argument")) == name:
            continue  # ++p, p--: a step
        if n.type != "assignment_expression" or text(n.child_by_field_name("left")) != name:
            continue
        right = n.child_by_field_name("right")
        assert right is not None
        op = text(n.child_by_field_name("operator"))
        if op in ("+=", "-=") and not _reads_pointer(plan, right):
            continue
        base = _base(plan, right) if op == "=" else None
        if base is None or (base != name and read_only_root(plan, base, depth + 1) != root):
            return None
    return root


def _base(plan: Plan, value: Node) -> str | None:
    """The pointer a sum ``value`` offsets: its one pointer term, added (``q``, or ``&q[k]``
    with ``k`` reading pointers only through subscripts), the other terms reading pointers
    only through subscripts; None otherwise."""
    pointers = [(sign, t, _element_of(plan, t) or t) for sign, t in terms(value)
                if _is_pointer(plan, _element_of(plan, t) or t)]
    if len(pointers) != 1 or pointers[0][0] != 1:
        return None
    at = pointers[0][1].start_byte
    if any(_reads_pointer(plan, t) for _s, t in terms(value) if t.start_byte != at):
        return None
    return text(pointers[0][2])


def _element_of(plan: Plan, term: Node) -> Node | None:
    """``q`` of ``&q[k]`` where ``k`` reads pointers only through subscripts, else None."""
    if term.type != "pointer_expression" or text(term.child_by_field_name("operator")) != "&":
        return None
    sub = strip(term.child_by_field_name("argument") or term)
    array, index = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
    if sub.type != "subscript_expression" or array is None or index is None:
        return None
    array = strip(array)
    ok = array.type == "identifier" and not _reads_pointer(plan, index)
    return array if ok else None


def _is_pointer(plan: Plan, term: Node) -> bool:
    if term.type != "identifier":
        return False
    d = plan.facts.defs.get(text(term))
    if d is not None:
        return d.is_pointer
    try:
        return plan.kernel.param(text(term)).is_pointer
    except KeyError:
        return False


def _reads_pointer(plan: Plan, node: Node) -> bool:
    """``node`` names a pointer other than as the array of a subscript or takes an address."""
    for n in walk(node):
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "&":
            return True
        if _is_pointer(plan, n) and not (
                n.parent is not None and n.parent.type == "subscript_expression" and
                n.parent.child_by_field_name("argument") == n):
            return True
    return False


def _dereferenced(read: Node) -> bool:
    """``*p[i]`` (through parentheses): the read is itself a pointer, which has no __ldg."""
    up = read.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    return up is not None and up.type == "pointer_expression" and \
        text(up.child_by_field_name("operator")) == "*"
