"""The corpus's csr_spmv_warp (issue 28, held-back set 7, now spent): one warp per CSR row,
lanes striding the row's nonzeros from ``begin + lane``, a shuffle sum. The warp family
(warp.py with warp_segments.py and warp_chains.py) lifts LANES down to 2 lanes a row (the
sub-warp groups CSR-vector kernels pick for short rows, the shuffle widths following), the
warps a block, ILP (independent sums a lane) and LDG (the loop's reads through the
read-only path); the lift computes on the host what the
kernel as written computes within the folder's tolerance at the default, the all-ends
corners and sampled mixes, and builds for sm_90 without spills at its ends. Other
spellings: tests/test_templater_warp_rows_segments.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import corner_configs, host_sample, run_merged_on_host
from test_corpus_unseen3 import (
    _SPILLS,
    FOLDER_PREFIX,
    _assert_same,
    _inputs,
    _ptxas_log,
    folder_runs,
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template

CSR = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen7" / \
    "csr_spmv_warp"


def test_a_merged_run_keeps_each_program_apart(tmp_path: Path) -> None:
    """Two programs defining the same macro, constant and entry differently print their own
    values in one merged run; a third that uses a macro it does not define fails to compile
    (nothing leaks from the one before it)."""
    def program(body: str) -> str:
        return f"{FOLDER_PREFIX}{body}\nint main() {{\n  std::printf(\"%d\\n\", k());\n  return 0;\n}}\n"
    first = program('#define WIDTH 3\n__constant__ int t[1] = {10};\n'
                    'extern "C" int k() { return WIDTH + t[0]; }')
    second = program('#define WIDTH 5\n__constant__ int t[1] = {20};\n'
                     'extern "C" int k() { return WIDTH + t[0]; }')
    assert run_merged_on_host(tmp_path, "two", FOLDER_PREFIX, [first, second]) == \
        ["13\n", "25\n"]
    leaky = program('extern "C" int k() { return WIDTH; }')
    with pytest.raises(subprocess.CalledProcessError):
        run_merged_on_host(tmp_path, "leak", FOLDER_PREFIX, [first, leaky])


def test_csr_spmv_warp_lifts_lanes_warps_and_independent_sums() -> None:
    result = offline_template(load_kernel_folder(CSR))
    knobs = {p.name: dict(p.spec) for p in result.lifted.params}
    assert {"LANES", "WARPS_PER_BLOCK", "ILP", "LDG"} <= set(knobs), result.notes
    assert knobs["LANES"]["min"] == 2 and knobs["LANES"]["default"] == 32
    assert knobs["WARPS_PER_BLOCK"]["default"] == 4 and knobs["ILP"]["default"] == 1
    assert result.lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * (32 // LANES))",)
    assert result.lifted.block == ("32 * WARPS_PER_BLOCK",)
    # the lane stride follows LANES: rebuilt in the ILP loops, through kWarp's definition in
    # the loop as written (a file-scope enumerator read like a constexpr int)
    assert "j += LANES" in result.lifted.source
    assert "enum { kWarp = LANES, kWarpsPerBlock = 4 };" in result.lifted.source
    # VEC's float4 middle takes a segment loop adding the element it walks, not a gather
    assert any(n.startswith("VEC: not applied: the segment loop adds `vals[j] * "
                            "x[col_idx[j]]`, not the float element") for n in result.notes)
    # LDG wraps the loop's three reads (vals, col_idx and the gathered x), in each copy of it
    assert "WB_RO(vals[j]) * WB_RO(x[WB_RO(col_idx[j])])" in result.lifted.source


def _csr_configs(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, the corners, then 4 lanes a row in 2-warp blocks with four sums a lane
    and 2 lanes (16 rows a warp, most of them past the last row in the last block) with two
    sums through the read-only path."""
    default = dict(template.default_config())
    return [*corner_configs(template, env),
            {**default, "LANES": 4, "WARPS_PER_BLOCK": 2, "ILP": 4},
            {**default, "LANES": 2, "WARPS_PER_BLOCK": 8, "ILP": 2, "LDG": 1}]


def test_csr_spmv_warp_computes_as_written_on_host(tmp_path: Path) -> None:
    kf = load_kernel_folder(CSR)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space = template.space(dict(env))
    configs = host_sample(_csr_configs(template, env))
    for config in configs:
        assert space.rejection(config) is None, config
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, str(config))


@needs_nvcc
@pytest.mark.timeout(300)
def test_csr_spmv_warp_compiles_without_spills_at_its_ends(tmp_path: Path) -> None:
    """The default and 2 lanes a row with four sums and __ldg in 32-warp blocks build for
    sm_90."""
    kf = load_kernel_folder(CSR)
    template = offline_template(kf).template
    default = dict(template.default_config())
    for k, config in enumerate([default, {**default, "LANES": 2, "ILP": 4, "LDG": 1,
                                          "WARPS_PER_BLOCK": 32}]):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"csr_{k}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
