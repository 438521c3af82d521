"""The JupyterLab extension (extensions/workbench-lab) in a real JupyterLab and Chromium.

One server for the module; each test drives one feature: the kernels sidebar (sessions
from a real store, "Open panel"), CUDA syntax colours, the launcher card, and "Tune this
kernel" on a .cu file's context menu.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LabServer = Any  # conftest.LabServer: url, token, root (this test's folder), lab_url(name)

pytestmark = [pytest.mark.browser]

CUDA_SOURCE = """// a bare kernel, as a user writes it
#include <cuda_runtime.h>

__global__ void scale_kernel(float* out, const float* x, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = alpha * x[i];
    }
}
"""


def _wait_lab(page: Any) -> None:
    page.wait_for_selector(".jp-LabShell", timeout=60_000)
    page.locator(".jp-StatusBar-Widget").first.wait_for(timeout=60_000)


def _open_sidebar(page: Any) -> Any:
    tab = page.locator('.lm-TabBar-tab[data-id="workbench-kernels"]')
    tab.wait_for(timeout=30_000)
    if "lm-mod-current" not in (tab.get_attribute("class") or ""):
        tab.click()
    return page.locator("#workbench-kernels")


def _tuned_store(server: LabServer) -> tuple[float, float, str]:
    """A replayed tune of silu_and_mul decode/bf16 into the server's store: (best, speedup,
    the status the sidebar should show)."""
    from workbench import Workbench
    from workbench.ui.lab_index import recorded_baselines

    folder = ROOT / "sample_kernels" / "silu_and_mul"
    outcome = Workbench(folder, store=server.root / "workbench.sqlite").tune(
        "decode", "bf16", budget=12, confirm=0)
    best = min(r.median_us for r in outcome.results if r.median_us is not None)
    baselines = recorded_baselines(folder)
    assert baselines is not None
    ok = sum(r.median_us is not None for r in outcome.results)
    return best, baselines[1]["decode/bf16"] / best, f"{ok} ok of {len(outcome.results)} trials"


@pytest.mark.timeout(240)
def test_sidebar_lists_sessions_and_opens_the_panel(lab_server: LabServer, browser_page: Any,
                                                    artifacts: Path) -> None:
    best_us, speedup, status = _tuned_store(lab_server)
    page = browser_page
    page.goto(lab_server.lab_url())
    _wait_lab(page)
    sidebar = _open_sidebar(page)
    kernel = sidebar.locator('.wb-lab-kernel[data-kernel="silu_and_mul"]')
    # the first list waits for the page's plugins and the server's index: 6 to 25 s at a
    # load of 16 on 2 cores (benchmarks/panel/bench_lab_browser.py, page_load_to_server_list)
    kernel.wait_for(timeout=120_000)
    assert sidebar.locator(".wb-lab-kernel").count() >= 3  # the three sample kernels
    row = kernel.locator(".wb-lab-session").first
    status_row = kernel.locator(".wb-lab-session-status").first
    row.wait_for(timeout=10_000)
    shown_best = row.locator(".wb-lab-best").inner_text()
    shown_speedup = row.locator(".wb-lab-speedup").inner_text()
    page.screenshot(path=str(artifacts / "lab-sidebar.png"))
    assert shown_best == (f"{best_us:.1f} µs" if best_us >= 100 else f"{best_us:.2f} µs")
    assert shown_speedup == f"{speedup:.2f}×"
    assert status_row.inner_text().strip() == status
    kernel.locator(".wb-lab-open").click()
    page.locator(".lm-TabBar-tab", has_text="tune-silu_and_mul.ipynb").first.wait_for(
        timeout=30_000)
    try:
        page.wait_for_selector(".wb-panel .wb-header", timeout=90_000)
    except Exception:
        page.screenshot(path=str(artifacts / "failure-open-panel.png"))
        raise
    assert "silu_and_mul" in page.locator(".wb-panel .wb-header").first.inner_text()
    assert (lab_server.root / "tune-silu_and_mul.ipynb").is_file()


@pytest.mark.timeout(120)
def test_cuda_file_has_syntax_colours(lab_server: LabServer, browser_page: Any,
                                      artifacts: Path) -> None:
    (lab_server.root / "scale.cu").write_text(CUDA_SOURCE, encoding="utf-8")
    page = browser_page
    page.goto(lab_server.lab_url("scale.cu"))
    _wait_lab(page)
    page.wait_for_selector(".jp-FileEditor .cm-content", timeout=30_000)
    page.locator(".jp-FileEditor .cm-line", has_text="__global__").first.wait_for()
    colours = page.evaluate("""() => {
        const editor = document.querySelector('.jp-FileEditor .cm-content');
        const colour = word => {
            for (const span of editor.querySelectorAll('span')) {
                if (span.textContent === word) return getComputedStyle(span).color;
            }
            return null;
        };
        const line = editor.querySelector('.cm-line');
        return {global: colour('__global__'), thread: colour('threadIdx'),
                plain: getComputedStyle(line).color};
    }""")
    page.screenshot(path=str(artifacts / "lab-cuda.png"))
    assert colours["global"] is not None, "__global__ is not a highlighted token"
    assert colours["thread"] is not None, "threadIdx is not a highlighted token"
    assert colours["global"] != colours["plain"]
    # The status bar names the language the editor picked for the file.
    assert page.locator(".jp-StatusBar-Widget", has_text="CUDA").count() >= 1


@pytest.mark.timeout(120)
def test_launcher_card_creates_a_tuning_notebook(lab_server: LabServer, browser_page: Any,
                                                 artifacts: Path) -> None:
    page = browser_page
    page.goto(lab_server.lab_url())
    _wait_lab(page)
    try:  # ?reset opens a launcher once the shell has settled
        page.locator(".jp-Launcher:visible").first.wait_for(timeout=15_000)
    except Exception:
        page.locator(".lm-MenuBar-item", has_text="File").first.click()
        page.locator(".lm-Menu-item:visible", has_text="New Launcher").first.click()
    card = page.locator(".jp-LauncherCard:visible", has_text="New tuning notebook").first
    try:
        card.wait_for(timeout=30_000)
    except Exception:
        page.screenshot(path=str(artifacts / "failure-launcher.png"))
        raise
    card.click()
    page.locator(".lm-TabBar-tab", has_text="tuning-notebook").first.wait_for(timeout=30_000)
    page.locator(".jp-Notebook .jp-Cell", has_text="Workbench(KERNEL").first.wait_for(
        timeout=30_000)
    created = sorted(lab_server.root.glob("tuning-notebook*.ipynb"))
    assert created, "no tuning notebook was written"
    assert "wb.panel()" in created[0].read_text(encoding="utf-8")


def _init_available() -> str | None:
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "init", "--help"],
                          capture_output=True, text=True, cwd=ROOT, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


@pytest.mark.timeout(240)
def test_tune_this_kernel_from_the_context_menu(lab_server: LabServer, browser_page: Any,
                                                artifacts: Path) -> None:
    folder = lab_server.root / "mykernel"
    folder.mkdir(exist_ok=True)
    (folder / "scale.cu").write_text(CUDA_SOURCE, encoding="utf-8")
    page = browser_page
    page.goto(lab_server.lab_url("mykernel"))
    _wait_lab(page)
    item = page.locator('.jp-DirListing-item[data-file-type="cuda"]', has_text="scale.cu")
    item.first.wait_for(timeout=30_000)
    item.first.click(button="right")
    entry = page.locator(".lm-Menu-item:visible", has_text="Tune this kernel").first
    entry.wait_for(timeout=10_000)
    missing = _init_available()
    if missing is not None:
        page.keyboard.press("Escape")
        pytest.skip(f"`workbench init` is not in this checkout yet ({missing}); the menu "
                    "entry is there, the init step is not")
    entry.click()
    try:
        page.locator(".lm-TabBar-tab", has_text="tune-scale").first.wait_for(timeout=120_000)
        tomls = list(folder.rglob("kernel.toml"))
        assert tomls, "workbench init wrote no kernel folder"
        if "FILL_IN" in tomls[0].read_text():
            # init leaves shapes/tolerances to the user: kernel.toml opens beside the notebook
            page.locator(".lm-TabBar-tab", has_text="kernel.toml").first.wait_for(
                timeout=30_000)
        else:
            page.wait_for_selector(".wb-panel .wb-header", timeout=120_000)
    except Exception:
        page.screenshot(path=str(artifacts / "failure-tune-this-kernel.png"))
        raise
    assert list(folder.rglob("kernel.toml")), "workbench init wrote no kernel folder"


DIFF_NOTEBOOK = "review-diff.ipynb"


def _write_diff_notebook(root: Path) -> None:
    import nbformat
    import nbformat.v4 as nbf

    nb = nbf.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbf.new_code_cell(
        "import os\nfrom pathlib import Path\nimport ipywidgets as w\n"
        "from workbench.core.kernel_folder import load_kernel_folder\n"
        "from workbench.ui.diff import side_by_side_diff_html\n"
        'f = load_kernel_folder(Path(os.environ["WORKBENCH_KERNELS"]) / "silu_and_mul")\n'
        "view = w.HTML(side_by_side_diff_html(f.baseline.source, f.template.source,\n"
        "                                     params=f.template.params))\n"
        "view")]
    nbformat.write(nb, root / DIFF_NOTEBOOK)


@pytest.mark.timeout(180)
def test_review_diff_is_readable_at_1280_px(lab_server: LabServer, browser_page: Any,
                                            artifacts: Path) -> None:
    from workbench.core.kernel_folder import load_kernel_folder

    _write_diff_notebook(lab_server.root)
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 1400})
    try:
        page.goto(lab_server.notebook_url(DIFF_NOTEBOOK))
        page.locator(".jp-StatusBar-Widget", has_text="| Idle").first.wait_for(timeout=90_000)
        page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
        page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        page.locator(".lm-Menu-item:visible:not(.lm-mod-disabled)",
                     has_text="Run All Cells").first.click()
        page.wait_for_selector(".wb-diff .wb-notes", timeout=90_000)
        page.screenshot(path=str(artifacts / "lab-review-diff-1280.png"))
        facts = page.evaluate("""() => {
            const scroll = document.querySelector('.wb-diff .wb-diff-scroll');
            const cells = [...document.querySelectorAll('.wb-diff td.wb-code')];
            const right = document.querySelector('.wb-diff td.wb-right');
            const probe = document.createElement('span');
            probe.textContent = '0'.repeat(100);
            probe.style.whiteSpace = 'pre';
            probe.style.position = 'absolute';
            right.appendChild(probe);
            const charPx = probe.getBoundingClientRect().width / 100;
            probe.remove();
            const style = getComputedStyle(right);
            return {
                sideways: scroll.scrollWidth - scroll.clientWidth,
                overflowing: cells.filter(c => c.scrollWidth > c.clientWidth + 1).length,
                align: [...new Set(cells.map(c => getComputedStyle(c).textAlign))],
                wrap: style.whiteSpace,
                columnChars: (right.clientWidth - parseFloat(style.paddingLeft)
                              - parseFloat(style.paddingRight)) / charPx,
                rightTexts: [...document.querySelectorAll('.wb-diff td.wb-right .wb-src')]
                              .map(c => c.textContent),
                notes: [...document.querySelectorAll('.wb-diff td.wb-right')].map(c => {
                    const n = c.querySelector('.wb-notes');
                    const code = c.querySelector('.wb-src');
                    return [code ? code.textContent : '', n ? n.textContent : ''];
                }),
            };
        }""")
    finally:
        page.set_viewport_size({"width": 1400, "height": 2400})
    assert facts["sideways"] <= 1, "the diff scrolls sideways"
    assert facts["overflowing"] == 0, "a code cell cuts its line"
    assert facts["align"] == ["left"] and facts["wrap"] == "pre-wrap"
    # With JupyterLab's file browser open (its default layout) each column holds >= 50
    # characters of 12 px code before wrapping (the issue saw ~25 at 1400 px).
    assert facts["columnChars"] >= 50, f"template column shows {facts['columnChars']:.0f} chars"
    source = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul").template.source
    assert [t for t in facts["rightTexts"] if t] == [t for t in source.splitlines() if t]
    def note(code_start: str) -> str:
        return next(n for c, n in facts["notes"] if c.startswith(code_start))

    assert note("#ifndef BLOCK_THREADS") == "BLOCK_THREADS pow2 32..1024, default 1024"
    assert note("constexpr int kVec = VEC_BYTES") == "16 → VEC_BYTES"
    assert note('extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)') == \
        "BLOCK_THREADS"


def _api(server: LabServer, method: str, endpoint: str, body: object = None
         ) -> tuple[int, dict[str, Any]]:
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        server.api_url(endpoint), method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_server_api_answers_and_refuses_with_reasons(lab_server: LabServer) -> None:
    status, index = _api(lab_server, "GET", "kernels")
    assert status == 200 and {k["name"] for k in index["kernels"]} >= {"silu_and_mul"}
    status, reply = _api(lab_server, "POST", "notebook", {"kernel": "no/such/kernel"})
    assert status == 400 and "no kernel folder 'no/such/kernel'" in reply["message"]
    assert "silu_and_mul" in reply["details"]["expected"]
    status, reply = _api(lab_server, "POST", "init", {"path": "../../etc/passwd"})
    assert status == 400 and "not a path below the server root" in reply["message"]
    (lab_server.root / "notes.txt").write_text("not cuda")
    status, reply = _api(lab_server, "POST", "init", {"path": lab_server.path("notes.txt")})
    assert status == 400 and "not a CUDA source file" in reply["message"]
    anonymous = urllib_status(f"{lab_server.url}/workbench/kernels")
    assert anonymous == 403


def _sessions(server: LabServer, kernel: str = "silu_and_mul") -> int | None:
    status, index = _api(server, "GET", "kernels")
    assert status == 200, index
    found = [k for k in index["kernels"] if k["name"] == kernel]
    return len(found[0]["sessions"]) if found else None


def test_server_api_reads_the_folder_the_request_names(lab_server: LabServer,
                                                       lab_session: LabServer) -> None:
    """One server, several projects: ``?folder=`` picks the store, the kernel folders and
    where a notebook is written; the root is the default; a folder outside, missing or
    reached through a symlink is refused."""
    from dataclasses import replace

    from workbench.store.sqlite import SQLiteStore

    other = lab_session.in_folder(f"{lab_server.root.name}-other")
    for server, count in ((lab_server, 2), (other, 1)):
        store = SQLiteStore(server.root / "workbench.sqlite")
        try:
            for _ in range(count):
                store.create_session("silu_and_mul")
        finally:
            store.close()
    shutil.copytree(ROOT / "sample_kernels" / "silu_and_mul", other.root / "mine",
                    ignore=shutil.ignore_patterns("recordings"))
    assert (_sessions(lab_server), _sessions(other)) == (2, 1)
    assert _sessions(lab_session) == 0  # no ?folder=: the root's store (there is none)
    # a kernel folder below the named folder is listed for it only (no session of its own)
    assert _sessions(other, "mine") == 0 and _sessions(lab_server, "mine") is None
    status, reply = _api(other, "POST", "notebook", {"kernel": other.path("mine")})
    assert status == 200 and reply["notebook"] == other.path("tune-mine.ipynb"), reply
    assert "workbench.sqlite" in (other.root / "tune-mine.ipynb").read_text(encoding="utf-8")
    (lab_server.root / "elsewhere").symlink_to(other.root)
    for folder, why in (("../..", "not a path below the server root"),
                        ("/tmp", "not a path below the server root"),
                        (lab_server.path("missing"), "not a folder below the server root"),
                        (lab_server.path("elsewhere"), "symlink")):
        status, reply = _api(replace(lab_server, folder=folder), "GET", "kernels")
        assert status == 400 and why in reply["message"], (folder, reply)


def urllib_status(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
