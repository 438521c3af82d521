"""The fifth held-back compute corpus (issue 28), pure tier: every kernel folder of
benchmarks/corpus_compute_unseen5 and its expert/ copy load; the plain kernel computes what
its reference.py says (g++ host simulation); the hand-written expert template computes what
the plain kernel computes at the kernel's hand-picked EXTRA_CONFIGS, and for
CORNERS_EVERY_RUN at its default and its last all-ends config too (the same host
simulation, same inputs); nvcc compiles the plain kernel and the expert default for sm_90
without spilling (the first and the last kernel listed). ``WORKBENCH_FULL_MATRIX=1``
checks every kernel at its default, every all-ends config and every extra, and compiles
every kernel.

The host harness (program generation, runs, comparison, precompiled headers) is
tests/test_corpus_unseen3.py's, imported; this set adds only the CUDA built-ins its kernels
use beyond that set's (HOST_EXTRAS: half precision as the compiler's _Float16, a shared
atomicAdd, the fast-math and normal-CDF functions) and the half type.

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
    C_TYPES,
    _assert_same,
    _inputs,
    _ptxas_log,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen5"
#: A half-input tiled product, a column filter in constant memory, a bisection solve with
#: an early exit, counts per chunk (verify()), a block-per-row half normalisation, a 2-D
#: radius-2 stencil with a shared halo.
KERNELS = ["hgemm_scaled", "colfilter13", "implied_vol_bisect", "band_count", "rmsnorm_f16w",
           "wave2d_o4"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square block (16 x 16 threads, 2 x 8 outputs each) over a deep slice; a
    # non-square register tile over a shallow padded slice
    "hgemm_scaled": [{"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 8, "PAD": 0},
                     {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1}],
    # eight outputs a thread from its own window; four a thread from a shared tile
    "colfilter13": [{"BLOCK_X": 32, "BLOCK_Y": 2, "ITEMS_Y": 8, "USE_SMEM": 0},
                    {"BLOCK_X": 64, "BLOCK_Y": 4, "ITEMS_Y": 4, "USE_SMEM": 1}],
    # two options a thread with normcdff, a block of 384; four with the hoisted terms and the
    # fast math over 96 threads
    "implied_vol_bisect": [{"THREADS": 384, "ITEMS": 2, "HOIST": 0, "CDF": 1, "FAST_MATH": 0},
                           {"THREADS": 96, "ITEMS": 4, "HOIST": 1, "CDF": 0, "FAST_MATH": 1}],
    # two chunks a block, scalar; four chunks with float4 loads and the warp stage
    "band_count": [{"CHUNKS": 2, "THREADS": 64, "VEC": 1, "FINAL": 0},
                   {"CHUNKS": 4, "THREADS": 256, "VEC": 4, "FINAL": 1}],
    # a warp a row, 8 rows, VEC 8 falls back to scalar loads (300 columns); 64 threads a row,
    # 4 rows, 4 halves a load and the shuffles
    "rmsnorm_f16w": [{"THREADS": 32, "ROWS": 8, "VEC": 8, "REDUCE": 0},
                     {"THREADS": 64, "ROWS": 4, "VEC": 4, "REDUCE": 1}],
    # two rows a thread from global memory; four rows a thread from the shared patch
    "wave2d_o4": [{"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_Y": 2, "USE_SMEM": 0},
                  {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_Y": 4, "USE_SMEM": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "colfilter13"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return (__half)f; }
// one host thread runs every simulated thread: a plain add is atomic
static inline int atomicAdd(int* p, int v) { const int old = *p; *p = v + old; return old; }
static inline float normcdff(float v) { return 0.5f * erfcf(-v * 0.70710678f); }
// glibc declares these names itself: macros, not functions
#define __expf(v) expf(v)
#define __logf(v) logf(v)
#define __fdividef(a, b) ((a) / (b))
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"

# the half-precision arguments (the unseen3 table has no 16-bit float type)
C_TYPES.setdefault("fp16", ("__half", np.float16))


def host_source(source: str) -> str:
    """A kernel's source as the host program compiles it (half precision from HOST_EXTRAS)."""
    return HOST_EXTRAS + source.replace(_HALF_HEADER, "")


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
MEMORY_BOUND = {"colfilter13", "band_count", "rmsnorm_f16w", "wave2d_o4"}


def test_stage1_corpus_knows_the_set_and_its_memory_bound_kernels() -> None:
    text = (ROOT.parent / "stage1_corpus.py").read_text()
    assert '"unseen5": ROOT / "benchmarks" / "corpus_compute_unseen5"' in text
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
