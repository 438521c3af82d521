"""``workbench init`` on hostile input: sources built to exhaust memory, time or the Python
stack, bytes that are not UTF-8, targets that are files or symlinks, and option values that
would break the kernel.toml. Each ends in one clean ``error:`` line (exit 2), within a
bounded time, with nothing written outside the kernel folder; what init does write loads
with ``tomllib``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

import workbench.cli as cli
from workbench.core.cuda_source import MAX_SOURCE_BYTES, parse_cuda
from workbench.core.errors import CudaSourceError
from workbench.core.kernel_folder.scaffold import split_dims

ROOT = Path(__file__).resolve().parents[2]

KERNEL = """\
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""
HEAD = "__global__ void k(const float* x, float* y, int n) {\n"


def run_cli(*argv: str, timeout_s: float = 60) -> tuple[int, str, float]:
    """``python -m workbench.cli ARGV`` in a fresh process: exit code, stderr, seconds."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "workbench.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout_s)
    return done.returncode, done.stderr, time.monotonic() - start


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """The CLI in this process: exit code and stderr."""
    code = cli.main(list(argv), stdout=io.StringIO())
    return code, capsys.readouterr().err


def assert_one_clean_line(err: str, *fragments: str) -> None:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err[:2000]
    assert lines[0].isprintable(), lines[0]  # no terminal escapes, no bidi overrides
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---- sources that cost memory, time or stack ----------------------------------------------


def _statements(size: int) -> bytes:
    line = b"    y[0] = x[1] + 2.0f;\n"
    body = line * (size // len(line) + 1)
    return HEAD.encode() + body[:size] + b"}\n"


def _wrap(expr: str) -> str:
    return HEAD + f"    y[0] = {expr};\n}}\n"


HOSTILE_SOURCES: dict[str, tuple[Callable[[], bytes | str], str]] = {
    "statements-50MB": (lambda: _statements(50 << 20), "over the limit of 1048576 bytes"),
    "statements-just-over-1MiB": (lambda: _statements(MAX_SOURCE_BYTES),
                                  "over the limit of 1048576 bytes"),
    "parentheses-1e5": (lambda: _wrap("(" * 10**5 + "x[0]" + ")" * 10**5),
                        "nested more than 64 deep"),
    "nested-deref-200KB": (lambda: _wrap("*(" * 10**5 + "x" + ")" * 10**5),
                           "nested more than 64 deep"),
    "nested-deref-200KB-unclosed": (lambda: _wrap("*(" * 10**5 + "x"),
                                    "nested more than 64 deep"),
    "namespaces-1e4": (lambda: "namespace a {\n" * 10**4 + KERNEL + "}\n" * 10**4,
                       "nested more than 64 deep"),
    "if-blocks-1e4": (lambda: "#if 1\n" * 10**4 + KERNEL + "#endif\n" * 10**4,
                      "#if blocks nested more than 64"),
    "extern-c-blocks-1e4": (lambda: 'extern "C" {\n' * 10**4 + KERNEL + "}\n" * 10**4,
                            "nested more than 64 deep"),
    "braces-1e4-in-body": (lambda: HEAD + "{" * 10**4 + "y[0] = 1;" + "}" * 10**4 + "}\n",
                           "nested more than 64 deep"),
    "brackets-1e4": (lambda: _wrap("x[" * 10**4 + "0" + "]" * 10**4),
                     "nested more than 64 deep"),
    "plus-chain-1e5": (lambda: _wrap("+".join(["x[0]"] * 10**5)),
                       "nests more than 256 levels"),
    "star-chain-1e5": (lambda: HEAD + "    float v = " + "*" * 10**5 + "x;\n}\n",
                       "nests more than 256 levels"),
    "else-if-chain-1e4": (lambda: HEAD + "    if (n) y[0] = 1;\n"
                          + "    else if (n) y[0] = 1;\n" * 10**4 + "}\n",
                          "nests more than 256 levels"),
    "template-headers-1e4": (lambda: "template <class T> " * 10**4 + KERNEL,
                             "nests more than 256 levels"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_SOURCES))
def test_hostile_source_is_refused_quickly_without_a_trace(tmp_path: Path, case: str) -> None:
    make, fragment = HOSTILE_SOURCES[case]
    data = make()
    cu = tmp_path / "k.cu"
    cu.write_bytes(data.encode() if isinstance(data, str) else data)
    code, err, seconds = run_cli("init", str(cu), "--grid", "1", "--block", "1")
    assert code == 2, err[-2000:]
    assert_one_clean_line(err, str(cu), fragment)
    assert not (tmp_path / "k").exists()  # nothing written
    assert seconds < 30, seconds


def test_helpers_fanning_out_are_followed_once(tmp_path: Path) -> None:
    """Four levels of helpers, each passing the pointer on 40 times: 40**4 walks of the
    helper bodies (and a walk of the whole file per call) before; each body once now."""
    calls = "\n".join(f"    h{{n}}(p, {i});" for i in range(40))
    helpers = ["__device__ void h4(float* p, int i) { p[i] = 1.0f; }"]
    for level in (3, 2, 1):
        helpers.append(f"__device__ void h{level}(float* p, int i) {{\n"
                       + calls.replace("{n}", str(level + 1)) + "\n}")
    source = "\n".join(helpers) + "\n" + HEAD + "    h1(y, 0);\n}\n"
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    code, err, seconds = run_cli("init", str(cu), "--grid", "1", "--block", "1")
    assert code == 0, err
    toml = tomllib.loads((tmp_path / "k" / "kernel.toml").read_text())
    assert {a["name"]: a["role"] for a in toml["args"]}["y"] == "out"
    assert seconds < 30, seconds


GARBAGE = ") ] } # @ ` \\ ?? :: ->" * 3000  # error recovery is quadratic on this


def test_parse_stops_at_the_deadline_of_an_injected_clock() -> None:
    ticks = iter(range(10**9))
    with pytest.raises(CudaSourceError, match=r"parsing took longer than 5 s") as info:
        parse_cuda(GARBAGE, "g.cu", deadline_s=5, clock=lambda: float(next(ticks)))
    assert info.value.file == "g.cu"


def test_parse_within_the_deadline_is_untouched() -> None:
    source = parse_cuda(KERNEL, "k.cu", deadline_s=5, clock=lambda: 0.0)
    assert [k.name for k in source.kernels] == ["scale"]


# ---- bytes that are not UTF-8 -------------------------------------------------------------

BAD_BYTES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "latin-1": (b"// caf\xe9 au lait\n" + KERNEL.encode(),
                ("not UTF-8", "byte 0xE9 at byte offset 6", "k.cu:1")),
    "latin-1-in-kernel": (KERNEL.encode().replace(b"2.0f", b"2.0f /* \xb5s */"),
                          ("not UTF-8", "byte 0xB5", "k.cu:3")),
    "utf-16-le-bom": (b"\xff\xfe" + KERNEL.encode("utf-16-le"), ("UTF-16", "FF FE")),
    "utf-16-be-bom": (b"\xfe\xff" + KERNEL.encode("utf-16-be"), ("UTF-16", "FE FF")),
    "utf-16-no-bom": (KERNEL.encode("utf-16-le"), ("NUL byte at byte offset 1",)),
    "utf-32-bom": (KERNEL.encode("utf-32"), ("UTF-32",)),
    "nul-byte": (KERNEL.encode().replace(b"int n", b"int\x00n"), ("NUL byte",)),
    "truncated-utf-8": (KERNEL.encode() + b"// \xe2\x82", ("not UTF-8", "byte 0xE2")),
    "overlong-utf-8": (b"// \xc0\xaf\n" + KERNEL.encode(), ("not UTF-8", "byte 0xC0")),
    "surrogate-utf-8": (b"// \xed\xa0\x80\n" + KERNEL.encode(), ("not UTF-8", "byte 0xED")),
}


@pytest.mark.parametrize("case", sorted(BAD_BYTES))
def test_bytes_that_are_not_utf8_are_named_with_their_offset(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    data, fragments = BAD_BYTES[case]
    cu = tmp_path / "k.cu"
    cu.write_bytes(data)
    code, err = run_main(capsys, "init", str(cu), "--grid", "1", "--block", "1")
    assert code == 2
    assert_one_clean_line(err, str(cu), *fragments)
    assert not (tmp_path / "k").exists()


def test_a_utf8_byte_order_mark_is_read(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    cu = tmp_path / "k.cu"
    cu.write_bytes(b"\xef\xbb\xbf" + KERNEL.encode())
    code, err = run_main(capsys, "init", str(cu), "--grid", "ceil_div(n, 256)", "--block",
                         "256")
    assert code == 0, err
    assert (tmp_path / "k" / "baseline.cu").read_bytes().startswith(b'extern "C" __global__')


# ---- targets that are files or symlinks ---------------------------------------------------


@pytest.fixture
def source(tmp_path: Path) -> Path:
    cu = tmp_path / "work" / "k.cu"
    cu.parent.mkdir()
    cu.write_text(KERNEL)
    return cu


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A user's file outside every kernel folder (a shell rc file, say)."""
    home = tmp_path / "home"
    home.mkdir()
    rc = home / ".bashrc"
    rc.write_text("alias ll='ls -l'\n")
    return rc


def _plant(source: Path, outside: Path, what: str) -> Path:
    """Make ``what`` of the kernel folder next to ``source`` point outside."""
    folder = source.parent / "k"
    if what == "folder":
        folder.symlink_to(outside.parent, target_is_directory=True)
        return outside
    folder.mkdir()
    if what == "dangling kernel.toml":
        (folder / "kernel.toml").symlink_to(outside.parent / "planted.toml")
        return outside.parent / "planted.toml"
    (folder / what).symlink_to(outside)
    return outside


PLANTS = ["baseline.cu", "kernel.toml", "folder", "dangling kernel.toml"]


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("what", PLANTS)
def test_symlinks_in_the_kernel_folder_are_never_written_through(
        source: Path, outside: Path, capsys: pytest.CaptureFixture[str], what: str,
        force: bool) -> None:
    target = _plant(source, outside, what)
    before = {p: p.read_bytes() for p in outside.parent.iterdir() if p.is_file()}
    argv = ["init", str(source), "--grid", "1", "--block", "1"] + (["--force"] if force else [])
    code, err = run_main(capsys, *argv)
    assert code == 2
    assert_one_clean_line(err, "symlink" if force or what == "folder" else "")
    after = {p: p.read_bytes() for p in outside.parent.iterdir() if p.is_file()}
    assert after == before  # nothing outside changed, nothing appeared
    assert not os.path.exists(target) or target.read_text() == "alias ll='ls -l'\n"


def test_the_issue_case_a_planted_rc_line_is_never_written(
        source: Path, outside: Path) -> None:
    """The reported attack: ``k/baseline.cu`` links to ~/.bashrc and the .cu holds a line the
    shell would run; through the real command line, with and without --force."""
    source.write_text("echo PWNED > /tmp/pwned #\n" + KERNEL)
    _plant(source, outside, "baseline.cu")
    for extra in ([], ["--force"]):
        code, err, _ = run_cli("init", str(source), "--grid", "1", "--block", "1", *extra)
        assert code == 2 and "Traceback" not in err
    assert outside.read_text() == "alias ll='ls -l'\n"


def test_a_file_where_the_folder_goes_is_a_clean_error(
        source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (source.parent / "k").write_text("not a folder\n")
    code, err = run_main(capsys, "init", str(source), "--grid", "1", "--block", "1")
    assert code == 2
    assert_one_clean_line(err, "exists and is not a folder")
    assert (source.parent / "k").read_text() == "not a folder\n"


def test_a_file_where_an_out_parent_goes_is_a_clean_error(
        source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (source.parent / "blocker").write_text("x\n")
    code, err = run_main(capsys, "init", str(source), "--out",
                         str(source.parent / "blocker" / "k"), "--grid", "1", "--block", "1")
    assert code == 2
    assert_one_clean_line(err)
    assert (source.parent / "blocker").read_text() == "x\n"


@pytest.mark.parametrize("existing", ["baseline.cu", "kernel.toml"])
def test_an_existing_file_is_kept_without_force(
        source: Path, capsys: pytest.CaptureFixture[str], existing: str) -> None:
    folder = source.parent / "k"
    folder.mkdir()
    (folder / existing).write_text("my own work\n")
    code, err = run_main(capsys, "init", str(source), "--grid", "1", "--block", "1")
    assert code == 2
    assert_one_clean_line(err, existing, "--force")
    assert (folder / existing).read_text() == "my own work\n"
    assert sorted(p.name for p in folder.iterdir()) == [existing]
    code, err = run_main(capsys, "init", str(source), "--grid", "1", "--block", "1",
                         "--force")
    assert code == 0, err
    assert "scale" in (folder / "baseline.cu").read_text()


def test_init_in_place_rewrites_its_own_baseline(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "baseline.cu").write_text(KERNEL)
    code, err = run_main(capsys, "init", str(folder / "baseline.cu"), "--grid", "1",
                         "--block", "1")
    assert code == 0, err
    assert 'extern "C"' in (folder / "baseline.cu").read_text()
    tomllib.loads((folder / "kernel.toml").read_text())


# ---- option values and names the kernel.toml cannot hold ----------------------------------

BAD_DIMS = {
    "control-char": "n\x01",
    "newline-closing-the-list": 'n"]\n[evil]\nx = ["1',
    "escape": "\x1b[31m",
    "delete": "n\x7f",
    "unicode-identifier": "ñ",
    "unicode-digits": "２５６",
    "bidi-override": "n\u202e",
    "four-dims": "1, 2, 3, 4",
    "not-an-expression": "ceil_div(n, ",
    "too-long": "+".join(["n"] * 200),
    "attribute-call": "n.__class__",
}


@pytest.mark.parametrize("option", ["--grid", "--block"])
@pytest.mark.parametrize("case", sorted(BAD_DIMS))
def test_launch_values_the_loader_cannot_hold_are_refused(
        source: Path, capsys: pytest.CaptureFixture[str], option: str, case: str) -> None:
    other = "--block" if option == "--grid" else "--grid"
    code, err = run_main(capsys, "init", str(source), option, BAD_DIMS[case], other, "1")
    assert code == 2
    assert_one_clean_line(err, option)
    assert not (source.parent / "k").exists()


BAD_NAMES = {
    "unicode-kernel-name": ("__global__ void kérnel(float* y) { y[0] = 1; }\n",
                            "kernel name"),
    "unicode-argument": ("__global__ void k(float* ÿ) { ÿ[0] = 1; }\n", "argument name"),
    "unnamed-argument": ("__global__ void k(float* y, int) { y[0] = 1; }\n",
                         "argument name"),
    "size-starting-with-underscore": ("__global__ void k(float* y, int _n) { y[0] = _n; }\n",
                                      "may not start with '_'"),
}


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_names_the_loader_cannot_hold_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    text, fragment = BAD_NAMES[case]
    cu = tmp_path / "k.cu"
    cu.write_text(text)
    code, err = run_main(capsys, "init", str(cu), "--grid", "1", "--block", "1")
    assert code == 2
    assert_one_clean_line(err, fragment)
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize("option,value", [
    ("--role", 'y"\n[evil]=out'), ("--role", "y=out\nx"), ("--role", "y=\x1b[2J"),
    ("--dtype", "y=f\r32"), ("--dtype", "y=f32\u202e"),
])
def test_quotes_and_newlines_in_role_and_dtype_are_one_clean_line(
        source: Path, capsys: pytest.CaptureFixture[str], option: str, value: str) -> None:
    code, err = run_main(capsys, "init", str(source), option, value, "--grid", "1",
                         "--block", "1")
    assert code == 2
    assert_one_clean_line(err, option)
    assert not (source.parent / "k").exists()


@pytest.mark.parametrize("grid,block", [
    ("ceil_div(n, 256)", "256"), ("ceil_div(n, 128), 2", "128, 2"), ("n", "32, 4, 2"),
    ("max(1, n // 4)", "64"),
])
def test_what_init_writes_loads_with_tomllib(source: Path, capsys: pytest.CaptureFixture[str],
                                             grid: str, block: str) -> None:
    source.write_text("// \"quoted\" \\ comment \x01\n" + KERNEL)
    code, err = run_main(capsys, "init", str(source), "--grid", grid, "--block", block)
    assert code == 0, err
    data = tomllib.loads((source.parent / "k" / "kernel.toml").read_text(encoding="utf-8"))
    assert data["baseline"]["grid"] == list(split_dims(grid))
    assert data["baseline"]["block"] == list(split_dims(block))
    assert data["name"] == "scale"
    assert {a["name"] for a in data["args"]} == {"x", "y", "n"}
