"""INDEX_MASK (workbench/templater/index_mask.py): ``array[x % N]`` of a power of two ``N``
read as ``array[x & (N - 1)]``, a knob whose 0 is the kernel as written. The folder
crspline_rotmean (set 20, functor objects) and another hand's spelling of it (lambdas, the
ring's size a macro) compute what the kernel as written computes with the knob at both
ends; a modulus that is not a power of two and a run-time modulus stay as written (the
items still lift). A pointer's subscript is not a site either (it may point into the middle
of a buffer), which no test here reaches: this family's items refuse such a kernel first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from held_back_harness import respelled, same_as_written
from held_back_unseen20 import SET
from helpers_templater import host_configs
from test_corpus_unseen3 import host_flags  # noqa: F401  (a fixture)
from test_templater_first20_crspline import LAMBDAS

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

#: the lambdas' spelling with the ring's size a macro
MACRO_RING = LAMBDAS.replace("constexpr int kKnots = 64;\n", "").replace(
    "namespace {", "#define KNOTS 64\nnamespace {").replace("kKnots", "KNOTS")
PICK = {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 4}


def lift(source: str) -> LiftedSource:
    return lift_kernel(source, entry="crspline_rotmean", grid=["ceil_div(n, 2048)"],
                       block=["256"], scalars={"n": "n"})


@pytest.mark.parametrize("spelling", ["folder", "macro_ring"])
def test_the_mask_computes_as_written_at_both_ends(
        spelling: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(SET.root / "crspline_rotmean") if spelling == "folder" else \
        respelled(SET.root / "crspline_rotmean", tmp_path / "folder", MACRO_RING)
    lifted = offline_template(kf)
    assert "INDEX_MASK" in lifted.template.param_names, lifted.lifted.notes
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(lifted.template, env, [{**PICK, "INDEX_MASK": 1},
                                                  {**PICK, "INDEX_MASK": 0}])
    assert {c["INDEX_MASK"] for c in configs} == {0, 1}
    assert same_as_written(kf, lifted.template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


def test_each_power_of_two_subscript_is_a_site() -> None:
    lifted = lift(MACRO_RING)
    # three sites, in the all-live copy and the guarded one; knots[seg] is no remainder
    assert lifted.source.count("knots[WB_INDEX_MASK(") == 2 * 3, lifted.source


@pytest.mark.parametrize("old, new", [
    ("% KNOTS]", "% 48]"),  # not a power of two
    ("% KNOTS]", "% n]"),  # a run-time modulus
])
def test_subscripts_the_rule_cannot_read_stay_as_written(old: str, new: str) -> None:
    lifted = lift(MACRO_RING.replace(old, new))
    assert "INDEX_MASK" not in {p.name for p in lifted.params}, lifted.notes
    assert "WB_INDEX_MASK" not in lifted.source
    assert {"ITEMS_PER_THREAD", "UNROLL"} <= {p.name for p in lifted.params}, lifted.notes
