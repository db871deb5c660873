"""Static lint checks (DDP8xx): judged from the script's source, before anything runs."""
