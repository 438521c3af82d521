"""Grid-stride reductions to one value a block, as other people write them, at first contact
(issue 28): the kernels of tests/spellings_r/ lifted by the offline templater get the corpus
partial_sum's knobs (BLOCK_THREADS, GRID_BLOCKS, VEC, ITEMS_PER_THREAD, FINAL) whatever the
walk's loop (``while``, ``for (; i < n; i += S)`` with the index declared before it, the
stride a local, ``gridDim.x * blockDim.x``), the block's stage (a shared tree from a macro
or ``blockDim.x >> 1``; shuffles down or xor, a loop or unrolled, warp 0 over the warps'
slots, the stage read by reduce_tail and written anew under FINAL) and the output (thread 0
or lane 0 of warp 0 storing the partial, atomicAdd / atomicMax), for a float sum, a double
sum and an int max. Every checked config (the default, the first and the last all-ends
corners, every one with WORKBENCH_FULL_MATRIX=1, a mix at a block of 96 threads: not a power
of two, the regenerated tree's first step folds the rest)
gives the kernel's outputs on the host, partials compared by their total. Cooperative
groups' reduce is refused naming the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs, host_sample, lifted_template, run_merged_on_host
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs
from test_templater_const_via import _knobs, _toml
from test_templater_reduce_first_contact import _XOR, _program
from test_templater_reduce_spellings import _HARNESS

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.write_policy import write_file
from workbench.templater import lift_kernel, offline_template

HERE = Path(__file__).resolve().parent / "spellings_r"
CORPUS_KNOBS = {"BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL"}
#: name -> (output, its dtype and shape, block, whether the stage is the author's shuffles)
SPELLINGS: dict[str, tuple[str, str, str, str, bool]] = {
    "while_xor_unrolled_lane_slots": ("partials", "f32", "512", "256", True),
    "double_for_warpsize_shfl_down": ("partials", "f32", "512", "256", True),
    "max_predeclared_for_macro_tree_atomic": ("peak", "i32", "1", "128", False),
    "atomic_sum_while_tree_halfshift": ("total", "f32", "1", "256", False),
}


def _folder(name: str, root: Path) -> KernelFolder:
    out, dtype, slots, block = SPELLINGS[name][:4]
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    role = "inout" if slots == "1" else "out"  # an atomic's target starts from its input
    toml = _toml("k", ["512"], [block], [(out, dtype, role, [slots]),
                                          ("x", dtype, "in", ["n"]),
                                          ("n", "i32", "scalar", "n")], {"n": 5003}, [])
    if slots != "1":  # one partial a block: compared by their total
        toml = toml.replace(f'shape = ["{slots}"]', f'shape = ["{slots}"]\ncompare = "sum"', 1)
    toml = toml.replace("fp32 = { rtol = 0, atol = 0 }", "fp32 = { rtol = 1e-5, atol = 1e-3 }")
    # (kernel folders hold no f64 arguments: the double spelling's folder is its float
    # twin; the double kernel itself runs below through the exact-answer harness)
    write_file(folder, folder / "baseline.cu",
               (HERE / f"{name}.cu").read_text().replace("double", "float"), overwrite=True)
    write_file(folder, folder / "kernel.toml", toml, overwrite=True)
    return load_kernel_folder(folder)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_corpus_knobs_lift(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    knobs = _knobs(result)
    assert set(knobs) >= CORPUS_KNOBS, result.notes
    # the author's shuffles: FINAL 1 is the stage as written, any block of whole warps
    shuffles = SPELLINGS[name][4]
    assert knobs["FINAL"]["default"] == (1 if shuffles else 0)
    assert knobs["BLOCK_THREADS"]["kind"] == ("int" if shuffles else "pow2"), knobs
    note = next(n for n in result.notes if n.startswith("REDUCTION: applied"))
    assert ("written anew" in note) == shuffles, note


#: warpSize and the atomics on the host, whose threads run one at a time between barriers
_ATOMICS = """
static const int warpSize = 32;
template <class T> static T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
template <class T> static T atomicMax(T* p, T v) { T old = *p; *p = old < v ? v : old;
                                                   return old; }
"""


def _mix(knobs: dict[str, Any], block: int) -> dict[str, Any]:
    return {"BLOCK_THREADS": block, "GRID_BLOCKS": knobs["GRID_BLOCKS"]["values"][-2],
            "VEC": 2, "ITEMS_PER_THREAD": 4, "FINAL": 0}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_config_gives_the_kernel_as_written(name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path / "folders")
    result = offline_template(kf)
    template, knobs = result.template, _knobs(result)
    env = kf.env(kf.check_shape, "fp32")
    mixes = [{**template.default_config(), **_mix(knobs, 480 if SPELLINGS[name][4] else 512)},
             {**template.default_config(), **_mix(knobs, 1024), "FINAL": 1, "VEC": 4}]
    configs = [dict(template.default_config()), *host_sample(end_configs(template, env)),
               *mixes]
    space = template.space(dict(env))
    assert all(space.rejection(c) is None for c in configs), configs
    runs = [(_ATOMICS + kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((_ATOMICS + template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, str(config))


def test_cooperative_groups_reduce_is_read_as_its_shuffles(tmp_path: Path) -> None:
    """The tile's reduce is the header's shuffle butterfly (workbench/templater/coop_groups.py),
    which the family reads as the block's warp stage (host-checked in
    tests/test_templater_coop_groups.py)."""
    source = HERE / "cg_reduce_refused.cu"
    folder = tmp_path / "cg"
    folder.mkdir()
    toml = _toml("k", ["512"], ["256"], [("partials", "f32", "out", ["512"]),
                                          ("x", "f32", "in", ["n"]),
                                          ("n", "i32", "scalar", "n")], {"n": 5003}, [])
    toml = toml.replace('shape = ["512"]', 'shape = ["512"]\ncompare = "sum"', 1)
    write_file(folder, folder / "baseline.cu", source.read_text(), overwrite=True)
    write_file(folder, folder / "kernel.toml", toml, overwrite=True)
    result = offline_template(load_kernel_folder(folder))
    assert any(n.startswith("REDUCTION: applied") for n in result.notes), result.notes
    assert "GRID_BLOCKS" in _knobs(result) and "cg::" not in result.lifted.source


@pytest.mark.timeout(600)
def test_the_double_sum_is_exact_at_every_checked_config(tmp_path: Path) -> None:
    """Integer-valued doubles: every order of the sum is exact, so each config's partials
    add up to the exact answer (the first-contact harness, doubles in and out)."""
    name = "double_for_warpsize_shfl_down"
    source = (HERE / f"{name}.cu").read_text()
    case = (source, 512, 256, "double", "sum", "double")
    lifted = lift_kernel(source, entry="k", grid=["512"], block=["256"], scalars={"n": "n"},
                         compared_by_total=frozenset({"partials"}))
    template = lifted_template(lifted, "k")
    knobs = {p.name: dict(p.spec) for p in lifted.params}
    env = {"n": 7003, "elem_bytes": 8}
    configs = [dict(template.default_config()), *host_sample(end_configs(template, env)),
               {**template.default_config(),
                **{k: v for k, v in _mix(knobs, 96).items() if k in knobs}}]
    programs = [_program(template, c, n=7003, case=case) for c in configs]
    printed = run_merged_on_host(tmp_path, "sims", _HARNESS + _XOR, programs)
    for config, out in zip(configs, printed, strict=True):
        got, want = map(int, out.split())
        assert got == want, config
