"""MIN_BLOCKS_PER_SM 0 on a kernel written without ``__launch_bounds__``: no bounds at all.

``__launch_bounds__(T, 0)`` is not the kernel as written: ptxas reads the block size alone
as a register target (sm_90, dft64_batched at 256 threads: 36 registers and no spills with
no bounds, 32 registers and 8 B of spills under ``__launch_bounds__(256)`` or ``(256, 0)``,
55 under ``(256, 1)``). So where the author wrote none, the lift names the bounds through a
macro chosen by the preprocessor:

- ``MIN_BLOCKS_PER_SM > 0``: ``__launch_bounds__(T, MIN_BLOCKS_PER_SM)``, as before;
- 0 and ``T > 256``: ``__launch_bounds__(T)``, so a block of ``T`` threads always launches
  (at most 65536 / T registers a thread; up to 256 threads ptxas's 255 always fit);
- 0 and ``T <= 256``: none, the kernel as written.

The preprocessor must read ``T``: every name in it a parameter or one of the file's integer
macros defined above the kernel. Otherwise (a ``constexpr``, a template argument) the caller
keeps ``__launch_bounds__(T, MIN_BLOCKS_PER_SM)``.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.macros import integer_macros
from workbench.templater.plan import Plan

MACRO = "WB_BLOCK_BOUNDS"
KNOB = "MIN_BLOCKS_PER_SM"
#: up to this many threads a block launches at any register count (255 rounds to 256 a
#: thread, 65536 a block: the SM's register file)
ANY_REGISTERS_THREADS = 256


def bounds_by_minimum(plan: Plan, threads: str, fn: Node) -> bool:
    """Bound ``fn`` by :data:`MACRO` as the module doc says; False
    (nothing edited) where the preprocessor cannot read ``threads`` or no line of its own
    is free above the kernel."""
    at, kind = _line_start(plan, fn), fn.child_by_field_name("type")
    if at is None or kind is None or not _preprocessor_reads(plan, threads, fn):
        return False
    product = f"({threads})"
    plan.rw.insert(at, f"#if {KNOB} > 0\n#define {MACRO} __launch_bounds__({threads}, {KNOB})\n"
                       f"#elif {product} > {ANY_REGISTERS_THREADS}\n"
                       f"#define {MACRO} __launch_bounds__({threads})\n"
                       f"#else\n#define {MACRO}  // no bounds, as written\n#endif\n")
    # before the return type (``__global__ WB_BLOCK_BOUNDS void k(...)``): nvcc takes the
    # bounds there, and the folder's reader reads the kernel's name past a macro there only
    plan.rw.insert(kind.start_byte, f"{MACRO} ")
    return True


def _preprocessor_reads(plan: Plan, threads: str, fn: Node) -> bool:
    """Every name in ``threads`` is a parameter or an integer macro defined above ``fn``."""
    macros = {name for name, m in integer_macros(plan.source).items()
              if m.definition.end_byte <= fn.start_byte}
    names = set(re.findall(r"[A-Za-z_]\w*", threads))
    return names <= set(plan.params) | macros


def _line_start(plan: Plan, fn: Node) -> int | None:
    """Where a line above the kernel starts: the start of the line holding the top-level
    declaration ``fn`` belongs to, when nothing but blanks precede it there."""
    top = fn
    while top.parent is not None and top.parent.type not in ("translation_unit",
                                                             "declaration_list"):
        top = top.parent
    data = plan.source.data
    at = data.rfind(b"\n", 0, top.start_byte) + 1
    return at if not data[at:top.start_byte].strip() else None
