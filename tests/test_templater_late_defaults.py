"""Every lifted parameter has its guarded default in the lifted source, also one a lazy edit
adds while the file renders (the grid-stride items' SPAN, added when the items' rounds are
written, after the header): a kernel folder's template must name each of its parameters
(workbench/core/kernel_folder/load.py), so without it `propose --write` wrote no template
(hash_mix_rounds and crspline_rotmean on the H200, 2026-11-28 15:43Z)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import lift_kernel
from workbench.templater.offline import offline_template

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"

# another hand's grid-stride loop of four trips a thread (a while, the stride in a local)
WHILE_TRIPS = """
extern "C" __global__ void k(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = blockDim.x * gridDim.x;
  while (i < n) {
    float v = x[i];
    for (int r = 0; r < 64; ++r) v = v * 0.999f + 0.5f * sinf(v);
    y[i] = v;
    i += stride;
  }
}
"""


def _defaults(source: str) -> dict[str, str]:
    return dict(re.findall(r"#ifndef (\w+)\n#define \1 (\S+)\n#endif", source))


@pytest.mark.parametrize("folder", ["corpus_compute_unseen16/hash_mix_rounds",
                                    "corpus_compute_unseen20/crspline_rotmean"])
def test_every_lifted_parameter_has_its_default_in_the_source(folder: str) -> None:
    lifted = offline_template(load_kernel_folder(ROOT / folder)).lifted
    defaults = _defaults(lifted.source)
    assert "SPAN" in {p.name for p in lifted.params}, lifted.notes
    for p in lifted.params:
        assert defaults.get(p.name) == str(p.spec["default"]), (p.name, lifted.source[:1500])


def test_a_while_grid_stride_loop_names_its_span_too() -> None:
    lifted = lift_kernel(WHILE_TRIPS, entry="k", grid=["ceil_div(n, 1024)"], block=["256"],
                         scalars={"n": "n"})
    names = {p.name for p in lifted.params}
    assert {"ITEMS_PER_THREAD", "SPAN"} <= names, lifted.notes
    defaults = _defaults(lifted.source)
    assert names <= set(defaults), (names, lifted.notes)
    assert defaults["SPAN"] == "4"  # 1024 / 256 as launched
