"""Verdict stability: does the same command give the same timing verdict run after run?

Runs `ddpdoctor probe` on every timing example (examples/README.md: the DDP6xx ones and the
healthy baseline) N times, and prints per example and timing check (DDP601-605) the verdicts
the runs gave and how many agreed with the most common one. A verdict is "reported" (a warning
or error finding), "borderline" (the info finding of a measurement within the noise of its
threshold: its own verdict, not a pass and not a failure), "clean" (checked, nothing found) or
"skipped". Each cell also shows the range of margins the runs measured (distance from the
threshold in units of the run's own noise; "inf": no measurable noise).

On an idle machine every example should give one verdict in N of N runs. The figure is the
number of (example, check) pairs that agreed in every run.

    python -m benchmarks.verdict_stability                # 5 runs of each example
    python -m benchmarks.verdict_stability --runs 3 --examples comm_bound,healthy
    python -m benchmarks.verdict_stability --keep runs/   # keep the run dirs, then:
    python -m benchmarks.verdict_stability --rejudge runs/  # judge them again, no job started
    python -m benchmarks.verdict_stability --baseline     # also: does probe --baseline pass reruns?

`--rejudge` runs `ddpdoctor report` on kept run dirs: the checks of this checkout on the very
same recorded runs, so two versions of a check can be compared without the machine's load
moving between them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parent.parent

EXAMPLES = ("comm_bound", "tiny_buckets", "small_buckets", "straggler", "input_bound", "healthy")
CHECKS = ("DDP601", "DDP602", "DDP603", "DDP604", "DDP605")
# What each example is built to show (examples/README.md); the others must stay clean.
# tiny_buckets and small_buckets: their exposed communication is what merging the buckets
# removes, so it is DDP603's alone (DDP604 judges what would remain after that fix).
EXPECTED = {"comm_bound": {"DDP604"}, "tiny_buckets": {"DDP603"},
            "small_buckets": {"DDP603"}, "straggler": {"DDP601"},
            "input_bound": {"DDP605"}, "healthy": set()}


def probe_once(example: str, work: Path, index: int, timeout: float, baseline: Optional[Path] = None) -> dict:
    """One probe of one example (gated against `baseline`, an earlier run's report, where
    given): the JSON report, or {"_failed": why}."""
    run_dir = work / f"{example}-{index}"
    report = work / f"{example}-{index}.json"
    # The interpreter running this file, so the checkout under test is the one measured.
    cmd = [sys.executable, "-m", "ddpdoctor", "probe", f"examples/{example}.py",
           "--run-dir", str(run_dir), "--json", str(report), "-q"]
    if baseline is not None:
        cmd += ["--baseline", str(baseline)]
    try:
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"_failed": f"timed out after {timeout:.0f} s"}
    if not report.exists():
        return {"_failed": f"exit {done.returncode}, no report: {done.stderr.strip()[-200:]}"}
    return json.loads(report.read_text())


def judge_again(run_dir: Path, timeout: float) -> dict:
    """The JSON report of `ddpdoctor report RUN_DIR` (this checkout's checks), or {"_failed": why}."""
    report = run_dir.with_suffix(".rejudged.json")
    cmd = [sys.executable, "-m", "ddpdoctor", "report", str(run_dir), "--json", str(report), "-q"]
    try:
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"_failed": f"timed out after {timeout:.0f} s"}
    if not report.exists():
        return {"_failed": f"exit {done.returncode}, no report: {done.stderr.strip()[-200:]}"}
    return json.loads(report.read_text())


def verdicts(report: dict) -> dict[str, tuple[str, object]]:
    """Per timing check: (verdict, margin or None)."""
    if "_failed" in report:
        return {code: ("failed", None) for code in CHECKS}
    status = {c["code"]: c["status"] for c in report.get("checks", [])}
    found: dict[str, tuple[str, object]] = {}
    for finding in report["findings"]:
        code = finding["code"]
        if code not in CHECKS:
            continue
        evidence = finding.get("evidence") or {}
        verdict = "borderline" if evidence.get("borderline") else "reported"
        if found.get(code, ("", None))[0] != "reported":  # a reported finding outranks a borderline one
            margin = None  # older reports state none
            if "margin_ms" in evidence:
                margin = "inf" if evidence.get("margin") is None else evidence["margin"]
            found[code] = (verdict, margin)
    for code in CHECKS:
        if code not in found:
            found[code] = ("skipped" if status.get(code) == "skipped" else "clean", None)
    return found


def margin_range(margins: list) -> str:
    values = [m for m in margins if m is not None]
    if not values:
        return ""
    numbers = [m for m in values if isinstance(m, (int, float))]
    text = "inf" if not numbers else (f"{min(numbers):+.1f}" if min(numbers) == max(numbers)
                                      else f"{min(numbers):+.1f}..{max(numbers):+.1f}")
    return f" (margin {text}{', inf' if numbers and len(numbers) < len(values) else ''})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per probe")
    parser.add_argument("--json", help="also write the per-run verdicts here")
    parser.add_argument("--keep", help="keep the run dirs in this new folder")
    parser.add_argument("--rejudge", help="judge the run dirs a --keep left here again, no job")
    parser.add_argument("--baseline", action="store_true",
                        help="gate every run after an example's first against the first (probe "
                             "--baseline, DDP607): also prints how many of these identical reruns "
                             "the regression gate passed")
    args = parser.parse_args()
    examples = [e for e in args.examples.split(",") if e]
    results: dict[str, list[dict[str, tuple[str, object]]]] = {e: [] for e in examples}
    gated: dict[str, list[dict]] = {e: [] for e in examples}  # --baseline: the reruns' reports
    started = time.monotonic()
    if args.rejudge:
        kept = Path(args.rejudge)
        index = 0
        while any((kept / f"{e}-{index}").is_dir() for e in examples):  # every run kept
            for example in examples:
                if (kept / f"{example}-{index}").is_dir():
                    results[example].append(verdicts(judge_again(kept / f"{example}-{index}", args.timeout)))
            index += 1
        if not any(results.values()):
            print(f"no run dirs of these examples in {kept}", file=sys.stderr)
            return 2
        examples = [e for e in examples if results[e]]
    else:
        with tempfile.TemporaryDirectory(prefix="ddpdoctor-stability-") as tmp:
            work = Path(args.keep) if args.keep else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            for index in range(args.runs):  # round-robin: a burst of load hits every example alike
                for example in examples:
                    first = work / f"{example}-0.json"
                    gate = first if args.baseline and index > 0 and first.exists() else None
                    report = probe_once(example, work, index, args.timeout, gate)
                    results[example].append(verdicts(report))
                    if gate is not None:
                        gated[example].append(report)
                    if "_failed" in report:
                        print(f"  {example} run {index + 1}: {report['_failed']}", file=sys.stderr)
    elapsed = time.monotonic() - started
    stable = total = 0
    runs = max(len(r) for r in results.values())
    how = f"judged again from {args.rejudge}" if args.rejudge else "probed"
    print(f"Verdict stability: {runs} run(s) of each example, {how} ({elapsed:.0f} s)")
    print(f"{'example':<14} {'check':<7} {'agreed':>6}  verdicts")
    for example in examples:
        for code in CHECKS:
            runs = [r[code] for r in results[example]]
            counts = Counter(v for v, _ in runs)
            top = counts.most_common(1)[0][1]
            total += 1
            stable += top == len(runs)
            cells = ", ".join(f"{v} {n}" for v, n in counts.most_common())
            expected = " *" if code in EXPECTED.get(example, set()) else ""
            print(f"{example:<14} {code:<7} {top:>2}/{len(runs):<3}  {cells}"
                  f"{margin_range([m for _, m in runs])}{expected}")
    print(f"{stable} of {total} (example, check) pairs gave one verdict in every run "
          "(* the check the example is built to show)")
    if args.baseline and any(gated.values()):
        clean = reruns = 0
        print("Regression gate (DDP607) on identical reruns against each example's first run:")
        for example in examples:
            flagged = []
            for report in gated[example]:
                metrics = sorted({f["evidence"].get("metric", "?") for f in report.get("findings", [])
                                  if f.get("code") == "DDP607"})
                reruns += 1
                clean += not metrics and "_failed" not in report
                if metrics or "_failed" in report:
                    flagged.append(", ".join(metrics) or "failed")
            print(f"  {example:<14} passed {len(gated[example]) - len(flagged)}/{len(gated[example])}"
                  + (f"  (flagged: {'; '.join(flagged)})" if flagged else ""))
        print(f"{clean} of {reruns} identical reruns passed the regression gate")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {e: [{c: list(v) for c, v in r.items()} for r in rs] for e, rs in results.items()},
            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
