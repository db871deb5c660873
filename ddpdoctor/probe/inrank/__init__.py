"""Code that runs inside each rank of a probe: it patches torch from outside, before the user's
script runs, and records what happens (telemetry.py). Everything here is on the user's hot path:
it must be cheap, and a bug in it must never break the user's job (instruments catch their own
errors and say so in a Note record).
"""
