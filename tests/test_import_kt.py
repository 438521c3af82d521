"""``workbench import-kt``: Kernel Tuner scripts of our own become kernel folders whose space
is Kernel Tuner's (same count of valid configs), whose template compiles at its defaults,
and hostile scripts are refused without ever being run.

Pure tier (nvcc where installed). Each script is written to a tmp folder; the config count
is checked against a brute force over ``tune_params`` written in the test itself (the
restrictions called as Python, Kernel Tuner's block limit of 1024 threads) and, for the
string restrictions, against Kernel Tuner 1.5's own ``Searchspace``.
"""

from __future__ import annotations

import io
import itertools
import math
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc, ptx_of

import workbench
from workbench.cli import main
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.kt_folder import import_kt
from workbench.core.kt_literals import KtImportError
from workbench.core.records import Config

NVCC = shutil.which("nvcc")

# --------------------------------------------------------------------------- the scripts

MATMUL_CU = r"""
// C = A * B, n x n, row major. A block computes a (block_size_y * tile_size_y) x
// (block_size_x * tile_size_x) tile of C, each thread tile_size_y x tile_size_x outputs
// held in registers; A and B pass through shared tiles tile_k wide.
__global__ void matmul_kernel(float *C, const float *A, const float *B, int n) {
    __shared__ float sA[block_size_y * tile_size_y][tile_k];
    __shared__ float sB[tile_k][block_size_x * tile_size_x];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * block_size_y * tile_size_y;
    const int col0 = blockIdx.x * block_size_x * tile_size_x;
    const int tid = ty * block_size_x + tx;
    const int nthreads = block_size_x * block_size_y;
    float acc[tile_size_y][tile_size_x];
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
#pragma unroll
        for (int j = 0; j < tile_size_x; j++) acc[i][j] = 0.0f;
    }
    for (int k0 = 0; k0 < n; k0 += tile_k) {
        for (int e = tid; e < block_size_y * tile_size_y * tile_k; e += nthreads) {
            int r = e / tile_k, c = e % tile_k;
            sA[r][c] = (row0 + r < n && k0 + c < n) ? A[(row0 + r) * n + k0 + c] : 0.0f;
        }
        for (int e = tid; e < tile_k * block_size_x * tile_size_x; e += nthreads) {
            int r = e / (block_size_x * tile_size_x), c = e % (block_size_x * tile_size_x);
            sB[r][c] = (k0 + r < n && col0 + c < n) ? B[(k0 + r) * n + col0 + c] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < tile_k; k++) {
#pragma unroll
            for (int i = 0; i < tile_size_y; i++) {
#pragma unroll
                for (int j = 0; j < tile_size_x; j++)
                    acc[i][j] += sA[ty + i * block_size_y][k] * sB[k][tx + j * block_size_x];
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
#pragma unroll
        for (int j = 0; j < tile_size_x; j++) {
            int r = row0 + ty + i * block_size_y, c = col0 + tx + j * block_size_x;
            if (r < n && c < n) C[r * n + c] = acc[i][j];
        }
    }
}
"""

MATMUL_PY = '''
"""Tune a register-tiled matmul (our own script, in Kernel Tuner's usual style)."""
import os
from collections import OrderedDict

import numpy as np
import kernel_tuner

def tune():
    path = os.path.dirname(os.path.realpath(__file__))
    kernel_string = open(os.path.join(path, "matmul.cu")).read()
    n = 1024
    problem_size = (n, n)
    A = np.random.randn(n, n).astype(np.float32)
    B = np.random.randn(n, n).astype(np.float32)
    C = np.zeros_like(A)
    args = [C, A, B, np.int32(n)]

    tune_params = OrderedDict()
    tune_params["block_size_x"] = [16, 32, 64]
    tune_params["block_size_y"] = [2**i for i in range(6)]
    tune_params["tile_size_x"] = [1, 2, 4, 8]
    tune_params["tile_size_y"] = [1, 2, 4, 8]
    tune_params["tile_k"] = [8, 16, 32]

    grid_div_x = ["block_size_x", "tile_size_x"]
    grid_div_y = ["block_size_y", "tile_size_y"]
    restrictions = [
        "(block_size_y*tile_size_y + block_size_x*tile_size_x) * tile_k * 4 <= 48*1024",
        "block_size_x*block_size_y >= 64",
        "tile_size_x*tile_size_y <= 32 and tile_size_x >= tile_size_y // 2",
    ]
    answer = [np.dot(A, B), None, None, None]
    return kernel_tuner.tune_kernel("matmul_kernel", kernel_string, problem_size, args,
                                    tune_params, grid_div_x=grid_div_x,
                                    grid_div_y=grid_div_y, restrictions=restrictions,
                                    answer=answer, atol=1e-3, verbose=True)

if __name__ == "__main__":
    results, env = tune()
    print(results)
'''

MATMUL_PARAMS: dict[str, list[int]] = {
    "block_size_x": [16, 32, 64], "block_size_y": [1, 2, 4, 8, 16, 32],
    "tile_size_x": [1, 2, 4, 8], "tile_size_y": [1, 2, 4, 8], "tile_k": [8, 16, 32]}
MATMUL_RESTRICTIONS = [
    "(block_size_y*tile_size_y + block_size_x*tile_size_x) * tile_k * 4 <= 48*1024",
    "block_size_x*block_size_y >= 64",
    "tile_size_x*tile_size_y <= 32 and tile_size_x >= tile_size_y // 2"]

VADD_PY = '''
import numpy
from kernel_tuner import tune_kernel

kernel_string = """
__global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

size = 10000000
a = numpy.random.randn(size).astype(numpy.float32)
b = numpy.random.randn(size).astype(numpy.float32)
c = numpy.zeros_like(b)
n = numpy.int32(size)

tune_params = dict()
tune_params["block_size_x"] = [32 * i for i in range(1, 33)]

results, env = tune_kernel("vector_add", kernel_string, size, [c, a, b, n], tune_params)
'''

VADD_PARAMS = {"block_size_x": [32 * i for i in range(1, 33)]}

CONV_CU = r"""
#define FW 7
#define FH 7
// output[y][x] = sum over the FH x FW filter of input[y + i][x + j] * filter[i][j]; the
// input is (h + FH - 1) x (w + FW - 1). Each thread computes tile_size_y x tile_size_x
// outputs, a block (block_size_y * tile_size_y) x (block_size_x * tile_size_x).
__global__ void convolution_kernel(float *output, const float *input, const float *filter,
                                   int w, int h) {
    const int iw = w + FW - 1;
    const int x0 = blockIdx.x * block_size_x * tile_size_x + threadIdx.x;
    const int y0 = blockIdx.y * block_size_y * tile_size_y + threadIdx.y;
#pragma unroll
    for (int ti = 0; ti < tile_size_y; ti++) {
#pragma unroll
        for (int tj = 0; tj < tile_size_x; tj++) {
            const int y = y0 + ti * block_size_y, x = x0 + tj * block_size_x;
            if (y < h && x < w) {
                float sum = 0.0f;
#if use_padding
                for (int i = 0; i < FH; i++)
                    for (int j = 0; j < FW; j++)
                        sum += __ldg(&input[(y + i) * iw + x + j]) * filter[i * FW + j];
#else
                for (int i = 0; i < FH; i++)
                    for (int j = 0; j < FW; j++)
                        sum += input[(y + i) * iw + x + j] * filter[i * FW + j];
#endif
                output[y * w + x] = sum;
            }
        }
    }
}
"""

CONV_PY = '''
import numpy as np
from kernel_tuner import tune_kernel

w = h = 2048
fw, fh = 7, 7
problem_size = (w, h)
output = np.zeros((h, w), dtype=np.float32)
inp = np.random.randn(h + fh - 1, w + fw - 1).astype(np.float32)
filt = np.random.randn(fh * fw).astype(np.float32)
args = [output, inp, filt, np.int32(w), np.int32(h)]

tune_params = {
    "block_size_x": [16 * i for i in range(1, 9)],
    "block_size_y": [2**i for i in range(5)],
    "tile_size_x": [1, 2, 3, 4],
    "tile_size_y": [1, 2, 4],
    "use_padding": [0, 1],
}
limit = 16

def big_enough(p):
    return p["block_size_x"] * p["block_size_y"] >= 64

restrict = [
    lambda p: p["tile_size_x"] * p["tile_size_y"] <= limit and p["block_size_x"] % 32 == 0,
    lambda block_size_x, tile_size_x: block_size_x * tile_size_x <= 256,
    big_enough,
]

with open("convolution.cu") as f:
    source = f.read()

tune_kernel("convolution_kernel", source, problem_size, args, tune_params,
            grid_div_y=["block_size_y", "tile_size_y"],
            grid_div_x=["block_size_x", "tile_size_x"],
            restrictions=restrict)
'''

CONV_PARAMS = {"block_size_x": [16 * i for i in range(1, 9)],
               "block_size_y": [1, 2, 4, 8, 16],
               "tile_size_x": [1, 2, 3, 4], "tile_size_y": [1, 2, 4], "use_padding": [0, 1]}
CONV_RESTRICTIONS: list[Callable[..., bool]] = [
    lambda p: p["tile_size_x"] * p["tile_size_y"] <= 16 and p["block_size_x"] % 32 == 0,
    lambda p: p["block_size_x"] * p["tile_size_x"] <= 256,
    lambda p: p["block_size_x"] * p["block_size_y"] >= 64,
]


def brute_force_count(params: Mapping[str, Sequence[Any]],
                      restrictions: Sequence[Callable[[dict[str, Any]], bool]]) -> int:
    """Kernel Tuner's valid configs, counted independently: every combination whose tuned
    block sizes multiply to at most 1024 threads and that every restriction accepts."""
    names = list(params)
    count = 0
    for values in itertools.product(*params.values()):
        p = dict(zip(names, values, strict=True))
        threads = math.prod(p.get(b, 1) for b in ("block_size_x", "block_size_y",
                                                   "block_size_z"))
        if threads <= 1024 and all(r(p) for r in restrictions):
            count += 1
    return count


def _string_restriction(text: str) -> Callable[[dict[str, Any]], bool]:
    def check(p: dict[str, Any]) -> bool:
        return bool(eval(text, {"__builtins__": {}}, dict(p)))  # trusted test text only
    return check


def write_script(folder: Path, name: str, text: str, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for fname, body in files.items():
        (folder / fname).write_text(body)
    script = folder / name
    script.write_text(text)
    return script


def nvcc_compiles(source: str, tmp: Path) -> None:
    assert NVCC is not None
    src = tmp / "standalone.cu"
    src.write_text(source)
    done = subprocess.run([NVCC, "-c", "-arch=sm_90", "-o", str(tmp / "standalone.o"),
                           str(src)], capture_output=True, text=True, timeout=100, check=False)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- round trips


def test_matmul_round_trip_counts_like_kernel_tuner(tmp_path: Path) -> None:
    script = write_script(tmp_path / "mm", "tune_matmul.py", MATMUL_PY, **{"matmul.cu": MATMUL_CU})
    done = import_kt(script)
    folder = load_kernel_folder(tmp_path / "mm" / "tune_matmul")
    space = folder.space("script", "fp32")
    want = brute_force_count(MATMUL_PARAMS, [_string_restriction(r) for r in MATMUL_RESTRICTIONS])
    assert len(space) == want == done.plan.configs
    assert 0 < want < math.prod(len(v) for v in MATMUL_PARAMS.values())
    # Kernel Tuner 1.5's own search space agrees
    from kernel_tuner.searchspace import Searchspace

    assert Searchspace(MATMUL_PARAMS, MATMUL_RESTRICTIONS, 1024).size == want
    t = folder.template
    assert [e.text for e in t.launch.grid] == [
        "ceil_div(n, (block_size_x * tile_size_x))", "ceil_div(n, (block_size_y * tile_size_y))"]
    assert [e.text for e in t.launch.block] == ["block_size_x", "block_size_y"]
    assert folder.shapes["script"] == {"n": 1024}
    assert [(a.name, a.role, a.dtype) for a in folder.args] == [
        ("C", "out", "f32"), ("A", "in", "f32"), ("B", "in", "f32"), ("n", "scalar", "i32")]
    assert folder.tolerances["fp32"].atol == 1e-3  # the script's atol
    assert t.param_names == tuple(MATMUL_PARAMS)
    # the defaults are the first values: infeasible here (16 x 1 threads < 64), so the first
    # valid config in Kernel Tuner's order is taken, and said
    default = dict(t.default_config())
    assert space.rejection(default) is None
    first_valid = next(dict(zip(MATMUL_PARAMS, v, strict=True))
                       for v in itertools.product(*MATMUL_PARAMS.values())
                       if all(_string_restriction(r)(dict(zip(MATMUL_PARAMS, v, strict=True)))
                              for r in MATMUL_RESTRICTIONS))
    assert default == first_valid
    assert any("first valid config" in n for n in done.plan.notes)
    # the baseline is the kernel at those defaults: same source, launch evaluated
    assert folder.baseline.source == t.source
    env = folder.env("script", "fp32")
    assert folder.baseline.launch.evaluate(env) == t.launch_for(default, env)


@needs_nvcc
def test_matmul_template_compiles_at_defaults_and_other_configs(tmp_path: Path) -> None:
    script = write_script(tmp_path / "mm", "tune_matmul.py", MATMUL_PY, **{"matmul.cu": MATMUL_CU})
    folder = import_kt(script).folder
    nvcc_compiles(folder.template.source, tmp_path)  # standalone: the #ifndef defaults
    space = folder.space("script", "fp32")
    for config in space.sample(2, seed=3):
        assert ".entry matmul_kernel" in ptx_of(folder.template, config)


def test_vector_add_round_trip(tmp_path: Path) -> None:
    script = write_script(tmp_path, "tune_vadd.py", VADD_PY)
    folder = workbench.import_kt(script, out=tmp_path / "vadd").folder
    space = folder.space("script", "fp32")
    assert len(space) == brute_force_count(VADD_PARAMS, []) == 32
    assert folder.shapes["script"] == {"size": 10000000}
    assert [e.text for e in folder.template.launch.grid] == ["ceil_div(size, block_size_x)"]
    assert [(a.name, a.role) for a in folder.args] == [
        ("c", "out"), ("a", "in"), ("b", "in"), ("n", "scalar")]
    assert folder.args[3].value is not None and folder.args[3].value.text == "size"
    assert dict(folder.template.default_config()) == {"block_size_x": 32}
    assert 'extern "C" __global__ void vector_add' in folder.template.source
    if NVCC is not None:
        nvcc_compiles(folder.template.source, tmp_path)


def test_convolution_round_trip_with_lambdas_and_divisor_lists(tmp_path: Path) -> None:
    script = write_script(tmp_path, "tune_conv.py", CONV_PY, **{"convolution.cu": CONV_CU})
    done = import_kt(script, defaults={"block_size_x": "64", "block_size_y": "2"})
    folder = done.folder
    space = folder.space("script", "fp32")
    assert len(space) == brute_force_count(CONV_PARAMS, CONV_RESTRICTIONS) == done.plan.configs
    texts = [c.text for c in folder.template.constraints]
    # the dict lambda (with the script constant `limit` read as its value), the named
    # lambda and the one-line def, each translated
    assert "((tile_size_x * tile_size_y) <= 16)" in texts[1]
    assert texts[2] == "((block_size_x * tile_size_x) <= 256)"
    assert texts[3] == "((block_size_x * block_size_y) >= 64)"
    assert [e.text for e in folder.template.launch.grid] == [
        "ceil_div(w, (block_size_x * tile_size_x))", "ceil_div(h, (block_size_y * tile_size_y))"]
    assert folder.shapes["script"] == {"fh": 7, "fw": 7, "h": 2048, "w": 2048}
    assert [a.shape_for(folder.env("script", "fp32")) for a in folder.args[:3]] == [
        (2048, 2048), (2054, 2054), (49,)]
    # no answer: roles from the kernel's reads and writes
    assert [a.role for a in folder.args] == ["out", "in", "in", "scalar", "scalar"]
    default = dict(folder.template.default_config())
    assert default["block_size_x"] == 64 and default["block_size_y"] == 2
    if NVCC is not None:
        nvcc_compiles(folder.template.source, tmp_path)
        other = Config({**default, "use_padding": 1, "tile_size_x": 3})
        assert other in space
        assert ".entry convolution_kernel" in ptx_of(folder.template, other)


def test_cli_import_kt_and_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = write_script(tmp_path, "tune_vadd.py", VADD_PY)
    out = io.StringIO()
    assert main(["import-kt", str(script), "--out", str(tmp_path / "v"),
                 "--default", "block_size_x=256"], stdout=out) == 0
    assert "32 configs" in out.getvalue()
    assert "block_size_x': 256" in out.getvalue()
    # a second import refuses to overwrite without --force, and names the file
    assert main(["import-kt", str(script), "--out", str(tmp_path / "v")], stdout=out) == 2
    assert "baseline.cu exists; pass --force" in capsys.readouterr().err
    assert main(["import-kt", str(script), "--out", str(tmp_path / "v"), "--force"],
                stdout=out) == 0
    assert main(["import-kt", str(script), "--out", str(tmp_path / "w"),
                 "--default", "block_size_x=100"], stdout=out) == 2
    assert "not one of its values" in capsys.readouterr().err


def test_unguarded_define_of_a_tune_parameter_is_refused(tmp_path: Path) -> None:
    text = VADD_PY.replace('kernel_string = """\n', 'kernel_string = """\n#define block_size_x 64\n')
    script = write_script(tmp_path, "tune_vadd.py", text)
    with pytest.raises(KtImportError, match=r"#define block_size_x without an #ifndef") as err:
        import_kt(script)
    assert err.value.line == 2
    guarded = VADD_PY.replace('kernel_string = """\n', 'kernel_string = """\n#ifndef '
                              'block_size_x\n#define block_size_x 64\n#endif\n')
    write_script(tmp_path, "tune_vadd.py", guarded)
    assert import_kt(script, out=tmp_path / "ok").plan.configs == 32


# --------------------------------------------------------------------------- hostile scripts

MARKER = "PWNED_MARKER"


HOSTILE: dict[str, tuple[str, str]] = {
    # name: (script text, a piece of the refusal)
    "os.system in tune_params": (VADD_PY.replace(
        "[32 * i for i in range(1, 33)]", f'[os.system("touch {MARKER}"), 32]').replace(
        "import numpy\n", "import numpy\nimport os\n"), "a call of os.system()"),
    "__import__ for the kernel source": (VADD_PY.replace(
        '[c, a, b, n]', '[c, a, b, n]').replace(
        'tune_kernel("vector_add", kernel_string,',
        f'tune_kernel("vector_add", __import__("os").popen("touch {MARKER}").read(),'),
        "expected"),
    "restriction lambda with a side effect": (VADD_PY.replace(
        "tune_params)\n", f'tune_params, restrictions=[lambda p: os.system("touch {MARKER}") '
        '== 0])\n').replace("import numpy\n", "import numpy\nimport os\n"),
        "has no translation"),
    "restriction string that imports": (VADD_PY.replace(
        "tune_params)\n", 'tune_params, restrictions=["__import__(\'os\').system(\'touch '
        f'{MARKER}\') == 0"])\n'), "has no translation"),
    "grid divisor lambda with a side effect": (VADD_PY.replace(
        "tune_params)\n", f'tune_params, grid_div_x=lambda p: open("{MARKER}", "w").write("x"))\n'),
        "has no translation"),
    "huge range": (VADD_PY.replace("range(1, 33)", "range(10**12)"), "elements"),
    "huge power": (VADD_PY.replace("size = 10000000", "size = 2**10**10"), "exponent"),
    "huge comprehension": (VADD_PY.replace(
        "[32 * i for i in range(1, 33)]",
        "[i * j for i in range(1000) for j in range(1000) for k in range(1000)]"), "elements"),
    "list repetition": (VADD_PY.replace("[32 * i for i in range(1, 33)]", "[32] * 10**9"),
                        "Mult on a list"),
    "string repetition": (VADD_PY.replace("size = 10000000", 'size = "x" * 10**9'),
                          "Mult on a string"),
    "deep nesting": (VADD_PY.replace("size = 10000000", "size = " + "(" * 3000 + "1" +
                                     ")" * 3000), "expected"),
    "size assigned in an if": (VADD_PY.replace(
        "size = 10000000", f"if os.system('touch {MARKER}') == 0:\n    size = 10000000"
    ).replace("import numpy\n", "import numpy\nimport os\n"), "changed by a if statement"),
    "getattr to reach os": (VADD_PY.replace(
        "size = 10000000", f'size = getattr(__builtins__, "exec")("open(\'{MARKER}\',\'w\')")'),
        "a call of a computed function"),
    "attribute of a string": (VADD_PY.replace(
        "size = 10000000", f'size = "".__class__.__mro__[1].__subclasses__()  # {MARKER}'),
        "expected"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_script_refused_and_not_run(case: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    text, piece = HOSTILE[case]
    script = write_script(tmp_path, "tune.py", text)
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    with pytest.raises(KtImportError) as err:
        import_kt(script, out=tmp_path / "out")
    assert time.perf_counter() - started < 20  # refused, not computed
    assert piece in str(err.value)
    assert err.value.line > 0 and err.value.expected
    assert not (tmp_path / MARKER).exists()
    assert not (tmp_path / "out").exists()  # nothing written


def test_unneeded_hostile_statements_are_never_run(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    text = VADD_PY.replace("import numpy\n", f'import numpy\nimport os\nos.system("touch '
                           f'{MARKER}")\nexec("open(\'{MARKER}\', \'w\')")\n')
    script = write_script(tmp_path, "tune.py", text)
    monkeypatch.chdir(tmp_path)
    assert import_kt(script, out=tmp_path / "out").plan.configs == 32
    assert not (tmp_path / MARKER).exists()


def test_kernel_file_outside_the_folder_refused(tmp_path: Path) -> None:
    (tmp_path / "outside.cu").write_text(MATMUL_CU)
    inner = tmp_path / "inner"
    for name, source in (("climb", '"../outside.cu"'),
                         ("absolute", repr(str(tmp_path / "outside.cu"))),
                         ("joined", 'os.path.join(os.path.dirname(__file__), "..", '
                                    '"outside.cu")')):
        text = MATMUL_PY.replace('open(os.path.join(path, "matmul.cu")).read()',
                                 f"open({source}).read()")
        script = write_script(inner, f"tune_{name}.py", text)
        with pytest.raises(KtImportError, match=r"outside the root|climbs out") as err:
            import_kt(script)
        assert err.value.line == 11
    os.symlink(tmp_path / "outside.cu", inner / "matmul.cu")
    script = write_script(inner, "tune_link.py", MATMUL_PY)
    with pytest.raises(KtImportError, match="is a symlink"):
        import_kt(script)
    assert not (inner / "tune_link").exists()


def test_symlinked_output_folder_refused(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s", "tune_vadd.py", VADD_PY)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "s" / "tune_vadd")
    with pytest.raises(KtImportError, match="symlink"):
        import_kt(script)
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("change, piece", [
    ('tune_params, cmem_args={"f": c})', "constant memory arguments"),
    ('tune_params, lang="OpenCL")', "a CUDA kernel"),
    ('tune_params, restrictions=["block_size_x in [32, 64]"])', "has no translation"),
    ('tune_params, restrictions=["warp_size * 2 <= block_size_x"])', "is not a tune parameter"),
])
def test_unsupported_options_refused_with_line(change: str, piece: str, tmp_path: Path) -> None:
    script = write_script(tmp_path, "tune.py", VADD_PY.replace("tune_params)\n", change + "\n"))
    with pytest.raises(KtImportError, match=piece) as err:
        import_kt(script)
    assert err.value.line == 23


def test_names_entering_generated_code_are_checked(tmp_path: Path) -> None:
    for bad in ("NAN", "block__size"):
        text = VADD_PY.replace('tune_params["block_size_x"]', f'tune_params["{bad}"]')
        script = write_script(tmp_path, "tune.py", text)
        with pytest.raises(KtImportError, match=f"tune parameter '{bad}'"):
            import_kt(script, out=tmp_path / "x")
    # a script whose file name holds a newline stays one comment line in the template
    script = write_script(tmp_path, "tune\n#error injected.py", VADD_PY)
    folder = import_kt(script, out=tmp_path / "named").folder
    assert "\n#error" not in folder.template.source
    assert folder.template.source.splitlines()[0].endswith("tune?#error injected.py.")
