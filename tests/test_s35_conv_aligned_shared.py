"""Session 35: a shared array declared with an alignment parses where other shared
declarations do.

``extern __shared__ __align__(16) float tile[];`` (and ``__shared__ __align__(16) float
patch[..][..];``) stopped the parse: CUDA's ``__align__(n)`` is a macro of its headers that
tree-sitter's grammar cannot read there, so :func:`workbench.core.cuda_source.parse_cuda`
refused the kernel ("cannot parse kernel .. near '16) float'"). The parse now reads such a
declaration with its alignment blanked (``_unaligned_shared``: ``__align__(..)`` or
``__attribute__((aligned(..)))`` in a declaration that names ``__shared__``; same length, so
every node's text still reads the source as written, alignment included).

Kernels (tests/spellings_s35_conv/, on set 1's box_blur folder, launched with 1600 bytes of
dynamic shared memory): box5_dyn_align (a 5 x 5 box filter staging its patch in an aligned
``extern __shared__`` buffer, the tile a pointer to its start: carved into a static array,
BLOCK_X / BLOCK_Y), respelled twice: box5_static_align (a static aligned 2-D patch: the
apron family's knobs, as set 1's box_blur) and box5_dyn_align_sizeof (``__align__(sizeof(
float4))``, the tile a const pointer ``raw + 0``). Each lifts what the same kernel without
the alignment lifts, and computes as written on the host (g++) at the default, a mix and
the all-ends configs' first and last. Gap (asserted): an aligned dynamic buffer indexed as
the tile itself (``tile[py * TW + px]``, no pointer into it) lifts nothing, as the same
buffer without the alignment does not (the carve reads parts ``T *p = buffer + OFF``).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from held_back_harness import same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

BOX_BLUR = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen" / \
    "box_blur"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_conv"
APRON = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM", "SEPARABLE"}
#: name -> the mixes its host check runs
CASES: dict[str, list[dict[str, int]]] = {
    "box5_dyn_align": [{"MIN_BLOCKS_PER_SM": 2}, {"MIN_BLOCKS_PER_SM": 4}],
    "box5_static_align": [{"OUT_Y": 4, "OUT_X": 2, "BLOCK_X": 32, "BLOCK_Y": 4}],
    "box5_dyn_align_sizeof": [{"MIN_BLOCKS_PER_SM": 1}, {"MIN_BLOCKS_PER_SM": 4}],
}
#: the host form of a dynamic shared buffer: a static array (each block runs alone there)
_DYNAMIC = re.compile(r"extern __shared__ ((?:__align__\((?:[^()]|\([^()]*\))*\) )?)"
                      r"(\w+) (\w+)\[\];")


def _host(source: str) -> str:
    return _DYNAMIC.sub(r"static \1\2 \3[65536 / sizeof(\2)];", source)


def _folder(source: str, root: Path) -> KernelFolder:
    root.mkdir(parents=True)
    toml = (BOX_BLUR / "kernel.toml").read_text()
    (root / "kernel.toml").write_text(
        toml.replace('block = ["16", "16"]', 'block = ["16", "16"]\nsmem_bytes = "1600"'))
    for name in ("baseline.cu", "box_blur.cu"):
        (root / name).write_text(source)
    return load_kernel_folder(root)


def _unaligned(source: str) -> str:
    return re.sub(r"__align__\((?:[^()]|\([^()]*\))*\) ", "", source)


@pytest.mark.parametrize("declaration", [
    "extern __shared__ __align__(16) float tile[];",
    "__shared__ __align__(16) float tile[4][8];",
    "__shared__ float __align__(16) tile[32];",
    "extern __shared__ __align__(sizeof(float4)) float tile[];",
    "__shared__ float tile[32] __attribute__((aligned(16)));",
])
def test_an_aligned_shared_declaration_parses(declaration: str) -> None:
    source = ("extern \"C\" __global__ void k(float *out) {\n  " + declaration +
              "\n  tile[threadIdx.x] = 1.0f;\n  __syncthreads();\n  out[threadIdx.x] = "
              "tile[threadIdx.x];\n}\n").replace("tile[threadIdx.x]", "*(tile + threadIdx.x)"
                                                  if "[4][8]" not in declaration else
                                                  "tile[0][threadIdx.x]")
    parsed = parse_cuda(source, "k.cu")
    body = parsed.body(parsed.kernel("k"))
    assert not body.has_error, body
    decl = next(n for n in parsed.walk(body) if n.type == "declaration")
    assert parsed.node_text(decl) == declaration  # the text as written, alignment included


def test_an_alignment_outside_a_shared_declaration_is_left_to_the_grammar() -> None:
    parsed = parse_cuda("struct __align__(8) P { float a, b; };\n"
                        "extern \"C\" __global__ void k(float *o) { o[0] = 1.0f; }\n")
    assert parsed.kernel("k").name == "k"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_aligned_box_filter_lifts_as_the_unaligned_one(name: str, tmp_path: Path) -> None:
    source = (SPELLINGS / f"{name}.cu").read_text()
    aligned = offline_template(_folder(source, tmp_path / "aligned")).lifted
    plain = offline_template(_folder(_unaligned(source), tmp_path / "plain")).lifted
    assert [p.name for p in aligned.params] == [p.name for p in plain.params]
    names = {p.name for p in aligned.params}
    if name == "box5_static_align":
        assert names >= APRON, aligned.notes
        assert "__shared__ __align__(16) float patch[" in aligned.source
    else:
        # carved into a static array, which keeps the buffer's alignment
        assert names == {"BLOCK_X", "BLOCK_Y", "MIN_BLOCKS_PER_SM"}, aligned.notes
        assert any(n.startswith("SHARED_CARVE: applied: `extern __shared__ __align__(")
                   for n in aligned.notes), aligned.notes
        assert re.search(r"__shared__ __align__\((16|sizeof\(float4\))\) float tile\[400\];",
                         aligned.source), aligned.source


def test_gap_an_aligned_buffer_indexed_as_the_tile_lifts_nothing(tmp_path: Path) -> None:
    source = (SPELLINGS / "box5_dyn_align.cu").read_text() \
        .replace("float smem[];\n  float *tile = smem;", "float tile[];")
    assert "__align__(16) float tile[];" in source
    for variant, root in ((source, "aligned"), (_unaligned(source), "plain")):
        with pytest.raises(TemplateError, match="SHARED_CARVE: not applied: `tile"):
            offline_template(_folder(variant, tmp_path / root))


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_aligned_box_filter_computes_as_written(name: str, tmp_path: Path,
                                                    host_flags: tuple[str, ...]  # noqa: F811
                                                    ) -> None:
    kf = _folder((SPELLINGS / f"{name}.cu").read_text(), tmp_path / "folder")
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    if name == "box5_static_align":
        configs = host_configs(template, env, CASES[name])
        configs = configs if FULL_MATRIX else configs[:2] + configs[-1:]
    else:  # the carve holds the block as the buffer's extent was written for (16 x 16)
        default = dict(template.default_config())
        configs = [default, *({**default, **mix} for mix in CASES[name])]
        assert all(template.space(env).rejection(c) is None for c in configs)
    assert same_as_written(kf, template, configs, _host, tmp_path / "run", host_flags,
                           within_tolerance=name == "box5_static_align") == len(configs)
    shutil.rmtree(tmp_path / "run", ignore_errors=True)
