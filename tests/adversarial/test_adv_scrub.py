"""A configured key never reaches the store, errors, logs or report notebooks, whatever its
form and wherever an endpoint echoes it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from adv_endpoint import MESSAGES, endpoint, ok_step, raw_step

from workbench.core.errors import LLMError
from workbench.core.secrets import register_key_environment, scrub
from workbench.llm.recorder import StoreRecorder
from workbench.llm.schemas import Plan
from workbench.store.base import AgentIteration
from workbench.store.sqlite import SQLiteStore
from workbench.ui.report import ReportContent, write_report

KEY_FORMS = {
    "sk- key": "sk-proj-Abc123Def456Ghi789Jkl012",
    "no prefix": "A1b2C3d4E5f6G7h8I9j0",
    "gsk style": "gsk_live_9f8e7d6c5b4a39281706",
    "url-safe base64": "dGhpcy1pcy1hLWtleQ/with+plus=",
    "dotted token": "tok.en.with.dots.1234",
    "short placeholder": "ollama",
}

# Where an endpoint puts the key it was sent, as a transcript step.
ECHOES = {
    "reply content": lambda key: ok_step(f"your key is {key}. no JSON here"),
    "error body": lambda key: raw_step({"error": {"message": f"bad key {key}"}}, status=401),
    "response header": lambda key: raw_step({"error": "x"}, status=403,
                                            headers={"X-Echo": key}),
    "retried error body": lambda key: raw_step(f"overloaded; key={key}", status=503),
}


@pytest.mark.parametrize("echo", list(ECHOES))
@pytest.mark.parametrize("form", list(KEY_FORMS))
def test_echoed_key_is_scrubbed_everywhere(form: str, echo: str, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    key = KEY_FORMS[form]
    step = ECHOES[echo](key)
    steps = [step, ok_step(f"again {key}")] if echo == "retried error body" else [step]
    caplog.set_level(logging.DEBUG, logger="workbench")
    with SQLiteStore(tmp_path / "wb.sqlite") as store:
        session = store.create_session("k")
        recorder = StoreRecorder(store, session.id)
        with endpoint(steps, key=key, max_attempts=2) as (server, client, recorded):
            client._recorder = recorder  # the store keeps every request and raw reply
            with pytest.raises(LLMError) as info:
                client.complete(MESSAGES, Plan)
            assert any(key in r.headers.get("authorization", "") for r in server.requests)
        rows = store.llm_calls(session.id)
        stored = json.dumps([[c.request, c.reply_text] for c in rows])
        raw = (tmp_path / "wb.sqlite").read_bytes()
        wal = tmp_path / "wb.sqlite-wal"
        raw += wal.read_bytes() if wal.exists() else b""
    assert rows, "every request and raw reply is kept"
    assert key not in stored and key.encode() not in raw
    assert key not in str(info.value) and key not in json.dumps(info.value.details, default=str)
    assert key not in getattr(info.value, "raw_reply", "")
    assert key not in caplog.text
    assert key not in recorded.text()


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY",
                                      "MY_PROXY_API_KEY"])
def test_value_of_a_key_variable_is_scrubbed(variable: str, tmp_path: Path) -> None:
    value = f"env-secret-for-{variable.lower()}-0042"
    register_key_environment({variable: value, "HOME": "/home/user"})
    with SQLiteStore(tmp_path / "wb.sqlite") as store:
        store.record_llm_call("s", {"note": f"the proxy said {value}"}, f"echo {value}",
                              _usage())
        store.record_iteration(AgentIteration("s", 1, "tune", detail={"why": value}))
        text = json.dumps([(c.request, c.reply_text) for c in store.llm_calls("s")]
                          + [dict(i.detail) for i in store.iterations("s")])
    assert value not in text and "[scrubbed]" in text
    assert scrub("/home/user") == "/home/user"  # other variables are not secrets


def _usage() -> object:
    from workbench.store.base import TokenUsage

    return TokenUsage()


@pytest.mark.parametrize("form", ["plain-report-key-98765"])
def test_report_notebook_is_scrubbed(form: str, tmp_path: Path) -> None:
    from workbench.llm.client import LLMSettings

    LLMSettings(model="m", api_key=form)  # configuring a client registers its key
    content = ReportContent(kernel="k", device="d", baseline_source=f"// {form}",
                            template_source=f"// key {form}", params=[], constraints=[],
                            reviews=[{"decision": "approved", "reviewer": "r", "time": "t",
                                      "note": form, "approved_text_sha256": ""}],
                            results=[], baseline_us={})
    path = write_report(tmp_path / "r.ipynb", content, sign=False)
    assert form not in path.read_text()


def test_short_placeholder_key_leaves_words_that_contain_it() -> None:
    from workbench.llm.client import LLMSettings

    # a placeholder shorter than MIN_SECRET_CHARS is not a secret at all (see
    # test_a_placeholder_key_never_rewrites_code): nothing containing it is rewritten
    LLMSettings(model="m", api_key="EMPTY")
    assert scrub("EMPTY") == "EMPTY"
    assert scrub("EMPTYSET and NONEMPTY stay") == "EMPTYSET and NONEMPTY stay"


def test_settings_repr_never_shows_the_key() -> None:
    from workbench.llm.client import LLMSettings

    settings = LLMSettings(model="m", api_key="repr-secret-123456789")
    assert "repr-secret" not in repr(settings) and "repr-secret" not in str(settings)


@pytest.mark.parametrize("placeholder", ["x", "k", "EMPTY", "ollama", "none"])
def test_a_placeholder_key_never_rewrites_code(placeholder: str) -> None:
    """A local server's placeholder key (OPENAI_API_KEY=EMPTY, =ollama, =x) is not a secret:
    registering it must not turn a kernel's `x` or `k` into [scrubbed] in the source that
    is compiled, cached and logged (a process-wide registration once broke every later
    compile of a kernel named `k`)."""
    register_key_environment({"OPENAI_API_KEY": placeholder})
    source = 'extern "C" __global__ void k(float* y, const float* x, int n) { y[0] = x[0]; }'
    assert scrub(f"{source} // none EMPTY ollama") == f"{source} // none EMPTY ollama"
