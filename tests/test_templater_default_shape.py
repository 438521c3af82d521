"""A lift's default config is the kernel as written in code shape too (issue 28): no
``__launch_bounds__`` where the author wrote none (launch_minimum.py: ptxas reads a bare
block size as a register target), and no per-item ``live`` test left inside a loop the
items share (ilp.py's split on the items' flags). Pure: the emitted text of two spellings
and what the preprocessor makes of it at MIN_BLOCKS_PER_SM 0 and above; host: the split
loop computes what the kernel as written computes with some items past the end; nvcc:
benchmarks/lift_default_shape.py on the two kernels whose lift showed it (registers,
spills, branches, instructions against the kernel as written)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import held_back_unseen11
import held_back_unseen15
import pytest
from held_back_harness import HeldBackSet, same_as_written
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, end_configs, lifted_template
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)

from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import lift_default_shape  # noqa: E402

#: one value per thread, the guard around the work, the loop of a literal trip count
#: reading the item's own element (a load no item past the end may make: under its flag)
GUARDED = """
extern "C" __global__ void k(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float t = 0.5f;
    float s = 0.0f;
    for (int j = 0; j < 64; j++) {
      s += t * x[i] - 0.25f;
      t += 0.5f;
    }
    y[i] = s;
  }
}
"""

#: the early-return spelling, a macro trip count, fmaf reading the item's element
RETURNS = """
#define STEPS 32
extern "C" __global__ void k(float* y, const float* x, int n) {
  const int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i >= n) return;
  const float v = x[i];
  float acc = 0.0f;
  for (int s = 0; s < STEPS; ++s) {
    acc = fmaf(acc, v, x[i] * s);
  }
  y[i] = acc;
}
"""

SPELLINGS = {"guarded": GUARDED, "returns": RETURNS}
SHARED_LOOPS = {"guarded": "for (int j = 0; j < 64; j++)", "returns": "for (int s = 0; s < STEPS; ++s)"}


def _lift(source: str) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                       scalars={"n": "n"})


def _kernel_line(source: str, config: dict[str, int]) -> str:
    """The kernel's declaration after the preprocessor, at ``config`` over the default."""
    template = lifted_template(_lift(source))
    rendered = template.render({**template.default_config(), **config}, "fp32").source
    done = subprocess.run(["g++", "-E", "-P", "-x", "c++", "-"], input=rendered,
                          capture_output=True, text=True, check=True)
    return next(line for line in done.stdout.splitlines() if "void k(" in line)


def test_no_split_where_no_item_statement_is_under_its_flag() -> None:
    """A loop whose item statements are safe for an item past the end (arithmetic on its
    own locals) has no flag test to hoist: one copy, as before."""
    pure = GUARDED.replace("t * x[i]", "t * t")
    src = _lift(pure).source
    assert "ITEMS_PER_THREAD" in src and "wb_all_live" not in src


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_items_loop_is_split_on_the_live_flags_once(name: str) -> None:
    lifted = _lift(SPELLINGS[name])
    assert "ITEMS_PER_THREAD" in [p.name for p in lifted.params]
    src = lifted.source
    loop = SHARED_LOOPS[name]
    # the flags tested once before the shared loop; the loop once for every item running
    # (nvcc folds its flag tests), once as rendered for the others
    first, _, second = src.partition("  } else {\n")
    assert "wb_all_live = wb_all_live && wb_live[wb_it];" in first
    assert first.count(loop) == 1 and second.count(loop) == 1, src
    assert first[first.index("if (wb_all_live) {"):].count(loop) == 1


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_no_launch_bounds_at_minimum_zero_as_written(name: str) -> None:
    source = SPELLINGS[name]
    assert "__launch_bounds__" not in _kernel_line(source, {})
    assert "__launch_bounds__(256, 2)" in _kernel_line(source, {"MIN_BLOCKS_PER_SM": 2})
    # past 256 threads a bare bound keeps every register count launchable
    assert "__launch_bounds__(512)" in _kernel_line(source, {"BLOCK_THREADS": 512})
    assert "__launch_bounds__" not in _kernel_line(source, {"BLOCK_THREADS": 128})


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_the_template_file_alone_reads_its_own_defaults() -> None:
    """template.cu compiled as it is (no config rendered before it): the choice of bounds
    comes after the header's #defines of the parameters it reads, also where the kernel
    follows the file's leading comment (the header's place): 512 threads as written, so
    ``__launch_bounds__(512)`` (0 for an undefined BLOCK_THREADS would drop it)."""
    source = "// y[i] = the sum of 64 terms of x[i]\n" + GUARDED.lstrip()
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 512)"], block=["512"],
                         scalars={"n": "n"})
    done = subprocess.run(["g++", "-E", "-P", "-x", "c++", "-"], input=lifted.source,
                          capture_output=True, text=True, check=True)
    line = next(x for x in done.stdout.splitlines() if "void k(" in x)
    assert "__launch_bounds__(512)" in line, lifted.source


def test_author_bounds_keep_the_minimum_in_place() -> None:
    """A kernel written with ``__launch_bounds__(256)`` keeps it at every config (the
    block size lifted, the minimum the knob: at 0 the author's bound alone)."""
    written = GUARDED.replace("void k(", "void __launch_bounds__(256) k(")
    src = _lift(written).source
    assert "__launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM) k(" in src
    assert "WB_BLOCK_BOUNDS" not in src


#: the held-back kernels whose lift splits a loop on the items' flags, each with its mixes
#: (every item of the last block past the end at 8 items of 32 threads; n = 301)
SPLIT_KERNELS = [
    pytest.param(held_back_unseen15.SET, "poly_quad_rect",
                 [{"ITEMS_PER_THREAD": 8, "BLOCK_THREADS": 32},
                  {"ITEMS_PER_THREAD": 2, "UNROLL": 4, "MIN_BLOCKS_PER_SM": 2}],
                 id="poly_quad_rect"),
    pytest.param(held_back_unseen11.SET, "sym3_jacobi",
                 [{"ITEMS_PER_THREAD": 8, "BLOCK_THREADS": 32},
                  {"ITEMS_PER_THREAD": 4, "UNROLL": 2, "STAGE": 1}],
                 id="sym3_jacobi", marks=[pytest.mark.slow, pytest.mark.skipif(
                     not FULL_MATRIX, reason="WORKBENCH_FULL_MATRIX=1 runs it")]),
]


@pytest.mark.parametrize(("corpus", "name", "mixes"), SPLIT_KERNELS)
def test_split_loop_matches_the_kernel_as_written_on_the_host(
        corpus: HeldBackSet, name: str, mixes: list[dict[str, int]], tmp_path: Path,
        host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """Both copies of the split loop run (the last block's items partly past the end):
    the default and the mixes, and under WORKBENCH_FULL_MATRIX=1 every all-ends config
    (FAST_DIV and FAST_MATH at 0), bit for bit against the kernel as written."""
    kf = corpus.folder(name)
    template = lifted_template(offline_template(kf).lifted, name)
    assert "wb_all_live" in template.source
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    # the host has no __fdividef or __expf: the all-ends configs with the exact forms
    ends = [c for c in end_configs(template, env)
            if not c.get("FAST_DIV") and not c.get("FAST_MATH")]
    configs = [default, *({**default, **m} for m in mixes), *(ends if FULL_MATRIX else [])]
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    assert same_as_written(kf, template, configs, corpus.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_nvcc
@pytest.mark.skipif(not any(shutil.which(t) for t in ("cuobjdump", "nvdisasm")),
                    reason="no SASS disassembler (cuobjdump or nvdisasm) on PATH")
@pytest.mark.parametrize("folder", [
    "corpus_compute_unseen15/poly_quad_rect",
    pytest.param("corpus_compute_unseen14/dft64_batched", marks=[
        pytest.mark.slow, pytest.mark.skipif(not FULL_MATRIX,
                                             reason="WORKBENCH_FULL_MATRIX=1 runs it")]),
])
def test_default_compiles_to_the_kernel_as_written(folder: str, tmp_path: Path) -> None:
    """The two kernels the H100 showed (issue 28): poly_quad_rect's default ran its 64
    panels with 10 branches against the plain kernel's 2; dft64_batched's spilled 8 B
    under ``__launch_bounds__(256, 0)``. Now neither differs by more than 10 % (sm_90)."""
    row = lift_default_shape.compare_folder(ROOT / "benchmarks" / folder, "sm_90", tmp_path)
    assert not row.differs(0.10), lift_default_shape.format_rows([row])
    assert row.default.spill_bytes == 0
