"""Kernel folders: a valid folder loads; every malformed piece is reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.errors import KernelFolderError, TemplateError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config

TOML = """
name = "scale"
description = "out = 2 * x"
dtypes = ["bf16", "fp16"]
bytes_moved = "2 * n * elem_bytes"
check_shape = "small"

[shapes]
small = { n = 100 }
big = { n = 65536 }

[tolerances]
bf16 = { rtol = 1e-2, atol = 1e-2 }
fp16 = { rtol = 1e-3, atol = 1e-3 }

[[args]]
name = "out"
dtype = "T"
shape = ["n"]
role = "out"
[[args]]
name = "x"
dtype = "T"
shape = ["n"]
role = "in"
[[args]]
name = "n"
dtype = "i32"
value = "n"
role = "scalar"

[baseline]
entry = "scale_kernel"
grid = ["ceil_div(n, 256)"]
block = ["256"]

[template]
entry = "scale_kernel"
grid = ["ceil_div(n, BLOCK * ITEMS)"]
block = ["BLOCK"]
constraints = ["BLOCK * ITEMS <= 4096"]

[template.params.BLOCK]
kind = "pow2"
min = 32
max = 1024
default = 256
[template.params.ITEMS]
kind = "choice"
values = [1, 2, 4]
default = 1
"""

BASELINE = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef SCALAR_T scalar_t;
extern "C" __global__ void scale_kernel(scalar_t* out, const scalar_t* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (scalar_t)(2.0f * (float)x[i]);
}
"""

TEMPLATE = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef SCALAR_T scalar_t;
extern "C" __global__ void scale_kernel(scalar_t* out, const scalar_t* x, int n) {
  int base = (blockIdx.x * BLOCK + threadIdx.x) * ITEMS;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k)
    if (base + k < n) out[base + k] = (scalar_t)(2.0f * (float)x[base + k]);
}
"""

REFERENCE = """import numpy as np
def make_inputs(shape, dtype, rng):
    return {"x": rng.standard_normal(shape["n"]).astype(np.float32)}
def reference(inputs, shape, dtype):
    return {"out": 2 * inputs["x"]}
"""


def make_folder(tmp_path: Path, toml: str = TOML, **files: str) -> Path:
    folder = tmp_path / "scale"
    folder.mkdir()
    contents = {"kernel.toml": toml, "baseline.cu": BASELINE, "template.cu": TEMPLATE,
                "reference.py": REFERENCE, **{k.replace("_", "."): v for k, v in files.items()}}
    for name, text in contents.items():
        if text is not None:
            (folder / name).write_text(text)
    return folder


def problems_of(folder: Path) -> list[str]:
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(folder)
    return [str(p) for p in info.value.problems]


def test_valid_folder_loads(tmp_path: Path) -> None:
    kf = load_kernel_folder(make_folder(tmp_path))
    assert kf.name == "scale"
    assert kf.dtypes == ("bf16", "fp16")
    assert [a.role for a in kf.args] == ["out", "in", "scalar"]
    assert kf.bytes_moved_for("big", "bf16") == 2 * 65536 * 2
    assert kf.template.default_config() == Config(BLOCK=256, ITEMS=1)
    env = kf.env("big", "fp16")
    assert env["n"] == 65536 and env["elem_bytes"] == 2 and env["max_threads_per_block"] == 1024
    launch = kf.template.launch_for(Config(BLOCK=128, ITEMS=4), env)
    assert launch.grid == (128, 1, 1) and launch.block == (128, 1, 1)
    assert kf.baseline.launch_for({}, env).grid == (256, 1, 1)
    space = kf.space("big", "bf16")
    assert space.raw_size == 6 * 3
    # BLOCK * ITEMS <= 4096 removes (1024, 8)? ITEMS max 4: 1024*4 = 4096 allowed -> all pass
    assert space.size == 18


def test_rendering_puts_defines_then_line_directive(tmp_path: Path) -> None:
    kf = load_kernel_folder(make_folder(tmp_path))
    inst = kf.template.render({"BLOCK": 128, "ITEMS": 2}, "bf16")
    head, _, body = inst.source.partition('#line 1 "template.cu"\n')
    assert "#define BLOCK 128" in head and "#define ITEMS 2" in head
    assert "#define SCALAR_T __nv_bfloat16" in head and "#define ELEM_BYTES 2" in head
    assert body == TEMPLATE
    again = kf.template.render(Config(ITEMS=2, BLOCK=128), "bf16")
    assert again.hash == inst.hash and len(inst.hash) == 16
    assert kf.template.render({"BLOCK": 128, "ITEMS": 2}, "fp16").hash != inst.hash
    with pytest.raises(TemplateError, match="unknown"):
        kf.template.render({"BLOCK": 128, "ITEMS": 2, "EXTRA": 1}, "bf16")


def test_malformed_toml_names_the_file_and_line(tmp_path: Path) -> None:
    problems = problems_of(make_folder(tmp_path, toml="name = 'x\n[shapes"))
    assert len(problems) == 1
    assert problems[0].startswith("kernel.toml") and "valid TOML" in problems[0]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    bad = (TOML.replace('dtypes = ["bf16", "fp16"]', 'dtypes = ["bf16", "int8"]')
           .replace('role = "in"', 'role = "input"')
           .replace('constraints = ["BLOCK * ITEMS <= 4096"]',
                    'constraints = ["BLOCK * WIDTH <= 4096", "__import__(\'os\').system(\'x\')"]')
           .replace("min = 32", "min = \"32 +\""))  # a bound expression that does not parse
    problems = problems_of(make_folder(tmp_path, toml=bad))
    text = "\n".join(problems)
    assert "dtypes[1]: got int8" in text
    assert "args[1] (x).role: got input" in text
    assert "template.constraints[0]" in text and "WIDTH" in text
    assert "template.constraints[1]" in text
    assert "template.params.BLOCK" in text
    assert len(problems) >= 5


def test_missing_keys_and_files(tmp_path: Path) -> None:
    toml = TOML.replace('bytes_moved = "2 * n * elem_bytes"\n', "").replace(
        'entry = "scale_kernel"\ngrid = ["ceil_div(n, 256)"]', 'grid = ["ceil_div(n, 256)"]')
    folder = make_folder(tmp_path, toml=toml)
    (folder / "reference.py").unlink()
    text = "\n".join(problems_of(folder))
    assert "kernel.toml: baseline.entry: got None" in text
    # bytes_moved defaults to every buffer moved once; reference.py is optional
    assert "bytes_moved" not in text and "reference.py" not in text


def test_wrong_types_are_named(tmp_path: Path) -> None:
    toml = TOML.replace("big = { n = 65536 }", "big = { n = \"lots\" }").replace(
        "bf16 = { rtol = 1e-2, atol = 1e-2 }", "bf16 = { rtol = -1, atol = 1e-2 }")
    text = "\n".join(problems_of(make_folder(tmp_path, toml=toml)))
    assert "shapes.big.n: got lots; expected a positive integer" in text
    assert "tolerances.bf16.rtol: got -1" in text
    assert "same problem sizes" not in text


def test_entry_must_exist_in_source(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, template_cu=TEMPLATE.replace("scale_kernel", "other"))
    text = "\n".join(problems_of(folder))
    assert "template.cu: template.entry: got scale_kernel" in text


def test_unused_parameter_is_reported(tmp_path: Path) -> None:
    toml = TOML + '[template.params.UNROLL]\nkind = "choice"\nvalues = [1, 2]\ndefault = 1\n'
    text = "\n".join(problems_of(make_folder(tmp_path, toml=toml)))
    assert "template.params.UNROLL: got UNROLL; expected the parameter to be used" in text


def test_defaults_violating_constraints_are_reported(tmp_path: Path) -> None:
    toml = TOML.replace('constraints = ["BLOCK * ITEMS <= 4096"]',
                        'constraints = ["BLOCK * ITEMS <= 128"]')
    text = "\n".join(problems_of(make_folder(tmp_path, toml=toml)))
    assert "rejected by 'BLOCK * ITEMS <= 128'" in text


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(KernelFolderError, match="not a directory"):
        load_kernel_folder(tmp_path / "nope")


def test_pdl_is_an_expression_of_the_config(tmp_path: Path) -> None:
    toml = TOML.replace('[template]\n', '[template]\npdl = "ITEMS == 2"\n', 1)
    kf = load_kernel_folder(make_folder(tmp_path, toml))
    env = kf.env("big", "bf16")
    assert kf.template.launch_for(Config(BLOCK=128, ITEMS=2), env).pdl is True
    assert kf.template.launch_for(Config(BLOCK=128, ITEMS=4), env).pdl is False
    assert kf.baseline.launch_for({}, env).pdl is False  # no pdl key: a plain launch
    from workbench.engine.runner import _geometry

    message = _geometry(kf.template.launch_for(Config(BLOCK=128, ITEMS=2), env)).to_message()
    assert message["pdl"] is True
    assert "pdl" not in _geometry(kf.baseline.launch_for({}, env)).to_message()
    bad = TOML.replace('[template]\n', '[template]\npdl = "ITEMS +"\n', 1)
    (tmp_path / "b").mkdir()
    assert any("template.pdl" in p for p in problems_of(make_folder(tmp_path / "b", bad)))
