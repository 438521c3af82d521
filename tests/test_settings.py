"""One settings module: every WORKBENCH_* variable parsed in workbench.core.settings."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.settings import VARIABLES, SettingError, Settings, workbench_settings

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1] / "workbench"


def test_unset_gives_the_defaults() -> None:
    assert workbench_settings({}) == Settings()
    assert workbench_settings({"WORKBENCH_STORE": "  ", "WORKBENCH_LLM_TIMEOUT": ""}) == Settings()


def test_every_variable_parses_to_its_type() -> None:
    env = {"WORKBENCH_MODEL": "gpt-x", "WORKBENCH_LLM_TIMEOUT": "30",
           "WORKBENCH_LLM_STAGE_TIMEOUT": "2.5", "WORKBENCH_CACHE_DIR": "/tmp/c",
           "WORKBENCH_CUPTI_LIB": "/opt/libcupti.so",
           "WORKBENCH_KERNELS": os.pathsep.join(["/k1", "", "/k2"]),
           "WORKBENCH_STORE": "/s/w.sqlite", "WORKBENCH_INIT_TIMEOUT_S": "60",
           "WORKBENCH_REPLAY_PACE": "recorded", "WORKBENCH_NVRTC": "on"}
    assert set(env) == set(VARIABLES)
    s = workbench_settings(env)
    assert s == Settings(model="gpt-x", llm_timeout_s=30.0, llm_stage_timeout_s=2.5,
                         cache_dir=Path("/tmp/c"), cupti_lib="/opt/libcupti.so",
                         kernels=(Path("/k1"), Path("/k2")), store=Path("/s/w.sqlite"),
                         init_timeout_s=60.0, replay_pace="recorded", nvrtc="on")
    assert workbench_settings({"WORKBENCH_REPLAY_PACE": "0.25"}).replay_pace == 0.25


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("WORKBENCH_LLM_TIMEOUT", "soon", "positive number of seconds"),
    ("WORKBENCH_LLM_STAGE_TIMEOUT", "-3", "positive number of seconds"),
    ("WORKBENCH_INIT_TIMEOUT_S", "nan", "positive number of seconds"),
    ("WORKBENCH_INIT_TIMEOUT_S", "0", "positive number of seconds"),
    ("WORKBENCH_REPLAY_PACE", "fast", "'recorded'"),
    ("WORKBENCH_REPLAY_PACE", "-1", "'recorded'"),
    ("WORKBENCH_NVRTC", "sometimes", "'off', 'on', 'all'"),
])
def test_a_bad_value_names_variable_value_and_expectation(variable: str, value: str,
                                                         expected: str) -> None:
    with pytest.raises(SettingError) as info:
        workbench_settings({variable: value})
    err = info.value
    assert isinstance(err, WorkbenchError)
    assert (err.variable, err.value) == (variable, value) and expected in err.expected
    assert variable in err.message and repr(value) in err.message


def test_llm_settings_report_a_bad_timeout_as_their_config_error() -> None:
    from workbench.llm.errors import LLMConfigError
    from workbench.llm.settings import LLMSettings

    with pytest.raises(LLMConfigError) as info:
        LLMSettings.from_env({"WORKBENCH_MODEL": "m", "OPENAI_API_KEY": "sk-settings-test-0000000000",
                              "WORKBENCH_LLM_TIMEOUT": "soon"})
    assert info.value.details["key"] == "WORKBENCH_LLM_TIMEOUT"
    ok = LLMSettings.from_env({"WORKBENCH_MODEL": "m", "OPENAI_API_KEY": "sk-settings-test-0000000000",
                               "WORKBENCH_LLM_STAGE_TIMEOUT": "9"})
    assert ok.model == "m" and ok.stage_timeout_s == 9.0


def test_call_sites_read_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from workbench.engine.compiler import default_cache_dir
    from workbench.engine.cupti import library_candidates

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cubins"))
    monkeypatch.setenv("WORKBENCH_CUPTI_LIB", "/opt/x/libcupti.so")
    assert default_cache_dir() == tmp_path / "cubins"
    assert library_candidates()[0] == "/opt/x/libcupti.so"


# os.environ.get("WORKBENCH_..."), environ["WORKBENCH_..."], getenv, env.get("WORKBENCH_...")
_READ = re.compile(r"""(?:environ|getenv|env)\s*(?:\.get\(|\[|\()\s*["']WORKBENCH_""")


def test_no_other_module_reads_a_workbench_variable() -> None:
    """Only core/settings.py reads WORKBENCH_* (lab.py sets one for the server it starts;
    lab_notebooks.py writes a notebook cell that runs in the user's kernel)."""
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
             for p in sorted(ROOT.rglob("*.py"))
             if p != ROOT / "core" / "settings.py"
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if _READ.search(line) and p.name not in ("lab.py", "lab_notebooks.py")]
    assert found == []


def test_the_readme_lists_every_variable() -> None:
    from pathlib import Path

    from workbench.core.settings import VARIABLES

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## Settings"):readme.index("## Hostile endpoints")]
    assert [v for v in VARIABLES if f"| `{v}` |" not in section] == []
