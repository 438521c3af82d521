"""Does a lift at its default config compile to the kernel as written? (issue 28)

A template's default config is the plain kernel: the tuner starts there and the user looks
there first. For every corpus kernel folder this renders the offline templater's lift at its
default config and the folder's baseline as written, compiles each with
``nvcc -cubin -arch=ARCH -O3 -Xptxas -v`` (no GPU) and compares the entry function's code
shape: registers and spill bytes (ptxas), and from ``cuobjdump -sass`` the instruction count
(NOPs left out), branches (BRA), global loads and stores (LDG, STG) and FFMA/DFMA.

    python3 benchmarks/lift_default_shape.py [FOLDER ...] [--all] [--cache DIR] [--json OUT]

With no FOLDER it walks every benchmarks/corpus* folder but the held-back sets named in
HELD_BACK (never opened). It prints the kernels whose default differs materially (spills
appear or grow, or branches or instructions grow by more than ``--slack``, 10 % by default);
``--all`` prints every row. ``--cache`` keeps each compile's shape by source hash, so a second
run compiles only what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workbench.core.errors import WorkbenchError  # noqa: E402
from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.template import render_source  # noqa: E402
from workbench.core.write_policy import write_file  # noqa: E402
from workbench.templater.offline import offline_template  # noqa: E402

#: held-back corpus sets not yet measured: never listed, read or lifted here
HELD_BACK: tuple[str, ...] = ()

_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)")


@dataclass(frozen=True)
class CodeShape:
    """One kernel function's compiled shape on one architecture."""

    regs_per_thread: int
    spill_bytes: int  # ptxas' spill stores + spill loads
    instructions: int  # SASS instructions, NOPs left out
    branches: int  # BRA
    global_loads: int  # LDG
    global_stores: int  # STG
    fma: int  # FFMA + DFMA


@dataclass(frozen=True)
class ShapeRow:
    """A kernel as written against its lift at the default config."""

    kernel: str  # corpus set / folder
    plain: CodeShape
    default: CodeShape

    def differs(self, slack: float) -> bool:
        """Spills appear or grow, or branches or instructions grow by more than ``slack``."""
        def grows(before: int, after: int) -> bool:
            return after > before * (1 + slack) and after - before > 1
        return (self.default.spill_bytes > self.plain.spill_bytes
                or grows(self.plain.branches, self.default.branches)
                or grows(self.plain.instructions, self.default.instructions))


def sass_counts(sass: str, entry: str) -> Counter[str]:
    """Opcode counts of the function whose (mangled) name holds ``entry`` in ``sass``."""
    counts: Counter[str] = Counter()
    inside = False
    for line in sass.splitlines():
        named = re.match(r"\s*(?:code for sm_\w+\s+)?Function : (\S+)", line) or \
            re.match(r"\s*\.section\s+\.text\.([\w$]+)", line)
        if named:
            inside = entry in named.group(1)
            continue
        found = _SASS_LINE.search(line) if inside else None
        if found:
            counts[found.group(1).split(".")[0]] += 1
    if not counts:
        raise WorkbenchError(f"no SASS for entry {entry!r} in the cubin", entry=entry)
    return counts


def code_shape(source: str, entry: str, arch: str, cache: Path | None = None) -> CodeShape:
    """``source`` compiled like the workbench's compiler (``-cubin -O3 --std=c++17``), the
    shape of ``entry``; kept in ``cache`` by a hash of the source, entry and arch."""
    key = hashlib.sha256(f"{arch}\0{entry}\0{source}".encode()).hexdigest()[:24]
    kept = cache / f"{key}.json" if cache is not None else None
    if kept is not None and kept.exists():
        return CodeShape(**json.loads(kept.read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cu = write_file(work, work / "k.cu", source, overwrite=True)
        cubin = work / "k.cubin"
        done = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v",
                               "--std=c++17", "-o", str(cubin), str(cu)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise WorkbenchError(f"nvcc failed on {entry}: {done.stderr[-600:]}", entry=entry)
        sass = subprocess.run([*disassembler(), str(cubin)], capture_output=True,
                              text=True, check=True).stdout
    regs, spill = _ptxas_usage(done.stderr, entry)
    ops = sass_counts(sass, entry)
    shape = CodeShape(regs_per_thread=regs, spill_bytes=spill,
                      instructions=sum(n for op, n in ops.items() if op != "NOP"),
                      branches=ops["BRA"], global_loads=ops["LDG"], global_stores=ops["STG"],
                      fma=ops["FFMA"] + ops["DFMA"])
    if kept is not None:
        write_file(kept.parent, kept, json.dumps(asdict(shape)), overwrite=True)
    return shape


def disassembler() -> list[str]:
    """``cuobjdump -sass`` where it is on PATH, else ``nvdisasm -c`` (the pip wheel
    nvidia-cuda-nvdisasm has it without a toolkit)."""
    for tool, flag in (("cuobjdump", "-sass"), ("nvdisasm", "-c")):
        found = shutil.which(tool)
        if found:
            return [found, flag]
    raise WorkbenchError("neither cuobjdump nor nvdisasm is on PATH", tools=["cuobjdump",
                                                                           "nvdisasm"])


def _ptxas_usage(log: str, entry: str) -> tuple[int, int]:
    """(registers, spill store + load bytes) of ``entry`` in a ``ptxas -v`` log."""
    regs = spill = None
    current = False
    for line in log.splitlines():
        named = re.search(r"Compiling entry function '(\w+)'", line) or \
            re.search(r"Function properties for (\w+)", line)
        if named:
            current = entry in named.group(1)
        if not current:
            continue
        spilled = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if spilled:
            spill = int(spilled.group(1)) + int(spilled.group(2))
        used = re.search(r"Used (\d+) registers", line)
        if used:
            regs = int(used.group(1))
    if regs is None or spill is None:
        raise WorkbenchError(f"no ptxas usage for {entry!r} in the log", entry=entry,
                             log=log[-600:])
    return regs, spill


def corpus_folders() -> list[Path]:
    """Every benchmarks/corpus* kernel folder, held-back sets left out unopened."""
    out: list[Path] = []
    for corpus in sorted((ROOT / "benchmarks").glob("corpus*")):
        if corpus.is_dir() and corpus.name not in HELD_BACK:
            out += [f for f in sorted(corpus.iterdir()) if (f / "kernel.toml").exists()]
    return out


def compare_folder(folder: Path, arch: str, cache: Path | None = None) -> ShapeRow:
    """The folder's baseline as written against its offline lift at the default config,
    both rendered at the folder's first dtype."""
    kernel = load_kernel_folder(folder)
    base = kernel.baseline
    lifted = offline_template(kernel).template
    dtype = kernel.dtypes[0]
    plain = render_source(base.entry, base.source, {}, dtype, base.source_name)
    default = lifted.render(lifted.default_config(), dtype).source
    return ShapeRow(kernel=f"{folder.parent.name}/{folder.name}",
                    plain=code_shape(plain, base.entry, arch, cache),
                    default=code_shape(default, lifted.entry, arch, cache))


_COLUMNS = (("regs", "regs_per_thread"), ("spill", "spill_bytes"), ("BRA", "branches"),
            ("instr", "instructions"), ("LDG", "global_loads"), ("STG", "global_stores"),
            ("FMA", "fma"))


def format_rows(rows: list[ShapeRow]) -> str:
    """One line a kernel: each column as plain -> default lift."""
    head = f"{'kernel':<48}" + "".join(f"{name:>14}" for name, _ in _COLUMNS)
    lines = [head]
    for row in rows:
        cells = [f"{getattr(row.plain, f)}->{getattr(row.default, f)}" for _, f in _COLUMNS]
        lines.append(f"{row.kernel:<48}" + "".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="*")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--slack", type=float, default=0.10)
    ap.add_argument("--all", action="store_true", help="print every row, not only the worklist")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="write every row here")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    folders = [f.resolve() for f in args.folders] or corpus_folders()
    if any(held in str(f) for f in folders for held in HELD_BACK):
        raise SystemExit(f"refusing a held-back set ({', '.join(HELD_BACK)})")
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)

    def one(folder: Path) -> ShapeRow | str:
        try:
            return compare_folder(folder, args.arch, args.cache)
        except WorkbenchError as e:
            return f"{folder.parent.name}/{folder.name}: {type(e).__name__}: {str(e)[:160]}"

    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, folders))
    rows = [r for r in results if isinstance(r, ShapeRow)]
    shown = rows if args.all else [r for r in rows if r.differs(args.slack)]
    print(format_rows(shown))
    print(f"{len(shown)} of {len(rows)} kernels shown"
          f"{'' if args.all else f' (default differs by > {args.slack:.0%})'}; "
          f"{len(results) - len(rows)} not compared:")
    for r in results:
        if isinstance(r, str):
            print("  ", r)
    if args.json is not None:
        args.json.write_text(json.dumps([{"kernel": r.kernel, "plain": asdict(r.plain),
                                          "default": asdict(r.default)} for r in rows],
                                        indent=1))


if __name__ == "__main__":
    main()
