"""Session 34 (issue 28): register rows for 2-D filters whose taps are walked with a pointer.

u8_filter7x7_const (held-back set 26; 0.23x of the expert on the H200) walks its 49
``__constant__`` taps with ``const float *t = taps; .. sum += *t++ * (float)row[xx];``. The
window family (:mod:`workbench.templater.conv`: OUT_Y rows a thread, each of the OUT_Y + 6
input rows loaded once and added into every accumulator it feeds, OUT_X columns, USE_SMEM's
staged window) reads a tap's weight through its index, so the same filter lifted those knobs
only where its taps were indexed, and the kernel as written got ITEMS_X / ITEMS_Y, which
repeat the per-pixel work (every input row re-read). :mod:`.pointer_taps` now reads the
postfix walk ``*t++`` as ``t[(dy + 3) * 7 + (dx + 3)]`` where the read runs exactly once a
pass of the innermost loop (:func:`~workbench.templater.pointer_taps._postfix_read`), and its
loop bounds may be file-scope ``constexpr`` integers (``constexpr int kSide = 2 * kRadius +
1``: :func:`~workbench.templater.tile_count_loops.file_integers` now reads one defined from
another). Each output's taps arrive in the written order (dy, then dx), so every config is
bit-identical to the kernel as written.

Refused (the pointer stays as written): a walk under a condition or a ternary, a walk whose
statement names the pointer again, a prefix ``*++t`` (reads the next tap), a statement after
it naming the pointer, a ``continue`` of the loop's own.

Host (g++): the corpus kernel and two respellings (tests/spellings_s34_rows/: constexpr sizes,
a clamp helper, the wrapping check and ``const float w = *tap++;``; ``#define KS 7``, int
offsets and ``(float)src[cx] * *(w++)``) bit for bit against the kernels as written at the
default, a mix of knobs and the all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen13
import held_back_unseen16
import held_back_unseen19
import held_back_unseen26
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.pointer_taps import pointer_taps

FILTER = held_back_unseen26.SET.root / "u8_filter7x7_const"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s34_rows"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM", "MIN_BLOCKS_PER_SM"}
#: the corpus kernel and its respellings (tests/spellings_s34_rows/)
NAMES = ["u8_filter7x7_const", "u8_filter7x7_tapwalk_helper", "u8_filter7x7_ks_macro"]
MIXES = [{"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_Y": 4, "USE_SMEM": 1},
         {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 8, "USE_SMEM": 0},
         {"BLOCK_X": 32, "BLOCK_Y": 16, "OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 1,
          "MIN_BLOCKS_PER_SM": 2}]


def _folder(name: str, root: Path) -> KernelFolder:
    if name == "u8_filter7x7_const":
        return load_kernel_folder(FILTER)
    return respelled(FILTER, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", NAMES)
def test_the_rows_lift_through_the_tap_walk(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert any(n.startswith("OUT_Y: applied: each thread computes OUT_Y consecutive rows of "
                            "the 7 x 7 window sum") for n in lifted.notes), lifted.notes
    # the walk is gone: no family meets a stepped pointer, and no refusal is left behind
    code = [line for line in lifted.source.splitlines() if not line.startswith("//")]
    assert "++" not in "".join(line for line in code
                               if "tap" in line or " t[" in line or " w[" in line)
    assert not any(n.startswith("OUT_Y: not applied") for n in lifted.notes), lifted.notes
    assert "ITEMS_Y" not in {p.name for p in lifted.params}


_NEST = """#define K 3
extern "C" __global__ void k(float *out, const float *in, const float *wt, int n)
{{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    const float *t = wt;
    for (int a = 0; a < K; ++a)
        for (int b = -1; b <= 1; ++b) {{
            {body}
        }}
    out[i] = acc;
}}
"""


def _walked(body: str) -> str:
    source = _NEST.format(body=body)
    return pointer_taps(InlinedSource(source, "k.cu"), "k").text


@pytest.mark.parametrize(("body", "read"), [
    ("acc += *t++ * in[i + b];", "acc += t[a * 3 + (b + 1)] * in[i + b];"),
    ("acc += in[i + b] * *(t++);", "acc += in[i + b] * t[a * 3 + (b + 1)];"),
    ("const float w = *t++; acc += w * in[i + b];", "const float w = t[a * 3 + (b + 1)];"),
    ("float v = in[i + b] * t[0]; acc += v * *t++;", "acc += v * t[a * 3 + (b + 1)];"),
])
def test_a_postfix_walk_reads_the_tap_it_stands_at(body: str, read: str) -> None:
    assert read in _walked(body)


@pytest.mark.parametrize("body", [
    "if (in[i] > 0.0f) acc += *t++ * in[i + b];",  # not every pass steps it
    "acc += in[i] > 0.0f ? *t++ * in[i + b] : 0.0f;",  # a ternary between
    "acc += in[i] > 0.0f && *t++ > 0.0f ? in[i + b] : 0.0f;",  # short-circuit
    "acc += *++t * in[i + b];",  # prefix: the next tap
    "acc += *t++ * t[1];",  # the statement names it again (unsequenced)
    "acc += *t++ * in[i + b]; acc += t[0];",  # a later statement names it
    "if (in[i + b] == 0.0f) continue; acc += *t++ * in[i + b];",  # a skip before it
    "acc += *t++ * in[i + b]; acc += *t++;",  # stepped twice a pass
])
def test_a_walk_that_is_not_once_a_pass_stays(body: str) -> None:
    assert _walked(body) == _NEST.format(body=body)


def test_a_five_by_five_zero_padded_blur_with_parameter_taps_lifts_rows() -> None:
    """Another filter of the family: float, zero padding under an ``if``, the 25 taps a
    kernel parameter walked ``*w++`` in the loop's update-free body."""
    source = """#define R 2
extern "C" __global__ void blur5(float *dst, const float *src, const float *wts, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    const float *k = wts;
    float s = 0.0f;
    for (int dy = -R; dy <= R; ++dy)
        for (int dx = -R; dx <= R; ++dx) {
            const float kw = *k++;
            int yy = y + dy, xx = x + dx;
            if (yy >= 0 && yy < h && xx >= 0 && xx < w)
                s += kw * src[yy * w + xx];
        }
    dst[y * w + x] = s;
}
"""
    lifted = lift_kernel(source, entry="blur5", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                         block=["16", "16"], scalars={"w": "w", "h": "h"})
    assert {"OUT_Y", "OUT_X", "USE_SMEM"} <= {p.name for p in lifted.params}, lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", NAMES)
def test_the_rows_compute_as_written(name: str, tmp_path: Path,
                                     host_flags: tuple[str, ...]  # noqa: F811
                                     ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    if not FULL_MATRIX:
        configs = configs[:6]
    assert any(c["OUT_Y"] == 8 for c in configs) and any(c["USE_SMEM"] == 1 for c in configs)
    assert same_as_written(kf, template, configs, held_back_unseen26.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_a_fill_without_the_weights_locals_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]  # noqa: F811
) -> None:
    """USE_SMEM's fill runs only the loops' declarations the tap value needs: set 19's
    conv5x5_rgb_luma's weight index ``const int tap = ..`` no longer runs there."""
    kf = held_back_unseen19.SET.folder("conv5x5_rgb_luma")
    template = offline_template(kf).template
    assert "USE_SMEM" in {p.name for p in template.params}
    fill = template.source.split("#if USE_SMEM")[1].split("#endif")[0]
    assert "const int tap" not in fill and "pixel" in fill
    configs = [c for c in host_configs(template, kf.env(kf.check_shape, "fp32"), [
        {"USE_SMEM": 1}, {"USE_SMEM": 1, "OUT_Y": 4, "BLOCKDIM_Y": 2}]) if c["USE_SMEM"] == 1]
    assert same_as_written(kf, template, configs[:3], held_back_unseen19.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs[:3])


#: the window kernels without a channel loop whose OUT_Y now reaches 16 (conv.py's
#: OUT_Y_PLAIN_VALUES), each with the host prelude of its set
_SIXTEEN = {
    "conv2d_const": (Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute" /
                     "conv2d_const", None),
    "filter2d_clamp": (Path(__file__).resolve().parents[1] / "benchmarks" /
                       "corpus_compute_unseen3" / "filter2d_clamp", None),
    "dwconv5_nchw": (held_back_unseen13.SET.root / "dwconv5_nchw",
                     held_back_unseen13.SET.host_source),
    "corr5x5_perimg": (held_back_unseen16.SET.root / "corr5x5_perimg",
                       held_back_unseen16.SET.host_source),
    "u8_filter7x7_const": (FILTER, held_back_unseen26.SET.host_source),
}


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(_SIXTEEN))
def test_sixteen_rows_a_thread_compute_as_written(name: str, tmp_path: Path,
                                                  host_flags: tuple[str, ...]  # noqa: F811
                                                  ) -> None:
    root, host = _SIXTEEN[name]
    kf = load_kernel_folder(root)
    template = offline_template(kf).template
    params = {p.name: p for p in template.params}
    out_y = next(p for n, p in params.items() if n.startswith("OUT_Y"))
    assert 16 in out_y.to_dict()["values"], out_y
    smem = next((n for n in params if n.startswith("USE_SMEM")), None)
    space = template.space(kf.env(kf.check_shape, "fp32"))
    default = dict(template.default_config())
    configs = [c for c in ({**default, out_y.name: 16},
                           {**default, out_y.name: 16, **({smem: 1} if smem else {})})
               if space.rejection(c) is None]
    assert configs
    assert same_as_written(kf, template, configs, host or (lambda s: s), tmp_path / "run",
                           host_flags) == len(configs)
