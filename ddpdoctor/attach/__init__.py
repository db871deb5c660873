"""`ddpdoctor attach`: diagnose a distributed job that is already running, without changing it.

discover (which processes are the job's ranks) -> sample (one py-spy recorder per rank) and
procstate (/proc before and after) -> the checks of stage "attach" (the probe's own checks, over
the window read once by window.py; judge.py runs them) -> a Report.
"""
