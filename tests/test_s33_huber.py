"""Session 33: huber_partials_gs (held-back set 25), a grid-stride Huber loss reduced to one
partial a block (``partial[blockIdx.x] = total``), the block's sum in a template helper
``block_sum<256>(sum)`` whose shared buffer the template argument sizes; ``partial`` has
1024 slots, compared by their total (``compare = "sum"``, reference.py verify()).

- Correctness (wrap.apply_grid_cap): the flat lift read the grid's cap ``min(.., 1024)`` as
  GRID_BLOCKS 64..8192, and every grid past 1024 wrote past the 1024 partial slots. A store
  at an index that grows with blockIdx.x (block_outputs.block_indexed_store) now bounds the
  knob by the cap as written (``GRID_BLOCKS <= 1024``, the note says why), and fewer blocks
  are offered only where the folder compares that output by its total and its elements are
  floating (the sum skips the poisoned, unwritten slots); else GRID_BLOCKS is refused.
- BLOCK_THREADS, FINAL: the block-stage helper (it declares ``__shared__`` memory and
  synchronises) is inlined where that reading lifts strictly more (semantic.lift_kernel,
  inline_calls.block_stage); its template argument becomes ``#define BLOCK 256``; the
  reduction family reads the stage with its array declared after the loop and its result
  handed back through a local thread 0's store alone reads (reduce_match._plain_tail); the
  family launches the grid as written whatever the block size, so the per-block store keeps
  its count (block.lift_block's ``keeps_grid``); the shared extent the thread indexes and
  the tree's ``BLOCK / 2`` follow the block, and the macro itself reads BLOCK_THREADS
  (macros.lift_macros), so every use of the template argument follows.

Host (g++): the lift against the kernel as written (the total of the partials, exactly:
half-integer terms) at the default, mixes and each knob's ends, at the check shape (12301,
not a multiple of 4) and at 100003 (391 blocks as written: fewer blocks stride); two
respellings (tests/spellings_s33_huber/) likewise.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import held_back_unseen25
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s33_huber"
SET = held_back_unseen25.SET
KERNEL = "huber_partials_gs"
KNOBS = frozenset({"BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL",
                   "MIN_BLOCKS_PER_SM"})

#: mixes over the default: the expert's pick; 1024 threads on 132 blocks of eight scalar
#: loads, the tree; 1024 threads of two float2 loads, shuffles, two blocks an SM
MIXES: list[dict[str, int]] = [
    {"BLOCK_THREADS": 512, "GRID_BLOCKS": 264, "VEC": 4, "ITEMS_PER_THREAD": 4, "FINAL": 1},
    {"BLOCK_THREADS": 1024, "GRID_BLOCKS": 132, "VEC": 1, "ITEMS_PER_THREAD": 8, "FINAL": 0},
    {"BLOCK_THREADS": 1024, "GRID_BLOCKS": 1024, "VEC": 2, "ITEMS_PER_THREAD": 2, "FINAL": 1,
     "MIN_BLOCKS_PER_SM": 2},
]

#: respelling -> (the knobs it lifts, a mix checked on the host)
SPELLED: dict[str, tuple[frozenset[str], dict[str, int]]] = {
    # a while loop over size_t, the tree in the kernel over a #define'd array
    "huber_while_sizet_define": (KNOBS, {"BLOCK_THREADS": 1024, "GRID_BLOCKS": 132, "VEC": 4,
                                         "ITEMS_PER_THREAD": 2, "FINAL": 1}),
    # shuffles by hand (the family writes the stage anew: any whole warps)
    "huber_shuffle_by_hand": (KNOBS, {"BLOCK_THREADS": 480, "GRID_BLOCKS": 528, "VEC": 2,
                                      "ITEMS_PER_THREAD": 4, "FINAL": 0}),
    # a constexpr block size as the helper's unsigned template argument (``#define N
    # ((unsigned int)(kBlock))`` once inlined: macros.derived_macros reads it as 256)
    "huber_constexpr_helper_ptr": (KNOBS, {"BLOCK_THREADS": 512, "GRID_BLOCKS": 264, "VEC": 4,
                                           "ITEMS_PER_THREAD": 2, "FINAL": 1}),
}


def _at(folder: Path, root: Path, source: str | None = None, n: int | None = None
        ) -> KernelFolder:
    """A copy of ``folder`` (respelled by ``source`` where given) whose check shape holds
    ``n`` elements where given."""
    copy = respelled(folder, root, source if source is not None else
                     (folder / "baseline.cu").read_text())
    if n is None:
        return copy
    toml = copy.path / "kernel.toml"
    toml.write_text(re.sub(r"small = \{ n = \d+ \}", f"small = {{ n = {n} }}",
                           toml.read_text()))
    return load_kernel_folder(toml.parent)


def _knob_ends(kf: KernelFolder) -> list[dict[str, Any]]:
    """The default, and each knob at each end of its values over it (those in the space)."""
    template = offline_template(kf).template
    space = template.space(kf.env(kf.check_shape, "fp32"))
    default = dict(template.default_config())
    out = [default]
    for p in template.params:
        for end in (p.values()[0], p.values()[-1]):
            config = {**default, p.name: end}
            if space.rejection(config) is None and config not in out:
                out.append(config)
    return out


def test_the_corpus_kernel_lifts_the_experts_knobs() -> None:
    lifted = offline_template(SET.folder(KERNEL)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    grid = next(p for p in lifted.params if p.name == "GRID_BLOCKS")
    assert max(grid.spec["values"]) == 1024 and 264 in grid.spec["values"]
    assert "GRID_BLOCKS <= 1024" in lifted.constraints


def test_no_config_launches_more_blocks_than_the_partial_slots() -> None:
    kf = SET.folder(KERNEL)
    template = offline_template(kf).template
    for shape in kf.shapes:
        env = kf.env(shape, "fp32")
        for config in template.space(env):
            assert template.launch_for(config, env).grid[0] <= 1024, (shape, config)


@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_lifts_its_knobs_bounded(spelling: str, tmp_path: Path) -> None:
    kf = _at(SET.root / KERNEL, tmp_path, (SPELLINGS / f"{spelling}.cu").read_text())
    result = offline_template(kf)
    assert {p.name for p in result.lifted.params} == SPELLED[spelling][0], result.notes
    env = kf.env("large", "fp32")
    for config in result.template.space(env):
        assert result.template.launch_for(config, env).grid[0] <= 1024, config


# -- the adversarial kernels: a per-block store the reduction family does not read ------------

#: A grid-stride sum whose block stage is an atomic on shared memory (no tree: the flat
#: lifts apply), one partial a block; ``partial`` has 1024 slots.
ATOMIC_STAGE = """extern "C" __global__ void k(float* partial, const float* x, int n) {
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  float s = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    s += x[i];
  atomicAdd(&total, s);
  __syncthreads();
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}
"""

#: The block's slot through a local, the store an atomic add into its own slot (the index
#: grows with blockIdx.x through ``slot``).
VIA_LOCAL = ATOMIC_STAGE.replace("  float s = 0.0f;", "  const int slot = blockIdx.x;\n  float s = 0.0f;"
                                 ).replace("partial[blockIdx.x] = total;",
                                           "atomicAdd(&partial[slot], total);")

#: The same over an int output: integer slots all count in a sum comparison.
INT_PARTIALS = ATOMIC_STAGE.replace("float* partial", "int* partial").replace(
    "const float* x", "const int* x").replace("float total", "int total").replace(
    "float s", "int s").replace("0.0f", "0")


def _grid_blocks(source: str, by_total: frozenset[str] | None) -> tuple[Any, tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=["min(ceil_div(n, 256), 1024)"],
                         block=["256"], scalars={"n": "n"}, compared_by_total=by_total)
    spec = next((p.spec for p in lifted.params if p.name == "GRID_BLOCKS"), None)
    return spec, lifted.notes


@pytest.mark.parametrize("source", [ATOMIC_STAGE, VIA_LOCAL])
def test_a_per_block_store_never_gets_more_blocks_than_written(source: str) -> None:
    spec, notes = _grid_blocks(source, frozenset({"partial"}))
    assert spec is not None, notes
    values = spec["values"] if spec["kind"] == "choice" else [spec["max"]]
    assert max(values) == 1024 and spec["default"] == 1024, spec
    assert any("at most 1024, the grid as written" in n for n in notes), notes


@pytest.mark.parametrize("source", [ATOMIC_STAGE, VIA_LOCAL])
def test_a_per_block_store_compared_element_by_element_keeps_its_grid(source: str) -> None:
    for by_total in (frozenset(), None):
        spec, notes = _grid_blocks(source, by_total)
        assert spec is None, spec
        assert any(n.startswith("GRID_BLOCKS: not applied:") and "element by element" in n
                   for n in notes), notes


def test_integer_partials_keep_their_grid() -> None:
    spec, notes = _grid_blocks(INT_PARTIALS, frozenset({"partial"}))
    assert spec is None, spec
    assert any("integer slots have no unwritten mark" in n for n in notes), notes


def test_a_grid_stride_store_at_the_index_keeps_the_wide_cap() -> None:
    """``y[i] = ..`` at the loop's own index stays inside the data at any grid: unchanged."""
    source = """extern "C" __global__ void k(float* y, const float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = 2.0f * x[i];
}
"""
    spec, notes = _grid_blocks(source, frozenset())
    assert spec is not None and spec["kind"] == "pow2" and spec["max"] == 8192, notes


def test_every_use_of_the_helpers_block_macro_follows_the_block_size() -> None:
    """The helper's template argument (``#define BLOCK 256`` once inlined) read elsewhere too
    (a loop over every BLOCK / 4-th slot): where BLOCK_THREADS lifts, the #define reads it,
    so each use follows the block (none keeps 256); else it is refused with the line. The
    grid stays within the 1024 slots either way."""
    source = (SET.root / KERNEL / "baseline.cu").read_text().replace(
        "    return buf[0];", "    float first = 0.0f;\n"
        "    for (int q = 0; q < 4; ++q) first += buf[q * (BLOCK / 4)];\n"
        "    return buf[0] + 0.0f * first;")
    lifted = lift_kernel(source, entry=KERNEL, grid=["min(ceil_div(n, 256), 1024)"],
                         block=["256"], scalars={"n": "n"},
                         compared_by_total=frozenset({"partial"}))
    knobs = {p.name: p.spec for p in lifted.params}
    if "BLOCK_THREADS" in knobs:  # the #define follows: no use keeps 256
        assert "#define BLOCK BLOCK_THREADS" in lifted.source, lifted.source
        assert "#define BLOCK 256" not in lifted.source
    else:  # the stage is no longer the family's: refused with the line, as written
        assert any(n.startswith("BLOCK_THREADS: not applied:") for n in lifted.notes)
    grid = knobs["GRID_BLOCKS"]
    assert max(grid["values"]) == 1024, grid


# -- host ------------------------------------------------------------------------------------

@needs_gxx
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("n", [None, 100003])
def test_the_corpus_lift_computes_as_written(n: int | None, tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _at(SET.root / KERNEL, tmp_path / "folder", n=n)
    template = offline_template(kf).template
    space = template.space(kf.env(kf.check_shape, "fp32"))
    default = dict(template.default_config())
    configs = [*_knob_ends(kf), *({**default, **m} for m in MIXES)] if n is None else \
        [default, *({**default, **m} for m in MIXES)]
    for config in configs:
        assert space.rejection(config) is None, config
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags, within_tolerance=True) == len(configs)


@needs_gxx
@pytest.mark.timeout(2400)
@pytest.mark.parametrize(("spelling", "n"), list(itertools.product(sorted(SPELLED),
                                                                    [None, 100003])))
def test_the_respelling_computes_as_written(spelling: str, n: int | None, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _at(SET.root / KERNEL, tmp_path / "folder",
             (SPELLINGS / f"{spelling}.cu").read_text(), n)
    template = offline_template(kf).template
    default = dict(template.default_config())
    configs = [default, {**default, **SPELLED[spelling][1]}]
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags, within_tolerance=True) == len(configs)
