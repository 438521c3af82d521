"""The column-partials family from a kernel folder: lifted only where the folder compares
the partial rows by a reduced quantity (``compare = "sum"`` or reference.py ``verify``),
refused with the store's line where it compares them element by element."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_stage1_folders import scalar_arg, toml_arg, toml_head, write_folder

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater.offline import compared_by_total, offline_template

SOURCE = (Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen2" /
          "colsum_partials" / "baseline.cu").read_text()
VERIFY = '''
import numpy as np


def verify(outputs, golden, shape):
    got = outputs["partial"].reshape(-1, shape["ncols"]).sum(axis=0)
    want = golden["partial"].reshape(-1, shape["ncols"]).sum(axis=0)
    assert np.allclose(got, want), "column totals differ"
'''


def _folder(root: Path, compare: str | None, reference: str | None) -> Path:
    toml = (toml_head("colsum_partials", "nrows = 101, ncols = 45", "rtol = 1e-5, atol = 1e-4")
            + toml_arg("partial", "f32", "out", shape=("64", "ncols"), compare=compare)
            + toml_arg("mat", "f32", "in", shape=("nrows", "ncols"))
            + scalar_arg("nrows") + scalar_arg("ncols")
            + '[baseline]\nsource = "baseline.cu"\nentry = "colsum_partials"\n'
            + 'grid = ["ceil_div(ncols, 32)", "64"]\nblock = ["32", "8"]\n')
    return write_folder(root / "colsum_partials", {"kernel.toml": toml, "baseline.cu": SOURCE,
                                                   "reference.py": reference})


@pytest.mark.parametrize(("compare", "reference"), [("sum", None), (None, VERIFY)])
def test_partials_compared_by_their_total_are_lifted(tmp_path: Path, compare: str | None,
                                                     reference: str | None) -> None:
    folder = load_kernel_folder(_folder(tmp_path, compare, reference))
    assert compared_by_total(folder) == {"partial"}
    result = offline_template(folder)
    assert any(f.transform == "COLUMN_PARTIALS" and f.applied for f in result.lifted.findings)
    assert {"BLOCK_X", "BLOCK_Y", "CHUNKS", "VEC", "ROW_UNROLL"} <= set(result.lifted.defaults)


def test_partials_compared_element_by_element_are_refused_with_the_store(tmp_path: Path
                                                                        ) -> None:
    folder = load_kernel_folder(_folder(tmp_path, None, None))
    assert compared_by_total(folder) == frozenset()
    with pytest.raises(TemplateError) as caught:  # nothing else lifts this kernel
        offline_template(folder)
    refusal = next(f for f in caught.value.details["findings"]
                   if f.startswith("COLUMN_PARTIALS"))
    assert refusal.startswith("COLUMN_PARTIALS: not applied: the partial rows `partial` are "
                              "compared element by element")
    assert refusal.endswith("(line 27)")  # the store of the partial row
