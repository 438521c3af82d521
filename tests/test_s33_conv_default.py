"""Session 33 (issue 28): a lift's default config compiles to the kernel as written.

nhwc_conv5x5_c3to4 (corpus_compute_unseen25) ran slower at its tuned pick than as written
on the H200, though the search measures the default first: the default itself was slower.
ITEMS_PER_THREAD's rewrite (workbench/templater/ilp.py) kept one item's ``live`` flags and
split every shared loop into an all-live copy and a guarded copy even at one item; the
doubled body changed nvcc's unrolling (sm_90: 1004 SASS instructions and 75 global loads as
written, 177 and 6 at the default: the 5 x 5 taps left rolled). At one item the thread now
returns where it returns as written (``if (ITEMS_PER_THREAD == 1) return;`` after the item's
``live`` flag is cleared: :func:`workbench.templater.ilp.leave_at_one`), so the code after
knows the item live: no flag test, the split loops' second copies dead, and the default's
SASS is the kernel as written's (1004 instructions, 32 registers).

The SASS check compiles both with ``nvcc -cubin -arch=sm_90 -Xptxas -v`` (no GPU) and
compares registers (ptxas) and the instruction count: a disassembler's where one is on PATH
(cuobjdump or nvdisasm: benchmarks/lift_default_shape.py), else the size of the entry's
``.text`` section in the cubin (16 bytes an sm_90 instruction, NOPs included).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import held_back_unseen25
import pytest
from held_back_harness import respelled
from helpers_nvcc import needs_nvcc

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import render_source
from workbench.templater import offline_template
from workbench.templater.ilp import LEAVE_MARK, leave_at_one

ROOT = Path(__file__).resolve().parents[1]
CONV = held_back_unseen25.SET.root / "nhwc_conv5x5_c3to4"


def _text_instructions(cubin: bytes, entry: str) -> int:
    """Instructions in the ``.text.<entry>`` section of an ELF64 cubin (16 bytes each)."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + k * shentsize)
               for k in range(shnum)]
    names = headers[shstrndx][4]  # sh_offset of the section names

    def name(h: tuple[int, ...]) -> str:
        start = names + h[0]
        return cubin[start:cubin.index(b"\0", start)].decode()

    sizes = [h[5] for h in headers if name(h) == f".text.{entry}"]
    assert sizes, f"no .text.{entry} in the cubin"
    return sizes[0] // 16


def _shape(source: str, entry: str, tmp: Path) -> tuple[int, int]:
    """(registers, instructions) of ``entry`` compiled for sm_90."""
    cu, cubin = tmp / f"{entry}.cu", tmp / f"{entry}.cubin"
    cu.write_text(source)
    done = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v",
                           "--std=c++17", "-o", str(cubin), str(cu)],
                          capture_output=True, text=True, check=True)
    regs = re.findall(r"Used (\d+) registers", done.stderr)
    assert len(regs) == 1, done.stderr
    for tool, flag in (("cuobjdump", "-sass"), ("nvdisasm", "-c")):
        found = shutil.which(tool)
        if found:
            sass = subprocess.run([found, flag, str(cubin)], capture_output=True, text=True,
                                  check=True).stdout
            ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)",
                             sass)
            return int(regs[0]), sum(op != "NOP" for op in ops)
    return int(regs[0]), _text_instructions(cubin.read_bytes(), entry)


@needs_nvcc
@pytest.mark.parametrize("folder", [
    CONV,
    # interleaved items in other shapes: a per-element loop over a table; a sum over a
    # constant table's taps (both as written at the default too)
    ROOT / "benchmarks" / "corpus_compute_unseen25" / "colebrook_newton_f64",
])
def test_the_default_compiles_to_the_kernel_as_written(folder: Path, tmp_path: Path) -> None:
    kf = load_kernel_folder(folder)
    template = offline_template(kf).template
    base = kf.baseline
    dtype = kf.dtypes[0]
    plain = render_source(base.entry, base.source, {}, dtype, base.source_name)
    default = template.render(template.default_config(), dtype).source
    (tmp_path / "plain").mkdir()
    (tmp_path / "lift").mkdir()
    want = _shape(plain, base.entry, tmp_path / "plain")
    got = _shape(default, template.entry, tmp_path / "lift")
    assert got[0] <= want[0] + 1, (want, got)
    # within 2% (4% fewer: session 34's rows of the conv at OUT_Y 1 are 984 instructions of
    # the 1016 as written, 32 registers both, the taps unrolled alike)
    assert -max(4, want[1] // 25) <= got[1] - want[1] <= max(4, want[1] // 50), (want, got)


def test_one_item_returns_where_the_kernel_as_written_returns(tmp_path: Path) -> None:
    """The conv's lift: the item's exit returns at one item (UNROLL's pragmas stay). The
    corpus kernel is output rows since session 34; its spelling with one loop of 25 taps
    (tests/spellings_s33_conv/) keeps the items."""
    flat = ROOT / "tests" / "spellings_s33_conv" / "nhwc_conv5x5_c3to4_float3_flat.cu"
    lifted = offline_template(respelled(CONV, tmp_path, flat.read_text())).lifted
    assert {"ITEMS_PER_THREAD", "UNROLL"} <= {p.name for p in lifted.params}, lifted.notes
    assert "if ((x[wb_it] >= W) || (y >= H)) { if (ITEMS_PER_THREAD == 1) return; " \
        "wb_live[wb_it] = false; continue; }" in lifted.source, lifted.source
    assert LEAVE_MARK not in lifted.source


def test_a_barrier_after_an_item_ends_keeps_the_items_flags() -> None:
    """A barrier or warp collective that may run after the item's end (a transform after the
    items' may add one the thread as written never reached): the marks are dropped, no
    return. One at the body's top level before the end (a staged tile) keeps them."""
    end = f"if (i >= n) {{ {LEAVE_MARK} wb_live[wb_it] = false; continue; }}\n"
    kept = "if (i >= n) { if (ITEMS_PER_THREAD == 1) return; wb_live[wb_it] = false; " \
        "continue; }\n"
    dropped = "if (i >= n) { wb_live[wb_it] = false; continue; }\n"

    def kernel(before: str, after: str) -> str:
        return f"__global__ void k() {{\n{before}\n{end}{after}\n}}\n"
    assert leave_at_one(kernel("", "")) == kernel("", "").replace(end, kept)
    for together in ("__syncthreads();", "__shfl_down_sync(~0u, v, 1);", "__syncwarp();"):
        assert leave_at_one(kernel("", together)) == kernel("", together).replace(end, dropped)
    staged = "if (t < 64) { s[t] = g[t]; }\n__syncthreads();  // the table { is staged"
    assert leave_at_one(kernel(staged, "")) == kernel(staged, "").replace(end, kept)
    # a loop around both reaches the barrier again after a return: rounds of items
    rounds_head = "for (int r = 0; r < R; ++r) {\n  if (t < 64) { __syncthreads(); }\n"
    looped = f"__global__ void k() {{\n{rounds_head}{end}}}\n}}\n"
    assert leave_at_one(looped) == looped.replace(end, dropped)
