"""`ddpdoctor attach`: diagnose a distributed job that is already running, without changing it.

discover (which processes are the job's ranks) -> sample (one py-spy recorder per rank) and
procstate (/proc before and after) -> judge (the probe's codes and wording) -> a Report.
"""
