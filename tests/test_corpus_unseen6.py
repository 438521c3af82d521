"""The sixth held-back compute corpus (issue 28), pure tier: every kernel folder of
benchmarks/corpus_compute_unseen6 and its expert/ copy load; the plain kernel computes what
its reference.py says (g++ host simulation); the hand-written expert template computes what
the plain kernel computes at the kernel's hand-picked EXTRA_CONFIGS, and for
CORNERS_EVERY_RUN at its default and its last all-ends config too (the same host
simulation, same inputs); nvcc compiles the plain kernel and the expert default for sm_90
without spilling (the first and the last kernel listed). ``WORKBENCH_FULL_MATRIX=1``
checks every kernel at its default, every all-ends config and every extra, and compiles
every kernel.

The host harness (program generation, runs, comparison, precompiled headers) is
tests/test_corpus_unseen3.py's, imported; this set adds only the CUDA built-ins its kernels
use beyond that set's (HOST_EXTRAS: a shared double atomicAdd and the fast sine).

These folders are kept from the offline templater's authors until they are measured (the
templater route against the expert template, same stage 2, on the H100).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    _SPILLS,
    _assert_same,
    _inputs,
    _ptxas_log,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen6"
#: A tiled product with a fused epilogue over a strided operand, a channels-last depthwise
#: filter in constant memory, an integration loop with a per-element early exit, two sums
#: per chunk (verify()), a block-per-row top-1, a 27-point 3-D stencil.
KERNELS = ["linear_gelu_lda", "dwconv3_nhwc", "pendulum_settle", "moments_partials",
           "row_top1", "box27_smooth"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice; a wide block of 4 x 4 tiles
    "linear_gelu_lda": [{"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 8, "PAD": 0},
                        {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1}],
    # float2 channels, 2 x 2 outputs a thread from global memory; float4 channels with four
    # pixels of one row a thread, the shared tile and the shared taps
    "dwconv3_nhwc": [{"VEC": 2, "PIX": 4, "ITEMS_X": 2, "ITEMS_Y": 2, "USE_SMEM": 0,
                      "TAPS": 1},
                     {"VEC": 4, "PIX": 16, "ITEMS_X": 4, "ITEMS_Y": 2, "USE_SMEM": 1,
                      "TAPS": 1}],
    # three pendulums a thread over 96 threads, unrolled twice, the hardware sine
    "pendulum_settle": [{"THREADS": 96, "ITEMS": 3, "UNROLL": 2, "FAST_SIN": 1}],
    # two chunks a block with float2 and the shuffles; eight with float4 and the shared
    # atomics over 64 threads
    "moments_partials": [{"CHUNKS": 2, "THREADS": 128, "VEC": 2, "FINAL": 1},
                         {"CHUNKS": 8, "THREADS": 64, "VEC": 4, "FINAL": 0}],
    # 8 lanes a row, 8 rows, float4 and the shuffles; 64 lanes a row (two warps), 2 rows,
    # float2, the shuffles then the shared pairs
    "row_top1": [{"LANES": 8, "ROWS": 8, "VEC": 4, "FINAL": 1},
                 {"LANES": 64, "ROWS": 2, "VEC": 2, "FINAL": 1}],
    # four planes a block with the shared plane; two planes from global memory
    "box27_smooth": [{"BLOCK_X": 32, "BLOCK_Y": 4, "Z_ITEMS": 4, "USE_SMEM": 1},
                     {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_ITEMS": 2, "USE_SMEM": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "row_top1"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
// one host thread runs every simulated thread: a plain add is atomic
static inline double atomicAdd(double* p, double v) {
  const double old = *p;
  *p = old + v;
  return old;
}
// glibc declares this name itself: a macro, not a function
#define __sinf(v) sinf(v)
"""


def host_source(source: str) -> str:
    """A kernel's source as the host program compiles it."""
    return HOST_EXTRAS + source


def _folder(name: str, expert: bool = False) -> KernelFolder:
    return load_kernel_folder(ROOT / name / "expert" if expert else ROOT / name)


_PLAIN_OUTPUTS: dict[str, dict[str, np.ndarray]] = {}


def _plain_outputs(name: str, work: Path, flags: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The plain kernel's outputs on the check shape's inputs (one host run per session)."""
    if name not in _PLAIN_OUTPUTS:
        plain = _folder(name)
        env = plain.env(plain.check_shape, "fp32")
        source = host_source(plain.baseline.render({}, "fp32").source)
        _PLAIN_OUTPUTS[name] = _run(plain, source, plain.baseline.launch_for({}, env),
                                    _inputs(plain), work, flags)
    return _PLAIN_OUTPUTS[name]


def checked_configs(kf: KernelFolder) -> list[dict[str, Any]]:
    """The last of the kernel's EXTRA_CONFIGS; for CORNERS_EVERY_RUN the default and the last
    all-ends config before it. With ``WORKBENCH_FULL_MATRIX=1`` the default, every all-ends
    config and every extra. Each valid at the check shape."""
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(kf.template, env)
    assert ends, "no all-ends config is valid"
    default = dict(kf.template.default_config())
    extras = [{**default, **extra} for extra in EXTRA_CONFIGS.get(kf.name, [])]
    for extra in extras:
        assert kf.template.space(env).rejection(extra) is None, extra
    assert extras, "no hand-picked config"
    if FULL_MATRIX:
        picked = [default, *ends, *extras]
    elif kf.name == CORNERS_EVERY_RUN:
        picked = [default, ends[-1], extras[-1]]
    else:
        picked = extras[-1:]
    configs: list[dict[str, Any]] = []
    for config in picked:
        if config not in configs:
            configs.append(config)
    return configs


# -- folders -------------------------------------------------------------------------------


def test_kernel_names_are_new() -> None:
    """No kernel of this set shares a name with a folder of another corpus or sample set."""
    benchmarks = ROOT.parent
    others = {p.name for p in benchmarks.glob("corpus*/*") if p.parent != ROOT}
    others |= {p.name for p in (benchmarks.parent / "sample_kernels").iterdir()}
    assert not set(KERNELS) & others
    assert sorted(KERNELS) == sorted(p.name for p in ROOT.iterdir() if p.is_dir())


#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"dwconv3_nhwc", "moments_partials", "row_top1", "box27_smooth"}


def test_stage1_corpus_knows_the_set_and_its_memory_bound_kernels() -> None:
    text = (ROOT.parent / "stage1_corpus.py").read_text()
    assert '"unseen6": ROOT / "benchmarks" / "corpus_compute_unseen6"' in text
    bound = re.search(r"MEMORY_BOUND = frozenset\(\{(.*?)\}\)", text, re.S)
    assert bound is not None
    listed = {n.strip(' "\n') for n in bound.group(1).split(",")}
    assert listed & set(KERNELS) == MEMORY_BOUND


# -- host simulation -----------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", KERNELS)
def test_plain_kernel_matches_its_reference_on_host(name: str, tmp_path: Path,
                                                    host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(name)
    got = _plain_outputs(name, tmp_path, host_flags)
    sizes = kf.shape_values(kf.check_shape)
    want = kf.load_reference().reference(dict(_inputs(kf)), sizes, "fp32")
    _assert_same(kf, got, want, "plain kernel vs reference.py")


@pytest.mark.timeout(1800 if FULL_MATRIX else 240)  # every all-ends config: minutes a kernel
@pytest.mark.parametrize("name", KERNELS)
def test_expert_template_computes_what_the_plain_kernel_computes(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """At the configs :func:`checked_configs` lists, on the same inputs."""
    plain, expert = _folder(name), _folder(name, expert=True)
    env = plain.env(plain.check_shape, "fp32")
    inputs = _inputs(plain)
    want = _plain_outputs(name, tmp_path / "plain", host_flags)
    for i, config in enumerate(checked_configs(expert)):
        source = host_source(expert.template.render(config, "fp32").source)
        got = _run(expert, source, expert.template.launch_for(config, env), inputs,
                   tmp_path / f"config{i}", host_flags)
        _assert_same(expert, got, want, f"expert at {config}")


# -- nvcc ----------------------------------------------------------------------------------


_FULL_ONLY = [pytest.mark.slow, pytest.mark.skipif(
    not FULL_MATRIX, reason="the first and last kernel by default; WORKBENCH_FULL_MATRIX=1 "
    "compiles all")]


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", [n if n in (KERNELS[0], KERNELS[-1]) else
                                  pytest.param(n, marks=_FULL_ONLY) for n in KERNELS])
def test_plain_kernel_and_expert_default_compile_without_spills(name: str,
                                                               tmp_path: Path) -> None:
    expert = _folder(name, expert=True)
    sources = {"plain": expert.baseline.render({}, "fp32").source,
               "expert_default": expert.template.render(expert.template.default_config(),
                                                        "fp32").source}
    for label, source in sources.items():
        log = _ptxas_log(source, tmp_path, label)
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{label} spills:\n{log}"
