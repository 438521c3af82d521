"""An endpoint that echoes keys inside a *valid* proposed template: the configured key,
another ``*_API_KEY`` / ``*_API_TOKEN`` value, an ``sk-`` or bearer token, percent-encoded,
base64, JSON-escaped or split across a line break, in a source comment, a string literal,
a parameter rationale, a constraint's comment or the summary. ``workbench propose --write``
runs against the real openai client over loopback; afterwards no planted form is in the
SQLite file, the terminal, the compile cache, the kernel folder or a report notebook."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from adv_endpoint import ok_step

import workbench.cli as cli
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.core.secrets import scrub
from workbench.testing.openai_server import OpenAITranscriptServer

ROOT = Path(__file__).resolve().parents[2]
SILU = ROOT / "sample_kernels" / "silu_and_mul"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

CONFIGURED = "wbcfg-7Hq2Lm9Xv4Rt8Yp3Zs6N"  # OPENAI_API_KEY: the key the client sends
VENDOR = "vendor-Q8w7E6r5T4y3U2i1O0pA"  # MYVENDOR_API_KEY: another provider's key
TOKEN = "svc-tok-Z9x8C7v6B5n4M3a2S1d0"  # SERVICE_API_TOKEN
SK = "sk-unregistered-K1l2M3n4B5v6C7x8"  # never configured: caught by its shape
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.R4nd0mSig"  # a JWT after "Bearer "
PERCENT = "".join(f"%{ord(c):02X}" for c in CONFIGURED)
B64 = base64.b64encode(f"Authorization: Bearer {CONFIGURED}".encode()).decode()
B64_CORE = base64.b64encode(CONFIGURED.encode()).decode().rstrip("=")
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in CONFIGURED)
HEAD, TAIL = CONFIGURED[:13], CONFIGURED[13:]


@dataclass(frozen=True)
class Form:
    """How the endpoint spells a key, and every string that must not survive anywhere."""

    text: str
    needles: tuple[str, ...]
    split: bool = False  # HEAD and TAIL, with a place-specific break between them
    json_escaped: bool = False  # the reply's JSON spells the key's characters as \\uXXXX


FORMS = {
    "configured key": Form(CONFIGURED, (CONFIGURED,)),
    "other *_API_KEY": Form(VENDOR, (VENDOR,)),
    "*_API_TOKEN": Form(TOKEN, (TOKEN,)),
    "sk- shaped": Form(SK, (SK,)),
    "bearer token": Form(f"Bearer {BEARER}", (BEARER,)),
    "percent-encoded": Form(PERCENT, (PERCENT, CONFIGURED)),
    "base64 in a header blob": Form(B64, (B64, B64_CORE[2:-2], CONFIGURED)),
    "split across a line": Form("", (CONFIGURED, HEAD, TAIL), split=True),
    "JSON-escaped": Form(CONFIGURED, (CONFIGURED, ESCAPED, ESCAPED.replace("\\", "\\\\")),
                         json_escaped=True),
}


def _plant_source_comment(data: dict[str, Any], form: Form) -> None:
    text = f"{HEAD}\n// {TAIL}" if form.split else form.text
    data["source"] = f"// endpoint note: {text}\n" + data["source"]


def _plant_string_literal(data: dict[str, Any], form: Form) -> None:
    text = f'{HEAD}" "{TAIL}' if form.split else form.text
    data["source"] = f'__device__ const char wb_tag[] = "{text}";\n' + data["source"]


def _plant_rationale(data: dict[str, Any], form: Form) -> None:
    text = f"{HEAD}\n{TAIL}" if form.split else form.text
    data["parameters"][0]["rationale"] = f"tuned with {text}"


def _plant_constraint(data: dict[str, Any], form: Form) -> None:
    name = data["parameters"][0]["name"]
    text = f"{HEAD}\n# {TAIL}" if form.split else form.text
    data["constraints"].append(f"{name} >= 1  # {text}")


def _plant_summary(data: dict[str, Any], form: Form) -> None:
    text = f"{HEAD}\n{TAIL}" if form.split else form.text
    data["summary_of_changes"] = f"see {text}"


PLACES: dict[str, Callable[[dict[str, Any], Form], None]] = {
    "source comment": _plant_source_comment,
    "string literal": _plant_string_literal,
    "parameter rationale": _plant_rationale,
    "constraint comment": _plant_constraint,
}
# The summary reaches only the kept raw reply, which was already scrubbed of keys written out
# verbatim; the forms that hid from that scrub are the cases here.
SUMMARY_FORMS = ["percent-encoded", "base64 in a header blob", "split across a line",
                 "JSON-escaped"]
# End to end (a real endpoint, propose --write, the store, the compile cache, a report), every
# form is planted once and every place takes its turn: each form meets each sink, and each
# place is reached by a quarter of the forms. The scrubber alone sees the whole form x place
# matrix below (test_every_form_is_caught_by_scrub_alone); WORKBENCH_FULL_MATRIX=1 runs the
# whole matrix end to end too (120 propose runs, about ten minutes on two cores).
_PLACE_NAMES = list(PLACES)
CASES = ([(form, place) for place in PLACES for form in FORMS]
         if os.environ.get("WORKBENCH_FULL_MATRIX") == "1" else
         [(form, _PLACE_NAMES[i % len(_PLACE_NAMES)]) for i, form in enumerate(FORMS)]
         ) + [(form, "summary") for form in SUMMARY_FORMS]


def _reply(form: Form, place: str) -> str:
    proposal = TemplateProposal.from_template(load_kernel_folder(SILU).template)
    data = json.loads(proposal.model_dump_json())
    (PLACES.get(place) or _plant_summary)(data, form)
    content = json.dumps(data)
    if form.json_escaped:
        content = content.replace(CONFIGURED, ESCAPED)
        assert CONFIGURED not in content and json.loads(content) == data
    return content


def _text_of(path: Path) -> str:
    """Every file below ``path`` (or the file), bytes decoded leniently, NULs dropped."""
    files = [path] if path.is_file() else [p for p in sorted(path.rglob("*")) if p.is_file()]
    return "\n".join(p.read_bytes().decode("utf-8", "replace").replace("\x00", "")
                     for p in files)


@pytest.fixture
def bare_kernel(kernel_copy: Path) -> Path:
    """The copied folder as ``workbench init`` leaves one: a baseline and no template."""
    toml = kernel_copy / "kernel.toml"
    text = toml.read_text()
    toml.write_text(text[:text.index("\n[template]\n") + 1])
    (kernel_copy / "template.cu").unlink()
    assert not load_kernel_folder(kernel_copy).has_template
    return kernel_copy


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the module (scrubbed sources repeat, so compiles are hits)."""
    return tmp_path_factory.mktemp("cubins")


def _report_from_store(store_path: Path, folder_path: Path, target: Path) -> Path:
    """A report notebook of what the store and the folder now hold (the folder's template,
    every stored version's source, parameters and constraints, every review)."""
    from workbench.store.sqlite import SQLiteStore
    from workbench.ui.report import ReportContent, write_report

    folder = load_kernel_folder(folder_path)
    with SQLiteStore(store_path) as store:
        versions = store.template_versions(folder.name)
        reviews = [{"decision": r.decision, "reviewer": r.reviewer, "time": r.time,
                    "note": r.note, "approved_text_sha256": r.approved_text_sha256}
                   for v in versions for r in store.reviews(v.id)]
    assert versions and reviews
    content = ReportContent(
        kernel=folder.name, device="none", baseline_source=folder.baseline.source,
        template_source="\n".join([folder.template.source, *(v.source_text for v in versions)]),
        params=[{"name": name, **spec} for v in versions for name, spec in v.params.items()],
        constraints=[c for v in versions for c in v.constraints], reviews=reviews,
        results=[], baseline_us={})
    return write_report(target, content, sign=False)


@needs_nvcc
@pytest.mark.parametrize(("form_name", "place"), CASES, ids=[f"{f}-{p}" for f, p in CASES])
def test_planted_key_is_nowhere_after_propose_write(
        form_name: str, place: str, bare_kernel: Path, tmp_path: Path, shared_cache: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    form = FORMS[form_name]
    monkeypatch.setenv("OPENAI_API_KEY", CONFIGURED)
    monkeypatch.setenv("MYVENDOR_API_KEY", VENDOR)
    monkeypatch.setenv("SERVICE_API_TOKEN", TOKEN)
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(shared_cache))
    store_path = tmp_path / "wb.sqlite"
    reply = _reply(form, place)
    out = io.StringIO()
    with OpenAITranscriptServer([ok_step(reply)] * 2) as server:
        code = cli.main(["propose", str(bare_kernel), "--model", "m", "--base-url",
                         server.base_url, "--store", str(store_path), "--write"], stdout=out)
        sent = [r.headers.get("authorization", "") for r in server.requests]
    printed = out.getvalue()
    assert code == 0, printed  # a valid template: proposed, approved and written
    assert "approved" in printed and sent and CONFIGURED in sent[0]

    report = _report_from_store(store_path, bare_kernel, tmp_path / "report.ipynb")
    captured = capsys.readouterr()
    sinks = {
        "the store file": _text_of(tmp_path),  # wb.sqlite with its -wal/-shm, the report
        "stdout": printed + captured.out,
        "stderr": captured.err,
        "the compile cache": _text_of(shared_cache),
        "the kernel folder": _text_of(bare_kernel),
        "the report notebook": _text_of(report),
    }
    leaks = [(needle, where) for where, text in sinks.items() for needle in form.needles
             if needle in text]
    assert not leaks, leaks
    assert "[scrubbed]" in sinks["the store file"]  # kept, with the key replaced


def test_every_form_is_caught_by_scrub_alone() -> None:
    """The same forms as text, without an endpoint: the scrubber itself catches each one,
    and text with no key in it comes back unchanged."""
    from workbench.core.secrets import register_key_environment

    register_key_environment({"OPENAI_API_KEY": CONFIGURED, "MYVENDOR_API_KEY": VENDOR,
                              "SERVICE_API_TOKEN": TOKEN})
    for form in FORMS.values():
        for place in [*PLACES, "summary"]:
            text = _reply(form, place)
            assert not [n for n in form.needles if n in scrub(text)], (form, place)
            assert not [n for n in form.needles if n in scrub(json.loads(text)["source"])]
    source = load_kernel_folder(SILU).template.source
    assert scrub(source) == source
    assert re.search(r"\[scrubbed\]", scrub(f"x = {CONFIGURED};"))
