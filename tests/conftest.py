import os
import sys

# Tests import their helpers (cli_runner, builders) by plain name.
sys.path.insert(0, os.path.dirname(__file__))
