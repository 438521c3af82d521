"""The gate's repair learns relations between parameters, and refuses a template whose every
non-default config fails (issue 28, item 2), pure tier: outcomes come from a scripted check
(what the GPU would answer), so the repair logic is tested without a GPU."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from helpers_stage1_folders import blur3_toml, scalar_arg, toml_arg, toml_head, write_folder

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import Choice
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Config, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate
from workbench.llm.gate_repair import validate_and_tighten
from workbench.llm.space_gate import relation_between, tighten, unverified_notice


def _space(**values: list[int]) -> SearchSpace:
    return SearchSpace([Choice(name, tuple(v), default=v[0]) for name, v in values.items()])


def _split(space: SearchSpace, ok: object) -> tuple[list[Config], list[Config]]:
    configs = list(space)
    return ([c for c in configs if not ok(c)],  # type: ignore[operator]
            [c for c in configs if ok(c)])  # type: ignore[operator]


@pytest.mark.parametrize(("values", "truth", "expected"), [
    ({"BLOCK_X": [8, 16, 32], "TILE": [8, 16, 32]},
     lambda c: c["BLOCK_X"] == c["TILE"], "BLOCK_X == TILE"),
    ({"TILE": [24, 32, 48], "BLOCK_ROWS": [8, 12, 16]},
     lambda c: c["TILE"] % c["BLOCK_ROWS"] == 0, "TILE % BLOCK_ROWS == 0"),
    ({"A": [8, 16, 32, 64], "B": [4, 8, 16, 32]},
     lambda c: c["A"] * c["B"] <= 256, "A * B <= 256"),
])
def test_one_relation_explains_every_failure(values: dict[str, list[int]], truth: object,
                                             expected: str) -> None:
    space = _space(**values)
    bad, good = _split(space, truth)
    added, unexplained = tighten(space, bad, good)
    assert added == [expected] and unexplained == []
    assert relation_between(expected, space) is not None
    # the relation keeps every passing config and excludes every failing one
    from workbench.core.expr import parse_constraint

    rule = parse_constraint(expected, known_names=list(values))
    assert all(rule.holds(dict(c)) for c in good) and not any(rule.holds(dict(c)) for c in bad)


def test_one_parameter_rules_still_win_when_they_suffice() -> None:
    space = _space(BLOCK=[64, 128, 256, 512], VEC=[1, 2, 4])
    bad, good = _split(space, lambda c: c["BLOCK"] != 512)
    added, _ = tighten(space, bad, good)
    assert added == ["BLOCK < 512"]
    assert relation_between("BLOCK < 512", space) is None


TILED_CU = """\
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef TILE
#define TILE 16
#endif
extern "C" __global__ void k(float* out, const float* in, int n) {
  __shared__ float tile[TILE];
  int i = blockIdx.x * BLOCK_X + threadIdx.x;
  if (threadIdx.x < TILE && i < n) tile[threadIdx.x] = in[i];
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x % TILE];
}
"""

TOML = (toml_head("k", "n = 1000", "rtol = 0.0, atol = 0.0")
        + toml_arg("out", "f32", "out", shape=("n",)) + toml_arg("in", "f32", "in", shape=("n",))
        + scalar_arg("n") + """\
[baseline]
source = "template.cu"
entry = "k"
grid = ["ceil_div(n, 16)"]
block = ["16"]
[template]
entry = "k"
grid = ["ceil_div(n, BLOCK_X)"]
block = ["BLOCK_X"]
[template.params.BLOCK_X]
kind = "choice"
values = [16, 32, 64]
default = 16
[template.params.TILE]
kind = "choice"
values = [16, 32, 64]
default = 16
""")


def _folder(tmp_path: Path) -> KernelFolder:
    (tmp_path / "template.cu").write_text(TILED_CU)
    (tmp_path / "kernel.toml").write_text(TOML)
    return load_kernel_folder(tmp_path)


class _Scripted:
    """A correctness check answering as the GPU would for a rule on the config."""

    def __init__(self, ok: object) -> None:
        self.ok = ok
        self.calls = 0

    def __call__(self, template: KernelTemplate, config: Config, shape: str,
                 dtype: str) -> TrialResult:
        self.calls += 1
        good = self.ok(config)  # type: ignore[operator]
        return TrialResult(config, shape, dtype, Status.OK if good else Status.WRONG_RESULT,
                           "" if good else "out: 3 of 1000 elements outside rtol=0 atol=0")


def test_repair_adds_the_tie_and_says_so(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    proposal = TemplateProposal.from_template(folder.template)
    gated = validate_and_tighten(proposal, folder, correctness=_Scripted(
        lambda c: c["BLOCK_X"] == c["TILE"]))
    assert gated.report.ok, gated.report.messages()
    assert gated.added_constraints == ("BLOCK_X == TILE",)
    assert gated.added_relations == ("BLOCK_X == TILE",)
    assert gated.template is not None
    assert [str(c.text) for c in gated.template.constraints][-1] == "BLOCK_X == TILE"
    assert any("BLOCK_X == TILE (a relation between two parameters" in n for n in gated.notes)


def test_only_the_defaults_pass_is_refused_not_repaired(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    default = folder.template.default_config()
    check = _Scripted(lambda c: c == default)
    gated = validate_and_tighten(TemplateProposal.from_template(folder.template), folder,
                                 correctness=check)
    assert not gated.report.ok and gated.template is None
    assert gated.added_constraints == () and gated.rounds == 0
    assert any("every non-default config failed the gate" in m
               for m in gated.report.messages()), gated.report.messages()
    assert any("not attempted" in n for n in gated.notes)


def test_unverified_notice_says_what_will_check_it() -> None:
    text = unverified_notice("kernels/blur")
    assert text.startswith("unverified")
    assert "`workbench propose kernels/blur` on a machine with a GPU" in text
    assert "`workbench tune kernels/blur`" in text


BLUR_CU = """\
#define TILE 16
extern "C" __global__ void blur3(float* out, const float* in, int h, int w) {
  __shared__ float tile[TILE + 2][TILE + 2];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * TILE + tx, y = blockIdx.y * TILE + ty;
  for (int dy = ty; dy < TILE + 2; dy += TILE)
    for (int dx = tx; dx < TILE + 2; dx += TILE) {
      int gx = blockIdx.x * TILE + dx - 1, gy = blockIdx.y * TILE + dy - 1;
      tile[dy][dx] = (gx >= 0 && gx < w && gy >= 0 && gy < h) ? in[gy * w + gx] : 0.0f;
    }
  __syncthreads();
  if (x < w && y < h) {
    float s = 0.0f;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) s += tile[ty + i][tx + j];
    out[y * w + x] = s / 9.0f;
  }
}
"""

BLUR_TOML = blur3_toml("baseline.cu")


def blur_folder(tmp_path: Path) -> Path:
    return write_folder(tmp_path / "blur3", {"baseline.cu": BLUR_CU, "kernel.toml": BLUR_TOML})


@pytest.mark.timeout(300)
def test_propose_write_without_gpu_ends_saying_unverified(tmp_path: Path) -> None:
    from workbench.cli import main as cli_main

    path = blur_folder(tmp_path)
    out = io.StringIO()
    code = cli_main(["propose", str(path), "--write", "--store", str(tmp_path / "s.sqlite")],
                    stdout=out)
    text = out.getvalue()
    assert code == 0, text
    last = text.strip().splitlines()[-1]
    assert last == f"note: approved {unverified_notice(str(path))}", last
