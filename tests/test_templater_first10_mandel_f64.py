"""First contact with held-back set 10's escape-time image (issue 28): benchmarks/
corpus_compute_unseen10/mandel_f64 counts each pixel's steps of z <- z^2 + c in a
``__device__`` helper (``counts[..] = escape_steps(v, px, py)``, a ``do ... while`` on the
orbit) on a 16 x 16 block, the view in a struct the kernel fills before the pixel's index.
The lift had BLOCK_X/BLOCK_Y/ITEMS_X/ITEMS_Y (1.01x on the H100): the wrapped items ran
their orbits one after another, where the expert's pixels a thread step in one loop (1.87x).
Three gates kept the interleaving family (ilp.py) away: the helper stayed a call (its loop
reads no coordinate in its header, only state computed from one), the block is 2-D, and
``v.step = ..`` runs before the index. Now: inline_calls inlines a helper whose loop tests
state it steps from the thread's point; items with independent state take a 2-D block's x
(the items share the thread's y); a local (or its fields) set before the index is the
thread's, which its items share as the thread as written ran it once.

Pure: the knobs and the rewrite, a second spelling (a ``while`` in a helper given the point
as two doubles, blockDim in the index, an early return), the refusals that stay. Host (g++):
each lift at its default, every all-ends config and mixes against the kernel as written,
count for count (an item runs the statements it ran as written, in order: the same bits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen10
import numpy as np
import pytest
from held_back_harness import respelled
from helpers_templater import end_configs, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen10.ROOT / "mandel_f64"
#: CHECK_EVERY: the orbit loop's header test (``while (C)``, ``do .. while (C)``) runs in every
#: trip of a group, per item (ilp_guarded_trips' exact reading; before, a header test was
#: not read and the loop had no knob)
KNOBS = ("BLOCK_X", "BLOCK_Y", "ITEMS_PER_THREAD", "CHECK_EVERY", "MIN_BLOCKS_PER_SM")
#: The expert's checked mixes spelled in the lift's knobs (64 x 2 threads of 4 pixels; 8 x
#: 16 of 2, here with a register cap of 4 blocks an SM), then a row of 8 pixels a thread,
#: four trips between its all-left tests.
MIXES = [{"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_PER_THREAD": 4},
         {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_PER_THREAD": 2, "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_X": 128, "BLOCK_Y": 1, "ITEMS_PER_THREAD": 8, "CHECK_EVERY": 4}]

#: A second spelling: the orbit in a `while` of a helper given the point as two doubles,
#: a constexpr bound, blockDim in the index (threadIdx first), an early return, the count
#: a local the store reads.
WHILE_HELPER = """constexpr int kMaxIter = 256;

__device__ __forceinline__ int orbit_length(double cr, double ci) {
  double zr = 0.0, zi = 0.0;
  int it = 0;
  while (it < kMaxIter && zr * zr + zi * zi <= 4.0) {
    const double t = zr * zr - zi * zi + cr;
    zi = 2.0 * zr * zi + ci;
    zr = t;
    it++;
  }
  return it;
}

extern "C" __global__ void mandel_f64(int* counts, int width, int height) {
  const int col = threadIdx.x + blockIdx.x * blockDim.x;
  const int row = threadIdx.y + blockIdx.y * blockDim.y;
  if (col >= width || row >= height) return;
  const double scale = 3.0 / height;
  const int steps = orbit_length(-0.75 + (col - 0.5 * width) * scale, -1.5 + row * scale);
  counts[row * width + col] = steps;
}
"""

#: The orbit written in the kernel, the view in a struct set before the index, a final `if`.
STRUCT_INLINE = """#define MAX_ITER 256
struct View { double x0, y0, step; };

extern "C" __global__ void mandel_f64(int* counts, int width, int height) {
  View v;
  v.step = 3.0 / height;
  v.x0 = -0.75 - 0.5 * width * v.step;
  v.y0 = -1.5;
  %(before)s
  const int px = blockIdx.x * 16 + threadIdx.x;
  const int py = blockIdx.y * 16 + threadIdx.y;
  if (px < width && py < height) {
    %(cx)s = v.x0 + px * v.step;
    const double cy = v.y0 + py * v.step;
    double x = 0.0, y = 0.0;
    int n = 0;
    do {
      const double xn = x * x - y * y + cx;
      y = 2.0 * x * y + cy;
      x = xn;
      ++n;
    } while (n < MAX_ITER && x * x + y * y <= 4.0);
    counts[py * width + px] = n;
  }
}
"""
STRUCT_DO = STRUCT_INLINE % {"before": "", "cx": "const double cx"}


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="mandel_f64",
                       grid=["ceil_div(width, 16)", "ceil_div(height, 16)"],
                       block=["16", "16"], scalars={"width": "width", "height": "height"})


def _items_note(notes: tuple[str, ...] | list[str]) -> str:
    found = [n for n in notes if n.startswith("ITEMS_PER_THREAD: ")]
    assert len(found) == 1, notes
    return found[0]


def test_mandel_f64_steps_its_pixels_orbits_in_one_loop() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, result.notes
    assert lifted.grid == ("ceil_div(width, BLOCK_X * ITEMS_PER_THREAD)",
                           "ceil_div(height, BLOCK_Y)")
    assert "BLOCK_X * BLOCK_Y * ITEMS_PER_THREAD <= 2048" in lifted.constraints
    assert any(n.startswith("INLINE: applied: escape_steps inlined into mandel_f64")
               for n in result.notes), result.notes
    note = _items_note(result.notes)
    assert ": applied: " in note and "interleave the items" in note and \
        "the do loop at line 22 is left by each item on its own (a select keeps" in note, note
    body = lifted.source.split("mandel_f64(int* counts", 1)[1]
    assert "escape_steps(v" not in body.replace("// escape_steps(v, px, py)", "")
    # the items' x, BLOCK_X apart; y stays the thread's; the view is set once a thread
    assert "px[wb_it] = (blockIdx.x * ITEMS_PER_THREAD + wb_it) * BLOCK_W + threadIdx.x;" \
        in body
    assert "const int py = blockIdx.y * BLOCK_H + threadIdx.y;" in body
    assert body.count("v.step = 3.0 / height;") == 1
    assert "ITEMS_X" not in body and "ITEMS_Y" not in body


@pytest.mark.parametrize(("source", "state"), [(WHILE_HELPER, "the while loop"),
                                               (STRUCT_DO, "the do loop")],
                         ids=["while_helper", "struct_do"])
def test_other_spellings_step_their_items_in_one_loop(source: str, state: str) -> None:
    lifted = _lift(source)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    note = _items_note(lifted.notes)
    assert ": applied: " in note and "interleave the items" in note and state in note, note
    assert lifted.grid[0] == "ceil_div(width, BLOCK_X * ITEMS_PER_THREAD)"


@pytest.mark.parametrize(("before", "cx", "why", "at"), [
    # memory written before the index: once a thread now, once a block as written
    ("counts[0] = 0;", "const double cx", "`counts[0] = 0` runs before the index is known", 9),
    # a local set before the index that each item then sets from its pixel: shared
    ("double cx = 0.0;", "cx", "`cx = v.x0 + px * v.step` gives the item's value to a name "
     "declared outside the item's statements", 13),
], ids=["memory_before_index", "local_the_items_would_share"])
def test_what_the_items_cannot_share_is_refused_with_the_line(before: str, cx: str, why: str,
                                                              at: int) -> None:
    lifted = _lift(STRUCT_INLINE % {"before": before, "cx": cx})
    note = _items_note(lifted.notes)
    assert note.startswith("ITEMS_PER_THREAD: not applied: items with independent state: ") \
        and why in note and note.endswith(f"(line {at})"), note
    assert "ITEMS_PER_THREAD" not in {p.name for p in lifted.params}


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (over the default), each once."""
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *end_configs(template, env), *({**default, **m} for m in MIXES)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def _same_counts(kf: KernelFolder, source: str, tmp_path: Path,
                 flags: tuple[str, ...]) -> list[dict[str, Any]]:
    """Runs ``kf``'s lift at :func:`_checked`'s configs and the kernel ``source`` as written
    on the host; asserts every count is the same; the configs run."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    inputs = _inputs(kf)
    host = held_back_unseen10.host_source
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)["counts"]
    assert want.min() >= 1 and want.max() == 256  # every pixel written, some in the set
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        assert np.array_equal(got["counts"], want), config
    return configs


def _reaches_both_ends(configs: list[dict[str, Any]]) -> None:
    for knob in KNOBS:
        values = {c[knob] for c in configs}
        assert len(values) >= 2, (knob, values)
    assert {c["ITEMS_PER_THREAD"] for c in configs} >= {1, 8}


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_the_same_counts_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    _reaches_both_ends(_same_counts(kf, kf.baseline.render({}, "fp32").source, tmp_path,
                                    host_flags))


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [WHILE_HELPER, STRUCT_DO], ids=["while_helper", "struct_do"])
def test_other_spellings_compute_the_same_counts_at_every_end_and_the_mixes(
        source: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", source)
    _reaches_both_ends(_same_counts(kf, source, tmp_path / "runs", host_flags))
