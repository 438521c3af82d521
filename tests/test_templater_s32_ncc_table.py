"""Session 32 (issue 28): ncc_patch8's template in shared memory. The expert stages the small
8 x 8 template once a block (TSM); the templater read it through the global pointer every
thread reads at the same indices. TABLE_VIA (:mod:`workbench.templater.table_via`, beside
:mod:`.const_via`'s copy of a ``__constant__`` table, the same emitted copy) offers a
shared copy of a const pointer parameter whose every read is ``p[index]`` (or
``__ldg(&p[index])``) at an index of constant-bound loop counters and constants: the copy
holds elements 0 .. the largest index the loops reach.

Refused, with the line: a pointee that is not const, an index reading the thread's place or
a value the loops do not bound, a write or an address taken, a read that may go below 0.

Host (g++): the corpus kernel and two respellings (constexpr sizes, ``__ldg`` reads at
``tmpl[(dy) * PATCH + dx]``, a guarded-load helper; ``#ifndef`` sizes, the template's mean
and energy from a helper writing through references) bit for bit against the kernels as
written at the default, mixes with TABLE_VIA = 1 and the all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen19
import held_back_unseen23
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401
from test_templater import SYNTHETIC

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

NCC = held_back_unseen23.SET.root / "ncc_patch8"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s32_ncc"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD", "LOAD_FLAT", "USE_SMEM", "INTERIOR",
         "MIN_BLOCKS_PER_SM", "TABLE_VIA"}
#: the corpus kernel and its respellings (tests/spellings_s32_ncc/)
NAMES = ["ncc_patch8", "ncc_patch8_ldg_constexpr", "ncc_patch8_stats_helper"]
MIXES = [{"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_Y": 4, "PAD": 1, "TABLE_VIA": 1},
         {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 8, "USE_SMEM": 0, "TABLE_VIA": 1},
         {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 2, "INTERIOR": 1, "TABLE_VIA": 1}]


def _folder(name: str, root: Path) -> KernelFolder:
    if name == "ncc_patch8":
        return load_kernel_folder(NCC)
    return respelled(NCC, root, (SPELLINGS / f"{name}.cu").read_text())


def _host(source: str) -> str:
    return held_back_unseen23.SET.host_source("#define __ldg(p) (*(p))\n" + source)


@pytest.mark.parametrize("name", NAMES)
def test_the_template_is_staged_once_a_block(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    lifted = result.lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert any(n.startswith("TABLE_VIA: applied:") and "64 elements" in n
               for n in lifted.notes), lifted.notes
    assert "__shared__ float wb_" in lifted.source and "_s[64];" in lifted.source
    # the copy beside the tile: the tile's shared memory limit carries its 256 bytes
    limits = [c.text for c in result.template.constraints]
    assert any(c.startswith("TABLE_VIA == 0 or ") and "+ 256 <= 49152" in c
               for c in limits), limits


_KERNEL = """#define P 4
extern "C" __global__ void k(float *out, {tab} *t, const float *x, int n, int s)
{{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int a = 0; a < P; ++a)
        for (int b = 0; b < P; ++b)
            acc += x[i] * {read};
    out[i] = acc;
}}
"""


def _lift(tab: str, read: str) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(_KERNEL.format(tab=tab, read=read), entry="k", grid=["n"],
                         block=["256"], scalars={"n": "n"})
    return {p.name for p in lifted.params}, lifted.notes


def test_a_small_table_read_by_loop_counters_lifts() -> None:
    names, notes = _lift("const float", "t[a * P + b]")
    assert "TABLE_VIA" in names, notes
    assert any(n.startswith("TABLE_VIA: applied: t (const, 16 elements") for n in notes), notes


@pytest.mark.parametrize(("tab", "read", "why"), [
    ("float", "t[a * P + b]", None),  # not const: no note (the kernel may write it)
    ("const float", "t[a * P + b + threadIdx.x]", "constant-bound loop counters"),
    ("const float", "t[a * P + b + s]", "constant-bound loop counters"),
    ("const float", "t[a * P - b]", "may read below the table"),
    ("const float", "t[a * P + b + 100000]", "not a small table"),
])
def test_a_table_the_analysis_cannot_bound_stays_global(tab: str, read: str,
                                                        why: str | None) -> None:
    names, notes = _lift(tab, read)
    assert "TABLE_VIA" not in names, notes
    if why is not None:
        assert any(n.startswith("TABLE_VIA: not applied:") and why in n and "(line 9)" in n
                   for n in notes), notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", NAMES)
def test_the_staged_template_computes_as_written(name: str, tmp_path: Path,
                                                  host_flags: tuple[str, ...]  # noqa: F811
                                                  ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    if not FULL_MATRIX:
        configs = configs[:6]
    assert sum(c["TABLE_VIA"] == 1 for c in configs) >= 3, configs
    assert same_as_written(kf, template, configs, _host, tmp_path / "run", host_flags) == \
        len(configs)


def test_reads_another_transform_writes_anew_keep_the_table_global() -> None:
    """fourier_synth_f64's coefficient tables ``a[k]``, ``b[k]`` (k < 512) pass the
    analysis, but its items transform renders the loop's reads as written (and its TABLE
    stages their terms already): a copy no read goes through is refused, with the line."""
    lifted = offline_template(held_back_unseen19.SET.folder("fourier_synth_f64")).lifted
    assert "TABLE_VIA" not in {p.name for p in lifted.params}, lifted.notes
    assert "TABLE_VIA: not applied: another transform rewrote the reads of a (they render " \
        "as written, not through the copy): the copy would serve none of them (line 21)" in \
        lifted.notes, lifted.notes


def test_a_counter_named_again_inside_is_no_bound() -> None:
    """``k`` declared again in an inner block is another variable (the thread's place)."""
    source = """#define P 4
extern "C" __global__ void k(float *out, const float *t, const float *x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int a = 0; a < P; ++a) {
        { const int a = threadIdx.x; acc += x[i] * t[a]; }
    }
    out[i] = acc;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["n"], block=["256"], scalars={"n": "n"})
    assert "TABLE_VIA" not in {p.name for p in lifted.params}, lifted.notes
    # (an earlier pass names the inner ``a`` apart: ``a_2``)
    assert any(n.startswith("TABLE_VIA: not applied: `t[a") and "(line 8)" in n
               for n in lifted.notes), lifted.notes


def test_a_bound_a_knob_sets_keeps_the_table_global() -> None:
    """A loop bound read through a named constant that another transform makes a knob
    (kItemsPerThread -> ITEMS_PER_THREAD) would size the copy for the written value only: at
    ITEMS_PER_THREAD 8 the loop reads past a 4-element copy. Refused, with the name."""
    source = SYNTHETIC  # kItemsPerThread = 4 bounds the loop reading in[i]
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}, lifted.notes
    assert "TABLE_VIA" not in {p.name for p in lifted.params}, lifted.source
    assert any("TABLE_VIA: not applied" in n and "`kItemsPerThread`, which a knob now sets" in n
               for n in lifted.notes), lifted.notes
