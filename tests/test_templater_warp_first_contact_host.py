"""The warp-per-row first-contact spellings (tests/test_templater_warp_first_contact.py)
computed on the host: every lifted template at its default and its far configs against the
kernel as written, all in one host program (one g++ compile; the file's time budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    host_sample,
    lifted_template,
    run_merged_on_host,
)
from test_corpus_unseen3 import HOST_PRELUDE
from test_templater_warp2 import SHFL_SYNC
from test_templater_warp_first_contact import COLS, ENV, LIFTS, ROWS, SIZES, lift

#: What the host needs of CUDA beyond HOST_PRELUDE and SHFL_SYNC.
EXTRA = r"""
static const int warpSize = 32;
#define __expf(v) std::exp(v)
static inline unsigned __activemask() { return 0xffffffffu; }
"""
PREFIX = "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE, SHFL_SYNC, EXTRA]) + "\n"


def _program(source: str, grid: Sequence[int], block: Sequence[int],
             args: Sequence[tuple[str, str]]) -> str:
    """PREFIX, ``source``, and a main that fills the inputs (a pattern scaled per row),
    launches ``k`` once and prints every output element in hex (NaN where unwritten)."""
    lines, names = [], []
    for i, (role, key) in enumerate(args):
        count = SIZES[key]
        fill = (f"std::sin(0.37f * j) * (1.0f + (j / {COLS}) % 5)" if role == "in" else "NAN")
        lines += [f"  std::vector<float> a{i}({count});",
                  f"  for (int j = 0; j < {count}; ++j) a{i}[j] = {fill};"]
        names.append(f"a{i}.data()")
    dims = [", ".join(f"{int(n)}u" for n in (*d, 1, 1)[:3]) for d in (grid, block)]
    lines.append(f"  wb_launch({{{dims[0]}}}, {{{dims[1]}}}, [&] {{ "
                 f"k({', '.join(names)}, {ROWS}, {COLS}); }});")
    lines += [f"  for (float v : a{i}) std::printf(\"%a\\n\", (double)v);"
              for i, (role, _key) in enumerate(args) if role == "out"]
    return PREFIX + source + "\nint main() {\n" + "\n".join(lines) + "\n  return 0;\n}\n"


def _printed(text: str) -> np.ndarray:
    return np.array([float.fromhex(v) if "nan" not in v else np.nan for v in text.split()])


def _configs(template: Any) -> list[dict[str, Any]]:
    """The default, 4 lanes an item with the most of every other knob, then the corners
    (host_sample keeps the default and the last corner)."""
    default = dict(template.default_config())
    corners = corner_configs(template, ENV)
    space = template.space(dict(ENV))
    mid = {**default, "LANES": 4}
    for knob, value in (("VEC", 4), ("ITEMS_PER_THREAD", 2), ("ILP", 2)):
        if knob in default and space.rejection({**mid, knob: value}) is None:
            mid[knob] = value
    return [default, mid, *corners[1:]]


def test_first_contact_spellings_compute_as_written_on_host(tmp_path: Path) -> None:
    """Every lifted spelling at its default and its far configs, against the kernel as
    written, in one host program (one compile for all: the file's time budget)."""
    programs: list[str] = []
    checks: list[tuple[str, dict[str, Any] | None]] = []
    for name, (source, grid, block, args) in sorted(LIFTS.items()):
        template = lifted_template(lift(source, grid, block))
        per_block = int(block[0]) // 32 if len(block) == 1 else int(block[1])
        items = SIZES["G"] if "GROUP" in source else ROWS
        programs.append(_program(source, [-(-items // per_block)], [int(b) for b in block],
                                 args))
        checks.append((name, None))
        space = template.space(dict(ENV))
        for config in host_sample(_configs(template)):
            assert space.rejection(config) is None, (name, config)
            launch = template.launch_for(config, ENV)
            programs.append(_program(template.render(config, "fp32").source, launch.grid,
                                     launch.block, args))
            checks.append((name, config))
    printed = run_merged_on_host(tmp_path, "first_contact", PREFIX, programs)
    want = np.empty(0)
    for (name, checked), text in zip(checks, printed, strict=True):
        out = _printed(text)
        if checked is None:  # the kernel as written: what its configs must compute
            want = out
            assert not np.isnan(want).any(), name
            continue
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6, err_msg=f"{name} {checked}")
