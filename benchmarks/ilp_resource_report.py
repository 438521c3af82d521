"""Registers, spills and PTX instruction mix of a stage-1 template at items-per-thread and
unroll configs (no GPU: nvcc -ptx, then ptxas -v).

Lifts a kernel folder's baseline with the offline templater, renders it at every
ITEMS_PER_THREAD x UNROLL x BRANCHLESS combination asked for, compiles each for the target
architecture and prints one row per config: registers per thread, spill bytes, and counts of
the PTX instructions that tell why items per thread pays or not (ld.const: table reads, per
thread; ex2/sqrt/rcp/div: special-function and division work; bra: branches; fma/mul/add:
float arithmetic; setp/selp: compares and selects).

    python benchmarks/ilp_resource_report.py benchmarks/corpus_compute_unseen3/probe_energy \
        --items 1 2 4 --unroll 1 4 8 --branchless 0 1
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import tomllib
from pathlib import Path

from workbench.core.params import parameter_from_dict
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.templater import lift_kernel

_PTX = ("ld.const", "ex2", "sqrt", "rcp", "div", "bra", "fma", "mul.f", "add.f", "setp", "selp")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--items", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--unroll", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--branchless", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    spec = tomllib.loads((args.folder / "kernel.toml").read_text())
    base = spec["baseline"]
    scalars = {a["name"]: str(a["value"]) for a in spec["args"] if a["role"] == "scalar"}
    lifted = lift_kernel((args.folder / base["source"]).read_text(), entry=base["entry"],
                         grid=base["grid"], block=base["block"], scalars=scalars)
    template = KernelTemplate.build(
        name=base["entry"], source=lifted.source, entry=base["entry"],
        params=[parameter_from_dict(p.name, dict(p.spec)) for p in lifted.params],
        constraints=list(lifted.constraints), grid=list(lifted.grid),
        block=list(lifted.block))
    names = set(template.param_names)
    print(f"{args.folder.name}: knobs {sorted(names)}")
    print(f"{'items':>5} {'unroll':>6} {'branchless':>10} {'regs':>5} {'spill_B':>7} "
          + " ".join(f"{s:>8}" for s in _PTX))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for items in args.items:
            for unroll in args.unroll:
                for branchless in args.branchless if "BRANCHLESS" in names else [0]:
                    config = {**template.default_config(), "ITEMS_PER_THREAD": items,
                              "UNROLL": unroll}
                    if "BRANCHLESS" in names:
                        config["BRANCHLESS"] = branchless
                    source = template.render(config, "fp32").source
                    cu = write_file(work, work / "k.cu", source, overwrite=True)
                    ptx = work / "k.ptx"
                    subprocess.run(["nvcc", "-ptx", f"-arch={args.arch}", "-O3", "-o",
                                    str(ptx), str(cu)], capture_output=True, check=True)
                    done = subprocess.run(["ptxas", f"-arch={args.arch}", "-v", "-o",
                                           str(work / "k.cubin"), str(ptx)],
                                          capture_output=True, text=True, check=True)
                    regs = re.search(r"Used (\d+) registers", done.stderr)
                    spill = re.search(r"(\d+) bytes spill stores", done.stderr)
                    ops = [line.split()[0] for line in ptx.read_text().splitlines()
                           if line.startswith("\t") and line.strip() and
                           not line.strip().startswith(("//", ".", "{", "}", "$"))]
                    ops = [o for o in ops if not o.startswith("@")] + \
                        [line.split()[1] for line in ptx.read_text().splitlines()
                         if line.strip().startswith("@") and len(line.split()) > 1]
                    counts = [sum(o.startswith(s) for o in ops) for s in _PTX]
                    print(f"{items:>5} {unroll:>6} {branchless:>10} "
                          f"{regs.group(1) if regs else '?':>5} "
                          f"{spill.group(1) if spill else '?':>7} "
                          + " ".join(f"{c:>8}" for c in counts))


if __name__ == "__main__":
    main()
