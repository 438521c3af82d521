"""The kernel folder's scalar arguments under the names the kernel declares them by.

A folder lists its arguments in launch order under names of its own (``[[args]] name = "n"``,
``value = "n"``); the kernel may declare the same parameters as ``int N, int C, int H, int W``.
Launching passes them by position, so the k-th scalar argument of the folder is the k-th
non-pointer parameter of the kernel. Every analysis of the lift reads the kernel's names (a
guard ``if (idx >= total)`` with ``total = N * C * ...`` bounds the extent ``n * c * ...``
only once ``N`` is known to be launched with ``n``), so the map a lift reads is keyed by them.

Only a map that names none of the kernel's parameters is renamed: where one name is shared the
map is taken as keyed by the kernel's names already, in any order (a caller's
``{"n": .., "m": .., "c2": ..}`` for ``(float c2, int n, int m)``); where the counts differ (a
folder argument with no value, a kernel with a parameter the folder does not list as a scalar)
the position of each is not known. Either way the map stays as given, which bounds nothing it
cannot name (the conservative side: a size no comparison is seen to bound keeps its
whole-tile constraint).
"""

from __future__ import annotations

from collections.abc import Mapping

from workbench.core.cuda_source import KernelSignature


def scalars_by_parameter(kernel: KernelSignature, scalars: Mapping[str, str]) -> dict[str, str]:
    """``scalars`` (folder argument -> launch expression, in launch order) keyed by the
    kernel's own parameter names, position by position; as given where a name is shared or
    the counts differ."""
    declared = [p.name for p in kernel.params if not p.is_pointer]
    given = list(scalars)
    if set(given) & set(declared) or len(given) != len(declared):
        return dict(scalars)
    return {name: scalars[arg] for name, arg in zip(declared, given, strict=True)}
