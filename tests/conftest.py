import os
import sys

# Tests import their helpers (cli_runner, probe_runner, sshd, netns, ...) by plain name.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "helpers"))
