"""Score `ddpdoctor lint` (DDP801-806) on a corpus of real public training code.

The corpus is third-party code, so it never enters this repository: it lives on disk (default
/work/lint-corpus, rebuilt from benchmarks/lint_corpus_manifest.json, which records for every
entry its repository, commit and paths) and this script only reads it.

    python -m benchmarks.lint_corpus                       # /work/lint-corpus, its manifest.json
    python -m benchmarks.lint_corpus CORPUS_DIR [--manifest FILE] [--json OUT] [--only ID,...] [--repeat N]
    python -m benchmarks.lint_corpus --rebuild-commands CLONES_DIR    # shell lines that rebuild it

Rebuilding: each entry's `paths` (git pathspecs) at `commit` of https://github.com/<repository>,
extracted into CORPUS/<dir> (`git archive <commit> -- <paths> | tar -x -C CORPUS/<dir>`), from a
clone of each repository under CLONES_DIR/<owner>+<name>. An entry marked `copied_from_index` was
copied file by file from the search index's stored text (some files at another commit, as its
note says): the rebuild lists it as a comment, to be copied again the same way.

Each entry is linted in-process (ddpdoctor.lint.driver.gather + lint_results) from its own working
directory (`dir`/`cwd` of the entry, where `python script` or `torchrun` would start), and its
findings are compared with the ones a careful reviewer accepts (`expected`: code, file, line,
severity; `optional` for one accepted but not required; `or`, a list of other places with their
code and severity that tell the same bug). Printed: a row per entry, then the totals the issue's bar is written in:
false alarms at error, false warnings per 10 scripts, bugs found at the right line (%),
exit-2 refusals, time per entry and the largest package's time.

Exit 0 when it ran (whatever the scores), 2 when the corpus or manifest is not on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ddpdoctor.core.errors import UsageError
from ddpdoctor.lint.driver import gather, lint_results, unreached

DEFAULT_CORPUS = Path("/work/lint-corpus")
COMMITTED_MANIFEST = Path(__file__).resolve().with_name("lint_corpus_manifest.json")


@dataclass
class Seen:
    """One finding as the benchmark compares it."""

    code: str
    severity: str
    file: str
    line: int | None
    message: str

    def key(self) -> tuple[str, str, int | None]:
        return self.code, self.file, self.line


@dataclass
class Scored:
    """One entry's outcome."""

    id: str
    kind: str
    files: int = 0
    statements: int = 0
    seconds: float = 0.0
    refused: str = ""  # the UsageError's line (exit 2)
    crashed: str = ""  # ddpdoctor's own failure (exit 3)
    unjudged: str = ""  # why the lint's verdict is incomplete (exit 4): its distributed code was not reached
    cpu_seconds: float = 0.0  # this process's CPU time: the wall time on a busy machine says less
    found: list[Seen] = field(default_factory=list)  # expected, at the right line
    accepted: list[Seen] = field(default_factory=list)  # optional (acceptable, not required), reported
    wrong_line: list[tuple[dict, Seen]] = field(default_factory=list)  # right code, other line
    missed: list[dict] = field(default_factory=list)  # expected, not reported
    # right code and line, other severity: (expected, reported); an error where a warning was
    # expected also counts as a false alarm at error (the bar is about errors the code does not prove)
    wrong_severity: list[tuple[dict, Seen]] = field(default_factory=list)
    false: list[Seen] = field(default_factory=list)  # reported, not expected


def _norm(path: str, workdir: Path | None = None) -> str:
    """A file as labels name it: relative to the entry's working directory (the lint reports a
    file outside it by its absolute path, a label by `../pkg/x.py`)."""
    if workdir is not None and os.path.isabs(path):
        path = os.path.relpath(path, os.path.abspath(workdir))
    return os.path.normpath(path)


@contextmanager
def cache_home(warm: bool):
    """Cold (default): a fresh, empty XDG_CACHE_HOME, so a lint that caches parsed files across
    runs (~/.cache/ddpdoctor) is timed as on its first run. Warm: the user's cache, primed by an
    untimed lint of the entry first."""
    if warm:
        yield
        return
    before = os.environ.get("XDG_CACHE_HOME")
    with tempfile.TemporaryDirectory(prefix="lint-corpus-cache-") as fresh:
        os.environ["XDG_CACHE_HOME"] = fresh
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("XDG_CACHE_HOME", None)
            else:
                os.environ["XDG_CACHE_HOME"] = before


def lint_entry(entry: dict, corpus: Path, warm: bool = False) -> Scored:
    with cache_home(warm):
        return _lint_entry(entry, corpus, warm)


def _lint_entry(entry: dict, corpus: Path, warm: bool) -> Scored:
    scored = Scored(entry["id"], entry["kind"])
    workdir = corpus / entry["dir"] / entry.get("cwd", ".")
    here = os.getcwd()
    if warm:
        try:
            os.chdir(workdir)
            gather(entry["script"])
        except Exception:  # noqa: BLE001 - the timed run below reports it
            pass
        finally:
            os.chdir(here)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        os.chdir(workdir)
        facts = gather(entry["script"])
        results = lint_results(facts, set())
    except UsageError as exc:
        scored.refused = str(exc)
        return scored
    except Exception as exc:  # noqa: BLE001 - a lint crash is a result of the benchmark, not its end
        scored.crashed = f"{type(exc).__name__}: {exc}"
        return scored
    finally:
        scored.seconds = time.perf_counter() - started
        scored.cpu_seconds = time.process_time() - cpu_started
        os.chdir(here)
    # a check that crashed on the entry is ddpdoctor's failure there (the command says "not
    # checked: ddpdoctor bug" and exits 3), not an entry where that check found nothing
    broken = [f"{r.spec.code} {r.reason}" for r in results if r.status == "crashed"]
    if broken:
        scored.crashed = "; ".join(broken)
        return scored
    scored.files = len(facts.files)
    scored.statements = facts.statements
    # exit 4 whatever left it unreached: the set-up, or the training code a config names
    scored.unjudged = "; ".join(unreached(facts)[1])
    seen = [Seen(f.code, f.severity.value, _norm(f.location.file, workdir) if f.location else "",
                 f.location.line if f.location else None, f.message)
            for r in results for f in r.findings]
    # a finding that names more places of the same bug (DDP806's later writes of one block, its
    # evidence's `also`) reports those lines too: they match a label there, and are never false
    named, parent = [], {}
    for r in results:
        for f in r.findings:
            if not f.location:
                continue
            main = next(s for s in seen if s.key() == (f.code, _norm(f.location.file, workdir), f.location.line)
                        and s.message == f.message)
            for line in f.evidence.get("also", []):
                if isinstance(line, int):
                    named.append(Seen(f.code, f.severity.value, _norm(f.location.file, workdir), line, f.message))
                    parent[id(named[-1])] = main
            # DDP801 placed at the call into a helper names the collective inside it too; one
            # placed at a DDP forward inside the helper names the guarded call into it (the
            # first step of its chain, "train.py:304 validation_step()"): the two places a
            # reviewer may point at for the same bug
            inner = f.evidence.get("collective_at")
            chain = f.evidence.get("chain")
            if not isinstance(inner, str) and isinstance(chain, list) and chain and isinstance(chain[0], str):
                inner = chain[0].partition(" ")[0]
            # DDP808's finding at the loader names the seeding its message blames (`seed_locations`:
            # torch.manual_seed(0) on every rank), the place the fix goes, and the other loaders the
            # same seeding feeds (`other_loaders`); a reviewer may point at any of them
            places = [inner]
            if f.code == "DDP808":
                places += (f.evidence.get("seed_locations") or [])[:6] + (f.evidence.get("other_loaders") or [])[:6]
            # DDP806 in a save helper names the call into it that no rank test guards where the
            # helper's other callers have one (`call_site`): the slip, where a reviewer points
            if f.code == "DDP806":
                places.append(f.evidence.get("call_site"))
            # DDP803 at the loader names the prepare() that shards it again and the rank's split it
            # reads: the second sharding, where a reviewer points
            if f.code == "DDP803":
                places += [f.evidence.get("prepared_at"), f.evidence.get("split_at")]
            for place in places:
                if isinstance(place, str) and place.rpartition(":")[2].isdigit():
                    file, _, line = place.rpartition(":")
                    named.append(Seen(f.code, f.severity.value, _norm(file, workdir), int(line), f.message))
                    parent[id(named[-1])] = main
    expected = list(entry.get("expected", []))
    unmatched = list(seen)
    # exact places first, optional ones included: a required label's stand-in at another line must
    # not take the finding an optional label names exactly ("one required, one optional")
    exact = {}
    for index, exp in enumerate(expected):
        # "or": the same bug told by another code at another line (SSD's early return: DDP809 at
        # the return, or DDP801 at the gather rank 0 then reaches alone), each with its severity
        for place in _places(exp):
            key = (place["code"], _norm(place["file"]), place["line"])
            hit = next((s for s in unmatched + named if s.key() == key), None)
            if hit is not None:
                (unmatched if hit in unmatched else named).remove(hit)
                exact[index] = hit
                # (an optional label accepts no finding at all, so a warning where it says error
                # is accepted too; an error where it says warning is not: a false error)
                # (a stand-in at this very place with the finding's severity: the label accepts
                # either severity there, "warning, or error at the same line")
                said = {p["severity"] for p in _places(exp) if (p["code"], _norm(p["file"]), p["line"]) == key}
                if hit.severity not in said and not (
                        exp.get("optional") and hit.severity == "warning" and place["severity"] == "error"):
                    scored.wrong_severity.append((place, hit))
                # the same bug's other reports are no false alarms: the finding whose `also`
                # named this line, and a second finding at another of the label's own places
                # (zero2wan's gather reported at both `state_dict()` and `optim_state_dict()`)
                same = {(p["code"], _norm(p["file"]), p["line"]) for p in _places(exp)}
                # (and a finding whose own chain names one of the label's places: the forward
                # inside `save_reps()` reported beside the one inside `knn_monitor()`, both called
                # in the rank-0 block whose lines the label lists)
                aliased = {id(parent[id(n)]) for n in named if n.key() in same and id(n) in parent}
                unmatched[:] = [s for s in unmatched if s is not parent.get(id(hit)) and s.key() not in same
                                and id(s) not in aliased]
                break
    for index, exp in enumerate(expected):
        hit = exact.get(index)
        if exp.get("optional"):  # a finding a reviewer accepts but does not require
            if hit is not None:
                scored.accepted.append(hit)
            continue
        if hit is None:
            near = next((s for s in unmatched if s.code == exp["code"]), None)
            if near is not None:
                unmatched.remove(near)
                scored.wrong_line.append((exp, near))
            else:
                scored.missed.append(exp)
            continue
        scored.found.append(hit)
    scored.false = unmatched
    return scored


def _places(label: dict) -> list[dict]:
    """A label's place and its "or" stand-ins (the same bug told at another line), each with a
    severity: a stand-in that names none has the label's."""
    return [label, *({"severity": label["severity"], **place} for place in label.get("or", []))]


def load_manifest(path: Path) -> dict:
    with open(path) as fh:
        return json.load(fh)


def rebuild_commands(manifest: dict, clones: Path, corpus: Path) -> str:
    """Shell lines extracting every entry from local clones (one per repository, owner+name):
    one line per extracted tree, with the paths of every entry that shares it. A snapshot the
    search tool's fetch brought (`<owner>+<name>/repo`, a git directory without a work tree) is
    read through `--git-dir`."""
    trees: dict[tuple[str, str], tuple[str, list[str]]] = {}
    lines = []
    for e in manifest["entries"]:
        if e.get("copied_from_index"):
            # (session 60's holdout 75, labelled when fetch was spent: each file copied from the
            # search index's stored text, some at another commit than `commit`; the note says which)
            lines.append(f"# {e['id']}: copied file by file from the search index (read_file), not a git tree: "
                         f"{e['repository']} {', '.join(e['paths'])}")
            continue
        # (`into`: the repository root is itself a package its code imports by name -
        # timewarp's `from timewarp.x import ...` - so its tree goes into that folder of the entry)
        where = f"{e['dir']}/{e['into']}" if e.get("into") else e["dir"]
        repository, paths = trees.setdefault((e["commit"], where), (e["repository"], []))
        paths.extend(p for p in e["paths"] if p not in paths)
        # a git submodule the entry's script imports, pinned in another repository
        # (PointNeXt's `openpoints`): extracted into its folder inside the entry
        for extra in e.get("extra_sources", []):
            folder = f"{e['dir']}/{extra['into']}"
            _, more = trees.setdefault((extra["commit"], folder), (extra["repository"], []))
            more.extend(p for p in extra["paths"] if p not in more)
    for (commit, folder), (repository, paths) in trees.items():
        clone = clones / repository.replace("/", "+")
        quoted = " ".join(f"'{p}'" for p in paths)
        snapshot = clone / "repo"
        git = f"git --git-dir {snapshot / '.git' if (snapshot / '.git').is_dir() else snapshot}" \
            if snapshot.is_dir() else f"git -C {clone}"
        lines.append(f"mkdir -p {corpus / folder} && {git} archive {commit} -- {quoted}"
                     f" | tar -x -C {corpus / folder}")
    return "\n".join(lines)


def render(rows: list[Scored], manifest: dict) -> str:
    out = [f"{'entry':30} {'kind':14} {'files':>5} {'stmts':>6} {'ms':>7} {'cpu ms':>7}  result"]
    for r in rows:
        if r.refused:
            result = f"REFUSED (exit 2): {r.refused}"
        elif r.crashed:
            result = f"CRASH (exit 3): {r.crashed}"
        else:
            parts = [f"found {len(r.found)}"] * bool(r.found)
            parts += [f"optional {len(r.accepted)}"] * bool(r.accepted)
            parts += [f"wrong line {len(r.wrong_line)}"] * bool(r.wrong_line)
            parts += [f"missed {len(r.missed)}"] * bool(r.missed)
            errors = sum(s.severity == "error" for s in r.false) + overstated(r)
            warnings = len(r.false) - errors
            parts += [f"FALSE error {errors}"] * bool(errors)
            parts += [f"false warning {warnings}"] * bool(warnings)
            parts += [f"other severity {len(r.wrong_severity)}"] * bool(r.wrong_severity)
            parts += [f"NOT JUDGED (exit 4): {r.unjudged}"] * bool(r.unjudged)
            result = ", ".join(parts) or "clean, as expected"
        out.append(f"{r.id:30} {r.kind:14} {r.files:5} {r.statements:6} {r.seconds * 1000:7.0f}"
                   f" {r.cpu_seconds * 1000:7.0f}  {result}")
        for s in r.false:
            out.append(f"{'':32}- false {s.code} {s.severity} {s.file}:{s.line}: {s.message[:140]}")
        for exp, s in r.wrong_severity:
            out.append(f"{'':32}- {exp['code']} {exp['file']}:{exp['line']} expected {exp['severity']},"
                       f" reported {s.severity}")
        for exp, s in r.wrong_line:
            out.append(f"{'':32}- {exp['code']} expected {exp['file']}:{exp['line']}, reported {s.file}:{s.line}")
        for exp in r.missed:
            out.append(f"{'':32}- missed {exp['code']} {exp['file']}:{exp['line']}: {exp.get('why', '')[:120]}")
    out.append("")
    out.extend(totals_lines(totals(rows)))
    return "\n".join(out)


def overstated(r: Scored) -> int:
    """Findings reported at error where the reviewer expects a warning (or note)."""
    return sum(s.severity == "error" and exp["severity"] != "error" for exp, s in r.wrong_severity)


def false_by_code(ran: list[Scored]) -> dict[str, int]:
    """False alarms per code: the unexpected findings and the errors where a warning is expected."""
    counts: dict[str, int] = {}
    for r in ran:
        overstated_here = [s for e, s in r.wrong_severity if s.severity == "error" and e["severity"] != "error"]
        for s in [*r.false, *overstated_here]:
            counts[s.code] = counts.get(s.code, 0) + 1
    return dict(sorted(counts.items()))


def totals(rows: list[Scored]) -> dict:
    ran = [r for r in rows if not r.refused and not r.crashed]
    scripts = len(rows)
    false_errors = sum(s.severity == "error" for r in ran for s in r.false) + sum(overstated(r) for r in ran)
    false_warnings = sum(s.severity != "error" for r in ran for s in r.false)
    bugs = sum(len(r.found) + len(r.wrong_line) + len(r.missed) for r in ran)
    bugs += sum(1 for r in rows if r.refused or r.crashed for _ in [0] if r.kind == "bugfix-before")
    found = sum(len(r.found) for r in ran)
    biggest = max(ran, key=lambda r: r.files, default=None)
    slowest = max(ran, key=lambda r: r.cpu_seconds, default=None)
    return {
        "entries": scripts,
        "healthy": sum(r.kind == "healthy" for r in rows),
        "bugfix_before": sum(r.kind == "bugfix-before" for r in rows),
        "bugfix_after": sum(r.kind == "bugfix-after" for r in rows),
        "false_errors": false_errors,
        "false_warnings": false_warnings,
        "false_warnings_per_10": round(10 * false_warnings / scripts, 2) if scripts else 0.0,
        "bugs": bugs,
        "bugs_found_right_line": found,
        "bugs_found_pct": round(100 * found / bugs, 1) if bugs else 100.0,
        "bugs_wrong_line": sum(len(r.wrong_line) for r in ran),
        "wrong_severity": sum(len(r.wrong_severity) for r in ran),
        "false_by_code": false_by_code(ran),
        "missed_by_code": {code: sum(e["code"] == code for r in ran for e in r.missed)
                           for code in sorted({e["code"] for r in ran for e in r.missed})},
        "refused_exit2": [r.id for r in rows if r.refused],
        "crashed": [r.id for r in rows if r.crashed],
        "unjudged_exit4": [r.id for r in rows if r.unjudged],
        "median_ms": round(1000 * sorted(r.seconds for r in ran)[len(ran) // 2], 1) if ran else 0.0,
        "median_cpu_ms": round(1000 * sorted(r.cpu_seconds for r in ran)[len(ran) // 2], 1) if ran else 0.0,
        "total_s": round(sum(r.seconds for r in rows), 2),
        "largest": ({"id": biggest.id, "files": biggest.files, "statements": biggest.statements,
                     "seconds": round(biggest.seconds, 2), "cpu_seconds": round(biggest.cpu_seconds, 2)}
                    if biggest else None),
        # issue 38's bar is per entry (<= 1 s CPU cold; the largest package <= 2 s): the median
        # hides the few slow ones, so name them
        "slowest_cpu": ({"id": slowest.id, "cpu_seconds": round(slowest.cpu_seconds, 2)} if slowest else None),
        "over_1s_cpu": [r.id for r in ran if r.cpu_seconds > 1.0 and r is not biggest],
    }


def totals_lines(t: dict) -> list[str]:
    big = t["largest"]
    return [
        f"entries: {t['entries']} ({t['healthy']} healthy, {t['bugfix_before']} bug-fix before, "
        f"{t['bugfix_after']} bug-fix after)",
        f"false alarms at error:        {t['false_errors']}   (bar: 0; includes an error where a warning is"
        " expected)",
        f"other severity than expected: {t['wrong_severity']}",
        f"false warnings per 10 entries: {t['false_warnings_per_10']}  ({t['false_warnings']} in all; bar: <= 1)",
        f"bugs found at the right line: {t['bugs_found_right_line']}/{t['bugs']} = {t['bugs_found_pct']}%"
        f"  ({t['bugs_wrong_line']} more at another line; bar: >= 90%)",
        "false alarms by code:         " + (", ".join(f"{c} {n}" for c, n in t["false_by_code"].items()) or "-"),
        "misses by code:               " + (", ".join(f"{c} {n}" for c, n in t["missed_by_code"].items()) or "-"),
        f"exit-2 refusals:              {len(t['refused_exit2'])} {', '.join(t['refused_exit2'])}   (bar: 0)",
        f"lint crashes:                 {len(t['crashed'])} {', '.join(t['crashed'])}",
        f"not judged (exit 4):          {len(t['unjudged_exit4'])} {', '.join(t['unjudged_exit4'])}"
        "   (the distributed code was not reached from the script)",
        f"time: median {t['median_ms']} ms per entry (cpu {t['median_cpu_ms']} ms), {t['total_s']} s in all;"
        " largest package: "
        + (f"{big['id']} ({big['files']} files, {big['statements']} statements) {big['seconds']} s"
           f" (cpu {big['cpu_seconds']} s)"
           if big else "-") + "   (bar: < 2 s)",
        f"cold cpu per entry: slowest "
        + (f"{t['slowest_cpu']['id']} {t['slowest_cpu']['cpu_seconds']} s" if t.get("slowest_cpu") else "-")
        + f"; over 1 s besides the largest: {len(t.get('over_1s_cpu', []))} {', '.join(t.get('over_1s_cpu', []))}"
        "   (bar: 0)",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS),
                        help="the corpus directory (default /work/lint-corpus)")
    parser.add_argument("--manifest", default=None,
                        help="manifest JSON (default CORPUS/manifest.json, else the committed copy)")
    parser.add_argument("--json", default=None, help="write the per-entry results and totals here")
    parser.add_argument("--only", default=None, help="comma-separated entry ids")
    parser.add_argument("--warm", action="store_true",
                        help="time each entry with the lint's file cache primed (default: cold, a fresh cache)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="lint each entry N times and keep the run that took the least CPU: on a "
                             "shared machine one run's time says as much about the neighbours as "
                             "about the lint (the findings are the same every time)")
    parser.add_argument("--rebuild-commands", metavar="CLONES_DIR", default=None,
                        help="print the shell commands that rebuild the corpus from clones, and exit")
    args = parser.parse_args(argv)
    corpus = Path(args.corpus).resolve()
    if args.rebuild_commands:
        manifest = load_manifest(Path(args.manifest) if args.manifest else COMMITTED_MANIFEST)
        print(rebuild_commands(manifest, Path(args.rebuild_commands), corpus))
        return 0
    if not corpus.is_dir():
        print(f"lint_corpus: no corpus at {corpus}: rebuild it from {COMMITTED_MANIFEST.name} "
              "(repository, commit and paths of every entry) or pass its directory", file=sys.stderr)
        return 2
    manifest_path = Path(args.manifest) if args.manifest else corpus / "manifest.json"
    if not manifest_path.is_file():
        manifest_path = COMMITTED_MANIFEST
    manifest = load_manifest(manifest_path)
    entries = manifest["entries"]
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["id"] in wanted]
    absent = [e["id"] for e in entries if not (corpus / e["dir"] / e.get("cwd", ".") / e["script"]).is_file()]
    if absent:
        print(f"lint_corpus: {len(absent)} entr{'y' if len(absent) == 1 else 'ies'} of {manifest_path} "
              f"not on disk under {corpus}: {', '.join(absent[:5])}{' …' if len(absent) > 5 else ''}",
              file=sys.stderr)
        return 2
    if args.repeat < 1:
        print(f"lint_corpus: --repeat must be at least 1, not {args.repeat}", file=sys.stderr)
        return 2
    rows = [min((lint_entry(e, corpus, warm=args.warm) for _ in range(args.repeat)),
                key=lambda r: r.cpu_seconds) for e in entries]
    print(f"cache: {'warm (primed by an untimed run)' if args.warm else 'cold (fresh XDG_CACHE_HOME per entry)'}"
          + (f"; each entry's time the least of {args.repeat} runs" if args.repeat > 1 else ""))
    print(render(rows, manifest))
    if args.json:
        data = {"totals": totals(rows), "entries": [{
            "id": r.id, "kind": r.kind, "files": r.files, "statements": r.statements,
            "seconds": round(r.seconds, 3), "cpu_seconds": round(r.cpu_seconds, 3), "refused": r.refused, "crashed": r.crashed,
            "found": [s.__dict__ for s in r.found], "accepted": [s.__dict__ for s in r.accepted],
            "wrong_line": [{"expected": e, "reported": s.__dict__} for e, s in r.wrong_line],
            "wrong_severity": [{"expected": e, "reported": s.__dict__} for e, s in r.wrong_severity],
            "missed": r.missed, "false": [s.__dict__ for s in r.false]} for r in rows]}
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
