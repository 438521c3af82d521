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

The choice sits in the header, after the parameters' ``#define`` lines, so every name in
``T`` must be a parameter (the header comes before the file's own macros). Otherwise (a
macro of the file, a ``constexpr``, a template argument) the caller keeps
``__launch_bounds__(T, MIN_BLOCKS_PER_SM)``.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.plan import Plan

MACRO = "WB_BLOCK_BOUNDS"
KNOB = "MIN_BLOCKS_PER_SM"
#: up to this many threads a block launches at any register count (255 rounds to 256 a
#: thread, 65536 a block: the SM's register file)
ANY_REGISTERS_THREADS = 256


def bounds_by_minimum(plan: Plan, threads: str, fn: Node) -> bool:
    """Bound ``fn`` by :data:`MACRO` as the module doc says; False (nothing edited) where
    a name in ``threads`` is not a parameter."""
    kind = fn.child_by_field_name("type")
    names = set(re.findall(r"[A-Za-z_]\w*", threads))
    choice = (f"#if {KNOB} > 0\n#define {MACRO} __launch_bounds__({threads}, {KNOB})\n"
              f"#elif ({threads}) > {ANY_REGISTERS_THREADS}\n"
              f"#define {MACRO} __launch_bounds__({threads})\n"
              f"#else\n#define {MACRO}  // no bounds, as written\n#endif")
    if kind is None or not names <= set(plan.params):
        return False
    plan.helper(choice)  # in the header, after the parameters' #defines
    # before the return type (``__global__ WB_BLOCK_BOUNDS void k(...)``): nvcc takes the
    # bounds there, and the folder's reader reads the kernel's name past a macro there only
    plan.rw.insert(kind.start_byte, f"{MACRO} ")
    return True
