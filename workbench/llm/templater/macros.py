"""Object-like integer macros (``#define BLOCK 256``), lifted with every use they govern.

Every transform reads a use of such a macro as the integer it stands for
(:func:`~workbench.llm.templater.analysis.integer_macros`), so ``j += BLOCK``,
``partial[BLOCK]`` and ``blockIdx.x * BLOCK`` are recognised exactly like the literal.
Afterwards, where transforms turned uses of one macro into one parameter, the ``#define``
itself becomes that parameter (``#define BLOCK BLOCK_THREADS``) and the uses keep the
author's name: every use of the macro follows, including the ones no transform had to
recognise (``BLOCK / 32`` warps, ``tid < BLOCK / 2``), because the author's naming says they
are one quantity. A macro whose uses map to different parameters is left as written and
reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.llm.templater.analysis import text, walk
from workbench.llm.templater.plan import Plan


@dataclass(frozen=True)
class IntegerMacro:
    """``#define NAME VALUE`` with an integer VALUE, defined once in the file."""

    name: str
    value: int
    definition: Node  # the preproc_def
    value_node: Node  # its preproc_arg


def _integer(raw: str) -> int | None:
    body = raw.strip()
    while body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    try:
        return int(body.rstrip("uUlL"), 0)
    except ValueError:
        return None


def integer_macros(source: CudaSource) -> dict[str, IntegerMacro]:
    """The file's object-like integer macros (a name defined twice, or under ``#if``
    branches more than once, is not one constant and is skipped)."""
    found: dict[str, list[IntegerMacro]] = {}
    for node in walk(source.tree.root_node):
        if node.type != "preproc_def":
            continue
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        number = _integer(text(value)) if value is not None else None
        if name is not None and value is not None and number is not None:
            found.setdefault(text(name), []).append(IntegerMacro(text(name), number, node, value))
    return {name: defs[0] for name, defs in found.items() if len(defs) == 1}


def lift_macros(plan: Plan, macros: dict[str, IntegerMacro]) -> None:
    """Make each macro the parameter its uses were lifted to (see the module doc)."""
    for macro in macros.values():
        uses = plan.uses(macro.name)
        if not uses:
            continue
        spans = {(n.start_byte, n.end_byte) for n in uses}
        edits = [e for e in plan.rw.edits if (e.start, e.end) in spans and e.make is None]
        targets = {e.text for e in edits}
        if not targets:
            plan.note(f"#define {macro.name}", False, f"{macro.name} = {macro.value} governs "
                      "nothing a transform lifted; left as written", macro.definition)
            continue
        param = next(iter(targets))
        if len(targets) > 1 or param not in plan.params or \
                plan.params[param].spec.get("default") != macro.value:
            plan.note(f"#define {macro.name}", False, f"its uses were lifted to different "
                      f"parameters ({', '.join(sorted(targets))}); left as written, so the "
                      "gate decides", macro.definition)
            continue
        plan.rw.discard(edits)  # the uses keep the author's name
        plan.rw.replace(macro.value_node, param)
        plan.note(f"#define {macro.name}", True, f"{macro.name} = {macro.value} is {param}: "
                  f"the #define now reads {param}, so its {len(uses)} use(s) follow",
                  macro.definition)
