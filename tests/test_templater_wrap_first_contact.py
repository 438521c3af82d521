"""Items per thread by wrapping (workbench/templater/wrap.py) where the statements from the
index on assign a name declared before them (issue 28): a pointer parameter stepped to the
item (``out += i``), a local counted on from its value before the index
(``int base = 0; ... base += i``), a counter bumped with ``++``/``--``, a local declared
without a value and set per item (``float acc; ... acc = ...``). In the kernel as written
each block ran those statements from the state at the index; each wrapped item must too.
Each lift runs on the host (every thread of the launch in turn; 37 rows, so the last block
has dead items) at its default, its first and last all-ends corners and a mid config, and
must print exactly what the kernel as written prints. What the rule cannot keep per item (a
local array the items write, a name whose address is taken) is refused with the line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs, host_sample
from regtile_first_contact import Product, host_outputs

from workbench.templater import LiftedSource

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

ENV = {"M": 37, "N": 45, "K": 29, "batch": 2}


def _vec(source: str, entry: str, block: int, buffers: tuple[str, ...], call: str,
         out: str) -> Product:
    """A 1-D kernel over M elements launched as ``ceil_div(M, block)`` blocks."""
    return Product(source, entry, (f"ceil_div(M, {block})",), (str(block),), {"n": "M"},
                   tuple((b, "float", "M") for b in buffers), call, out)


#: kernel -> (product, the knob, the names each item starts from, as the note lists them)
KEPT: dict[str, tuple[Product, str, str]] = {
    # both pointers stepped to the item, written and read through `*`; a #define block
    "pointers_stepped": (_vec(r"""
#define NT 64
__global__ void affine(const float* in, float* out, int n) {
  int i = blockIdx.x * NT + threadIdx.x;
  if (i >= n) return;
  in += i;
  out += i;
  *out = 2.0f * *in + 0.5f;
}
""", "affine", 64, ("x", "y"), "affine(x, y, M)", "y"), "ITEMS_PER_THREAD", "in, out"),
    # a local counted on from its value before the index, unsigned index, a final if
    "local_counted_on": (_vec(r"""
__global__ void gather_shift(const float* __restrict__ src, float* __restrict__ dst, int n) {
  int base = 3;
  const unsigned g = 128 * blockIdx.x + threadIdx.x;
  if (g < (unsigned)n) {
    base += (int)g;
    dst[g] = src[base % n] - (float)base / 64.0f;
  }
}
""", "gather_shift", 128, ("x", "y"), "gather_shift(x, y, M)", "y"), "ITEMS_PER_THREAD",
        "base"),
    # ++ and -- on counters declared before the index, one of them a pointer
    "bumped_counters": (_vec(r"""
constexpr int kThreads = 32;
__global__ void bump(const float* a, float* b, int n) {
  int hits = 0;
  const float* p = a;
  int idx = threadIdx.x + kThreads * blockIdx.x;
  if (idx >= n) return;
  for (int r = 0; r <= idx % 3; ++r) { hits++; ++p; }
  --hits;
  b[idx] = a[idx] * (float)hits + p[0];
}
""", "bump", 32, ("x", "y"), "bump(x, y, M)", "y"), "ITEMS_PER_THREAD", "hits, p"),
    # an int parameter reduced per item, a 2-D block (the x items wrap)
    "scalar_param_2d": (Product(r"""
__global__ void tail(const float* x, float* y, int n, int width) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = threadIdx.y;
  if (col >= width) return;
  width -= col;
  y[row * n + col] = x[row * n + col] * (float)width;
}
""", "tail", ("ceil_div(M, 16)",), ("16", "2"), {"n": "M", "width": "M"},
        (("x", "float", "2 * M"), ("y", "float", "2 * M")), "tail(x, y, M, M)", "y"),
        "ITEMS_X", "width"),
}

#: kernel -> (product, the knob): a local declared without a value, set by each item first
FRESH: dict[str, tuple[Product, str]] = {
    "declared_then_set": (_vec(r"""
__global__ void square(const float* x, float* y, int n) {
  float acc;
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  acc = x[i] * x[i];
  acc += 1.0f;
  y[i] = acc;
}
""", "square", 128, ("x", "y"), "square(x, y, M)", "y"), "ITEMS_PER_THREAD"),
}

#: kernel -> (product, the knob, the reason, its line)
REFUSED: dict[str, tuple[Product, str, str, int]] = {
    "local_array_written": (_vec(r"""
__global__ void runs(const float* x, float* y, int n) {
  float keep[2] = {0.0f, 1.0f};
  int i = blockIdx.x * 64 + threadIdx.x;
  if (i >= n) return;
  keep[i & 1] += x[i];
  y[i] = keep[0] + keep[1];
}
""", "runs", 64, ("x", "y"), "runs(x, y, M)", "y"), "ITEMS_PER_THREAD",
        "assigns the array or reference `keep`", 6),
    "address_taken": (_vec(r"""
__global__ void via_pointer(const float* x, float* y, int n) {
  int base = 1;
  int* pb = &base;
  int i = blockIdx.x * 64 + threadIdx.x;
  if (i >= n) return;
  base += i;
  y[i] = x[i] + (float)*pb;
}
""", "via_pointer", 64, ("x", "y"), "via_pointer(x, y, M)", "y"), "ITEMS_PER_THREAD",
        "takes the address of `base`", 4),
}


def _note(lifted: LiftedSource, knob: str) -> str:
    """The wrap's note for ``knob`` (the straight-line items loop, not the interleaving's)."""
    notes = [n for n in lifted.notes if n.startswith(f"{knob}: ") and
             "independent state" not in n and "interleave" not in n and
             ("repeats per item" in n or "share it" in n or "address" in n)]
    assert len(notes) == 1, lifted.notes
    return notes[0]


def _checked(template: Any, knob: str) -> list[dict[str, Any]]:
    """The default, the first and last all-ends corners, and 4 items at the default block."""
    default = dict(template.default_config())
    return [default, *host_sample(end_configs(template, ENV)), {**default, knob: 4}]


def _runs_as_written(product: Product, knob: str, tmp_path: Path) -> None:
    template = product.template()
    assert knob in template.param_names
    configs = _checked(template, knob)
    assert max(c[knob] for c in configs) == 8
    written, outputs = host_outputs(product, template, configs, ENV, tmp_path)
    assert len(written) >= ENV["M"]
    for config, printed in zip(configs, outputs, strict=True):
        assert printed == written, config


@pytest.mark.parametrize("name", sorted(KEPT))
def test_each_item_starts_from_the_names_as_at_the_index(name: str, tmp_path: Path) -> None:
    product, knob, kept = KEPT[name]
    note = _note(product.lift(), knob)
    assert ": applied:" in note and note.endswith(f"each item starts from {kept} as at the "
                                                  "index)"), note
    _runs_as_written(product, knob, tmp_path)


@pytest.mark.parametrize("name", sorted(FRESH))
def test_a_local_each_item_sets_first_needs_nothing_kept(name: str, tmp_path: Path) -> None:
    product, knob = FRESH[name]
    note = _note(product.lift(), knob)
    assert ": applied:" in note and "starts from" not in note, note
    _runs_as_written(product, knob, tmp_path)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_cannot_be_kept_per_item_is_refused_with_its_line(name: str,
                                                               tmp_path: Path) -> None:
    product, knob, reason, at = REFUSED[name]
    note = _note(product.lift(), knob)
    assert ": not applied:" in note and reason in note and note.endswith(f"(line {at})"), note
    template = product.template()
    assert knob not in template.param_names
    configs = [dict(template.default_config())]
    written, outputs = host_outputs(product, template, configs, ENV, tmp_path)
    assert outputs == [written]
