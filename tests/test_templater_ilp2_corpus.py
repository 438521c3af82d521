"""The offline templater's lift of the seen per-element corpus kernel probe_energy (unseen3:
Lennard-Jones + screened Coulomb against a __constant__ ion table, a cutoff branch calling
two __device__ helpers) computes, on the host, what the kernel as written computes at its
default and with items per thread interleaved, the cutoff branchless, the per-ion shift
from a per-block table (TABLE) and the root as rsqrtf (FAST_MATH, within the folder's
tolerance). This checks a
written template, not a rule: the rules are checked on other spellings in
tests/test_templater_ilp2_pure.py."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from helpers_templater import lifted_template
from test_corpus_unseen3 import (  # the corpus's host harness (inputs, run, comparison)
    ROOT,
    _assert_same,
    _folder,
    _inputs,
    _plain_outputs,
    _run,
    host_flags,
)
from test_templater_flat import compiles, folder_lift

from workbench.engine.compiler import Compiler
from workbench.templater import lift_kernel

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

__all__ = ["host_flags"]  # the session fixture, used by name


#: the host has no hardware approximations: FAST_MATH's __expf is expf there (the gate
#: checks the GPU's within the tolerance)
_HOST_FAST = "#define __expf(v) expf(v)\n#define __fdividef(a, b) ((a) / (b))\n"


def test_probe_energy_lift_matches_the_kernel_as_written(tmp_path: Path,
                                                         host_flags: tuple[str, ...]) -> None:
    spec = tomllib.loads((ROOT / "probe_energy" / "kernel.toml").read_text())
    base = spec["baseline"]
    lifted = lift_kernel((ROOT / "probe_energy" / base["source"]).read_text(),
                         entry=base["entry"], grid=base["grid"], block=base["block"],
                         scalars={"n": "n"})
    assert {"ITEMS_PER_THREAD", "UNROLL", "BRANCHLESS", "TABLE", "FAST_MATH"} <= \
        {p.name for p in lifted.params}, lifted.notes
    template = lifted_template(lifted, base["entry"])
    plain = _folder("probe_energy")
    env = plain.env(plain.check_shape, "fp32")
    want = _plain_outputs("probe_energy", tmp_path / "plain", host_flags)
    inputs = _inputs(plain)
    default = dict(template.default_config())
    configs = [default,
               {**default, "ITEMS_PER_THREAD": 4, "UNROLL": 4, "BRANCHLESS": 1},
               {**default, "ITEMS_PER_THREAD": 8, "UNROLL": 8, "BRANCHLESS": 1,
                "BLOCK_THREADS": 64},
               {**default, "ITEMS_PER_THREAD": 2, "UNROLL": 8, "BRANCHLESS": 0},
               # the per-ion shift from the block's table (96 ions over 64 threads: two
               # rounds of the fill), the root and its division as rsqrtf
               {**default, "ITEMS_PER_THREAD": 4, "UNROLL": 4, "BRANCHLESS": 1,
                "BLOCK_THREADS": 64, "TABLE": 1, "FAST_MATH": 1},
               {**default, "TABLE": 1, "BLOCK_THREADS": 32}]
    space = template.space(env)
    for k, config in enumerate(configs):
        assert space.rejection(config) is None, config
        got = _run(plain, _HOST_FAST + template.render(config, "fp32").source,
                   template.launch_for(config, env), inputs, tmp_path / f"c{k}", host_flags)
        _assert_same(plain, got, want, f"lifted at {config}")


def test_probe_energy_lift_compiles_with_every_knob_on(compiler: Compiler) -> None:
    """nvcc takes the per-block table (its barrier, 1024 threads over 96 ions), the copy of
    yukawa taking r^2, and the macros picking each form, at the ends of the space."""
    lifted = folder_lift("probe_energy", "corpus_compute_unseen3")
    template = lifted_template(lifted, "probe_energy")
    compiles(compiler, template,
             {"TABLE": 1, "FAST_MATH": 1, "ITEMS_PER_THREAD": 8, "UNROLL": 8,
              "BRANCHLESS": 1, "BLOCK_THREADS": 1024},
             {"TABLE": 1, "FAST_MATH": 0, "ITEMS_PER_THREAD": 1, "BLOCK_THREADS": 32},
             {"TABLE": 0, "FAST_MATH": 1, "ITEMS_PER_THREAD": 4, "UNROLL": 4})


def test_probe_energy_ranges_are_the_per_element_practice() -> None:
    """Block sizes every multiple of 32 up to 1024 (the kernel shares nothing but the
    table, whose fill strides by the block), 1 to 8 items, unroll 0 to 8 (96 ions: more
    than the 64 trips unrolled whole), the table and the cheaper math as 0/1 knobs."""
    knobs = {p.name: dict(p.spec) for p in
             folder_lift("probe_energy", "corpus_compute_unseen3").params}
    block = knobs["BLOCK_THREADS"]
    assert (block["min"], block["max"], block["step"]) == (32, 1024, 32)
    assert knobs["ITEMS_PER_THREAD"]["values"] == [1, 2, 4, 8]
    assert knobs["UNROLL"]["values"] == [0, 1, 2, 4, 8]
    assert knobs["TABLE"]["values"] == knobs["FAST_MATH"]["values"] == [0, 1]
    assert all(k["default"] == v for k, v in ((knobs["TABLE"], 0), (knobs["FAST_MATH"], 0)))
