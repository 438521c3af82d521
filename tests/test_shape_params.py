"""Shape-aware ranges: bounds and choices as expressions of the shape and the device (pure)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from workbench.core.errors import ParameterError
from workbench.core.hardware import DEFAULT_DEVICE, DEVICES, device_env
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.params import parameter_from_dict
from workbench.core.shape_params import hull, split_shape_bounds

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["tokens", "d", "hidden", "elem_bytes", *device_env(DEVICES[DEFAULT_DEVICE])]


def _env(**sizes: int) -> dict[str, int]:
    return {**device_env(DEVICES[DEFAULT_DEVICE]), "elem_bytes": 2, **sizes}


def test_pow2_bound_follows_the_shape_and_rounds_into_the_range() -> None:
    static, bound = split_shape_bounds(
        "ROW_SPLIT", {"kind": "pow2", "min": 1, "max": "max(8, ceil_div(2 * num_sms, tokens))"},
        NAMES)
    assert bound is not None and static["max"] == 1
    param = parameter_from_dict("ROW_SPLIT", static)
    one = bound.resolve(param, _env(tokens=1, d=11008))    # 264 blocks -> 256
    decode = bound.resolve(param, _env(tokens=128, d=11008))
    assert one.values()[-1] == 256 and decode.values()[-1] == 8
    wide = hull(param, bound, [_env(tokens=1), _env(tokens=128)])
    assert wide.values()[0] == 1 and wide.values()[-1] == 256


def test_choice_offers_the_shapes_own_value() -> None:
    static, bound = split_shape_bounds("HIDDEN_CONST", {"kind": "choice", "values": [0, "hidden"],
                                                        "default": 0}, NAMES)
    assert bound is not None and static["values"] == [0]
    param = parameter_from_dict("HIDDEN_CONST", static)
    assert bound.resolve(param, _env(tokens=1, hidden=2888)).values() == (0, 2888)


def test_bad_expressions_are_refused_naming_the_parameter() -> None:
    with pytest.raises(ParameterError, match="ROW_SPLIT: max"):
        split_shape_bounds("ROW_SPLIT", {"kind": "pow2", "min": 1, "max": "seqlen * 2"}, NAMES)
    _, bound = split_shape_bounds("ROW_SPLIT", {"kind": "int", "min": 1, "max": "d - 9000"},
                                  NAMES)
    assert bound is not None
    param = parameter_from_dict("ROW_SPLIT", {"kind": "int", "min": 1, "max": 1})
    with pytest.raises(ParameterError, match="expected an integer >= 0"):
        bound.resolve(param, _env(d=8000))


def test_sample_kernels_specialise_to_each_shape_including_unseen_ones() -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "fused_add_rmsnorm")
    hidden_const = {p.name: p for p in folder.template.params}["HIDDEN_CONST"]
    assert set(hidden_const.values()) == {0, 520, 3584, 4096, 5120, 8192}  # the hull
    odd = folder.space("odd", "bf16")
    assert {c["HIDDEN_CONST"] for c in odd} == {0, 3584}
    unseen = {**folder.env("odd", "bf16"), "hidden": 2888}
    specialised = folder.template.for_env(unseen)
    config = specialised.default_config().replace(HIDDEN_CONST=2888)
    assert "HIDDEN_CONST 2888" in specialised.render(config, "bf16").source
    # the folder's template (its hull) renders a shape's own value too: every runner renders
    # with it, and the space at the shape is what holds the exact range
    assert "HIDDEN_CONST 2888" in folder.template.render(config, "bf16").source
    assert config in folder.template.space(unseen)
    assert config not in folder.space("odd", "bf16")  # not odd's own hidden
    # only the kind is opened: a non-integer or a bool is still refused, and a knob with no
    # shape-aware part keeps its exact values
    for bad in ("2888", True, 2888.5):
        with pytest.raises(ParameterError, match="HIDDEN_CONST"):
            folder.template.render(config.replace(HIDDEN_CONST=bad), "bf16")
    with pytest.raises(ParameterError, match="VEC_BYTES"):
        folder.template.render(config.replace(VEC_BYTES=3), "bf16")


def test_an_edit_keeps_the_shape_aware_ranges_it_does_not_touch() -> None:
    """The Workbench tunes ``template.with_params(edited)``; before the eleventh session that
    dropped every shape-aware part, so a shape outside the kernel.toml never got its own
    compiled-in size (found on the H100: 200 evaluations at 1536 x 4864, no full tile)."""
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    template = folder.template
    unseen = {**folder.env("decode", "bf16"), "tokens": 1536, "d": 4864}
    same = template.with_params(template.params)
    assert same.shape_bounds == template.shape_bounds
    assert same.space(unseen).size == template.space(unseen).size
    assert any(c["D_CONST"] == 4864 for c in same.space(unseen))
    # an edited shape-aware parameter is taken as written, at every shape
    edited = [dataclasses.replace(p, values_=(0,)) if p.name == "D_CONST" else p
              for p in template.params]
    narrowed = template.with_params(edited)
    assert [b.name for b in narrowed.shape_bounds] == [
        b.name for b in template.shape_bounds if b.name != "D_CONST"]
    assert {c["D_CONST"] for c in narrowed.space(unseen)} == {0}


def test_the_approval_covers_the_shape_aware_expressions() -> None:
    from workbench.core.expr import parse_expr
    from workbench.store.approval import approval_key, approval_text

    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    template = folder.template
    assert '"D_CONST"' in approval_text(template) and '"d"' in approval_text(template)
    (bound,) = template.shape_bounds
    halved = dataclasses.replace(template, shape_bounds=(
        dataclasses.replace(bound, values=(0, parse_expr("d // 2"))),))
    assert halved.params == template.params  # the same hull, another rule per shape
    assert approval_key(halved) != approval_key(template)
    assert approval_key(template.with_params(template.params)) == approval_key(template)
