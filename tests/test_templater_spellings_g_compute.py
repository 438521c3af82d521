"""The compute-bound per-element kernel with branches and a loop in a ``__device__`` helper,
as other people write it, at first contact (issue 28): the kernels of
tests/spellings_g/compute/ lifted by the offline templater, compared with the corpus's
percell_compute lift (BLOCK_THREADS, ITEMS_PER_THREAD with independent state, FAST_MATH);
every checked config prints exactly what the kernel as written prints on the host (the
harness of tests/test_templater_ilp_first_contact.py: every thread of the launch in turn).

Spellings: a float helper with a ``switch`` over a regime then a Newton loop, called once
per element after an early return; a double helper with an early return per branch and a
counted ``while`` (read as its ``for``, workbench/templater/loop_forms.py), the point
spelled ``threadIdx.x + blockDim.x * blockIdx.x`` and the call under ``if (i < n)``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from helpers_templater import host_sample, lifted_template, run_merged_on_host
from test_templater_ilp_first_contact import _program
from test_templater_ilp_spellings import _HOST, N, checked_configs

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

HERE = Path(__file__).resolve().parent / "spellings_g" / "compute"
#: name -> (grid, block, arguments in order as test_templater_ilp_spellings names them)
SPECS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "helper_switch_float": (["ceil_div(n, 256)"], ["256"], ["out", "in", "n"]),
    "helper_branch_double_while": (["ceil_div(n, 128)"], ["128"], ["dbl_out", "dbl_in", "n"]),
}


def _lift(name: str) -> LiftedSource:
    grid, block, _args = SPECS[name]
    return lift_kernel((HERE / f"{name}.cu").read_text(), entry="k", grid=grid, block=block,
                       scalars={"n": "n"})


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_helper_gets_items_with_independent_state(name: str) -> None:
    lifted = _lift(name)
    knobs = {p.name for p in lifted.params}
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD"} <= knobs, lifted.notes
    note = next(n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: applied"))
    assert "item-dependent local(s)" in note
    assert ("FAST_MATH" in knobs) == name.endswith("_float")  # expf: float only


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(name: str) -> None:
    grid, block, args = SPECS[name]
    written = KernelTemplate.build(name="k", source=(HERE / f"{name}.cu").read_text(),
                                   entry="k", grid=grid, block=block)
    template = lifted_template(_lift(name))
    configs = host_sample(checked_configs(template))
    programs = [_program(written, {}, args)] + [_program(template, c, args) for c in configs]
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_merged_on_host(Path(tmp), "all", _HOST, programs)
    want = printed[0].split()
    assert len(want) == N and "-7" not in want
    for config, got in zip(configs, printed[1:], strict=True):
        assert got.split() == want, config
