"""The element types a read-only load (``__ldg``, the non-coherent path) takes: one list for
every family that routes input reads through it (stencil_rows' and const_window's register
windows, stencil_zmarch's plane queue, warp_ldg's segment loops).

CUDA declares ``__ldg`` for the built-in integer types, ``float`` and ``double``
(sm_32_intrinsics.h), ``__half`` (cuda_fp16.h) and ``__nv_bfloat16`` (cuda_bf16.h); a kernel
that names a half type includes its header, so its ``__ldg`` is declared there too.
"""

from __future__ import annotations

#: Element types ``__ldg`` has an overload for (CUDA's read-only load intrinsics).
LDG_TYPES = frozenset({"float", "double", "int", "unsigned", "unsigned int", "long long",
                       "unsigned long long", "short", "unsigned short", "char", "signed char",
                       "unsigned char", "__half", "__nv_bfloat16"})
