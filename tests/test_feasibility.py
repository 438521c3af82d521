"""One feasibility module: typed rejections, one launch evaluator, every caller routed to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.core.feasibility import (
    Rejection,
    config_rejection,
    config_rejections,
    launch_rejection,
    needs_smem_optin,
    occupancy,
    resource_rejection,
)
from workbench.core.hardware import get_device
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config, ResourceUsage
from workbench.core.space import SearchSpace
from workbench.core.template import LaunchRules
from workbench.search.pruning import LaunchPruner, launch_decision, resource_decision

pytestmark = pytest.mark.timeout(60)

H100 = get_device("h100")
ROOT = Path(__file__).resolve().parents[1] / "workbench"
REPO = ROOT.parent


@pytest.mark.parametrize(("grid", "block", "smem", "limit", "value", "allowed"), [
    ((1,), (2048,), 0, "max_threads_per_block", 2048, 1024),
    ((1,), (1, 1, 65), 0, "max_block_dim_z", 65, 64),
    ((1, 65536), (32,), 0, "max_grid_dim_y", 65536, 65535),
    ((0,), (32,), 0, "min_dimension", 0, 1),
    ((1,), (128,), 232449, "smem_per_block_optin_bytes", 232449, 232448),
    ((1,), (128,), -1, "min_dynamic_smem_bytes", -1, 0),
])
def test_launch_rejection_names_limit_value_and_allowed(
        grid: tuple[int, ...], block: tuple[int, ...], smem: int, limit: str, value: int,
        allowed: int) -> None:
    refused = launch_rejection(H100, grid, block, smem)
    assert isinstance(refused, Rejection)
    assert (refused.limit, refused.value, refused.allowed, refused.stage) == \
        (limit, value, allowed, "launch")
    assert str(refused) == refused.reason and str(value) in refused.reason
    assert hash(refused) == hash(Rejection(limit, value, allowed, refused.reason))  # frozen


def test_resource_rejection_covers_smem_registers_occupancy_and_spills() -> None:
    assert resource_rejection(H100, ResourceUsage(regs_per_thread=32), 256) is None
    smem = resource_rejection(H100, ResourceUsage(32, static_smem_bytes=300_000), 256)
    assert smem is not None and smem.limit == "smem_per_block_optin_bytes"
    assert (smem.value, smem.allowed, smem.stage) == (300_000, 232448, "resources")
    regs = resource_rejection(H100, ResourceUsage(regs_per_thread=255), 1024)
    assert regs is not None and regs.limit == "registers" and regs.value == 255
    assert regs.reason.startswith("no block fits on an SM (limited by registers")
    floor = resource_rejection(H100, ResourceUsage(regs_per_thread=255), 256, min_occupancy=0.5)
    assert floor is not None and floor.limit == "min_occupancy" and floor.allowed == 0.5
    spill = resource_rejection(H100, ResourceUsage(32, spill_store_bytes=8, spill_load_bytes=4),
                               256, allow_spills=False)
    assert spill is not None and (spill.limit, spill.value) == ("spills", 12)
    assert resource_rejection(H100, ResourceUsage(32, spill_store_bytes=8), 256) is None


def test_zero_occupancy_is_always_a_rejection() -> None:
    """Whatever occupancy() says cannot run, resource_rejection refuses (the runners rely on
    it in place of their own occupancy == 0 checks)."""
    for regs in (16, 64, 128, 255):
        for threads in (32, 256, 1024):
            for smem in (0, 100_000, 232_448, 240_000):
                usage = ResourceUsage(regs_per_thread=regs, dynamic_smem_bytes=smem)
                occ = occupancy(H100, usage, threads)
                refused = resource_rejection(H100, usage, threads)
                assert (occ.blocks_per_sm == 0) == (refused is not None), (regs, threads, smem)


def test_one_evaluator_treats_bools_as_the_rendered_define() -> None:
    """Pruning and the template's launch_for read a bool parameter the same way (0/1, as
    the #define renders it): the evaluators that once disagreed are one."""
    from workbench.core.template import KernelTemplate

    template = KernelTemplate.build(name="k", source="", entry="k", grid=["ceil_div(n, BLOCK)"],
                                    block=["BLOCK * (1 + WIDE)"], smem_bytes="WIDE * 1024")
    rules = template.launch
    env = {"n": 4096}
    for wide in (False, True):
        config = Config(BLOCK=1024, WIDE=wide)
        launch, refused = config_rejection(rules, config, env, H100)
        assert launch == template.launch_for(config, env)
        decision = launch_decision(config, rules, env, H100)
        assert (decision is None) == (refused is None)
        assert (refused is None) == (not wide)
    refused = config_rejection(rules, Config(BLOCK=1024, WIDE=True), env, H100)[1]
    assert refused is not None and refused.limit == "max_threads_per_block"
    decision = LaunchPruner(rules, H100, lambda shape: env)(Config(BLOCK=1024, WIDE=True), "s")
    assert decision is not None and decision.rejection == refused


def test_unevaluable_rules_are_a_rejection_not_an_exception() -> None:
    rules = LaunchRules.parse(grid=["n // (BLOCK - 256)"], block=["BLOCK"])
    launch, refused = config_rejection(rules, Config(BLOCK=256), {"n": 4096}, H100)
    assert launch is None and refused is not None and refused.limit == "launch_rules"
    assert "cannot be evaluated" in refused.reason


def test_config_rejections_over_arrays_match_the_scalar_path() -> None:
    """Every kind of verdict, in its scalar text: launchable, each limit, rules that cannot
    be evaluated (division by zero, 64-bit overflow), a fractional, a negative and an
    infinite dimension, a pdl rule failing, bools as 0/1."""
    rules = LaunchRules.parse(
        grid=["n // (B - 256) if W else (n + 0.5 * B * Z * (Z - 1)) / B", "2 ** 62 * Z + 1"],
        block=["B * (1 + W)", "1 - Z - W if B == 96 else 1"],
        smem_bytes="S * 1e400 if S == 3 else S * 60000")
    rules = LaunchRules(rules.grid, rules.block, rules.smem_bytes,
                        pdl=LaunchRules.parse(["1 // (B - 128)"], ["1"]).grid[0])
    configs = [Config(B=b, W=w, Z=z, S=s) for b in (32, 96, 128, 256, 1024)
               for w in (False, True) for z in (0, 1, 2) for s in (0, 1, 3, 4)]
    env = {"n": 4096}
    expected = [config_rejection(rules, c, env, H100)[1] for c in configs]
    assert config_rejections(rules, configs, env, H100) == expected
    limits = {r.limit if r else None for r in expected}
    assert limits >= {None, "launch_rules", "max_threads_per_block", "max_grid_dim_y",
                      "smem_per_block_optin_bytes"}
    assert config_rejections(rules, [], env, H100) == []
    # a rule that cannot be evaluated over the arrays at all (a missing name)
    missing = LaunchRules.parse(grid=["m // B"], block=["B"])
    assert config_rejections(missing, configs[:3], env, H100) == [
        config_rejection(missing, c, env, H100)[1] for c in configs[:3]]


def _kernel_folders() -> list[Path]:
    return sorted(p.parent for root in ("sample_kernels", "benchmarks")
                  for p in (REPO / root).rglob("kernel.toml"))


@pytest.mark.timeout(300)
def test_config_rejections_match_the_scalar_path_over_every_folder() -> None:
    """Every sample and corpus folder at every shape x dtype on the H100: the verdicts over
    its feasible configs equal config_rejection's, each config that any limit refuses and
    every config of the smaller spaces (at most 50 configs a space otherwise, spread)."""
    spaces = refused = 0
    for path in _kernel_folders():
        folder = load_kernel_folder(path)
        template = folder.template
        for shape in folder.shapes:
            for dtype in folder.dtypes:
                env = folder.env(shape, dtype, H100)
                configs = list(SearchSpace(template.params, template.constraints, env))
                verdicts = config_rejections(template.launch, configs, env, H100)
                step = max(1, len(configs) // 50)
                for i, (config, verdict) in enumerate(zip(configs, verdicts, strict=True)):
                    if verdict is not None or i % step == 0:
                        assert verdict == config_rejection(template.launch, config, env,
                                                           H100)[1], (path, shape, dtype, config)
                refused += sum(v is not None for v in verdicts)
                spaces += 1
    assert spaces > 500 and refused > 0


def test_prune_decisions_carry_the_rejection() -> None:
    decision = resource_decision(Config(BLOCK=256), ResourceUsage(32, static_smem_bytes=300_000),
                                 H100, 256)
    assert decision is not None and decision.rejection is not None
    assert decision.reason == decision.rejection.reason and decision.stage == "resources"


def test_smem_optin_threshold() -> None:
    assert not needs_smem_optin(48 * 1024) and needs_smem_optin(48 * 1024 + 1)


# Comparisons of a candidate against a device limit, outside the feasibility module.
_LIMIT_CHECK = re.compile(
    r"[<>]=?\s*(?:self\.)?(?:spec|device)\.(?:max_threads_per_block|smem_per_block_optin_bytes"
    r"|max_block_dims|max_grid_dims|max_regs_per_thread)"
    r"|(?:spec|device)\.(?:max_threads_per_block|smem_per_block_optin_bytes)\s*[<>]"
    r"|\b49152\b|\b48 \* 1024\b|def (?:launch_problem|occupancy)\(")


def test_launch_limits_and_occupancy_have_one_home() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "feasibility.py" or "templater" in path.parts:
            continue  # the templater writes constraints for the template, not device checks
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _LIMIT_CHECK.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
