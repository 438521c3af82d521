"""No byte of a local file reaches the endpoint, whatever the proposed template includes.

A file outside the kernel folder holds a unique token. The endpoint (a real loopback server,
the real openai client) proposes templates that try to read it in every way the sandbox
knows; each proposal is validated with the real compiler, and the repair prompt sent back
is searched for the token. One case switches the include check off, so that the compiler
really reads the file and only the diagnostics filter stands between it and the endpoint.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from adv_endpoint import endpoint, ok_step

from workbench.agent import run_agent
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.engine.compiler import Compiler
from workbench.engine.source_policy import SourceCheck
from workbench.llm.validation import propose_template
from workbench.store.sqlite import SQLiteStore
from workbench.testing.synthetic_runner import SyntheticRunner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


class UncheckedCompiler(Compiler):
    """The include check switched off (test only): nvcc really reads the planted file."""

    def check(self, instance: Any) -> SourceCheck:
        return SourceCheck(())


def hostile_reply(folder: Path, directive: str) -> dict[str, Any]:
    """The folder's own template, with ``directive`` inserted at its top."""
    proposal = TemplateProposal.from_template(load_kernel_folder(folder).template)
    return json.loads(proposal.model_copy(
        update={"source": directive + "\n" + proposal.source}).model_dump_json())


def tricks(path: Path, folder: Path) -> dict[str, str]:
    relative = os.path.relpath(path, folder)
    return {
        "absolute include": f'#include "{path}"',
        "angle include": f"#include <{path}>",
        "relative include": f'#include "{relative}"',
        "symlink in the folder": '#include "notes.h"',
        "digraph include": f'%:include "{path}"',
        "spliced include": f'#inc\\\nlude "{path}"',
        "computed include": f'#define F "{path}"\n#include F',
        "has_include": f'#if __has_include("{path}")\n#endif',
        "pragma dependency": f'#pragma GCC dependency "{path}"',
        "embed": f'#embed "{path}"',
        "include_next": f'#include_next "{path}"',
    }


def requests_text(server: Any) -> str:
    return "\n".join(r.raw_body for r in server.requests)


TRICKS = list(tricks(Path("/x"), Path("/")))


@pytest.mark.parametrize("trick", TRICKS)
def test_propose_and_repair_send_no_byte_of_the_file(trick: str, kernel_copy: Path,
                                                     planted: tuple[Path, str],
                                                     tmp_path: Path) -> None:
    path, token = planted
    os.symlink(path, kernel_copy / "notes.h")
    reply = hostile_reply(kernel_copy, tricks(path, kernel_copy)[trick])
    folder = load_kernel_folder(kernel_copy)
    compiler = Compiler(cache_dir=tmp_path / "cubins", include_dir=kernel_copy)
    with endpoint([ok_step(reply), ok_step(reply)]) as (server, client, _):
        outcome = propose_template(folder, client, compiler=compiler, repair_rounds=1)
        sent = requests_text(server)
    assert outcome.status == "failed" and len(server.requests) == 2
    assert any("refused" in p for p in outcome.reasons), outcome.reasons
    assert token not in sent and "aws_secret_access_key" not in sent


def test_diagnostics_filter_alone_keeps_the_file_out(kernel_copy: Path,
                                                     planted: tuple[Path, str],
                                                     tmp_path: Path) -> None:
    path, token = planted
    reply = hostile_reply(kernel_copy, f'#include "{path}"')
    folder = load_kernel_folder(kernel_copy)
    compiler = UncheckedCompiler(cache_dir=tmp_path / "cubins", include_dir=kernel_copy)
    with endpoint([ok_step(reply), ok_step(reply)]) as (server, client, _):
        outcome = propose_template(folder, client, compiler=compiler, repair_rounds=1)
        sent = requests_text(server)
    attempt = outcome.attempts[0]
    assert attempt.report is not None
    log = " ".join(Path(p.details["log_path"]).read_text() for p in attempt.report.problems)
    assert token in log  # nvcc did read the file: the filter is what stands in the way
    assert outcome.status == "failed" and len(server.requests) == 2
    assert "withheld" in " ".join(outcome.reasons)
    assert token not in sent and "aws_secret_access_key" not in sent


def test_agent_path_sends_no_byte_of_the_file(kernel_copy: Path, planted: tuple[Path, str],
                                              tmp_path: Path) -> None:
    path, token = planted
    reply = hostile_reply(kernel_copy, f'#include "{path}"')
    folder = load_kernel_folder(kernel_copy)
    compiler = Compiler(cache_dir=tmp_path / "cubins", include_dir=kernel_copy)
    with endpoint([ok_step(reply), ok_step(reply)]) as (server, client, _), \
            SQLiteStore(tmp_path / "wb.sqlite") as store:
        outcome = run_agent(folder, runner=SyntheticRunner(folder), store=store,
                            client=client, compiler=compiler, iterations=1, llm_calls=4)
        sent = requests_text(server)
        stored = json.dumps([c.request for c in store.llm_calls(outcome.session_id)])
    assert outcome.state.value == "failed" and "refused" in outcome.reason
    assert token not in sent and token not in stored
