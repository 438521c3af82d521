"""The third unseen compute corpus (issue 28, held-back kernels), pure tier: every kernel
folder of benchmarks/corpus_compute_unseen3 and its expert/ copy load; the plain kernel
computes what its reference.py says (g++ host simulation); the hand-written expert template
computes what the plain kernel computes at its default, at the first and the last all-ends
configs and at the kernel's hand-picked EXTRA_CONFIGS (the same host simulation, same
inputs); nvcc compiles the plain kernel and the expert default for sm_90 without spilling.

The host simulation is tests/helpers_templater.COOPERATIVE_BLOCK: each thread of a block a
coroutine, ``__syncthreads`` a switch, so shared memory and barriers behave as on the GPU.
Inputs come from the product's own generators (the folder's make_inputs, else
``default_inputs``, then ``complete_inputs`` for ``__constant__`` arrays), at the folder's
check shape. ``UNSEEN3_ALL_ENDS=1`` checks every all-ends config instead of the first and
the last.

These folders are kept from the offline templater's authors until they are measured (the
templater route against the expert template, same stage 2, on the H100).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_session_cache import shared_output
from helpers_templater import (
    COOPERATIVE_BLOCK,
    end_configs,
    precompiled_header,
    run_merged_on_host,
    run_on_host,
)

from workbench.core.identifiers import identifier_problem
from workbench.core.inputs import complete_inputs, default_inputs
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.write_policy import write_file

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen3"
#: Each writer of the corpus adds its own kernels here.
KERNELS = [
    # writer 1: a tiled product with an epilogue, a 2-D filter in constant memory, a 3-D
    # stencil
    "dense_relu", "filter2d_clamp", "heat_step13",
    # writer 2: a per-element energy with a cutoff branch against a __constant__ table,
    # partial sums over fixed chunks (compare = "sum"), a warp-per-row normalisation
    "probe_energy", "sse_partials", "row_l2norm",
]
#: Hand-picked configs the all-ends corners do not reach, checked on the host on every run
#: too (each over the default): knob mixes whose index arithmetic differs from both ends.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile (TM != TN) with float4 loads and no pad
    "dense_relu": [{"BM": 32, "BN": 64, "BK": 16, "TM": 4, "TN": 2, "VEC": 4, "PAD": 0}],
    # the scalar shared-window path with 8 rows reused; the global window path at 4 x 4
    "filter2d_clamp": [{"BLOCK_X": 16, "BLOCK_Y": 4, "ITEMS_X": 2, "ITEMS_Y": 8,
                        "USE_SMEM": 1, "PAD": 0},
                       {"BLOCK_X": 8, "BLOCK_Y": 4, "ITEMS_X": 4, "ITEMS_Y": 4,
                        "USE_SMEM": 0, "PAD": 0}],
    # uneven z chunks (nz 19 in 4 and 2) with several columns per thread, shared and not
    "heat_step13": [{"BLOCK_X": 16, "BLOCK_Y": 4, "Y_ITEMS": 2, "Z_SPLIT": 4, "USE_SMEM": 1},
                    {"BLOCK_X": 32, "BLOCK_Y": 2, "Y_ITEMS": 4, "Z_SPLIT": 2, "USE_SMEM": 0}],
    # several probes per thread on the constant table (its per-pair shift) with the select
    "probe_energy": [{"ITEMS": 4, "UNROLL": 2, "TABLE": 0, "BRANCHLESS": 1}],
    # scalar loads with four accumulators and the shuffle stage, chunks of two slots
    "sse_partials": [{"CHUNK": 8192, "BLOCK_THREADS": 128, "ITEMS": 4, "FINAL": 1}],
    # the row in registers with 8 lanes a row (4 rows a warp) and float2
    "row_l2norm": [{"REG_STEPS": 24, "VEC": 2, "LANES": 8, "WARPS_PER_BLOCK": 4}],
}
ALL_ENDS = os.environ.get("UNSEEN3_ALL_ENDS") == "1"
SEED = 28

#: What the CUDA built-ins the kernels use are on the host (COOPERATIVE_BLOCK has the
#: launch, barriers and qualifiers).
HOST_PRELUDE = r"""
#include <cstdint>
#include <cstdlib>
#include <cstring>
#define __constant__ static
#define __align__(n) __attribute__((aligned(n)))
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
// Warp shuffles: every lane writes its value to its slot and switches; once every thread
// of the block has run to that point each lane reads its source lane's slot and switches
// again before any lane writes its next value (the lanes of a warp take the same path to a
// shuffle, as the GPU requires).
static unsigned long long wb_lane_slot[1024];
template <class T> static T wb_exchange(T v, unsigned src_lane, bool own) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  std::memcpy(&wb_lane_slot[t], &v, sizeof(T));
  wb_yield();
  T got = v;
  if (!own) std::memcpy(&got, &wb_lane_slot[t - t % 32 + src_lane], sizeof(T));
  wb_yield();
  return got;
}
static unsigned wb_lane() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
}
// A lane reading past its group of `width` lanes gets its own value (CUDA's rule).
template <class T> static T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const unsigned lane = wb_lane(), src = lane ^ unsigned(mask);
  return wb_exchange(v, src, src / unsigned(width) > lane / unsigned(width));
}
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const unsigned lane = wb_lane();
  return wb_exchange(v, lane + delta, lane % unsigned(width) + delta >= unsigned(width));
}
"""

#: Host C types of the dtypes these kernels take.
C_TYPES = {"f32": ("float", np.float32), "f64": ("double", np.float64),
           "i32": ("int", np.int32), "u32": ("unsigned", np.uint32),
           "i64": ("long long", np.int64)}

#: The standard headers the host programs include, precompiled once per session (g++ spends
#: about two thirds of each host compile on them).
HOST_HEADERS = ("ucontext.h", "algorithm", "cmath", "cstdio", "cstring", "functional",
                "vector", "cstdint", "cstdlib")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@pytest.fixture(scope="session")
def host_flags() -> tuple[str, ...]:
    """g++ flags that include the precompiled HOST_HEADERS, built with run_on_host's flags
    once a test run and shared by the xdist workers (helpers_templater.precompiled_header;
    g++ falls back to the header's text where the .gch does not fit, so a stale one costs
    time, never correctness). A build is about 1.7 s of g++ CPU and 33 MB written; 15
    modules import this fixture (each then holds a session fixture of its own: pytest keys
    one by the module it is found in), all handed the same header."""
    return ("-include",
            precompiled_header("\n".join(f"#include <{h}>" for h in HOST_HEADERS)))


def _folder(name: str, expert: bool = False) -> KernelFolder:
    return load_kernel_folder(ROOT / name / "expert" if expert else ROOT / name)


def _name(text: str) -> str:
    """``text`` as a name in the generated host program (refused unless an identifier)."""
    why = identifier_problem(text)
    assert why is None, f"{text!r}: {why}"
    return text


def _inputs(kf: KernelFolder) -> dict[str, np.ndarray]:
    """The check shape's inputs, made as the engine makes them."""
    shape = kf.check_shape
    sizes = kf.shape_values(shape)
    rng = np.random.default_rng(SEED)
    if "make_inputs" in kf.reference_functions:
        host = kf.load_reference().make_inputs(sizes, "fp32", rng)
    else:
        host = default_inputs(kf.arg_layout(shape, "fp32"), sizes, rng)
    return complete_inputs(host, kf.constant_layout(shape, "fp32"), sizes, rng)


def _literal(array: np.ndarray) -> str:
    """The values of ``array`` as a C initializer list (floats in hex: exact)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "f":
        return ", ".join(float(v).hex() for v in flat)
    return ", ".join(str(int(v)) for v in flat)


def _host_program(kf: KernelFolder, source: str, launch: Any,
                  inputs: Mapping[str, np.ndarray]) -> str:
    """C++ that holds every input as an initializer, launches ``source`` once on the host
    with ``launch`` and prints every output element in hex, one a line, outputs in argument
    order (outputs start as NaN: an element no thread writes prints as NaN)."""
    env = kf.env(kf.check_shape, "fp32")
    lines = []
    for const in kf.constant_layout(kf.check_shape, "fp32"):
        name = _name(const["name"])
        ctype, np_type = C_TYPES[const["dtype"]]
        values = inputs[const["name"]].astype(np_type)
        lines.append(f"static const {ctype} {name}_init[] = {{{_literal(values)}}};")
    body, call = [], []
    for const in kf.constant_layout(kf.check_shape, "fp32"):
        name = _name(const["name"])
        body.append(f"  static_assert(sizeof({name}) == sizeof({name}_init), \"{name}\");")
        body.append(f"  std::memcpy((void*){name}, {name}_init, sizeof({name}));")
    # arguments are named by position (``arg3``): their kernel.toml names need not be C++
    for index, arg in enumerate(kf.args):
        name = f"arg{index}"
        ctype, np_type = C_TYPES[arg.resolved_dtype("fp32")]
        if arg.role == "scalar":
            assert arg.value is not None
            value = arg.value.evaluate(env)
            literal = float(value).hex() if ctype in ("float", "double") else str(int(value))
            body.append(f"  const {ctype} {name} = ({ctype}){literal};")
            call.append(name)
            continue
        count = int(np.prod(arg.shape_for(env)))
        unset = "NAN" if ctype in ("float", "double") else "0x7fffffff"  # an unwritten mark
        body.append(f"  std::vector<{ctype}> {name}_buf({count}, ({ctype}){unset});")
        if arg.role in ("in", "inout"):
            values = inputs[arg.name].astype(np_type)
            assert values.size == count, arg.name
            lines.append(f"static const {ctype} {name}_init[] = {{{_literal(values)}}};")
            body.append(f"  std::copy({name}_init, {name}_init + {count}, {name}_buf.begin());")
        call.append(f"{name}_buf.data()")
    grid = ", ".join(f"{int(n)}u" for n in launch.grid)
    block = ", ".join(f"{int(n)}u" for n in launch.block)
    body.append(f"  wb_launch({{{grid}}}, {{{block}}}, [&] {{ "
                f"{_name(kf.baseline.entry)}({', '.join(call)}); }});")
    for index, arg in enumerate(kf.args):
        if arg.role in ("out", "inout"):
            body.append(f"  for (auto v : arg{index}_buf) "
                        "std::printf(\"%a\\n\", (double)v);")
    return "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE, source, *lines,
                      "int main() {", *body, "  return 0;", "}"])


def _run(kf: KernelFolder, source: str, launch: Any, inputs: Mapping[str, np.ndarray],
         work: Path, flags: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Every output of one host run of ``source`` at the check shape."""
    work.mkdir(parents=True, exist_ok=True)
    printed = run_on_host(work, "kernel", _host_program(kf, source, launch, inputs),
                          flags=flags)
    return _outputs(kf, printed)


def _outputs(kf: KernelFolder, printed: str) -> dict[str, np.ndarray]:
    """The outputs of one run at the check shape from what its program printed: each
    output argument's elements in argument order, NaN where no thread wrote."""
    env = kf.env(kf.check_shape, "fp32")
    values, outputs, at = printed.split(), {}, 0
    for arg in kf.args:
        if arg.role in ("out", "inout"):
            shape = arg.shape_for(env)
            count = int(np.prod(shape))
            _, np_type = C_TYPES[arg.resolved_dtype("fp32")]
            read = [float.fromhex(v) if v not in ("nan", "-nan") else float("nan")
                    for v in values[at:at + count]]
            outputs[arg.name] = np.array(read).astype(np_type).reshape(shape)
            at += count
    assert at == len(values), f"printed {len(values)} values, expected {at}"
    return outputs


#: What :func:`_host_program` opens every program with.
FOLDER_PREFIX = "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE]) + "\n"


def folder_runs(kf: KernelFolder, runs: Sequence[tuple[str, Any]],
                inputs: Mapping[str, np.ndarray], work: Path) -> list[dict[str, np.ndarray]]:
    """Every output of each (source, launch) of ``runs`` at ``kf``'s check shape, as
    :func:`_run` reads them, from one host compile (:func:`run_merged_on_host`)."""
    work.mkdir(parents=True, exist_ok=True)
    programs = [_host_program(kf, source, launch, inputs) for source, launch in runs]
    return [_outputs(kf, printed)
            for printed in run_merged_on_host(work, "merged", FOLDER_PREFIX, programs)]


_PLAIN_OUTPUTS: dict[str, dict[str, np.ndarray]] = {}


def _plain_outputs(name: str, work: Path, flags: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The plain kernel's outputs on the check shape's inputs (one host run per session)."""
    if name not in _PLAIN_OUTPUTS:
        plain = _folder(name)
        env = plain.env(plain.check_shape, "fp32")
        _PLAIN_OUTPUTS[name] = _run(plain, plain.baseline.render({}, "fp32").source,
                                    plain.baseline.launch_for({}, env), _inputs(plain), work,
                                    flags)
    return _PLAIN_OUTPUTS[name]


def _assert_same(kf: KernelFolder, got: Mapping[str, np.ndarray],
                 want: Mapping[str, np.ndarray], what: str) -> None:
    """``got`` matches ``want`` as the engine compares them: the folder's verify(), else
    per argument by sum or element by element within the folder's tolerance."""
    if "verify" in kf.reference_functions:
        kf.load_reference().verify(dict(got), dict(want), kf.shape_values(kf.check_shape))
        return
    for arg in kf.args:
        if arg.role not in ("out", "inout"):
            continue
        tol = kf.tolerance_for(arg, "fp32")
        g, w = got[arg.name].astype(np.float64), want[arg.name].astype(np.float64)
        assert not np.isnan(g).any(), f"{what}: {arg.name} has unwritten elements"
        if arg.compare == "sum":
            g, w = np.array([g.sum()]), np.array([w.sum()])
        bad = np.abs(g - w) > tol.atol + tol.rtol * np.abs(w)
        assert not bad.any(), (f"{what}: {arg.name} differs at {int(bad.sum())} of {bad.size}"
                               f" elements, first at {np.argwhere(bad)[0].tolist()}")


def checked_configs(kf: KernelFolder) -> list[dict[str, Any]]:
    """The default, the first and the last all-ends configs (every one with
    UNSEEN3_ALL_ENDS=1) and the kernel's EXTRA_CONFIGS, each valid at the check shape."""
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(kf.template, env)
    assert ends, "no all-ends config is valid"
    default = dict(kf.template.default_config())
    extras = [{**default, **extra} for extra in EXTRA_CONFIGS.get(kf.name, [])]
    for extra in extras:
        assert kf.template.space(env).rejection(extra) is None, extra
    picked = [*(ends if ALL_ENDS else [ends[0], ends[-1]]), *extras]
    configs = [default]
    for config in picked:
        if config not in configs:
            configs.append(config)
    return configs


# -- folders -------------------------------------------------------------------------------


# -- host simulation -----------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", KERNELS)
def test_plain_kernel_matches_its_reference_on_host(name: str, tmp_path: Path,
                                                    host_flags: tuple[str, ...]) -> None:
    kf = _folder(name)
    if "reference" not in kf.reference_functions:
        pytest.skip("no reference(): the plain kernel is its own golden")
    got = _plain_outputs(name, tmp_path, host_flags)
    sizes = kf.shape_values(kf.check_shape)
    want = kf.load_reference().reference(dict(_inputs(kf)), sizes, "fp32")
    _assert_same(kf, got, want, "plain kernel vs reference.py")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", KERNELS)
def test_expert_template_computes_what_the_plain_kernel_computes(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:
    """At the default, the first and last all-ends configs and the hand-picked extras, on
    the same inputs."""
    plain, expert = _folder(name), _folder(name, expert=True)
    env = plain.env(plain.check_shape, "fp32")
    inputs = _inputs(plain)
    want = _plain_outputs(name, tmp_path / "plain", host_flags)
    for i, config in enumerate(checked_configs(expert)):
        got = _run(expert, expert.template.render(config, "fp32").source,
                   expert.template.launch_for(config, env), inputs, tmp_path / f"config{i}",
                   host_flags)
        _assert_same(expert, got, want, f"expert at {config}")


# -- nvcc ----------------------------------------------------------------------------------


_PTXAS_FLAGS = ("-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v")


def _ptxas_log(source: str, work: Path, label: str) -> str:
    """Compile ``source`` (written to ``work`` as ``label``.cu) to an sm_90 cubin with
    ``ptxas -v``; its log (asserts it built). A source this test run compiled before is read
    back, not compiled again (tests/helpers_session_cache.py)."""
    assert NVCC is not None
    src = write_file(work, work / f"{label}.cu", source, overwrite=True)

    def compile_to(log_file: Path) -> None:
        done = subprocess.run([NVCC, *_PTXAS_FLAGS, "-o", str(work / f"{label}.cubin"),
                               str(src)], capture_output=True, text=True, timeout=100,
                              check=False)
        log = done.stdout + done.stderr
        assert done.returncode == 0, f"{label}:\n{log[-3000:]}"
        log_file.write_text(log)

    return shared_output("ptxas-log", [NVCC, *_PTXAS_FLAGS, source], compile_to).read_text()


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", KERNELS)
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
