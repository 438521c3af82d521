"""The row-scan family (issue 28), host tier: every spelling of tests/test_templater_scan.py
as written and its lifted template at every all-ends config and hand-picked mixes (g++,
every thread a coroutine, shuffles exchanged among a warp's lanes), on rows of 1, 5 (fewer
than a warp) and 1000 elements (no multiple of any tile), each output compared exactly
with the scan the program computes itself (integer-valued inputs: float and double sums
are exact in any order); benchmarks/corpus_compute_unseen8/row_cumsum's lift at every
all-ends config and mixes against its plain kernel within the folder's tolerance."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import held_back_unseen8
import pytest
from helpers_templater import COOPERATIVE_BLOCK, end_configs, lifted_template, run_merged_on_host
from test_corpus_unseen3 import (
    HOST_PRELUDE,
    _assert_same,
    _inputs,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_scan import ROW_CUMSUM, SPELLINGS, Spelling, lift

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import offline_template

pytestmark = pytest.mark.skipif(shutil.which("g++") is None,
                                reason="needs g++ for the host simulation")

#: Knob mixes the all-ends corners do not reach: odd items over 3 warps, padded; 5 items
#: over 5 warps; 8 items over 32 warps, padded.
MIXES = [{"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 3, "PAD": 1},
         {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 5, "PAD": 0},
         {"BLOCK_THREADS": 1024, "ITEMS_PER_THREAD": 8, "PAD": 1}]
LENGTHS = (1, 5, 1000)
_PREFIX = COOPERATIVE_BLOCK + HOST_PRELUDE + "#include <cfloat>\n" + \
    held_back_unseen8.HOST_EXTRAS

_MAIN = r"""
int main() {
  const int lengths[] = {%(lengths)s};
  for (int n : lengths) {
    const int rows = 3;
    std::vector<%(t)s> in(rows * n), out(rows * n, (%(t)s)12345);
    for (int i = 0; i < rows * n; ++i) in[i] = (%(t)s)((i * 37) %% 17 - 8);
    wb_launch({(unsigned)rows, 1, 1}, {%(threads)d, 1, 1},
              [&] { k(out.data(), in.data(), rows, n%(extra)s); });
    int bad = 0;
    for (int r = 0; r < rows; ++r) {
      %(t)s acc = (%(t)s)(%(identity)s);
      for (int c = 0; c < n; ++c) {
        const %(t)s a = acc, b = in[r * n + c]%(scaled)s;
        const %(t)s next = %(op)s;
        bad += out[r * n + c] != (%(inclusive)s ? next : acc);
        acc = next;
      }
    }
    std::printf("%%d %%d\n", n, bad);
  }
  return 0;
}
"""


def _program(spelling: Spelling, source: str, threads: int, lengths: tuple[int, ...]) -> str:
    return _PREFIX + source + _MAIN % {
        "t": spelling.elem, "threads": threads, "identity": spelling.identity,
        "op": spelling.op, "inclusive": "true" if spelling.inclusive else "false",
        "lengths": ", ".join(map(str, lengths)),
        "extra": f", {spelling.extra}" if spelling.extra else "",
        "scaled": f" * {spelling.extra}" if spelling.extra else ""}


def _configs(template: KernelTemplate, env: dict[str, Any]) -> list[dict[str, Any]]:
    """Every all-ends config of the scan's knobs (MIN_BLOCKS_PER_SM, a register cap the host
    does not model, at its default), then the mixes."""
    out: list[dict[str, Any]] = []
    space = template.space(env)
    for c in end_configs(template, env) + [dict(template.default_config(), **m)
                                           for m in MIXES]:
        c = {**c, "MIN_BLOCKS_PER_SM": 0}
        if c not in out and space.rejection(c) is None:
            out.append(c)
    return out


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_and_every_config_of_its_lift_scan_exactly(name: str,
                                                                 tmp_path: Path) -> None:
    spelling = SPELLINGS[name]
    template = lifted_template(lift(spelling))
    configs = _configs(template, {"rows": 3, "n": 1000})
    assert len(configs) >= 8, configs
    plain_lengths = tuple(n for n in LENGTHS if not spelling.longest or n <= spelling.longest)
    programs = [_program(spelling, spelling.source, spelling.block, plain_lengths)]
    for config in configs:
        programs.append(_program(spelling, template.render(config, "fp32").source,
                                 config["BLOCK_THREADS"], LENGTHS))
    printed = run_merged_on_host(tmp_path, "scan", _PREFIX, programs)
    assert printed[0].split() == [w for n in plain_lengths for w in (str(n), "0")], \
        f"the kernel as written: {printed[0]}"
    for config, got in zip(configs, printed[1:], strict=True):
        assert got.split() == [w for n in LENGTHS for w in (str(n), "0")], (config, got)


@pytest.mark.timeout(900)
def test_row_cumsum_lift_matches_the_plain_kernel_at_every_end_config(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(ROW_CUMSUM)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _configs(template, env)
    assert {"BLOCK_THREADS": 1024, "ITEMS_PER_THREAD": 8, "PAD": 1,
            "MIN_BLOCKS_PER_SM": 0} in configs
    inputs = _inputs(kf)
    want = held_back_unseen8.SET.plain_outputs("row_cumsum", tmp_path / "plain", host_flags)
    for i, config in enumerate(configs):
        source = held_back_unseen8.host_source(template.render(config, "fp32").source)
        got = _run(kf, source, template.launch_for(config, env), inputs,
                   tmp_path / f"config{i}", host_flags)
        _assert_same(kf, got, want, f"row_cumsum's lift at {config}")
