"""The functions FAST_MATH and FAST_DIV rewrite: the kernel's body and the ``__device__``
functions of the same file it calls, directly or through one another.

A per-element kernel often keeps its work in a helper (``w[i] = solve(x[i])``): the
helper's ``expf`` and divisions are the kernel's work, so the family's rules
(:mod:`.ilp_fastmath`, :mod:`.ilp_fastdiv`, :mod:`.ilp_intrinsics`) apply there as in the
body. Those rules are local to a function (a call renamed, a division by a local of that
function), so they need no purity of the helper: a helper with a loop, a memory access or a
template parameter is rewritten the same way. The pure ``__device__`` functions of the file
are read as before (the family's earlier scope). A method the kernel calls on a local
object (``A.rotate(p, q)``, :mod:`.item_objects`) is reached by its name, as a function is.

Refused, with the line (the helper's calls stay as written):

- a helper another ``__global__`` kernel of the file also reaches: its FAST_MATH would be
  that kernel's too, which the template does not tune;
- a ``__host__ __device__`` helper: the hardware approximations are device functions;
- a name defined more than once (overloads: a call may reach either body).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.core.cuda_source import function_definitions
from workbench.templater.analysis import line, walk
from workbench.templater.inline_bind import callee_name
from workbench.templater.item_objects import method_name
from workbench.templater.plan import Plan
from workbench.templater.purity import device_purity


@dataclass
class HelperScope:
    """The bodies to rewrite, by function name (the kernel's first), and the helpers
    refused with why."""

    functions: dict[str, Node] = field(default_factory=dict)
    refused: list[tuple[str, str, Node]] = field(default_factory=list)  # name, why, fn


def callees(body: Node) -> set[str]:
    """The names ``body`` calls (``f(x)`` and ``f<float>(x)`` alike, and the method of
    ``x.m(..)``: :mod:`.item_objects`)."""
    return {name for n in walk(body) if n.type == "call_expression"
            and (name := callee_name(n) or method_name(n))}


def _qualifiers(fn: Node) -> set[str]:
    return {c.type for c in fn.children if c.type in ("__device__", "__global__", "__host__")}


def _reached(defs: dict[str, Node], start: Node) -> set[str]:
    """The ``__device__`` functions (not kernels) of ``defs`` that ``start`` calls, and
    those they call in turn."""
    found: set[str] = set()
    todo = [start]
    while todo:
        for name in callees(todo.pop()):
            fn = defs.get(name)
            body = fn.child_by_field_name("body") if fn is not None else None
            if name in found or fn is None or body is None or \
                    _qualifiers(fn) & {"__global__"} or "__device__" not in _qualifiers(fn):
                continue
            found.add(name)
            todo.append(body)
    return found


def helper_scope(plan: Plan) -> HelperScope:
    """The kernel's body, the pure ``__device__`` functions' and the helpers the kernel
    reaches (see the module doc)."""
    defs = plan.source.function_definitions()
    names = [name for name, _ in function_definitions(plan.source.tree.root_node)]
    twice = {n for n in names if names.count(n) > 1}
    others: dict[str, str] = {}  # helper -> another kernel reaching it
    for name, fn in defs.items():
        body = fn.child_by_field_name("body")
        if name != plan.kernel.name and "__global__" in _qualifiers(fn) and body is not None:
            for helper in _reached(defs, body):
                others.setdefault(helper, name)
    reached = _reached(defs, plan.body)
    verdict = device_purity(plan.source)
    scope = HelperScope({plan.kernel.name: plan.body})
    for name, fn in defs.items():
        body = fn.child_by_field_name("body")
        if body is None or name == plan.kernel.name or \
                (name not in reached and verdict.get(name, "no") is not None):
            continue
        why = _refusal(name, fn, others, twice)
        if why is None:
            scope.functions[name] = body
        elif name in reached:
            scope.refused.append((name, why, fn))
    return scope


def _refusal(name: str, fn: Node, others: dict[str, str], twice: set[str]) -> str | None:
    if name in others:
        return f"also called from the kernel `{others[name]}`, which the template does " \
            "not tune (its math would change too)"
    if "__host__" in _qualifiers(fn):
        return "a __host__ __device__ function (the hardware approximations are device " \
            "functions)"
    if name in twice:
        return f"defined more than once (line {line(fn)}): a call may reach either body"
    return None
