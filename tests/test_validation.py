"""The validation gate, propose_template's repair round over the loopback server, reviews."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Config, Status, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.llm.validation import UNVERIFIED_NOTE, propose_template, validate_proposal
from workbench.templater import offline_template

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(__file__).parent / "transcripts"


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


@pytest.fixture(scope="module")
def good(folder: KernelFolder) -> TemplateProposal:
    return offline_template(folder).proposal



def edit(p: TemplateProposal, **changes: Any) -> TemplateProposal:
    data = p.model_dump()
    data.update(changes)
    return TemplateProposal.model_validate(data)


def with_param(p: TemplateProposal, **spec: Any) -> TemplateProposal:
    data = p.model_dump()
    data["parameters"].append(spec)
    return TemplateProposal.model_validate(data)


def test_good_proposal_is_unverified_on_cpu(folder: KernelFolder, good: TemplateProposal) -> None:
    report = validate_proposal(good, folder)
    assert report.ok and report.status == "unverified" and report.note == UNVERIFIED_NOTE
    assert f"correctness: {UNVERIFIED_NOTE}" in report.checks_skipped
    assert "compile: no compiler given" in report.checks_skipped
    assert report.space_sizes["decode/bf16"] > 0


def test_unused_parameter_named(folder: KernelFolder, good: TemplateProposal) -> None:
    bad = with_param(good, name="UNROLL", kind="choice", values=[1, 2, 4], default=2)
    bad = edit(bad, source="#ifndef UNROLL\n#define UNROLL 2 // UNROLL\n#endif\n" + good.source)
    report = validate_proposal(bad, folder)
    assert report.status == "failed"
    [problem] = report.problems
    assert (problem.check, problem.subject) == ("unused_parameter", "UNROLL")


def test_parameter_used_only_by_a_launch_rule_counts_as_used(folder: KernelFolder,
                                                             good: TemplateProposal) -> None:
    # a grid-stride kernel's block count sizes the grid only (the reduction family's
    # GRID_BLOCKS was refused as unused, so propose --write wrote nothing for partial_sum)
    data = good.model_dump()
    data["parameters"].append({"name": "GRID_CAP", "kind": "choice", "values": [1, 2],
                               "default": 1})
    data["launch"]["grid"] = [f"({g}) * GRID_CAP" for g in data["launch"]["grid"]][:1] + \
        data["launch"]["grid"][1:]
    report = validate_proposal(TemplateProposal.model_validate(data), folder)
    assert not [p for p in report.problems if p.check == "unused_parameter"]


def test_unknown_and_unsafe_names_in_expressions(folder: KernelFolder,
                                                 good: TemplateProposal) -> None:
    bad = edit(good, constraints=["dd % VEC_BYTES == 0", "__import__('os').system('x') == 0"],
               launch={"grid": ["tokens", "open('f')"], "block": ["BLOCK_THREADS"],
                       "smem_bytes": "0"})
    report = validate_proposal(bad, folder)
    subjects = {p.subject: p for p in report.problems}
    assert set(subjects) == {"constraint `dd % VEC_BYTES == 0`",
                             "constraint `__import__('os').system('x') == 0`",
                             "launch grid `open('f')`"}
    assert all(p.check == "expression" for p in report.problems)
    assert "dd" in subjects["constraint `dd % VEC_BYTES == 0`"].message


def test_empty_space_names_binding_constraint(folder: KernelFolder,
                                              good: TemplateProposal) -> None:
    bad = edit(good, constraints=[*good.constraints, "BLOCK_THREADS > 4096"])
    report = validate_proposal(bad, folder, dtypes=["bf16"])
    assert report.checks() == {"empty_space"}
    assert len(report.problems) == len(folder.shapes)
    assert all(p.details["binding"] == "BLOCK_THREADS > 4096" for p in report.problems)


def test_defaults_violating_constraint_and_bad_launch(folder: KernelFolder,
                                                      good: TemplateProposal) -> None:
    bad = edit(good, constraints=[*good.constraints, "BLOCK_THREADS <= 512"])
    report = validate_proposal(bad, folder, dtypes=["bf16"])
    assert report.checks() == {"defaults"}
    assert "BLOCK_THREADS <= 512" in report.problems[0].message
    huge = edit(good, launch={"grid": ["tokens"], "block": ["4 * BLOCK_THREADS"],
                              "smem_bytes": "0"})
    report = validate_proposal(huge, folder, dtypes=["bf16"])
    assert report.checks() == {"launch"}
    assert "4096" in report.problems[0].message


def test_parameter_entry_and_duplicate_problems(folder: KernelFolder,
                                                good: TemplateProposal) -> None:
    bad = with_param(good, name="BLOCK_THREADS", kind="pow2", min=32, max=64, default=32)
    bad = with_param(bad, name="WIDTH", kind="pow2", min=3, max=64, default=4)
    bad = with_param(bad, name="d", kind="int", min=1, max=4, default=1)
    bad = edit(bad, source=good.source.replace("silu_and_mul_kernel", "renamed_kernel") + "\n// WIDTH d")
    report = validate_proposal(bad, folder)
    found = {(p.check, p.subject) for p in report.problems}
    assert ("parameter", "BLOCK_THREADS") in found  # declared twice
    assert ("parameter", "WIDTH") in found  # pow2 min 3
    assert ("parameter", "d") in found  # clashes with a shape name
    assert ("entry", "silu_and_mul_kernel") in found


@pytest.mark.slow
def test_compile_error_is_a_named_problem(folder: KernelFolder, good: TemplateProposal,
                                          compiler: Compiler) -> None:
    bad = edit(good, source=good.source.replace("const int num_vecs = d / kVec;",
                                                "const int num_vecs = d / kVec"))
    report = validate_proposal(bad, folder, compiler=compiler, dtypes=["bf16"])
    assert report.checks() == {"compile"}
    assert report.problems[0].subject == "bf16"
    assert "syntax" in report.problems[0].message


def test_correctness_check_reports_wrong_result(folder: KernelFolder,
                                                good: TemplateProposal) -> None:
    seen: list[tuple[str, str]] = []

    def check(template: KernelTemplate, config: Config, shape: str, dtype: str) -> TrialResult:
        seen.append((shape, dtype))
        return TrialResult(config=config, shape=shape, dtype=dtype, status=Status.WRONG_RESULT,
                           reason="out: 812 of 1848 elements differ", max_abs_err=3.5)

    report = validate_proposal(good, folder, correctness=check)
    assert report.status == "failed" and report.checks() == {"correctness"}
    # the space-wide gate: every dtype at the check shape, each over the same gate configs,
    # then the defaults and extremes at each other shape of the folder
    gate = report.gate
    assert gate is not None and gate.on_gpu and len(seen) == len(gate.runs) + len(gate.shape_runs)
    at_check = [d for s, d in seen if s == folder.check_shape]
    assert len(at_check) == len(gate.runs) and set(at_check) == set(folder.dtypes)
    assert {s for s, _ in seen} == set(folder.shapes)
    assert gate.verdict.startswith(f"wrong at {len(seen)}/{len(seen)} configs checked")
    assert len(report.problems) == 9  # 8 named configs, then how many more and the verdict
    assert "more failing configs; wrong at" in report.problems[-1].message
    assert not report.verified_on_gpu


# -- propose_template over the real openai client and the loopback server ----------------------



@pytest.mark.slow
def test_unused_parameter_then_repair(folder: KernelFolder, llm: Any,
                                      compiler: Compiler) -> None:
    server, client = llm("template_unused_param")
    outcome = propose_template(folder, client, compiler=compiler, repair_rounds=1)
    first, second = outcome.attempts
    assert any("[unused_parameter] UNROLL" in p for p in first.problems)
    assert second.problems == ()
    assert outcome.status == "unverified"
    assert outcome.template is not None
    assert {p.name for p in outcome.template.params} == {"BLOCK_THREADS", "VEC_BYTES"}
    assert "compile" in outcome.report.checks_passed  # type: ignore[union-attr]
    repair_request = server.requests[1].body["messages"][1]["content"]
    assert "prompt repair_v1" in repair_request
    assert "[unused_parameter] UNROLL" in repair_request
    assert "<<<BEGIN DATA: rejected_proposal.json>>>" in repair_request
    assert outcome.diff.startswith("--- baseline.cu")


def test_unused_parameter_without_repair_reaches_human_with_reasons(folder: KernelFolder,
                                                                    llm: Any) -> None:
    server, client = llm("template_unused_param")
    outcome = propose_template(folder, client, repair_rounds=0)
    assert outcome.status == "failed" and outcome.template is None
    assert any("UNROLL" in r for r in outcome.reasons)
    assert server.remaining_steps == 1


@pytest.mark.slow
def test_wrong_result_template_is_unverified_on_cpu(folder: KernelFolder, llm: Any,
                                                    compiler: Compiler) -> None:
    server, client = llm("template_wrong_result")
    outcome = propose_template(folder, client, compiler=compiler, repair_rounds=1)
    assert outcome.status == "unverified"  # only a GPU correctness check can catch it
    assert len(outcome.attempts) == 1 and server.remaining_steps == 1
    assert "silu_mul(u.v[k], g.v[k])" in outcome.proposal.source  # type: ignore[union-attr]


def test_invalid_reply_is_repaired(folder: KernelFolder, llm: Any) -> None:
    server, client = llm("template_invalid_then_valid")
    outcome = propose_template(folder, client, repair_rounds=1)
    assert outcome.attempts[0].problems[0].startswith("[reply]")
    assert outcome.status == "unverified"
    assert len(server.requests) == 2


# -- plan_next ---------------------------------------------------------------------------------

def test_plan_next_vets_configs(folder: KernelFolder, good: TemplateProposal, llm: Any) -> None:
    from workbench.core.hardware import get_device
    from workbench.llm.planning import plan_next
    from workbench.llm.prompts import Measurement, PromptContext
    from workbench.llm.schemas import NextAction

    server, client = llm("plan_silu")
    template = good.to_template(name=folder.name, entry="silu_and_mul_kernel")
    ctx = PromptContext(device=get_device("h100_sxm"), measurements=(Measurement(
        shape="decode", dtype="bf16", sizes=folder.shape_values("decode"),
        bytes_moved=folder.bytes_moved_for("decode", "bf16")),))
    outcome = plan_next(folder, client, template, context=ctx)
    assert outcome.plan.next_action is NextAction.TUNE_MORE
    assert outcome.configs == (Config(BLOCK_THREADS=256, VEC_BYTES=16),
                               Config(BLOCK_THREADS=128, VEC_BYTES=8))
    reasons = [r.reason for r in outcome.rejected]
    assert len(reasons) == 3
    assert "48" in reasons[0]
    assert "missing ['VEC_BYTES']" in reasons[1]
    assert "unknown ['UNROLL']" in reasons[2]
    user = server.requests[0].body["messages"][1]["content"]
    assert "prompt plan_v2" in user and "- decode/bf16: 24 feasible of 24 raw" in user


@pytest.mark.gpu
@pytest.mark.timeout(600)
def test_wrong_result_template_caught_and_repaired_on_gpu(folder: KernelFolder,
                                                          llm: Any) -> None:
    from workbench.core.errors import NoGPUError
    from workbench.engine.runner import LocalRunner
    from workbench.llm.validation import gpu_correctness

    try:
        LocalRunner(folder).close()
    except NoGPUError as exc:
        pytest.skip(f"no GPU: {exc.message}")
    server, client = llm("template_wrong_result")
    outcome = propose_template(folder, client, correctness=gpu_correctness(folder),
                               repair_rounds=1)
    first, second = outcome.attempts
    assert any(p.startswith("[correctness]") for p in first.problems), first.problems
    assert second.problems == ()
    assert outcome.status == "ok" and outcome.report.verified_on_gpu  # type: ignore[union-attr]
    assert server.remaining_steps == 0
