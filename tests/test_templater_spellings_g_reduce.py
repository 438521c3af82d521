"""The grid-stride reduction to partial sums as other people write it, at first contact
(issue 28): the kernels of tests/spellings_g/reduce/ lifted by the offline templater and
compared with the corpus's partial_sum lift (BLOCK_THREADS, GRID_BLOCKS, VEC,
ITEMS_PER_THREAD, FINAL). Both lift BLOCK_THREADS only (the reduction family refuses their
final stages with the line: a shuffle stage over the warps' sums, and ``for (; i < n; ...)``);
every checked config's partial sums add up to the kernel's as written on the host
(compare = "sum", the folder's tolerance): the default, the first and the last all-ends
corners, every one with WORKBENCH_FULL_MATRIX=1.

The walk's counter declared before other statements (``int i = ..; const int stride = ..;
float acc = 0; while (i < n) {..; i += stride;}``) reads as its ``for``
(workbench/templater/loop_forms.py): the statements between neither mention it nor assign
what its value reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_templater import end_configs, host_sample
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs
from test_templater_const_via import _knobs, _toml

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.write_policy import write_file
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import counted_whiles

HERE = Path(__file__).resolve().parent / "spellings_g" / "reduce"
SPELLINGS = {"while_stride_shuffle_warps": "the final stage",
             "for_empty_init_blockdim_tree": "the loop is not `for (T i = start; i < n;"}


def _folder(name: str, root: Path) -> KernelFolder:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    toml = _toml("k", ["512"], ["256"], [("partials", "f32", "out", ["512"]),
                                         ("x", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")],
                 {"n": 5000}, [])
    toml = toml.replace('shape = ["512"]', 'shape = ["512"]\ncompare = "sum"').replace(
        "fp32 = { rtol = 0, atol = 0 }", "fp32 = { rtol = 1e-5, atol = 1e-4 }")
    write_file(folder, folder / "baseline.cu", (HERE / f"{name}.cu").read_text(), overwrite=True)
    write_file(folder, folder / "kernel.toml", toml, overwrite=True)
    return load_kernel_folder(folder)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_block_size_lifts_and_the_reduction_refusal_names_the_line(
        name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    # the reduction family reads both since tests/test_templater_spellings_r_reduce.py:
    # the corpus partial_sum's knobs
    assert set(_knobs(result)) == {"BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD",
                                   "FINAL", "MIN_BLOCKS_PER_SM"}, result.notes
    assert any(n.startswith("REDUCTION: applied") for n in result.notes), result.notes


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_config_sums_to_the_kernel_as_written(name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path / "folders")
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = [dict(template.default_config()), *host_sample(end_configs(template, env))]
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, str(config))


def test_a_counter_declared_before_other_statements_moves_into_its_for() -> None:
    source = (HERE / "while_stride_shuffle_warps.cu").read_text()
    done = counted_whiles(InlinedSource(source, "k.cu"), "k").text
    assert "for (int i = blockIdx.x * NT + threadIdx.x; i < n; i += stride) {" in done
    assert done.count("\n") == source.count("\n")
    # a statement between that reads the counter: left as written
    changed = source.replace("float acc = 0.0f;", "float acc = 0.0f * i;")
    assert "while (i < n)" in counted_whiles(InlinedSource(changed, "k.cu"), "k").text
    # a value read from memory moves past declarations that write nothing (loop_forms._movable)
    reads = source.replace("int i = blockIdx.x * NT + threadIdx.x;", "int i = x[0] > 0;")
    assert "for (int i = x[0] > 0; i < n; i += stride) {" in \
        counted_whiles(InlinedSource(reads, "k.cu"), "k").text
    # ... but not past a statement between that may write memory: left as written
    stores = reads.replace("float acc = 0.0f;", "float acc = 0.0f; partials[0] = acc;")
    assert "while (i < n)" in counted_whiles(InlinedSource(stores, "k.cu"), "k").text
