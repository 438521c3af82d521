"""INTERIOR of apron tiles (workbench/templater/apron_interior.py): a block whose tile with
its halo lies inside the grid loads it without the per-load bounds tests.

The spent wave2d_o4 (per-thread branch stores through ``load_or_zero``: an ``&&`` of four
compares) and two spellings of our own (C89 declarations with a nest whose ``||`` test
fills zeros; a macro guard over ``constexpr`` sizes with ``__ldg``) gain INTERIOR (default 0,
the lift as written); the block's test is the loads' own compares at the tile's worst
corners. A host run (threads as coroutines, barriers as switches, no contraction) on an
uneven grid with interior and edge blocks gives the kernel's output bit for bit at the
default, the all-ends configs and mixes with INTERIOR 1 (each mix counted: both copies ran);
a clamped index, an unsigned compare, a test whose both sides read and an ``auto`` (unsigned)
position are refused with the line.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

WAVE = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen5" / "wave2d_o4"

# name -> (source, block, the bounds test's line); every kernel is k(out, in, h, w)
SPELLINGS: dict[str, tuple[str, list[str], int]] = {
    "c89_nest_zero_fill_by_or": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[18][34];
  int x, y;
  float s;
  for (int py = threadIdx.y; py < 18; py += 16)
    for (int px = threadIdx.x; px < 34; px += 32) {
      int gy = blockIdx.y * 16 + py - 1;
      int gx = blockIdx.x * 32 + px - 1;
      t[py][px] = (gy < 0 || gy >= h || gx < 0 || gx >= w) ? 0.0f : in[gy * w + gx];
    }
  __syncthreads();
  x = blockIdx.x * 32 + threadIdx.x;
  y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  s = t[threadIdx.y][threadIdx.x + 1] + t[threadIdx.y + 2][threadIdx.x + 1] +
      t[threadIdx.y + 1][threadIdx.x] + t[threadIdx.y + 1][threadIdx.x + 2] -
      4.0f * t[threadIdx.y + 1][threadIdx.x + 1];
  out[y * w + x] = s;
}
""", ["32", "16"], 3),
    "macro_guard_constexpr_ldg": ("""
#define RAD 1
#define INSIDE(r, c) ((r) >= 0 && (r) < h && (c) >= 0 && (c) < w)
constexpr int TW = 16, TH = 8;
extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ in, int h,
                             int w) {
  __shared__ float tile[TH + 2 * RAD][TW + 2 * RAD];
  const int x0 = blockIdx.x * TW - RAD;
  const int y0 = blockIdx.y * TH - RAD;
  for (int r = threadIdx.y; r < TH + 2 * RAD; r += TH)
    for (int c = threadIdx.x; c < TW + 2 * RAD; c += TW)
      tile[r][c] = INSIDE(y0 + r, x0 + c) ? __ldg(&in[(y0 + r) * w + x0 + c]) : 0.0f;
  __syncthreads();
  const int x = blockIdx.x * TW + threadIdx.x, y = blockIdx.y * TH + threadIdx.y;
  if (x < w && y < h) {
    float m = 0.0f;
    for (int dy = 0; dy <= 2 * RAD; ++dy)
      for (int dx = 0; dx <= 2 * RAD; ++dx) m = fmaxf(m, tile[threadIdx.y + dy][threadIdx.x + dx]);
    out[y * w + x] = m;
  }
}
""", ["16", "8"], 7),
}

_NEST = """
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[18][18];
  %(decl)s
  for (int py = threadIdx.y; py < 18; py += 16)
    for (int px = threadIdx.x; px < 18; px += 16) {
      %(load)s
    }
  __syncthreads();
  const int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = t[threadIdx.y][threadIdx.x + 1] + t[threadIdx.y + 2][threadIdx.x + 1];
}
"""

# name -> (source, reason, line): the lift stands, INTERIOR is refused with the line
NEAR_MISSES: dict[str, tuple[str, str, int]] = {
    # a clamped index has no test to drop
    "clamped_index": (_NEST % {"decl": "", "load": """const int gy = blockIdx.y * 16 + py - 1, gx = blockIdx.x * 16 + px - 1;
      t[py][px] = in[min(max(gy, 0), h - 1) * w + min(max(gx, 0), w - 1)];"""},
        "has no bounds test", 8),
    # an unsigned compare wraps: not monotone in the position
    "unsigned_compare": (_NEST % {"decl": "", "load": """const int gy = blockIdx.y * 16 + py - 1, gx = blockIdx.x * 16 + px - 1;
      t[py][px] = ((unsigned)gy < (unsigned)h && (unsigned)gx < (unsigned)w) ? in[gy * w + gx] : 0.0f;"""},
        "may be unsigned", 8),
    # a periodic fill reads on both sides: no bounds test of one load
    "both_sides_read": (_NEST % {"decl": "", "load": """const int gy = blockIdx.y * 16 + py - 1, gx = blockIdx.x * 16 + px - 1;
      t[py][px] = (gx >= 0 && gy >= 0) ? in[gy * w + gx] : in[(gy + h) % h * w + (gx + w) % w];"""},
        "both side reads memory", 8),
    # `auto` of blockIdx arithmetic is unsigned
    "auto_unsigned_origin": (_NEST % {"decl": "const auto y0 = blockIdx.y * 16 - 1, x0 = blockIdx.x * 16 - 1;",
                                      "load": """t[py][px] = (y0 + py < h && x0 + px < w) ? in[(y0 + py) * w + x0 + px] : 0.0f;"""},
        "may be unsigned", 7),
}

ENV = {"h": 37, "w": 83, "elem_bytes": 4}  # no side a multiple of a block side; interior blocks


def lift_case(name: str) -> LiftedSource:
    if name == "wave2d_o4":
        source, block = wave()
        return lift_kernel(source, entry="k", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                           block=block, scalars={"ny": "h", "nx": "w", "c2": "0.2"})
    source, block = SPELLINGS[name][0], SPELLINGS[name][1]
    return lift(source, block)


def lift(source: str, block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=[f"ceil_div(w, {block[0]})",
                                                f"ceil_div(h, {block[1]})"],
                       block=block, scalars={"h": "h", "w": "w"})


def wave() -> tuple[str, list[str]]:
    folder = load_kernel_folder(WAVE)
    source = folder.baseline.source.replace("wave2d_o4(", "k(")
    return source, list(folder.baseline.launch.to_dict()["block"])


def case(name: str) -> tuple[str, list[str]]:
    return wave() if name == "wave2d_o4" else (SPELLINGS[name][0], SPELLINGS[name][1])


NAMES = sorted([*SPELLINGS, "wave2d_o4"])


@pytest.mark.parametrize("name", NAMES)
def test_interior_is_offered_with_the_loads_tests_once_per_block(name: str) -> None:
    lifted = lift_case(name)
    params = {p.name: p.spec for p in lifted.params}
    assert "INTERIOR" in params and params["INTERIOR"]["default"] == 0, lifted.notes
    assert params["INTERIOR"]["values"] == [0, 1]
    notes = [f for f in lifted.findings if f.transform == "INTERIOR"]
    assert notes and notes[0].applied, lifted.notes
    assert notes[0].line == (SPELLINGS[name][2] if name in SPELLINGS else 19)
    assert "const bool wb_inside = INTERIOR && (" in lifted.source
    # the interior copy knows each test; the general copy keeps it as written
    assert "(true)" in lifted.source or "(true || (" in lifted.source or \
        "(false && (" in lifted.source
    # every compare of the block's test reads no thread index
    test = lifted.source.split("const bool wb_inside = INTERIOR && (")[1].split(";")[0]
    assert "threadIdx" not in test and test.count("&&") >= 3, test


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_tests_that_are_not_bounds_of_the_position_are_refused_with_the_line(name: str) -> None:
    source, reason, row = NEAR_MISSES[name]
    lifted = lift(source, ["16", "16"])
    assert any(n.startswith("OUT_XY: applied") for n in lifted.notes), lifted.notes
    refusals = [f for f in lifted.findings if f.transform == "INTERIOR" and not f.applied]
    assert refusals and reason in refusals[0].reason, lifted.notes
    assert refusals[0].line == row, refusals[0]
    assert "INTERIOR" not in {p.name for p in lifted.params}
    assert "wb_inside" not in lifted.source


# -- host run: all configs of one kernel in one program, threads as coroutines -------------

_VARIANT = r"""
%(defines)s
namespace v%(n)d {
static long wb_in = 0, wb_out = 0;  // threads that ran the interior copy / the general one
static bool wb_count(bool inside) { (inside ? wb_in : wb_out)++; return inside; }
%(source)s
static std::vector<float> run() {
  std::vector<float> out(h * w, -7.0f);
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { k(%(args)s); });
  return out;
}
}
%(undefs)s
"""

_MAIN = r"""
int main() {
  for (int i = 0; i < h * w; ++i) in_[i] = (float)((i * 37) %% 17 - 8) / 7.0f;
  for (int i = 0; i < h * w; ++i) prev_[i] = (float)((i * 11) %% 13 - 6) / 5.0f;
  std::vector<float> want = v0::run();
  int bad = 0;
  for (float v : want) bad += v == -7.0f;
  std::printf("unwritten %%d\n", bad);
%(checks)s
  return 0;
}
"""


def _variant(n: int, name: str, source: str, config: dict[str, Any],
             launch: tuple[list[int], list[int]]) -> str:
    grid, block = launch
    args = "out.data(), in_.data(), prev_.data(), 0.2f, h, w" if name == "wave2d_o4" \
        else "out.data(), in_.data(), h, w"
    counted = source.replace("if (wb_inside) {", "if (wb_count(wb_inside)) {")
    return _VARIANT % {
        "defines": "\n".join(f"#define {k_} {v}" for k_, v in config.items()),
        "undefs": "\n".join(f"#undef {k_}" for k_ in config) +
        "\n#undef R\n#undef BS\n#undef RAD\n#undef INSIDE", "n": n,
        "source": counted.replace('extern "C" ', ""),
        "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1], "args": args}


def _configs(template: KernelTemplate) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The configs checked, and the mixes among them where both copies must run."""
    space = list(template.space(ENV))
    rng = random.Random(29)
    default = dict(template.default_config())
    ends = [c for c in end_configs(template, ENV) if not c.get("SEPARABLE")]
    on = {**default, "INTERIOR": 1}
    flat: dict[str, Any] = {"LOAD_FLAT": 1} if "LOAD_FLAT" in on else {}
    mixes: list[dict[str, Any]] = [
        on,
        {**on, "BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4},
        # the shape of wave2d_o4's expert pick (one row of threads, four rows a thread, read
        # from the source), 32 wide so the 83-wide grid has interior blocks
        {**on, "BLOCK_X": 32, "BLOCK_Y": 1, "OUT_Y": 4, "USE_SMEM": 0},
        {**on, "BLOCK_X": 16, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 1, "USE_SMEM": 0},
        {**on, "BLOCK_X": 8, "BLOCK_Y": 4, "OUT_Y": 2, **flat}]
    sampled = [{**c, "SEPARABLE": 0} if "SEPARABLE" in c else dict(c)
               for c in rng.sample(space, 3 if FULL_MATRIX else 1)]
    return [default, *host_sample(ends), *sampled, *mixes], mixes


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", NAMES)
def test_default_all_ends_and_interior_mixes_give_the_kernels_output(name: str) -> None:
    source, block = case(name)
    template = lifted_template(lift_case(name))
    b = [int(v) for v in block]
    parts = [_variant(0, name, source, {}, ([-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b))]
    configs, mixes = _configs(template)
    for n, config in enumerate(configs, start=1):
        assert template.space(ENV).rejection(config) is None, config
        launch = template.launch_for(config, ENV)
        parts.append(_variant(n, name, template.render(config, "fp32").source, config,
                              (list(launch.grid), list(launch.block))))
    # the run first: a call's arguments are evaluated in no set order
    checks = "\n".join(f'  {{ const int same = v{n}::run() == want; std::printf("%d %d %ld %ld\\n", '
                       f'{n}, same, v{n}::wb_in, v{n}::wb_out); }}'
                       for n in range(1, len(configs) + 1))
    prelude = COOPERATIVE_BLOCK + "#define __constant__ static\n" + \
        f"static const int h = {ENV['h']}, w = {ENV['w']};\n" + \
        "static std::vector<float> in_(h * w), prev_(h * w);\n"
    program = prelude + "".join(parts) + _MAIN % {"checks": checks}
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "interior", program, flags=("-ffp-contract=off",))
    lines = printed.split("\n")
    assert lines[0] == "unwritten 0"
    rows = [line.split() for line in lines[1:] if line]
    wrong = [configs[int(n) - 1] for n, ok, _i, _o in rows if ok != "1"]
    assert len(rows) == len(configs) and not wrong, wrong
    for (_n, _ok, inside, outside), config in zip(rows, configs, strict=True):
        if config in mixes:  # interior and edge blocks both ran
            assert int(inside) > 0 and int(outside) > 0, (config, inside, outside)
        elif not config.get("INTERIOR"):
            assert int(inside) == 0, config
