"""State the lane-inner layout's loops would share (workbench/templater/const_items.py,
const_rows.py, wrap_state.py; issue 28): the outer items loop of :mod:`.const_items` and the
rows loop of :mod:`.const_rows` run the kernel's statements once per item / row, so a name
declared before them that those statements assign (a pointer advanced to the pixel,
``out += (r * cols + pix) * NCH``) must start each item and each row from its value as
written, or the loop is refused with the line (the one check :mod:`.wrap_state` holds).

Spellings: tests/test_templater_const_via.py's row3 (a 3-tap filter over 16 lanes a pixel,
``& 15`` / ``>> 4``) with its output pointer advanced to the pixel before the taps, once
with a literal block offset (the generic wrap's items loop), once through a macro (the
lane family's own items loop) and once more with the taps in a ``for`` (LANE_WINDOW's
interior copy renders both loops twice); each runs on the host at the default, at ITEMS_PER_THREAD 2,
at OUT_Y 2 and at the all-ends corners, bit for bit against the kernel as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import corner_configs, host_sample
from test_templater_const_via import FOLDERS, _folder, _knobs, assert_prints_as_written

from workbench.templater import offline_template

ADVANCED = FOLDERS["row3"][0].replace(
    "  if (pix >= cols) return;\n",
    "  if (pix >= cols) return;\n  out += ((size_t)r * cols + pix) * NCH;\n").replace(
    "out[((size_t)r * cols + pix) * NCH + lane] = acc;", "out[lane] = acc;")
#: the block offset through a macro the generic wrap does not read: the lane family's loop
MACRO_OFFSET = ADVANCED.replace("#define NCH 16\n#endif\n",
                                "#define NCH 16\n#endif\n#define PPB 8\n").replace(
    "blockIdx.x * 8", "blockIdx.x * PPB")
#: the taps in a ``for``: the lane family's window and its interior copy of the loops too
FOR_TAPS = MACRO_OFFSET.replace("int t = 0;\n  while (t < 3) {",
                                "for (int t = 0; t < 3; ++t) {").replace("    t++;\n", "")
SPELLINGS = {"advanced_out": ADVANCED, "advanced_out_macro": MACRO_OFFSET,
             "advanced_out_for": FOR_TAPS}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_advanced_pointer_is_given_back_per_item_and_per_row(name: str,
                                                                 tmp_path: Path) -> None:
    result = offline_template(_folder("row3", tmp_path, source=SPELLINGS[name]))
    knobs = _knobs(result)
    assert {"ITEMS_PER_THREAD", "OUTER_THREADS", "OUT_Y"} <= set(knobs), result.notes
    source = result.lifted.source
    body = source[source.index('extern "C"'):]
    # the row's and the item's start each give `out` back its value as written
    assert body.index("out = wb_at_") < body.index("out += ((size_t)r * cols + pix)")
    copies = 2 if "LANE_WINDOW" in knobs else 1
    assert body.count("out = wb_at_") == 2 * copies, body


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_item_and_row_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf = _folder("row3", tmp_path / "folders", source=SPELLINGS[name])
    result = offline_template(kf)
    template = result.template
    default = template.default_config()
    mixed: list[dict[str, Any]] = [{**default, "ITEMS_PER_THREAD": 2},
                                   {**default, "OUT_Y": 2},
                                   {**default, "ITEMS_PER_THREAD": 2, "OUT_Y": 4,
                                    "OUTER_THREADS": 2}]
    configs = [*mixed, *host_sample(corner_configs(template, kf.env(kf.check_shape,
                                                                    "fp32")))]
    assert_prints_as_written(kf, result, configs, tmp_path)
