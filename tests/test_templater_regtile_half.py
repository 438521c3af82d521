"""Register tiling of a half-precision GEMM with a scalar epilogue (issue 28):
benchmarks/corpus_compute_unseen5/hgemm_scaled, C = alpha . A.B with A and B ``__half``
converted to float as they are stored into the shared tiles, and the thread's pointers into
A and B set once before the loop and stepped by one slice per tile (read as their value at
each output plus one uniform offset, :mod:`workbench.templater.regtile_walk`).

It lifts BM / BN / BK / TM / TN (VEC stays scalar: a converted half is no float4 load); on
the host (the corpus set's harness, the folder's own inputs) its default, its all-ends
corners (first and last; every one under ``WORKBENCH_FULL_MATRIX=1``) and a sampled
mid-space config write the same bits as the kernel as written, which matches alpha . A.B in
float64; ptxas reports no spills at the corners. Its A pointer offset by the wrong block
index is refused by the pairing probe, which reads ``*pa``. Two more spellings of the
family: tests/test_templater_regtile_half_spellings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_unseen5 import ROOT, host_source
from helpers_nvcc import needs_nvcc
from helpers_templater import (
    corner_configs,
    host_sample,
    needs_gxx,
)
from test_corpus_unseen3 import (
    _SPILLS,
    _inputs,
    _ptxas_log,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel, offline_template
from workbench.templater.regtile_vec import HALF_VECTOR_LOAD

TILE_KNOBS = {"BM", "BN", "BK", "TM", "TN"}
#: a mid-space config: a non-square register tile over a shallow tile, a rectangular block
SAMPLED = {"BM": 16, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "VEC": 8}


#: the host forms of what the 16-byte half loads use: a uint4, and a half from its 16 bits
HOST_HALF_VECTOR = r"""
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline __half __ushort_as_half(unsigned short u) {
  __half h; std::memcpy(&h, &u, sizeof h); return h;
}
static long wb_vector_loads = 0;
"""
_COUNTED_LOAD = ("const uint4 wb_v = (++wb_vector_loads, "
                 "*reinterpret_cast<const uint4*>(wb_p));")


def host_half(source: str) -> str:
    """A rendered kernel as the host program compiles it: half precision, the 16-byte half
    loads' types, and every such load counted in ``wb_vector_loads``."""
    return host_source(HOST_HALF_VECTOR + source.replace(HALF_VECTOR_LOAD, _COUNTED_LOAD))


def _configs(template: KernelTemplate, env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The default and the corners (host_sample's pick), then SAMPLED (valid at ``env``)."""
    sampled = {**template.default_config(), **SAMPLED}
    assert template.space(dict(env)).rejection(sampled) is None, sampled
    return [*host_sample(corner_configs(template, env)), sampled]


def _reasons(lifted: LiftedSource, transform: str) -> list[str]:
    return [f.reason for f in lifted.findings if f.transform == transform]


# -- hgemm_scaled (the corpus folder) ------------------------------------------------------

HGEMM = ROOT / "hgemm_scaled"


def test_hgemm_scaled_lifts_the_register_tile_through_its_walking_pointers() -> None:
    result = offline_template(load_kernel_folder(HGEMM))
    lifted = result.lifted
    assert {p.name for p in lifted.params} == {*TILE_KNOBS, "VEC"}, lifted.notes
    assert lifted.grid == ("ceil_div(N, BN)", "ceil_div(M, BM)")
    assert lifted.block == ("BN // TN", "BM // TM")
    walks = [r for r in _reasons(lifted, "REGISTER_TILE") if "stepped along k" in r]
    assert any(r.startswith("`pa`") for r in walks) and any(r.startswith("`pb`") for r in walks)
    # the loads of halves converted as they are stored: eight halves a 16-byte load
    vec = next(p for p in lifted.params if p.name == "VEC")
    assert vec.spec["values"] == [1, 8]
    assert "VEC == 1 or (BK % 8 == 0 and BN % 8 == 0)" in lifted.constraints
    assert HALF_VECTOR_LOAD in lifted.source
    # the float tiles' bytes bound the space: 4-byte elements, A's tile stored k-major
    assert "4 * BK * (BM + 1) + 4 * BK * BN <= 49152" in lifted.constraints


@needs_gxx
@pytest.mark.timeout(120)
def test_hgemm_scaled_lift_writes_the_bits_of_the_kernel_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(HGEMM)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _run(kf, host_half(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    a, b = (inputs[x].astype(np.float64) for x in ("A", "B"))
    reference = 0.75 * (a @ b)  # alpha as the folder launches it
    assert np.allclose(want["C"], reference, rtol=1e-4, atol=1e-3)
    for i, config in enumerate(_configs(template, env)):
        got = _run(kf, host_half(template.render(config, "fp32").source),
                   template.launch_for(config, env), inputs, tmp_path / f"c{i}", host_flags)
        assert np.array_equal(got["C"], want["C"]), config


@needs_nvcc
@pytest.mark.timeout(300)
def test_hgemm_scaled_corners_compile_without_spills(tmp_path: Path) -> None:
    kf = load_kernel_folder(HGEMM)
    template = offline_template(kf).template
    corners = corner_configs(template, kf.env("large", "fp32"))
    for i, config in enumerate(host_sample(corners)):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"corner{i}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config}:\n{log}"


def test_a_pointer_walk_paired_with_the_wrong_block_index_is_refused() -> None:
    """hgemm_scaled's A pointer offset by the column block: the pairing probe reads ``*pa``
    and refuses (a template that would be wrong at BM != BN)."""
    source = (HGEMM / "baseline.cu").read_text().replace(
        "const __half* pa = A + (size_t)i * K + tx;",
        "const __half* pa = A + (size_t)(blockIdx.x * BLK + ty) * K + tx;")
    lifted = lift_kernel(source, entry="hgemm_scaled",
                         grid=["ceil_div(N, 16)", "ceil_div(M, 16)"], block=["16", "16"],
                         scalars={"M": "M", "N": "N", "K": "K", "alpha": "1"})
    assert not {p.name for p in lifted.params} >= TILE_KNOBS
    assert any("*pa" in r and "does not move" in r for r in _reasons(lifted, "REGISTER_TILE"))
