"""What the ranks and the launcher write into a run dir, and the one way each is read: the
record schema (telemetry.py), the JSON-lines codec (jsonl.py), every file's name (rundir.py) and
the reader of a rank's files while they grow (rank_files.py). Standard library only: the code
inside the user's ranks imports this package, and everything above it (launch/, run_model/,
analysis/, the checks) reads what it defines."""
