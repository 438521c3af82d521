"""Carry a sample kernel's recording over to a template that gained knobs, where the new
knobs at their defaults compile to the same machine code as the recorded template.

A recording is an exhaustive sweep of one template text (its sha256). When a template gains
a knob whose default leaves the kernel as it was (e.g. silu_and_mul's PDL = 0: the
``griddepcontrol`` lines are preprocessed away), the recorded measurements are of the very
binaries the new template builds at that default. This checks that claim, it does not
assume it: for a seeded sample of recorded configs in each dtype, it compiles the recorded
template text and the new one (new knobs at their defaults) with the workbench's compiler
and compares every ELF section of the two cubins except the debug line tables and debug
strings (source line numbers and file paths, which differ with any edit); then it rewrites
the recording: every config gains the new knobs at their defaults, ``template_sha256``
becomes the new text's, and ``carried_over`` records what was checked. The recording's
space is then the new template's space at those defaults (the replay answers other values
as never measured).

    python benchmarks/search/carry_recording.py sample_kernels/silu_and_mul OLD_TEMPLATE.cu \\
        --sample 24
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import random
import struct
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.params import Choice  # noqa: E402
from workbench.core.records import Config  # noqa: E402
from workbench.engine.compiler import Compiler  # noqa: E402
from workbench.engine.recording import recording_paths  # noqa: E402

#: sections that hold source line numbers and paths, not code
# line tables and the embedded PTX text (source lines, file paths and inlined helper names
# change with any edit); every executable and data section is compared
DEBUG_ONLY = (".debug_line", ".debug_str", ".nv_debug_line_sass", ".nv_debug_ptx_txt")


def elf_sections(data: bytes) -> dict[str, bytes]:
    """Name -> contents of every section of an ELF64 little-endian file (a cubin)."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize)
               for i in range(count)]
    names_at = headers[names_index][4]
    out = {}
    for h in headers:
        name = data[names_at + h[0]:data.index(b"\0", names_at + h[0])].decode()
        out[name] = b"" if h[1] == 8 else data[h[4]:h[4] + h[5]]  # SHT_NOBITS: no bytes
    return out


def _merged_values(earlier: dict[str, list[Any]], new: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {k: sorted(set(earlier.get(k, [])) | set(new.get(k, [])))
            for k in sorted(set(earlier) | set(new))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("old_template", help="the template text the recording was measured with")
    ap.add_argument("--sample", type=int, default=24, help="recorded configs per dtype")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = load_kernel_folder(args.folder)
    [path] = recording_paths(folder.path)
    data = json.loads(path.read_text())
    old_text = Path(args.old_template).read_text()
    if hashlib.sha256(old_text.encode()).hexdigest() != data["template_sha256"]:
        print(f"{args.old_template} is not the recorded template text", file=sys.stderr)
        return 2
    new = folder.template
    recorded_knobs = set(data["trials"][0]["config"])
    added = {p.name: p.default for p in new.params if p.name not in recorded_knobs}
    # values a recorded knob gained since (e.g. a third FAST_EXP): never measured, and the
    # recording's completeness is judged without them
    seen: dict[str, set[Any]] = {}
    for t in data["trials"]:
        for k, v in t["config"].items():
            seen.setdefault(k, set()).add(v)
    new_values = {p.name: [v for v in p.values_ if not isinstance(v, str) and v not in seen[p.name]]
                  for p in new.params if isinstance(p, Choice) and p.name in seen}
    new_values = {k: v for k, v in new_values.items() if v}
    old = dataclasses.replace(new, source=old_text,
                              params=tuple(p for p in new.params if p.name not in added))
    compiler = Compiler("sm_90a")
    rng = random.Random(args.seed)
    checked = []
    for dtype in sorted({t["dtype"] for t in data["trials"]}):
        pool = sorted({json.dumps(t["config"], sort_keys=True) for t in data["trials"]
                       if t["dtype"] == dtype and t["status"] == "ok"})
        for text in rng.sample(pool, min(args.sample, len(pool))):
            cfg = Config(json.loads(text))
            a = elf_sections(Path(compiler.compile(old.render(cfg, dtype)).raise_for_error()
                                  .cubin_path).read_bytes())
            b = elf_sections(Path(compiler.compile(new.render(cfg.replace(**added), dtype))
                                  .raise_for_error().cubin_path).read_bytes())
            differ = sorted(k for k in set(a) | set(b)
                            if k not in DEBUG_ONLY and a.get(k) != b.get(k))
            if differ:
                print(f"{dtype} {dict(cfg)}: sections differ: {differ}", file=sys.stderr)
                return 1
            checked.append({"dtype": dtype, "config": dict(cfg)})
    for key in ("trials", "baseline", "confirmed"):
        for t in data.get(key, []):
            if key != "baseline":
                t["config"] = {**t["config"], **added}
    earlier = data.get("carried_over") or {}  # an earlier carry: its knobs stay added
    data["carried_over"] = {
        "from_template_sha256": data["template_sha256"],
        "added_knobs": {**(earlier.get("added_knobs") or {}), **added},
        "added_values": _merged_values(earlier.get("added_values") or {}, new_values),
        "date": dt.date.today().isoformat(), "compiler": compiler.version,
        "method": "cubins of the recorded template text and the new one (added knobs at "
                  "their defaults) compared section by section, debug line tables and "
                  "debug strings excluded: identical for every checked config",
        "checked": checked, **({"earlier": earlier} if earlier else {})}
    data["template_sha256"] = new.source_sha256
    lists = {k: data.pop(k) for k in ("copy", "baseline", "trials", "confirmed") if k in data}
    parts = [json.dumps(data, indent=1)[:-2]]  # save_recording's layout: one trial a line
    for key, items in lists.items():
        body = ",\n".join(json.dumps(item, separators=(",", ":")) for item in items)
        parts.append(f',\n "{key}": [\n{body}\n ]' if items else f',\n "{key}": []')
    path.write_text("".join(parts) + "\n}\n")
    print(f"{path}: {len(checked)} configs compile to the same code; carried over with "
          f"{added}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
