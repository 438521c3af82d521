"""LDG for a warp family's segment loops: their reads of input arrays through the read-only
data path (``__ldg``).

A segment loop (:mod:`.warp_segments`) gathers through run-time offsets (``x[col_idx[j]]``);
sparse and segmented kernels commonly route such input reads through the read-only (texture)
path, which the compiler only picks by itself where it can prove the data is not written
(``const __restrict__``). ``LDG`` 1 wraps each read ``p[i]`` in the segment loops' bodies
whose array ``p`` is a kernel parameter declared pointer-to-const of an element type
``__ldg`` has an overload for; 0 is the kernel as written.

Legal where the array is not written while the kernel runs: the kernel promises it for a
``const`` pointee, and a kernel folder's inputs and outputs are distinct buffers (the
runner allocates each argument on its own, as the gate's runs do), so no output aliases
it. Reads through locals or other pointers are left as written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import line, strip, text, walk
from workbench.templater.plan import Plan
from workbench.templater.read_only_loads import LDG_TYPES
from workbench.templater.rewrite import TextFn

NAME = "LDG"
READ_ONLY = ("#if LDG\n#define WB_RO(x) __ldg(&(x))\n#else\n#define WB_RO(x) (x)\n#endif")


def apply_ldg(plan: Plan, segments: list[Node]) -> None:
    """Offer LDG over the read-only input reads of the segment loops (notes why not)."""
    reads = [s for loop in segments for s in _reads(plan, loop)]
    if not reads:
        if segments:
            plan.note(NAME, False, "the segment loops read no array of a pointer-to-const "
                      "parameter", segments[0])
        return
    for sub in reads:
        plan.rw.replace_span(sub.start_byte, sub.end_byte, make=_wrap(sub))
    plan.helper(READ_ONLY)
    names = sorted({text(sub.child_by_field_name("argument")) for sub in reads})
    plan.note(NAME, True, f"{len(reads)} read(s) of {', '.join(names)} in the segment loops "
              "may go through the read-only path", segments[0])
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the segment loops read {', '.join(names)} "
                                         "through the read-only cache (__ldg) (as written: "
                                         "0)"}, f"{line(segments[0])}: segment loop")


def _wrap(sub: Node) -> TextFn:
    return lambda rw: f"WB_RO({rw.render(sub.start_byte, sub.end_byte)})"


def _reads(plan: Plan, loop: Node) -> list[Node]:
    """Reads ``p[i]`` in the loop's body of a pointer-to-const parameter ``p``."""
    body = loop.child_by_field_name("body")
    out: list[Node] = []
    for n in walk(body) if body is not None else []:
        if n.type != "subscript_expression":
            continue
        array = strip(n.child_by_field_name("argument") or n)
        if array.type != "identifier" or text(array) in plan.facts.defs:
            continue
        try:
            param = plan.kernel.param(text(array))
        except KeyError:
            continue
        if param.is_pointer and param.is_const and param.base_type in LDG_TYPES and \
                not _written(n):
            out.append(n)
    return out


def _written(sub: Node) -> bool:
    parent = sub.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("left") == sub
    return parent.type in ("update_expression", "pointer_expression")
