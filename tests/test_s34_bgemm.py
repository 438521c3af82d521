"""Session 34 (bgemm): unseen26's bgemm_abt_dyn, a batched C = A B^T whose tile loop lives in
a ``template <int TILE> __device__`` body instantiated at 16 by the extern "C" entry, both
16 x 17 tiles carved out of ``extern __shared__ float smem[]`` by pointer offsets (the
launch's dynamic shared memory 2 * 16 * 17 floats).

Before, nothing lifted: the body was inlined (TILE = 16), but the tiles were pointers into
a buffer the launch sizes, which the block lift may not resize and the register-tile family
does not read. Now the carved buffer is read as the static arrays it holds
(:mod:`workbench.templater.shared_carves`): ``__shared__ float sa[TILE * (TILE + 1)]``,
``sb`` likewise (the second part's extent is the first's, what the launch leaves after it),
each read at one row stride ``TILE + 1`` written 2-D, ``sa[TILE][(TILE + 1)]``
(:func:`workbench.templater.apron_flat.flat_rows`), and the launch's dynamic shared memory
0. The register-tile family (:mod:`workbench.templater.regtile`) then lifts BM, BN, BK, TM,
TN and VEC: the expert's knobs (its VEC also reads shared rows as float4; the lift's stages
the tiles with float4 loads).

Respellings (tests/spellings_s34_bgemm/): a file-scope ``constexpr`` tile and padded row
(``kLd = kTile + 1``: a constant read through an earlier one,
:func:`workbench.templater.tile_count_loops.file_integers`), a plain ``__device__`` body,
the buffer carved as ``&smem[0]`` and the second part offset from the first, ``if``/``else``
tile stores, size_t row offsets through batch pointers; a ``template <int BS>`` body with
the padding a macro, the offset ``(size_t)(..) + buf``, unsigned thread indices. Both lift
the same knobs and compute as written on the host (bit for bit).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen26
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.coop_groups import inlined_after_groups
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.shared_carves import static_carves

SPELLINGS = Path(__file__).resolve().parent / "spellings_s34_bgemm"
HELD = held_back_unseen26.SET
KERNEL = "bgemm_abt_dyn"
KNOBS = frozenset({"BM", "BN", "BK", "TM", "TN", "VEC"})
SPELLED = ["", "bgemm_abt_dyn_constexpr_helper", "bgemm_abt_dyn_macro_template"]
#: Knob mixes over the default: a 64 x 32 tile of 4 x 4 outputs a thread, float4 staging
#: (37 x 45: one block row, two columns, the last cut); 32 x 128 of 4 x 4, K steps of 32
#: (K = 36: one full step and one of 4); 128 x 16 of 8 x 4 over 8-deep
#: steps; the expert's tuned pick on the H200 (64 x 64 of 8 x 4, 32-deep, float4).
MIXES = [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "VEC": 4},
         {"BM": 32, "BN": 128, "BK": 32, "TM": 4, "TN": 4, "VEC": 4},
         {"BM": 128, "BN": 16, "BK": 8, "TM": 8, "TN": 4, "VEC": 4},
         {"BM": 64, "BN": 64, "BK": 32, "TM": 8, "TN": 4, "VEC": 4}]


def _folder(name: str, root: Path, edit: tuple[str, str] = ("", "")) -> KernelFolder:
    source = (SPELLINGS / f"{name}.cu").read_text() if name else \
        (HELD.root / KERNEL / "baseline.cu").read_text()
    if edit[0]:
        assert edit[0] in source, edit
        source = source.replace(*edit)
    return respelled(HELD.root / KERNEL, root, source)


def _knobs(kf: KernelFolder) -> tuple[set[str], tuple[str, ...]]:
    """The lifted knobs and the notes (nothing lifted: the error's findings)."""
    try:
        lifted = offline_template(kf).lifted
    except TemplateError as nothing:
        return set(), tuple(nothing.details["findings"])
    return {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize("name", SPELLED)
def test_the_carved_tiles_lift_the_register_tile(name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path)
    lifted = offline_template(kf).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert lifted.smem_bytes == "0"  # the tiles are static arrays the knobs size
    assert "extern __shared__ float" not in lifted.source.split("*/")[-1].replace(
        "(extern __shared__,", "")  # only the header comment names it
    assert any(n.startswith("SHARED_CARVE: applied: `extern __shared__ float") for n in
               lifted.notes), lifted.notes
    assert any(n.startswith("REGISTER_TILE: applied: tiled product") for n in lifted.notes)


@pytest.mark.parametrize("edit", [
    # the buffer declared at file scope
    ("    extern __shared__ float smem[];\n", ""),
    # an alignment on the buffer
    ("extern __shared__ float smem[];", "extern __shared__ alignas(16) float smem[];"),
])
def test_other_declarations_of_the_buffer_lift_alike(edit: tuple[str, str],
                                                     tmp_path: Path) -> None:
    source = (HELD.root / KERNEL / "baseline.cu").read_text().replace(*edit)
    if not edit[1]:
        source = source.replace("template <int TILE>\n",
                                "extern __shared__ float smem[];\n\ntemplate <int TILE>\n")
    kf = respelled(HELD.root / KERNEL, tmp_path, source)
    names, notes = _knobs(kf)
    assert names == KNOBS, notes
    assert any(n.startswith("SHARED_CARVE: applied") for n in notes), notes


def _inlined(text: str) -> InlinedSource:
    """The kernel as the carve reads it: the templated body inlined at TILE = 16."""
    return inlined_after_groups(text, KERNEL, "baseline.cu", ["16", "16"])


def test_the_carve_reads_offsets_and_extents() -> None:
    """The parts as static arrays: the first's extent the second's offset, the second's the
    first's (what the launch leaves), each read 2-D at its row stride; line numbers kept."""
    text = _inlined((HELD.root / KERNEL / "baseline.cu").read_text()).text
    carved, smem = static_carves(InlinedSource(text, "baseline.cu"), KERNEL, "2176")
    assert smem == "0"
    assert "__shared__ float sa[TILE][(TILE + 1)];" in carved.text
    assert "__shared__ float sb[TILE][(TILE + 1)];" in carved.text
    assert "sa[ty][tx] = " in carved.text and "sb[tx][kk]" in carved.text
    assert carved.text.count("\n") == text.count("\n")
    # a launch leaving the second part another size: its extent the number, read flat
    other, smem = static_carves(InlinedSource(text, "baseline.cu"), KERNEL, "2240")
    assert smem == "0" and "__shared__ float sb[288];" in other.text


@pytest.mark.parametrize(("edit", "smem", "why"), [
    # an offset known at run time only
    (("smem + TILE * (TILE + 1);", "smem + blockDim.x * (TILE + 1);"), "2176",
     "`float *sb = smem + blockDim.x * (TILE + 1);`: the offset `blockDim.x * (TILE + 1)` is "
     "not a compile-time integer"),
    # the launch sizes the buffer from the shape
    (("", ""), "K * 8", "the launch's dynamic shared memory `K * 8` is not a whole number of "
     "`float` known before the launch"),
    # a launch smaller than the parts' offsets
    (("", ""), "1024", "`sb` holds no element of `smem`"),
    # a second name of a part
    (("float acc = 0.0f;", "float acc = 0.0f; float *walk = sb;"), "2176",
     "`sb` and `walk` start at one offset of `smem`"),
    # a part handed on
    (("float acc = 0.0f;", "float acc = 0.0f; (void)(sb + 1);"), "2176",
     "uses the part `sb` other than as `sb[i]`"),
    # an element's address taken
    (("float acc = 0.0f;", "float acc = *(&sb[1]);"), "2176",
     "takes the address of an element of `sb`"),
    # the buffer read directly
    (("float acc = 0.0f;", "float acc = smem[0];"), "2176",
     "reads `smem` other than as the start of a part"),
    # more than a static array may hold
    (("", ""), "65536", "more than the 49152 bytes static shared arrays may hold"),
])
def test_a_carve_not_read_is_refused_with_its_line(edit: tuple[str, str], smem: str, why: str
                                                   ) -> None:
    text = (HELD.root / KERNEL / "baseline.cu").read_text()
    if edit[0]:
        text = text.replace(*edit)
    text = _inlined(text).text
    carved, out = static_carves(InlinedSource(text, "baseline.cu"), KERNEL, smem)
    assert out == smem and carved.text == text
    (finding,) = carved.findings
    assert finding.transform == "SHARED_CARVE" and not finding.applied
    assert why in finding.reason and finding.line > 0, finding


def test_a_body_instantiated_twice_is_not_inlined(tmp_path: Path) -> None:
    """The body at two tile sizes: no one value of TILE reads it (the inline pass's refusal),
    and nothing is carved for the kernel."""
    kf = _folder("", tmp_path, ("    abt_tile_body<16>(C, A, B, M, N, K);\n",
                                "    if (M > 8) abt_tile_body<16>(C, A, B, M, N, K);\n"
                                "    else abt_tile_body<8>(C, A, B, M, N, K);\n"))
    names, notes = _knobs(kf)
    assert not names & {"BM", "TM"}, notes
    assert any(n.startswith("INLINE: not applied") for n in notes), notes


@needs_gxx
@pytest.mark.timeout(1800)
def test_bgemm_computes_as_written(tmp_path: Path,
                                   host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """The default, the four mixes and the all-ends configs' first and last."""
    kf = HELD.folder(KERNEL)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    assert same_as_written(kf, template, configs, HELD.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", SPELLED[1:])
def test_the_respelling_computes_as_written(name: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]  # noqa: F811
                                            ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES[:1])[:2]
    assert same_as_written(kf, template, configs, HELD.host_source, tmp_path / "run",
                           host_flags) == len(configs)
