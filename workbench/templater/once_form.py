"""A grid-stride loop the launch runs once a thread, read as the guarded item it is, before
the families (issue 28, round 31b's pixel_shuffle_r2_gridstride).

``for (T i = blockIdx.x * B + threadIdx.x; i < n; i += S) BODY`` as the body's last
statement, launched on ``ceil_div(n, B)`` blocks of ``B``, runs ``BODY`` once where ``i < n``
and never again (:func:`.ilp_gridstride.once_loop` shows it, each refusal with its line): it
means exactly ``T i = blockIdx.x * B + threadIdx.x; if (i < n) BODY``. Items with
independent state read such a loop themselves; the families of a straight-line body read
only the guarded form: VEC's one-element region (whose lanes read their own index, where a
loop's reads of the index as a value need ``__restrict__``) and ITEMS_PER_THREAD by wrapping.
Authors write the loop so any grid covers the data (a grid-stride loop is the common
spelling of an elementwise kernel); the folder's launch rule says which grid runs.

:func:`once_form` writes the loop's header so: the declaration on the loop's line, the
``if`` on a line of its own (told as the loop's: the line map of
:class:`.inline_calls.InlinedSource`), the header's own line breaks kept after its test. Only a loop that runs once a thread at the launch as written
(``span`` 1) whose index the body's other statements never declare. :func:`.semantic.lift_kernel`
lifts this reading beside the kernel as written and keeps it only where it lifts strictly
more knobs, losing none (a loop region's run-time alias test stays where it lifts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import declared_name, text, walk
from workbench.templater.analysis import integer_macros as reading_macros
from workbench.templater.ilp import index_offset
from workbench.templater.ilp_gridstride import once_loop
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.parameter_names import scalars_by_parameter
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal

TRANSFORM = ONCE = "GRID_STRIDE_ONCE"


def once_form(inlined: InlinedSource, entry: str | None, grid: Sequence[str],
              block: Sequence[str], scalars: Mapping[str, str],
              constants: Callable[[Plan], Mapping[str, int]]) -> InlinedSource:
    """``inlined`` with its grid-stride loop written as the guarded item it is at the launch
    (``grid``, ``block``); unchanged where there is no such loop. ``constants``: the file's
    named integers (macros, constexpr) as the families read them."""
    try:
        source = parse_cuda(inlined.text, inlined.file)
        kernel = source.kernel(entry)
        plan = Plan(source, kernel, grid=list(grid), block=list(block),
                    scalars=scalars_by_parameter(kernel, scalars))
        with reading_macros(dict(constants(plan))):
            once = once_loop(plan, lambda value: index_offset(plan, value))
    except (Illegal, WorkbenchError):
        return inlined
    if once is None or once.span != 1:
        return inlined
    body = once.loop.child_by_field_name("body")
    assert body is not None  # once_loop read it
    declared = [n for n in walk(plan.body) if n.type == "declaration" and n != once.decl and
                declared_name(n)[0] == once.index]
    if declared:
        return inlined  # the index's name is declared again: one scope would hold both
    data = inlined.text.encode()
    start = once.loop.start_byte
    header = data[start:body.start_byte].decode()
    decl = text(once.decl).rstrip().rstrip(";").rstrip()
    indent = data[data.rfind(b"\n", 0, start) + 1:start].decode()
    indent = indent if not indent.strip() else " " * len(indent)
    # the declaration a line of its own (a family comments it out), told as the loop's line
    spelled = f"{decl};\n{indent}if ({text(once.cond)}) " + "\n" * header.count("\n")
    lines = inlined.text.count("\n") + 1
    origin = [inlined.baseline_line(n) for n in range(1, lines + 1)]
    row = once.loop.start_point[0]
    origin[row + 1:row + 1] = [origin[row]]
    moved = inlined.edited([(start, body.start_byte, spelled)])
    return replace(moved, origin=tuple(origin))
