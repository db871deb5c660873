"""What a probe's run dir holds, as types: launch/ writes them, analysis/ reads them, and both
depend on this package, never on each other. The file names themselves are in
probe/records/rundir.py (standard library only: the ranks import it).

    loaded_run.py   RunModel / RankRun: everything a run dir holds, loaded for the checks
    baseline.py     the --baseline report, read once and kept in the run dir
    outcome.py      ProbeMeta (probe.json), Outcome (outcome.json), RankStack, Frame
    verify.py       VerifyResult (verify.json, probe --verify-fix)
    stack_text.py   the one reader of stack texts: faulthandler dumps, py-spy's JSON and errors
    stack_view.py   StackView: one rank's stack read for where it stands (user frame, call)
    busy_or_blocked.py  the watchdog's looks at the ranks in a quiet spell, judged busy or blocked

The one reader of rank-<R>.jsonl / rank-<R>.stack while the job runs is probe/records/rank_files.py.
"""
