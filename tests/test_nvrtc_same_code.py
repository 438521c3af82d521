"""Does NVRTC give nvcc's code? PTX and ptxas usage, both ways, for sample and corpus kernels.

NVRTC's PTX (from the sandboxed child) is compared with ``nvcc -ptx``'s under the Compiler's
flags, ignoring what is not code: comments, ``.file``/``.loc`` line info, the debug
sections ``-lineinfo`` writes, module-scope globals nothing uses (NVRTC keeps namespace-scope
constants as initialised ``.global`` data: its front end runs with
``--no_remove_unneeded_entities``; they add to ptxas's ``gmem`` line, not to the code) and
the module id inside internal names. The ptxas usage
(registers, shared memory, stack, spills) is read from each compile's ``-Xptxas -v`` log.

Measured with NVRTC 13.0.88 against nvcc 13.0.88 (sm_90a), and asserted here:

- kernels that touch no shared memory: the PTX is the same and so is the usage;
- kernels that touch shared memory: nvcc addresses shared memory with 32-bit registers
  (``st.shared.f32 [%r5]``), NVRTC with 64-bit ones (``[%rd6]``), so the PTX differs; the
  usage is the same for the sample kernels' defaults and most of the corpus, but not for
  every config (``fused_add_rmsnorm`` ROW_IN_REGS=1 ITEMS=2: 50 registers from nvcc, 52
  from NVRTC; ``corpus/transpose``: 25 and 24). No NVRTC option found (``-Xnvvm``,
  ``-dopt``, ``-default-device``, ``-ewp``) switches to 32-bit shared pointers; this is why
  ``WORKBENCH_NVRTC=on`` leaves shared-memory kernels to nvcc and only ``all`` takes them;
- sources NVRTC cannot compile (``INFINITY`` from the host's math.h, ``<cstdint>``) are
  compiled by nvcc (tests/test_nvrtc.py).

The SASS comparison is gpu_checks/compare_nvrtc_sass.py (needs cuobjdump).

The default run checks one case per claim (silu_and_mul's default: same code; the
fused_add_rmsnorm config whose registers differ: the 64-bit addressing and the register
difference); ``WORKBENCH_FULL_MATRIX=1`` runs every case listed (marked ``slow``: minutes).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import FULL_MATRIX

from workbench.engine.ptxas import FunctionReport, parse_ptxas_report

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")]


@dataclass(frozen=True)
class Pair:
    """One source compiled both ways."""

    nvcc_ptx: str
    nvrtc_ptx: str
    nvcc_usage: Mapping[str, FunctionReport]
    nvrtc_usage: Mapping[str, FunctionReport]


_GLOBAL = re.compile(r"^\.global\s.*?([A-Za-z_$][\w$]*)(\[\d*\])?\s*(=.*)?;$")


def _unused_globals(lines: list[str]) -> set[str]:
    """Module-scope ``.global`` variables that nothing else in the PTX names."""
    declared = {m[1]: n for n, line in enumerate(lines) if (m := _GLOBAL.match(line.strip()))}
    text = "\n".join(line for n, line in enumerate(lines) if n not in declared.values())
    return {name for name in declared if not re.search(rf"\b{re.escape(name)}\b", text)}


def code_lines(ptx: str) -> list[str]:
    """The PTX lines that are code (see the module docstring for what is left out)."""
    out: list[str] = []
    in_debug = False
    lines = ptx.splitlines()
    unused = _unused_globals(lines)
    for line in lines:
        text = line.strip()
        if text.startswith(".section") and ".debug" in text:
            in_debug = True
        elif in_debug:
            in_debug = text != "}"
        elif not (text.startswith(("//", ".file", ".loc"))
                  or ((m := _GLOBAL.match(text)) and m[1] in unused)):
            out.append(re.sub(r"_INTERNAL_[0-9a-f]{8}", "_INTERNAL_", line))
    while out and not out[-1].strip():
        out.pop()
    return out


def compile_pair(compiler: Any, source: str, work: Path) -> Pair:
    """``source`` compiled in ``work`` by NVRTC (the sandboxed child) and by nvcc, each with
    the Compiler's flags: the PTX of each and the ptxas usage of each cubin."""
    from workbench.engine.nvrtc import nvrtc_options, run_nvrtc
    from workbench.engine.sandbox import DEFAULT_LIMITS

    options = nvrtc_options(compiler.flags)
    assert compiler.backend is not None and options is not None
    (work / "source.cu").write_text(source)
    done = run_nvrtc(compiler.backend, options, work, source="source.cu", cubin="r.cubin",
                     ptx="r.ptx", limits=DEFAULT_LIMITS, timeout_s=300)
    assert done.returncode == 0, done.log
    # one nvcc run: -keep leaves the PTX it handed ptxas (source.ptx) beside the cubin
    cubin = subprocess.run([str(compiler.nvcc), *compiler.flags, "-keep", "-o", "n.cubin",
                            "source.cu"], cwd=work, capture_output=True, text=True, check=True)
    return Pair((work / "source.ptx").read_text(), (work / "r.ptx").read_text(),
                parse_ptxas_report(cubin.stdout + cubin.stderr), parse_ptxas_report(done.log))


@pytest.fixture(scope="module")
def compile_both(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Pair]:
    from workbench.engine.compiler import Compiler
    from workbench.engine.nvrtc import nvcc_build

    compiler = Compiler("sm_90a", cache_dir=tmp_path_factory.mktemp("cache"), nvrtc="on")
    if compiler.backend is None:
        pytest.skip("no libnvrtc of nvcc's release (pip install nvidia-cuda-nvrtc)")
    if compiler.backend.build != nvcc_build(compiler.version) or not compiler.backend.build:
        pytest.skip(f"the facts below are of NVRTC and nvcc of one build (13.0.88); here "
                    f"NVRTC {compiler.backend.build or '?'} and nvcc "
                    f"{nvcc_build(compiler.version) or '?'}")
    return lambda source: compile_pair(compiler, source, tmp_path_factory.mktemp("pair"))


def rendered(folder: str, dtype: str | None = None, **change: int) -> str:
    from workbench.core.kernel_folder.load import load_kernel_folder

    kernel = load_kernel_folder(ROOT / folder)
    template = kernel.template
    config = {**template.default_config(), **change}
    return template.render(config, dtype or kernel.dtypes[0]).source


NO_SHARED = [
    ("sample_kernels/silu_and_mul", "bf16", {}),
    ("sample_kernels/silu_and_mul", "fp16", {}),
    ("sample_kernels/silu_and_mul", "bf16", {"FAST_EXP": 2, "UNROLL": 2}),
    ("sample_kernels/silu_and_mul", "fp16", {"LOAD_PATH": 4, "TOKENS_PER_BLOCK": 2}),
    ("benchmarks/corpus/gelu", None, {}),
    ("benchmarks/corpus/embedding", None, {}),
    ("benchmarks/corpus/silu_mul", None, {}),
    ("benchmarks/corpus/stencil5", None, {}),
    ("benchmarks/corpus_compute/conv2d_const", None, {}),
    ("benchmarks/corpus_compute/stencil3d", None, {}),
]
SHARED = [  # (case, ptxas registers from nvcc, from NVRTC) where they differ, else None
    (("sample_kernels/fused_add_rmsnorm", "bf16", {}), None),
    (("sample_kernels/fused_add_rmsnorm", "fp16", {}), None),
    (("sample_kernels/fused_add_rmsnorm", "bf16", {"ITEMS": 2}), None),
    (("sample_kernels/fused_add_rmsnorm", "bf16", {"ROW_IN_REGS": 1}), None),
    (("sample_kernels/fused_add_rmsnorm", "bf16", {"ROW_IN_REGS": 1, "ITEMS": 2}), (50, 52)),
    (("sample_kernels/fused_add_rmsnorm", "bf16", {"CACHE_HINT": 1, "VEC_BYTES": 8}), (32, 30)),
    (("sample_kernels/fused_add_rmsnorm", "bf16", {"CLUSTER": 2, "ROW_IN_REGS": 1}), None),
    (("sample_kernels/fused_add_rmsnorm", "bf16", {"HIDDEN_CONST": 4096, "BLOCK_THREADS": 256}),
     None),
    (("benchmarks/corpus/rms_norm", None, {}), None),
    (("benchmarks/corpus/transpose", None, {}), (25, 24)),
    (("benchmarks/corpus_compute/gemm_smem", None, {}), None),
    (("benchmarks/corpus_compute/partial_sum", None, {}), None),
]


_FULL_ONLY = [pytest.mark.slow, pytest.mark.skipif(
    not FULL_MATRIX, reason="one case per claim by default; WORKBENCH_FULL_MATRIX=1 runs all")]
#: The case of each claim the default run keeps.
FAST_NO_SHARED: tuple[str, str, dict[str, int]] = ("sample_kernels/silu_and_mul", "bf16", {})
FAST_SHARED = ("sample_kernels/fused_add_rmsnorm", "bf16", {"ROW_IN_REGS": 1, "ITEMS": 2})


def _id(case: tuple[str, str | None, dict[str, int]]) -> str:
    folder, dtype, change = case
    return "-".join([folder.rsplit("/", 1)[1], dtype or "", *(f"{k}{v}" for k, v in
                                                             change.items())]).strip("-")


CONSTANTS = """\
const int MAX_ITER = 30;
constexpr float TOL = 1e-6f;
namespace { constexpr int kUnroll = 4; }
extern "C" __global__ void solve(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
#pragma unroll kUnroll
  for (int k = 0; k < MAX_ITER && v > TOL; ++k) v = v - (v * v - 2.f) / (2.f * v);
  x[i] = v;
}
"""


def test_namespace_constants_become_unused_globals_and_nothing_else(compile_both) -> None:
    pair = compile_both(CONSTANTS)
    assert code_lines(pair.nvrtc_ptx) == code_lines(pair.nvcc_ptx)
    assert pair.nvrtc_usage == pair.nvcc_usage
    kept = _unused_globals(pair.nvrtc_ptx.splitlines())
    assert {"MAX_ITER", "TOL"} <= kept and not _unused_globals(pair.nvcc_ptx.splitlines())


@pytest.mark.parametrize("case", [
    pytest.param(c, id=_id(c), marks=() if c == FAST_NO_SHARED else _FULL_ONLY)
    for c in NO_SHARED])
def test_without_shared_memory_nvrtc_gives_nvccs_code(case, compile_both) -> None:
    folder, dtype, change = case
    pair = compile_both(rendered(folder, dtype, **change))
    assert code_lines(pair.nvrtc_ptx) == code_lines(pair.nvcc_ptx)
    assert ".shared" not in pair.nvcc_ptx
    assert pair.nvrtc_usage == pair.nvcc_usage and pair.nvcc_usage


_SHARED_32 = re.compile(r"\b(?:ld|st)\.shared\.\S+\s+(?:%\w+, )?\[%r\d+")
_SHARED_64 = re.compile(r"\b(?:ld|st)\.shared\.\S+\s+(?:%\w+, )?\[%rd\d+")


@pytest.mark.parametrize(("case", "registers"), [
    pytest.param(c, r, id=_id(c), marks=() if c == FAST_SHARED else _FULL_ONLY)
    for c, r in SHARED])
def test_with_shared_memory_the_addressing_differs_and_sometimes_the_registers(
        case, registers: tuple[int, int] | None, compile_both) -> None:
    folder, dtype, change = case
    pair = compile_both(rendered(folder, dtype, **change))
    # nvcc: 32-bit shared addresses; NVRTC 13.0: 64-bit ones. When this fails, NVRTC has
    # caught up: check the PTX for equality and reconsider what WORKBENCH_NVRTC=on covers.
    assert _SHARED_32.search(pair.nvcc_ptx) and not _SHARED_64.search(pair.nvcc_ptx)
    assert _SHARED_64.search(pair.nvrtc_ptx)
    assert code_lines(pair.nvrtc_ptx) != code_lines(pair.nvcc_ptx)
    (entry,) = (name for name, report in pair.nvcc_usage.items() if report.is_entry)
    nvcc, nvrtc = pair.nvcc_usage[entry], pair.nvrtc_usage[entry]
    if registers is None:
        assert nvrtc == nvcc
    else:
        assert (nvcc.regs_per_thread, nvrtc.regs_per_thread) == registers
