"""Session 33 (issue 28): nhwc_conv5x5_c3to4's four output channels stored as one float4.

The expert's pick (BX 64, BY 2, ITEMS_Y 2, STORE4 1, USE_SMEM 1) ran 1.56x the kernel as
written on the H200; the templater's lift had no store knob. STORE_VEC
(:mod:`workbench.templater.store_vec`) writes a constant-trip loop storing N consecutive
elements (``for (o = 0; o < COUT; ++o) dst[o] = acc[o];``, N = 4) as one vector in its first
trip, where the analysis shows the first element's place a multiple of N elements from a
buffer parameter's start (``dst = out + (..) * COUT``, or ``out[(..) * CO + o]``) and the
value reads no memory the stores may change. Refused with the line otherwise.

USE_SMEM (the block's input window staged in shared memory): gather_stage.py stages a window
read through a helper taking the position; it missed this kernel four ways, now read: the
image pointer ``img = in + (size_t)blockIdx.z * H * W * CIN`` is uniform over the block
(``blockIdx``, ``blockDim``, ``gridDim`` are), a local pointer is declared by ``*img``
(gather_stage._declared), the helper's ``p.r = q[0]`` writes a member of its own local, not
memory (conv_reads), and ``#define KR 2  // filter radius`` is the value 2 (its comment left
out: conv._compile_time_defs); the tile holds the helper's ``Rgb`` (a struct of three
floats, 12 bytes). The ternary spelling reads ``in[at]`` in the kernel's own body: refused
with the line (no helper, no tap).

Two respellings (tests/spellings_s33_conv/): constexpr sizes with the fetch inline as
ternaries and int index math, stored through ``out[(plane + y * W + x) * CO + o]``; a flat
``__constant__`` weight array, one loop of 25 taps, a float3 helper and size_t planes, stored
through a local pointer. Host (g++): the corpus kernel and both respellings bit for bit against
the kernels as written at the default, mixes and the all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen25
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

CONV = held_back_unseen25.SET.root / "nhwc_conv5x5_c3to4"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s33_conv"
KNOBS = {"BLOCK_X", "BLOCK_Y", "ITEMS_PER_THREAD", "UNROLL", "MIN_BLOCKS_PER_SM", "STORE_VEC"}
#: the corpus kernel and its respellings, with the knobs each lifts (the flat weights are
#: read at a warp-uniform index, `(c * TAPS * TAPS + t) * NIN` with TAPS the macro
#: `(2 * RADIUS + 1)` read as 5 (macros.derived_macros): constant memory broadcasts them, so
#: CONST_VIA is not offered)
#: USE_SMEM where the reads go through a helper taking the position (gather_stage); the
#: ternary spelling reads in[] in the kernel's own body: refused, with the line (a gap)
#: Session 34: the corpus kernel and the ternary spelling (a 2-D window: dy, dx) are output
#: rows now (conv_centre's OUT_Y, tests/test_s34_rows_channels.py), the staged window
#: conv_centre_stage's (one read a tap; the ternary's three reads are refused); the flat
#: spelling's one loop of 25 taps is no 2-D window: items, as before
ROWS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "MIN_BLOCKS_PER_SM", "STORE_VEC"}
NAMES = {"nhwc_conv5x5_c3to4": ROWS | {"USE_SMEM"},
         "nhwc_conv5x5_c3to4_ternary_int": ROWS,
         "nhwc_conv5x5_c3to4_float3_flat": KNOBS | {"USE_SMEM"}}
MIXES = [{"STORE_VEC": 1},
         {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 8, "STORE_VEC": 1},
         {"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_PER_THREAD": 2, "UNROLL": 1, "STORE_VEC": 1},
         {"BLOCK_X": 16, "BLOCK_Y": 8, "ITEMS_PER_THREAD": 1, "UNROLL": 2, "STORE_VEC": 1,
          "MIN_BLOCKS_PER_SM": 4}]
#: the expert's pick's shape with the staged window (USE_SMEM), and one with items along x
SMEM_MIXES = [{"BLOCK_X": 64, "BLOCK_Y": 2, "USE_SMEM": 1, "STORE_VEC": 1},
              {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_PER_THREAD": 2, "UNROLL": 4,
               "USE_SMEM": 1, "STORE_VEC": 1},
              {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_PER_THREAD": 4, "USE_SMEM": 1}]

_HOST_VECTORS = """
struct float3 { float x, y, z; };
static inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
"""


def _folder(name: str, root: Path) -> KernelFolder:
    if name == "nhwc_conv5x5_c3to4":
        return load_kernel_folder(CONV)
    return respelled(CONV, root, (SPELLINGS / f"{name}.cu").read_text())


def _host(source: str) -> str:
    return held_back_unseen25.SET.host_source(_HOST_VECTORS + source)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_four_channels_store_as_one_float4(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == NAMES[name], lifted.notes
    assert any(n.startswith("STORE_VEC: applied: the 4 stores of the loop at line ") and
               "as one float4" in n for n in lifted.notes), lifted.notes
    assert "*reinterpret_cast<float4 *>(&" in lifted.source
    rows = "OUT_Y" in NAMES[name]
    if "USE_SMEM" in NAMES[name]:
        assert any(n.startswith("USE_SMEM: applied: the block's (BLOCK_Y * OUT_Y + 4)" if rows
                                else "USE_SMEM: applied: 1 tap(s)") for n in lifted.notes)
    else:
        assert any(n.startswith("USE_SMEM: not applied: the taps make 3 reads per point")
                   for n in lifted.notes), lifted.notes
    each = "acc[{}]" if rows else "acc[wb_it][{}]"  # a row's sums by reference, or an item's
    assert "= make_float4({});".format(", ".join(each.format(k) for k in range(4))) \
        in lifted.source, lifted.source


_STORE = """#define C 4
extern "C" __global__ void k(float *out, const float *in, int n)
{{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[C];
    for (int o = 0; o < C; ++o) acc[o] = in[i] * (o + 1);
    {decl}
    for (int o = {start}; o < {trips}; ++o)
        {store};
}}
"""


def _lift(decl: str, store: str, start: int = 0, trips: str = "C") -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(_STORE.format(decl=decl, store=store, start=start, trips=trips),
                         entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars={"n": "n"})
    return {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize(("decl", "store"), [
    ("float *dst = out + i * C;", "dst[o] = acc[o]"),
    ("float *dst = &out[(size_t)i * 4];", "dst[o] = acc[o] * 2.0f"),
    ("", "out[C * i + o] = acc[o]"),
    ("", "out[o + i * 8] = acc[o]"),
])
def test_a_run_of_four_at_a_multiple_of_four_stores_as_one(decl: str, store: str) -> None:
    names, notes = _lift(decl, store)
    assert "STORE_VEC" in names, notes


@pytest.mark.parametrize(("decl", "store", "start", "trips", "why"), [
    ("float *dst = out + i * 3;", "dst[o] = acc[o]", 0, "C",
     "the term `i * 3` is not shown a multiple of 4 elements"),
    ("", "out[i * 4 + o + 1] = acc[o]", 0, "C",
     "the term `1` is not shown a multiple of 4 elements"),
    ("float *dst = out + i * C;", "dst[o] = dst[o] + acc[o]", 0, "C",
     "reads memory through a pointer"),
    ("float *dst = out + i * C;", "dst[o] = acc[o]", 1, "C", "starts at 1, not 0"),
    ("float *dst = out + i * C;", "dst[o] = acc[o]", 0, "3", "3 stores of float have no vector"),
    ("float *dst = out + i * C; dst += 1;", "dst[o] = acc[o]", 0, "C",
     "the pointer `dst` is assigned after its declaration"),
])
def test_a_run_the_analysis_cannot_align_stays_as_written(decl: str, store: str, start: int,
                                                          trips: str, why: str) -> None:
    names, notes = _lift(decl, store, start, trips)
    assert "STORE_VEC" not in names, notes
    assert any(n.startswith("STORE_VEC: not applied: ") and why in n and "(line " in n
               for n in notes), notes


def test_a_store_to_a_local_array_is_no_candidate() -> None:
    names, notes = _lift("float tmp[C];", "tmp[o] = acc[o]")
    assert "STORE_VEC" not in names and not any("STORE_VEC" in n for n in notes), notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_lift_computes_as_written(name: str, tmp_path: Path,
                                      host_flags: tuple[str, ...]  # noqa: F811
                                      ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    smem = SMEM_MIXES if "USE_SMEM" in NAMES[name] else []
    knobs = {p.name for p in template.params}
    rows = [{"OUT_Y": 2}, {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_Y": 8, "STORE_VEC": 1}] \
        if "OUT_Y" in knobs else []
    mixes = [{k: v for k, v in m.items() if k in knobs} for m in [*MIXES, *smem, *rows]]
    mixes = [m for k, m in enumerate(mixes) if m not in mixes[:k]]  # items' knobs dropped
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    if not FULL_MATRIX:
        configs = configs[:len(mixes) + 3]
    assert sum(c["STORE_VEC"] == 1 for c in configs) >= 4, configs
    assert same_as_written(kf, template, configs, _host, tmp_path / "run", host_flags) == \
        len(configs)
