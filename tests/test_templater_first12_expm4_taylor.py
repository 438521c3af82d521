"""First contact with held-back set 12's batched 4 x 4 matrix exponential (issue 28):
benchmarks/corpus_compute_unseen12/expm4_taylor sums each thread's Taylor series in a
``do ... while`` until a term's largest entry is 1e-8, the matrices in a small struct
(``struct Mat4 { float v[16]; .. at(r, c) .. }``). The lift had BLOCK_THREADS, wrapped
ITEMS_PER_THREAD and MIN_BLOCKS_PER_SM (1.01x on the H100, the expert 1.50x): the
interleaving family (ilp.py) read ``sum.v[e] += term.v[e]`` in the loop as a walk over
memory (an array it did not find among the locals: ``sum.v`` is a field of one), so the items
ran their series one after another and FAST_DIV, which follows the interleaved items, never
looked at the loop's division. Now an element of a local object's value or array member
(``x.m[i]``, ``x.m[r][c]``) is the thread's registers, as a local array's is
(item_objects.member_in_registers); a pointer member's target stays memory.

Pure: the knobs and notes of the folder and of a second spelling (a 2-D member array, a
counted ``for`` left by a ``break``, an implicit int-to-float division: FAST_DIV too), the
pointer member that still walks memory. Host (g++): each lift at its default, every
all-ends config and mixes against the kernel as written, bit for bit (an item runs the
statements it ran as written; the host's ``__fdividef`` is the exact division, so FAST_DIV's
rewriting is checked here and its 2 ulp against the folder's tolerance by the GPU gate).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen12
import numpy as np
import pytest
from held_back_harness import prepended, respelled
from helpers_templater import end_configs, host_sample, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen12.ROOT / "expm4_taylor"
#: The host forms of the CUDA built-ins the lifts use beyond the set's prelude.
HOST = prepended("#define __fdividef(a, b) ((a) / (b))\n")

#: A second spelling: a 2-D member array, the block index second, a guarded body, the
#: series a counted `for` an item leaves by `break`, the term divided by the int counter.
MEMBER_2D = """struct Mat {
  float m[4][4];
};

extern "C" __global__ void expm4_taylor(float* E, const float* A, int nb) {
  int b = threadIdx.x + blockDim.x * blockIdx.x;
  if (b < nb) {
    Mat x, t, acc;
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 4; c++) {
        x.m[r][c] = A[16 * b + 4 * r + c];
        t.m[r][c] = r == c ? 1.0f : 0.0f;
        acc.m[r][c] = t.m[r][c];
      }
    for (int k = 1; k <= 40; k++) {
      Mat p;
      float big = 0.0f;
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
          float dot = t.m[r][0] * x.m[0][c] + t.m[r][1] * x.m[1][c] +
                      t.m[r][2] * x.m[2][c] + t.m[r][3] * x.m[3][c];
          p.m[r][c] = dot / k;
          big = fmaxf(big, fabsf(p.m[r][c]));
        }
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
          t.m[r][c] = p.m[r][c];
          acc.m[r][c] += p.m[r][c];
        }
      if (!(big > 1e-8f)) break;
    }
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 4; c++) E[16 * b + 4 * r + c] = acc.m[r][c];
  }
}
"""

#: The input walked through a pointer member inside the loop, a value array member beside
#: it: the pointer's target, read at the item's place moving with the trips, is memory.
POINTER_MEMBER = """struct Walk { const float* p; float w[4]; };

extern "C" __global__ void expm4_taylor(float* E, const float* A, int nb) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= nb) return;
  Walk in;
  in.p = A;
  float s = 0.0f;
  for (int k = 0; k < 16; ++k) {
    in.w[k % 4] = in.p[16 * b + k];
    s += in.w[k % 4] / (k + 1);
  }
  E[16 * b] = s;
}
"""


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="expm4_taylor", grid=["ceil_div(nb, 128)"],
                       block=["128"], scalars={"nb": "nb"})


def _items_note(notes: tuple[str, ...] | list[str]) -> str:
    found = [n for n in notes if n.startswith("ITEMS_PER_THREAD: ")]
    assert len(found) == 1, notes
    return found[0]


def test_expm4_taylor_steps_its_matrices_series_in_one_loop() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    assert tuple(p.name for p in lifted.params) == (
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "FAST_DIV", "STAGE", "MIN_BLOCKS_PER_SM"), \
        result.notes
    assert lifted.grid == ("ceil_div(nb, BLOCK_THREADS * ITEMS_PER_THREAD)",)
    assert "BLOCK_THREADS * ITEMS_PER_THREAD <= 2048" in lifted.constraints
    note = _items_note(result.notes)
    assert ": applied: " in note and "1 loop(s) of item-independent length interleave the " \
        "items" in note and "the do loop at line 25 is left by each item on its own" in note, \
        note
    body = lifted.source.split("expm4_taylor(float* E", 1)[1]
    assert "Mat4 sum[ITEMS_PER_THREAD] = {};" in body
    assert "sum[wb_it].v[e] += term[wb_it].v[e];" in body
    # the term over the int counter converted to float: the expert's RECIP, as __fdividef
    # (its counter one per thread: every live item is on the same trip, ilp_series_exit)
    assert "int k = 1;" in body and "next[wb_it].at(r, c) = WB_DIV(s, (float)k);" in body
    assert any(n.startswith("FAST_DIV: applied: 1 fp32 division(s)") for n in result.notes)


@pytest.mark.parametrize(("divisor", "fast"), [("(float)k", True), ("(float)(k + 1)", True),
                                                ("(float)(double)k", False),
                                                ("(float)A[0]", False)],
                         ids=["int", "int_sum", "through_double", "memory"])
def test_a_cast_divisor_is_fp32_only_from_an_int_or_float_value(divisor: str,
                                                                fast: bool) -> None:
    source = load_kernel_folder(FOLDER).baseline.source.replace("s / (float)k",
                                                                f"s / {divisor}")
    lifted = _lift(source)
    assert ("FAST_DIV" in {p.name for p in lifted.params}) == fast, lifted.notes


def test_a_2d_member_array_series_interleaves_and_gets_fast_div() -> None:
    lifted = _lift(MEMBER_2D)
    # (STORE_VEC, session 33: each row's four stores E[16 * b + 4 * r + c] as one float4)
    assert tuple(p.name for p in lifted.params) == (
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "STORE_VEC", "FAST_DIV", "STAGE",
        "MIN_BLOCKS_PER_SM"), lifted.notes
    note = _items_note(lifted.notes)
    assert ": applied: " in note and "interleave the items" in note, note
    assert "WB_DIV(dot, k)" in lifted.source
    assert any(n.startswith("FAST_DIV: applied: 1 fp32 division(s)") for n in lifted.notes)


def test_a_pointer_members_target_is_still_a_walk_over_memory() -> None:
    lifted = _lift(POINTER_MEMBER)
    note = _items_note(lifted.notes)
    assert "interleave" not in note, note
    assert "FAST_DIV" not in {p.name for p in lifted.params}


#: Mixes over the default: 32 threads of 2 matrices, FAST_DIV, a register cap (the expert's
#: pick's block and reciprocal), 256 threads of 4; for the second spelling, FAST_DIV on with a partial unroll, then
#: with 4 items and a register cap.
MIXES = {"folder": [{"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 2, "FAST_DIV": 1,
                     "MIN_BLOCKS_PER_SM": 1},
                    {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 4}],
         "member_2d": [{"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 2, "FAST_DIV": 1,
                        "UNROLL": 2},
                       {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 4, "FAST_DIV": 1,
                        "MIN_BLOCKS_PER_SM": 4}]}


def _checked(template: Any, env: dict[str, Any], mixes: list[dict[str, int]]
             ) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (over the default), each once: all
    with ``WORKBENCH_FULL_MATRIX=1``, else the first and the last (a mix)."""
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *end_configs(template, env), *({**default, **m} for m in mixes)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return host_sample(out)


def _same_results(kf: KernelFolder, source: str, mixes: list[dict[str, int]], tmp_path: Path,
                  flags: tuple[str, ...]) -> None:
    """Runs ``kf``'s lift at :func:`_checked`'s configs and ``source`` as written on the host;
    asserts every output is the same, bit for bit."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env, mixes)
    inputs = _inputs(kf)
    host = HOST
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)["E"]
    assert np.isfinite(want).all() and np.abs(want).max() > 2.0  # every matrix written
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        assert np.array_equal(got["E"], want), config


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_the_same_exponentials_at_the_ends_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    _same_results(kf, kf.baseline.render({}, "fp32").source, MIXES["folder"], tmp_path,
                  host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_2d_member_spelling_computes_the_same_exponentials(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", MEMBER_2D)
    _same_results(kf, MEMBER_2D, MIXES["member_2d"], tmp_path / "runs", host_flags)
