"""Host runs and ptxas corners of the first-contact stencil and convolution kernels
(tests/test_templater_stencil_first_contact.py holds the kernels and what each lifts): each
lifted template, rendered at the default, the all-ends and sampled configs, runs on the host
(g++, every block's threads as coroutines, barriers as switches, ``__constant__`` arrays
filled as inputs) and prints the kernel's outputs bit for bit; two compile with ``nvcc
-Xptxas -v`` at their corners without spilling.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    end_configs,
    host_sample,
    lifted_template,
    run_merged_on_host,
)
from test_templater_stencil_first_contact import KERNELS, lift

from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file

# -- host runs -----------------------------------------------------------------------------

#: name -> (the sizes, the kernel's arguments: (C++ type, name, element count or value))
HOST: dict[str, tuple[dict[str, int], list[tuple[str, str, str]]]] = {
    "sobel_pitch_clamp_helper": ({"rows": 37, "cols": 29, "pitch": 33},
                                 [("float*", "dst", "rows * pitch"),
                                  ("const float*", "src", "rows * pitch"),
                                  ("int", "rows", ""), ("int", "cols", ""), ("int", "pitch", "")]),
    "box_constexpr_while_tile": ({"height": 29, "width": 53},
                                 [("float*", "out", "height * width"),
                                  ("const float*", "in", "height * width"),
                                  ("int", "height", ""), ("int", "width", "")]),
    "box_constexpr_for_tile": ({"height": 29, "width": 53},
                               [("float*", "out", "height * width"),
                                ("const float*", "in", "height * width"),
                                ("int", "height", ""), ("int", "width", "")]),
    "conv_const_ifndef_continue": ({"ny": 23, "nx": 45},
                                   [("const float*", "image", "ny * nx"),
                                    ("float*", "result", "ny * nx"),
                                    ("int", "ny", ""), ("int", "nx", "")]),
    "conv3_skips_fmaf_global_weights": ({"h": 19, "w": 37},
                                        [("float*", "dst", "h * w"),
                                         ("const float*", "src", "h * w"),
                                         ("const float*", "wt", "9"),
                                         ("int", "h", ""), ("int", "w", "")]),
    "channels_one_declaration_skips": ({"h": 17, "w": 41},
                                       [("float*", "out", "h * w"),
                                        ("const float*", "in", "4 * h * w"),
                                        ("const float*", "wts", "36"),
                                        ("int", "h", ""), ("int", "w", "")]),
    "nchw_valid_global_filter": ({"H": 21, "W": 27, "C": 3},
                                 [("float*", "y", "C * (H - 2) * (W - 2)"),
                                  ("const float*", "x", "C * H * W"),
                                  ("const float*", "wts", "C * 9"),
                                  ("int", "H", ""), ("int", "W", "")]),
    "jacobi7_interior_walk_double": ({"nx": 13, "ny": 11, "nz": 19},
                                     [("double*", "unew", "nx * ny * nz"),
                                      ("const double*", "u", "nx * ny * nz"),
                                      ("int", "nx", ""), ("int", "ny", ""), ("int", "nz", "")]),
    "z_radius2_interior_walk_size_t": ({"nx": 70, "ny": 5, "nz": 23},
                                       [("float*", "o", "nx * ny * nz"),
                                        ("const float*", "a", "nx * ny * nz"),
                                        ("int", "nx", ""), ("int", "ny", ""),
                                        ("int", "nz", "")]),
    "box27_3d_block_loops": ({"nx": 10, "ny": 9, "nz": 6},
                             [("float*", "out", "nx * ny * nz"),
                              ("const float*", "in", "nx * ny * nz"),
                              ("int", "nx", ""), ("int", "ny", ""), ("int", "nz", "")]),
    "wave_two_arrays_flat": ({"n": 13, "m": 29, "c2": 3},
                             [("float*", "next", "n * m"), ("const float*", "cur", "n * m"),
                              ("const float*", "prev", "n * m"), ("float", "c2", ""),
                              ("int", "n", ""), ("int", "m", "")]),
    "heat_source_term_one_declaration": ({"h": 21, "w": 35, "dt": 2},
                                         [("float*", "un", "h * w"),
                                          ("const float*", "u", "h * w"),
                                          ("const float*", "src", "h * w"),
                                          ("float", "dt", ""), ("int", "h", ""),
                                          ("int", "w", "")]),
    "col_pass_mirror_literals": ({"H": 9, "W": 300},
                                 [("float*", "o", "H * W"), ("const float*", "a", "H * W"),
                                  ("int", "H", ""), ("int", "W", "")]),
}

_MAIN = """
int main() {
%(sizes)s
%(buffers)s
  wb_launch({%(g)s}, {%(b)s}, [&] { k(%(args)s); });
%(prints)s
  return 0;
}
"""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _constant_arrays(source: str) -> list[str]:
    return re.findall(r"__constant__\s+\w+\s+(\w+)\s*\[", source)


def _program(name: str, source: str, grid: list[int], block: list[int]) -> str:
    sizes, args = HOST[name]
    buffers, prints, call = [], [], []
    for n, (ctype, arg, count) in enumerate(args):
        elem = ctype.replace("const ", "").rstrip("*")
        if not count:
            call.append(arg)
            continue
        fill = "-7" if "const" not in ctype else f"(({n} + i * 37) % 23 - 11) / 8.0"
        buffers.append(f"  std::vector<{elem}> b_{arg}({count});\n"
                       f"  for (long i = 0; i < (long)b_{arg}.size(); ++i) "
                       f"b_{arg}[i] = ({elem})({fill});")
        call.append(f"b_{arg}.data()")
        if "const" not in ctype:
            prints.insert(0, "".join(  # __constant__ arrays: filled as the inputs are
                f"  for (unsigned i = 0; i < sizeof({a}) / sizeof({a}[0]); ++i) {a}[i] = "
                f"(float)((i * 13) % 11 - 5) / 4.0f;\n" for a in _constant_arrays(source)))
            prints.append(f'  for (auto v : b_{arg}) std::printf("%.17g\\n", (double)v);')
    fills, prints = prints[:1], prints[1:]
    return COOPERATIVE_BLOCK + "#define __constant__\n" + source.replace('extern "C" ', "") + \
        _MAIN % {"sizes": "\n".join(f"  const int {k_} = {v};" for k_, v in sizes.items()),
                 "buffers": "\n".join([*buffers, *fills]), "prints": "\n".join(prints),
                 "g": ", ".join(str(v) for v in [*grid, 1, 1][:3]),
                 "b": ", ".join(str(v) for v in [*block, 1, 1][:3]), "args": ", ".join(call)}


def _configs(template: KernelTemplate, env: dict[str, int]) -> list[dict[str, Any]]:
    default = dict(template.default_config())
    space = [dict(c) for c in template.space(env)]
    rng = random.Random(19)
    return [default, *host_sample(end_configs(template, env)),
            *rng.sample(space, min(len(space), 4 if FULL_MATRIX else 0))]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(HOST))
def test_lifted_kernels_give_the_kernels_output_on_the_host(name: str) -> None:
    source, block, grid, _scalars = KERNELS[name]
    template = lifted_template(lift(name))
    env = dict(HOST[name][0])
    written_grid = [eval(g, {"ceil_div": _ceil_div}, dict(env)) for g in grid]
    programs = [_program(name, source, written_grid, [int(b) for b in block])]
    configs = _configs(template, env)
    for config in configs:
        assert template.space(env).rejection(config) is None, config
        launch = template.launch_for(config, env)
        programs.append(_program(name, template.render(config, "fp32").source,
                                 list(launch.grid), list(launch.block)))
    prefix = COOPERATIVE_BLOCK + "#define __constant__\n"
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_merged_on_host(Path(tmp), "first_contact", prefix, programs)
    want = printed[0].split()
    assert any(v != "-7" for v in want)  # the kernel as written writes its outputs
    wrong = [c for c, got in zip(configs, printed[1:], strict=True) if got.split() != want]
    assert not wrong, wrong


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["jacobi7_interior_walk_double", "conv3_skips_fmaf_global_weights"])
def test_the_corners_compile_without_spilling(name: str) -> None:
    template = lifted_template(lift(name))
    env = dict(HOST[name][0])
    with tempfile.TemporaryDirectory() as tmp:
        for config in host_sample(end_configs(template, env)):
            cu = write_file(Path(tmp), Path(tmp) / "k.cu",
                            template.render(config, "fp32").source, overwrite=True)
            done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                                   str(Path(tmp) / "k.cubin"), str(cu)],
                                  check=True, capture_output=True, text=True, timeout=300)
            log = done.stderr + done.stdout
            assert "Used" in log and not re.search(r"[1-9]\d* bytes (spill|stack)", log), \
                (config, log)
