"""How the probe's findings say things, the same in every check, in attach and in the
post-mortem: ranks, steps, call sites and counts (wording.py), and a world of many ranks on one
screen (large_world.py)."""
