"""How the lint's cold analysis grows with the shapes that make value flow expensive: a name
rebound under N tests in one function (each use asks which of the earlier bindings reach it, and
each binding's value names the name again), written N times to a file, handed N times to a DDP
forward, passed through a helper N times, or written before each of N early returns.

    python -m benchmarks.lint_scale                      # N = 50, 100, 200, 400
    python -m benchmarks.lint_scale --sizes 100,800 --kinds path

Printed per shape and N: this process's CPU seconds for one cold analysis (gather + checks, the
lint cache off), and the growth from the size before (2.0 when N doubles and the cost is linear,
4.0 when quadratic). The scripts are generated here (our own words), analysed from a temporary
directory; nothing runs them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ddpdoctor.lint.driver import gather, lint_results

HEAD = ["import torch, torch.distributed as dist",
        "from torch.nn.parallel import DistributedDataParallel as DDP",
        "def step(model, x, flag, path):"]
TAIL = ["    return x", "def helper(v):", "    return v", "dist.init_process_group('gloo')",
        "step(torch.nn.Linear(1, 1), torch.zeros(1), 3, 'a.pt')"]
# per shape: the statements under each `if flag > i:` (i is the test's number)
SHAPES = {
    "path": ["path = path + '{i}'", "torch.save(model.state_dict(), path)"],
    "model": ["model = DDP(model) if flag else model", "model(x).sum().backward()"],
    "helper": ["x = helper(x)", "model(x).sum().backward()"],
    "size": ["x = x[:{i}]", "dist.all_reduce(torch.zeros(len(x)))"],
    # a write then an early return under each test: every later write carries the N tests
    # before it (the save rules read each test once per function, not once per write)
    "exit": ["torch.save(model.state_dict(), path)", "return x"],
}


MAX_SIZE = 2000  # the growth is about quadratic: N = 2000 already takes minutes


def script(kind: str, n: int) -> str:
    lines = list(HEAD)
    for i in range(n):
        lines.append(f"    if flag > {i}:")
        lines += ["        " + s.format(i=i) for s in SHAPES[kind]]
    return "\n".join(lines + TAIL) + "\n"


def cold_cpu(path: Path) -> float:
    started = time.process_time()
    lint_results(gather(str(path)), set())
    return time.process_time() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,100,200,400", help="N, comma-separated")
    parser.add_argument("--kinds", default=",".join(SHAPES), help="shapes: " + ", ".join(SHAPES))
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        kinds = args.kinds.split(",")
        if not sizes or min(sizes) < 1 or max(sizes) > MAX_SIZE or any(k not in SHAPES for k in kinds):
            raise ValueError
    except ValueError:
        parser.error(f"--sizes takes integers from 1 to {MAX_SIZE}, --kinds some of {', '.join(SHAPES)}")
    os.environ["DDPDOCTOR_LINT_CACHE"] = "0"  # cold every time
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            before = None
            for n in sizes:
                path = Path(tmp) / f"{kind}{n}.py"
                path.write_text(script(kind, n))
                cpu = cold_cpu(path)
                growth = f"x{cpu / before:.1f}" if before else ""
                print(f"{kind:7} N={n:<5} cold cpu {cpu:7.2f} s  {growth}", flush=True)
                before = cpu
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
