"""The command line's first hour (issue 30): every option of every subcommand has a help
text; ``check`` names nvcc by its release line; ``doctor`` asks to set WORKBENCH_MODEL
(not to install an extra that is installed); ``init`` leaves a float scalar's value as a
FILL_IN placeholder the loader names."""

from __future__ import annotations

import argparse
import importlib.util
import io
import tomllib
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc

from workbench.cli import build_parser, main
from workbench.core.errors import KernelFolderError
from workbench.core.kernel_folder import PLACEHOLDER, load_kernel_folder
from workbench.core.kernel_folder.scaffold import scaffold
from workbench.engine import doctor

ROOT = Path(__file__).resolve().parents[1]
SILU = ROOT / "sample_kernels" / "silu_and_mul"

pytestmark = pytest.mark.timeout(300)

NVCC_13 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def test_every_option_of_every_subcommand_has_help() -> None:
    subcommands = _subparsers(build_parser())
    assert {"check", "space", "tune", "agent", "lab", "doctor", "init"} <= set(subcommands)
    missing = [f"workbench {name} {'/'.join(action.option_strings) or action.dest}"
               for name, parser in subcommands.items()
               for action in parser._actions
               if not isinstance(action, argparse._HelpAction)
               and (not action.help or action.help == argparse.SUPPRESS
                    or not action.help.strip())]
    assert missing == [], "options without a help text: " + ", ".join(missing)


def test_a_named_option_shows_its_help_in_the_usage_text() -> None:
    text = _subparsers(build_parser())["space"].format_help()
    assert "--format {table,csv,json}\n" in text and "csv or json" in text


def test_release_line_is_the_one_line_naming_the_release() -> None:
    assert doctor.release_line(NVCC_13) == "Cuda compilation tools, release 13.0, V13.0.88"
    assert doctor.release_line("only a line\n") == "only a line"


@needs_nvcc
def test_check_names_nvcc_by_its_release_line_only() -> None:
    out = io.StringIO()
    assert main(["check", str(SILU)], stdout=out) == 0, out.getvalue()
    [line] = [x for x in out.getvalue().splitlines() if x.startswith("compile (")]
    assert "release" in line and "Copyright" not in line and "Built on" not in line
    assert "NVIDIA (R) Cuda compiler driver" not in out.getvalue()


def test_doctor_asks_to_set_the_model_when_the_client_is_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def with_openai(name: str, *args: Any) -> Any:
        return object() if name == "openai" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", with_openai)
    check = doctor.check_llm(environ={})
    assert not check.ok and check.fix_verb == "set" and "WORKBENCH_MODEL" in check.fix
    assert "pip install" not in check.fix and "[llm]" not in check.fix
    report = doctor.format_report([check])
    assert "set: WORKBENCH_MODEL" in report and "install:" not in report


def test_doctor_names_the_llm_extra_only_when_the_client_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_openai(name: str, *args: Any) -> Any:
        return None if name == "openai" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_openai)
    check = doctor.check_llm(environ={})
    assert "WORKBENCH_MODEL" in check.fix and "[llm]" in check.fix


SCALE = """
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}
"""


def test_init_leaves_a_float_scalar_as_a_placeholder_with_a_comment() -> None:
    plan = scaffold(SCALE, "scale.cu", grid="ceil_div(n, 256)", block="256")
    text = plan.kernel_toml()
    values = [x for x in text.splitlines() if x.startswith("value = ")]
    assert values[0].startswith(f'value = "{PLACEHOLDER}"  # the value your code passes')
    assert values[1].startswith('value = "n"') and "1.0" not in text
    alpha = next(a for a in tomllib.loads(text)["args"] if a["name"] == "alpha")
    assert alpha["value"] == PLACEHOLDER
    assert "args (alpha).value" in plan.to_fill


def test_the_loader_names_the_float_scalar_placeholder(tmp_path: Path) -> None:
    cu = tmp_path / "scale.cu"
    cu.write_text(SCALE)
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        out = io.StringIO()
        code = main(["init", str(cu), "--grid", "ceil_div(n, 256)", "--block", "256"],
                    stdout=out)
    assert code == 0, err.getvalue()
    assert "args (alpha).value" in out.getvalue()
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(tmp_path / "scale")
    assert "(alpha).value: got FILL_IN" in str(info.value)
