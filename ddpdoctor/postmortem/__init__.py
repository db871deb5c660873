"""`ddpdoctor report EVIDENCE...`: what a dead job left (logs, torchrun error files, Flight
Recorder dumps) read into one Evidence observation, which the checks of stage "evidence" judge.

sources (which files) -> textlog and its readers (prefixes, tracebacks, c10d, nccl, elastic,
oom) -> evidence (the observation) -> gather (inputs -> Evidence) -> causality (first cause)
-> report.
"""
