"""Tiled-product kernels as a first contact would bring them, and one host check of any.

Each :class:`Product` is a kernel as written with its launch (over M, N, K and batch), its
buffers (name, element type, element count over the shape) in the order the call names them,
the C++ call of it and the buffer it writes. :func:`host_outputs` runs the kernel as written
and configs of its lift in one host program (every CUDA thread a coroutine, see
helpers_templater) on inputs that are small multiples of 1/8 (every product and sum exact in
float, so any order of the sum writes the same bits) and answers each run's output, bit for
bit (``%a``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers_templater import COOPERATIVE_BLOCK, lifted_template, run_merged_on_host

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

#: the device half type, intrinsics and 16-byte vector types as the host compiles them
HOST_EXTRAS = r"""
#include <cstdint>
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return (__half)f; }
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline __half __ushort_as_half(unsigned short u) {
  __half h; std::memcpy(&h, &u, sizeof h); return h;
}
"""
_HALF_HEADER = "#include <cuda_fp16.h>"
_CSTDINT = "#include <cstdint>"
_PREFIX = COOPERATIVE_BLOCK + HOST_EXTRAS

#: element type -> the C++ expression filling element ``i`` of buffer number ``s``
_FILL = {
    "float": "(float)(((i * 37 + s * 11) % 17) - 8) / 8.0f",
    "double": "(double)(((i * 37 + s * 11) % 17) - 8) / 8.0",
    "__half": "(__half)((float)(((i * 29 + s * 7) % 17) - 8) / 8.0f)",
    "int8_t": "(int8_t)(((i * 41 + s * 13) % 255) - 127)",
    "int32_t": "(int32_t)(((i * 7 + s) % 9) - 4)",
}


@dataclass(frozen=True)
class Product:
    """One author's tiled product: source, entry, launch as written, scalars, buffers."""

    source: str
    entry: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    scalars: Mapping[str, str]  # the kernel's scalar args -> the shape expression passed
    buffers: tuple[tuple[str, str, str], ...]  # (name, element type, count over M, N, K)
    call: str  # C++: the kernel called with the buffers and M, N, K, batch
    output: str  # the buffer it writes

    def lift(self, source: str | None = None) -> LiftedSource:
        """The offline templater's lift of the kernel (or of ``source``) as launched."""
        return lift_kernel(self.source if source is None else source, entry=self.entry,
                           grid=list(self.grid), block=list(self.block),
                           scalars=dict(self.scalars))

    def template(self) -> KernelTemplate:
        return lifted_template(self.lift(), self.entry)


def written_launch(p: Product, env: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """The grid and block the kernel as written is launched with at ``env``."""
    written = KernelTemplate.build(name=p.entry, source=p.source, entry=p.entry, params=[],
                                   constraints=[], grid=list(p.grid), block=list(p.block))
    launch = written.launch_for({}, {**env, "elem_bytes": 4})
    return [*launch.grid, 1, 1][:3], [*launch.block, 1, 1][:3]


def _main(p: Product, env: Mapping[str, int], launch: tuple[list[int], list[int]]) -> str:
    lines = ["", "int main() {",
             f"  const int M = {env['M']}, N = {env['N']}, K = {env['K']}, batch = {env['batch']};"]
    for s, (name, ctype, count) in enumerate(p.buffers):
        lines += [f"  std::vector<{ctype}> v_{name}((size_t)({count}));",
                  f"  {ctype}* {name} = v_{name}.data();",
                  f"  for (long i = 0; i < (long)v_{name}.size(); ++i) {{ const long s = {s}; "
                  f"{name}[i] = {_FILL[ctype]}; }}"]
    (gx, gy, gz), (bx, by, bz) = launch
    lines += [f"  wb_launch({{{gx}, {gy}, {gz}}}, {{{bx}, {by}, {bz}}}, [&] {{ {p.call}; }});",
              f"  for (long i = 0; i < (long)v_{p.output}.size(); ++i) "
              f"std::printf(\"%a\\n\", (double){p.output}[i]);",
              "  return 0;", "}", ""]
    return "\n".join(lines)


def _host(source: str) -> str:
    return source.replace(_HALF_HEADER, "").replace(_CSTDINT, "")


def host_outputs(p: Product, template: KernelTemplate, configs: Sequence[Mapping[str, Any]],
                 env: Mapping[str, int], work: Path) -> tuple[list[str], list[list[str]]]:
    """(the kernel as written's output, each config's output), each value as ``%a``, from
    one host program."""
    programs = [_PREFIX + _host(p.source) + _main(p, env, written_launch(p, env))]
    for config in configs:
        launch = template.launch_for(dict(config), {**env, "elem_bytes": 4})
        dims = ([*launch.grid, 1, 1][:3], [*launch.block, 1, 1][:3])
        source = template.render(dict(config), "fp32").source
        programs.append(_PREFIX + _host(source) + _main(p, env, dims))
    work.mkdir(parents=True, exist_ok=True)
    printed = [out.split() for out in run_merged_on_host(work, "first_contact", _PREFIX,
                                                           programs)]
    return printed[0], printed[1:]
