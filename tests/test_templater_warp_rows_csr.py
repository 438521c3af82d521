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

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import COOPERATIVE_BLOCK, corner_configs, host_sample, run_on_host
from test_corpus_unseen3 import (
    _SPILLS,
    C_TYPES,
    HOST_PRELUDE,
    _assert_same,
    _host_program,
    _inputs,
    _ptxas_log,
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template

CSR = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen7" / \
    "csr_spmv_warp"


# -- several host runs, one compile -------------------------------------------------------

_DEFINED = re.compile(r"^\s*#\s*define\s+(\w+)", re.MULTILINE)
_MAIN = "\nint main() {\n"
_MARK = "--wb-run-end--"


def merged_program(prefix: str, programs: Sequence[str]) -> str:
    """One C++ program that does what each of ``programs`` does, in turn, printing a mark
    line after each. Each must open with ``prefix`` (kept once) and hold one ``int main()
    {``; the rest of each goes in a namespace of its own with ``main`` renamed and
    ``extern "C"`` dropped (one C name a program), every macro it defines undefined after
    it, so no program sees another's macros, names or constants."""
    parts, calls = [prefix], []
    for i, program in enumerate(programs):
        assert program.startswith(prefix), f"program {i} does not open with the prefix"
        rest = program[len(prefix):]
        assert rest.count(_MAIN) == 1, f"program {i} holds {rest.count(_MAIN)} mains"
        undefs = "".join(f"#undef {m}\n" for m in dict.fromkeys(_DEFINED.findall(rest)))
        body = rest.replace('extern "C" ', "").replace(_MAIN, "\nint wb_main() {\n")
        parts.append(f"namespace wb_p{i} {{\n{body}\n}}\n{undefs}")
        calls.append(f"  wb_p{i}::wb_main(); std::printf(\"{_MARK}\\n\");\n")
    return "".join([*parts, "int main() {\n", *calls, "  return 0;\n}\n"])


def run_merged_on_host(work: Path, name: str, prefix: str,
                       programs: Sequence[str]) -> list[str]:
    """What each of ``programs`` prints, from one compile and run of
    :func:`merged_program`."""
    printed = run_on_host(work, name, merged_program(prefix, programs)).split(f"{_MARK}\n")
    assert printed[-1] == "" and len(printed) == len(programs) + 1, printed[-1][-300:]
    return printed[:-1]


#: What ``_host_program`` of tests/test_corpus_unseen3.py opens every program with.
FOLDER_PREFIX = "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE]) + "\n"


def folder_runs(kf: Any, runs: Sequence[tuple[str, Any]], inputs: dict[str, Any],
                work: Path) -> list[dict[str, Any]]:
    """Every output of each (source, launch) of ``runs`` at ``kf``'s check shape, as
    ``_run`` of tests/test_corpus_unseen3.py reads them, from one host compile."""
    work.mkdir(parents=True, exist_ok=True)
    env = kf.env(kf.check_shape, "fp32")
    programs = [_host_program(kf, source, launch, inputs) for source, launch in runs]
    return [_outputs(kf, env, printed.split())
            for printed in run_merged_on_host(work, "merged", FOLDER_PREFIX, programs)]


def _outputs(kf: Any, env: dict[str, Any], printed: list[str]) -> dict[str, Any]:
    """The outputs of one run from what it printed: each output argument's elements in
    argument order, NaN where no thread wrote."""
    outputs, at = {}, 0
    for arg in kf.args:
        if arg.role in ("out", "inout"):
            shape = arg.shape_for(env)
            count = int(np.prod(shape))
            np_type = C_TYPES[arg.resolved_dtype("fp32")][1]
            values = [float.fromhex(v) if v not in ("nan", "-nan") else float("nan")
                      for v in printed[at:at + count]]
            outputs[arg.name] = np.array(values).astype(np_type).reshape(shape)
            at += count
    assert at == len(printed), f"printed {len(printed)} values, expected {at}"
    return outputs


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
    assert "j += LANES" in result.lifted.source and "kWarp) " not in result.lifted.source
    assert any("walks a segment from a run-time offset" in n for n in result.notes)
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
