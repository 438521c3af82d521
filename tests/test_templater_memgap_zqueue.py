"""Z_QUEUE: the planes a Z_ITEMS walk shares, kept in registers (workbench/templater/
stencil_zqueue.py; issue 28: box27_smooth reached 54 % of a copy where its expert, which keeps
plane sums in registers along z, reached 65 %).

Spellings: held-back set 6's box27_smooth (three loops over -1..1, ``k = blockIdx.z``, the
boundary layer copied with an early return), a 7-point star of explicit offsets with
``blockIdx.z`` read in place and an if / else boundary, and a box over counters from 0 to 2
with a 3-D index ``((z + a - 1) * ny + ...) * nx + ...`` and the weight chosen in the loop.
Each lifted template runs on the host (g++, the cooperative block) at its default, its
all-ends corners and the queue at 8 and 32 planes a thread (19 planes: uneven chunks), and
prints what the kernel as written prints, bit for bit. On the folder, the queue's loads are
counted: each distinct input value a thread's chunk of planes reads is loaded once (the
kernel as written loads it at every plane that reads it). What cannot be shown legal is
refused with the line; the widest config compiles without spills.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import NVCC, _inputs, _ptxas_log, _run, host_flags  # noqa: F401
from test_templater_stencil_zmarch import ENV, NX, NY, NZ, SHAPE, host

from workbench.core.expr import parse_expr
from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

BOX27 = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen6" / \
    "box27_smooth"

SEVEN_POINT = """
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  const int x = blockIdx.x * 128 + threadIdx.x;
  const int y = blockIdx.y;
  if (x >= nx) return;
  const size_t s = (size_t)nx * ny;
  const size_t at = blockIdx.z * s + (size_t)y * nx + x;
  if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1 && blockIdx.z > 0 && blockIdx.z < nz - 1) {
    out[at] = 0.4f * in[at] + 0.1f * (in[at - 1] + in[at + 1] + in[at - nx] + in[at + nx] +
                                     in[at - s] + in[at + s]);
  } else {
    out[at] = in[at];
  }
}
"""

COUNTERS = """
#define TX 64
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  int x = threadIdx.x + TX * blockIdx.x;
  int y = blockIdx.y;
  int z = blockIdx.z;
  if (x < nx) {
    float v;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
      v = in[(z * ny + y) * nx + x];
    } else {
      v = 0.0f;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          for (int e = 0; e < 3; ++e) {
            const float wgt = (a == 1 && b == 1 && e == 1) ? 0.48f : 0.02f;
            v += wgt * in[((z + a - 1) * ny + (y + b - 1)) * nx + (x + e - 1)];
          }
    }
    out[(z * ny + y) * nx + x] = v;
  }
}
"""

#: source, grid and block as written, (rows, slots) of the queue
CASES: dict[str, tuple[str, list[str], list[str], tuple[int, int]]] = {
    "box27": ((BOX27 / "baseline.cu").read_text().replace("void box27_smooth(", "void k("),
              ["ceil_div(nx, 128)", "ny", "nz"], ["128"], (3, 9)),
    "seven_point": (SEVEN_POINT, ["ceil_div(nx, 128)", "ny", "nz"], ["128"], (3, 5)),
    "counters": (COUNTERS, ["ceil_div(nx, 64)", "ny", "nz"], ["64"], (3, 9)),
}


def lift(name: str, source: str | None = None) -> LiftedSource:
    text, grid, block, _queue = CASES[name]
    return lift_kernel(source if source is not None else text, entry="k", grid=grid,
                       block=block, scalars=SHAPE)


def _notes(lifted: LiftedSource, applied: bool) -> list[str]:
    return [str(f) for f in lifted.findings if f.transform == "Z_QUEUE" and
            f.applied == applied]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_queues_its_planes(name: str) -> None:
    lifted = lift(name)
    rows, slots = CASES[name][3]
    spec = {p.name: dict(p.spec) for p in lifted.params}["Z_QUEUE"]
    assert spec["values"] == [0, 1] and spec["default"] == 0
    assert "Z_QUEUE == 0 or Z_ITEMS > 1" in lifted.constraints
    assert any(f"{rows} planes of {slots} in-plane offset(s) queued" in n
               for n in _notes(lifted, True)), lifted.notes
    assert f"float wb_zq0[{rows}][{slots}];" in lifted.source


def test_the_boundary_copy_shares_the_box_centres_slot() -> None:
    """``in[c]`` (the boundary layer's copy) and the box's read at dz = dy = dx = 0 are one
    polynomial: one slot (row 1, the plane itself; slot 4, the centre of the 3 x 3)."""
    source = lift("box27").source
    assert "wb_zq_at(true, wb_zq0, (1), (4), &(in[c]))" in source
    box = re.search(r"wb_zq_at\(true, wb_zq0, \(([^)]*\)[^,]*)\), \(([^&]*)\), &\(in\[c \+ dz",
                    source)
    assert box is not None, source
    row, slot = box.groups()
    for dz, dy, dx, want_row, want_slot in ((0, 0, 0, 1, 4), (-1, -1, -1, 0, 0),
                                            (1, 1, 1, 2, 8)):
        env = {"dz": dz, "dy": dy, "dx": dx}
        assert parse_expr(row).evaluate(env) == want_row, (row, env)
        assert parse_expr(slot).evaluate(env) == want_slot, (slot, env)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    source, _grid, block_text, _queue = CASES[name]
    block = [int(b) for b in block_text]
    want = host(tmp_path, "as_written", source, [-(-NX // block[0]), NY, NZ], block,
                host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(name))
    base = template.default_config()
    # 19 planes: 8 a thread leave a last chunk of 3, 32 a thread one chunk past the end
    queued = [{**base, "Z_QUEUE": 1, "Z_ITEMS": 8}, {**base, "Z_QUEUE": 1, "Z_ITEMS": 32}]
    space = template.space(dict(ENV))
    configs = [*host_sample(corner_configs(template, ENV)), *queued]
    assert all(space.rejection(c) is None for c in configs)
    assert any(c["Z_QUEUE"] == 1 for c in corner_configs(template, ENV))
    for i, config in enumerate(configs):
        launch = template.launch_for(config, ENV)
        got = host(tmp_path, f"config{i}", template.render(config, "fp32").source,
                   launch.grid, launch.block, host_flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))


def _box27_reads(i: int, j: int, k: int, nx: int, ny: int, nz: int) -> set[int]:
    """The input elements box27_smooth as written reads for the point (i, j, k)."""
    c = (k * ny + j) * nx + i
    if i in (0, nx - 1) or j in (0, ny - 1) or k in (0, nz - 1):
        return {c}
    return {c + dz * nx * ny + dy * nx + dx
            for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)}


def _counting_program(source: str, grid: Sequence[int], block: Sequence[int],
                      sizes: tuple[int, int, int]) -> str:
    """A host program that runs box27_smooth's lifted ``source`` once and prints how many
    loads its queue made (``wb_zq_loads``, counted where a slot is filled)."""
    n = sizes[0] * sizes[1] * sizes[2]
    g = ", ".join(f"{int(v)}u" for v in grid)
    b = ", ".join(f"{int(v)}u" for v in (*block, 1, 1)[:3])
    return "\n".join([
        COOPERATIVE_BLOCK, "static long wb_zq_loads = 0;", source, "int main() {",
        f"  std::vector<float> a({n}), o({n});",
        f"  for (int i = 0; i < {n}; ++i) a[i] = 0.01f * (i % 97);",
        f"  wb_launch({{{g}}}, {{{b}}}, [&] {{ box27_smooth(o.data(), a.data(), "
        f"{', '.join(map(str, sizes))}); }});",
        "  std::printf(\"loads %ld\\n\", wb_zq_loads);", "  return 0;", "}"])


@pytest.mark.timeout(180)
def test_the_folder_loads_each_value_a_chunk_reads_once(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(BOX27)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    nx, ny, nz = (int(env[n]) for n in ("nx", "ny", "nz"))
    items = 4  # 7 planes: chunks of 4 and 3
    config = {**template.default_config(), "Z_QUEUE": 1, "Z_ITEMS": items, "BLOCK_Y": 2}
    assert template.space(env).rejection(config) is None
    source = template.render(config, "fp32").source
    counted = source.replace("have |= bit;", "have |= bit; ++wb_zq_loads;")
    assert counted != source
    inputs = _inputs(kf)
    want = _run(kf, kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env),
                inputs, tmp_path / "plain", host_flags)
    got = _run(kf, source, template.launch_for(config, env), inputs, tmp_path / "queued",
               host_flags)
    for name, values in want.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)
    launch = template.launch_for(config, env)
    (tmp_path / "count").mkdir()
    printed = run_on_host(tmp_path / "count", "count",
                          _counting_program(counted, launch.grid, launch.block, (nx, ny, nz)),
                          flags=host_flags)
    loads = int(printed.split("loads ")[1])
    distinct = sum(len(set().union(*(_box27_reads(i, j, k, nx, ny, nz)
                                      for k in range(k0, min(k0 + items, nz)))))
                   for i in range(nx) for j in range(ny) for k0 in range(0, nz, items))
    as_written = sum(len(_box27_reads(i, j, k, nx, ny, nz))
                     for i in range(nx) for j in range(ny) for k in range(nz))
    assert loads == distinct, (loads, distinct, as_written)
    # 41 x 10 x 7 in chunks of 4 and 3 planes: 25958 loads where the kernel as written
    # makes 43430 (a chunk's first plane loads its whole box; 9 new values a plane after)
    assert loads < as_written, (loads, as_written)


@pytest.mark.parametrize(("name", "old", "new", "why"), [
    # the input written through its own pointer: a kept value could be stale
    ("seven_point", "const float* in", "float* in",
     "in is read at the walk's planes but is not a const input"),
    # a counter whose bound is known at run time only: its reads' slots are not constants
    ("box27", "for (int dz = -1; dz <= 1; dz++)", "for (int dz = -1; dz <= nz / nz; dz++)",
     "`dz` in `in[c + dz * plane + (long)dy * nx + dx]` is neither a counter of a loop "
     "with constant bounds nor a name a plane leaves unchanged"),
    # a stencil of its own plane only: nothing one plane could hand the next
    ("seven_point", "in[at - s] + in[at + s]", "in[at] + in[at]",
     "every queued read is of the walk's own plane"),
    # a neighbour at a plane computed through a clamp: not a whole plane from the walk's
    ("seven_point", "in[at + s]", "in[at + s * (blockIdx.z % 2)]",
     "is neither a counter of a loop with constant bounds nor a name"),
])
def test_what_cannot_be_shown_legal_is_refused_with_the_line(name: str, old: str, new: str,
                                                             why: str) -> None:
    source = CASES[name][0]
    assert old in source
    lifted = lift(name, source.replace(old, new))
    assert "Z_QUEUE" not in {p.name for p in lifted.params} and \
        "Z_ITEMS" in {p.name for p in lifted.params}
    assert any(why in r and "(line " in r for r in _notes(lifted, False)), lifted.notes


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.timeout(120)
def test_the_widest_queue_compiles_without_spills_and_the_cap_drops_spilling_ones(tmp_path: Path) -> None:
    kf = load_kernel_folder(BOX27)
    template = offline_template(kf).template
    config: dict[str, Any] = {**template.default_config(), "Z_QUEUE": 1, "Z_ITEMS": 32,
                              "BLOCK_THREADS": 1024}
    spills = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
    log = _ptxas_log(template.render(config, "fp32").source, tmp_path, "widest")
    assert spills.findall(log) == [("0", "0")], log
    # 512 threads: 2 blocks an SM (a cap of 64 registers) keep the 27 values; 4 (a cap of 32)
    # spill them, and the register constraint keeps that config out of the space
    space = template.space(kf.env("large", "fp32"))
    for blocks, spilled in ((2, False), (4, True)):
        capped = {**config, "BLOCK_THREADS": 64, "BLOCK_Y": 8, "MIN_BLOCKS_PER_SM": blocks}
        assert (space.rejection(capped) is not None) == spilled, capped
        log = _ptxas_log(template.render(capped, "fp32").source, tmp_path, f"cap{blocks}")
        assert (spills.findall(log) != [("0", "0")]) == spilled, log
