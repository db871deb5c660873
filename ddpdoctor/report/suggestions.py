"""A JSON report's proven fixes (evidence["fix"], from `lint --fix`'s planner) as the body of a
GitHub pull-request review: one comment per edited range, a ```suggestion block the author
accepts with one click. Only files of the pull request's diff can take a comment, so a workflow
passes the changed files; the rest stay annotations.

    python -m ddpdoctor.report.suggestions report.json [--only FILE...] > review.json
    gh api repos/OWNER/REPO/pulls/N/reviews --input review.json
"""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, Optional

MAX_REPORT_BYTES = 20_000_000
MAX_COMMENTS = 50  # a review with hundreds of comments helps nobody


def review(report: dict[str, Any], only: Optional[Iterable[str]] = None) -> dict[str, Any]:
    """The review body: {"event": "COMMENT", "body": ..., "comments": [...]}."""
    allowed = {_relative(p) for p in only} if only is not None else None
    comments = []
    for finding in report.get("findings") or []:
        fix = (finding.get("evidence") or {}).get("fix")
        if not isinstance(fix, dict):
            continue
        path = _relative(str(fix.get("file", "")))
        if allowed is not None and path not in allowed:
            continue
        for hunk in fix.get("hunks") or [fix]:
            start, end = hunk.get("start_line"), hunk.get("end_line")
            if not isinstance(start, int) or not isinstance(end, int) or start < 1 or end < start:
                continue
            comment = {"path": path, "line": end, "side": "RIGHT",
                       "body": (f"**{finding.get('code')}** {finding.get('title', '')}: "
                                f"{fix.get('description', '')}\n\n```suggestion\n{hunk.get('replacement', '')}\n```")}
            if start != end:
                comment.update(start_line=start, start_side="RIGHT")
            comments.append(comment)
    comments = comments[:MAX_COMMENTS]
    return {"event": "COMMENT", "comments": comments,
            "body": f"ddpdoctor: {len(comments)} suggested fix(es), each proven by linting the result again."}


def _relative(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: python -m ddpdoctor.report.suggestions REPORT.json [--only FILE...]\n")
        return 2
    only = argv[argv.index("--only") + 1:] if "--only" in argv else None
    try:
        with open(argv[0], "rb") as handle:
            data = handle.read(MAX_REPORT_BYTES + 1)
        if len(data) > MAX_REPORT_BYTES:
            raise ValueError("too large")
        report = json.loads(data)
        if not isinstance(report, dict):
            raise ValueError("not a report")
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{argv[0]}: not a ddpdoctor JSON report ({exc})\n")
        return 2
    json.dump(review(report, only), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
