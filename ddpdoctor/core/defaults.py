"""Every default ddpdoctor applies, said once: the options dataclasses (ProbeOptions,
PreflightOptions) take their field defaults from here, and the CLI's flags, their help text, the
Python API and the launcher read the same names. Limits that bound user input sit beside them.

Standard library only: code inside the user's ranks may import this.
"""

# torchrun's own default rendezvous port (--master-port), which ours follows.
MASTER_PORT = 29500

# probe: a short job, long enough to see a few steps of every phase.
NPROC_PER_NODE = 2
NNODES = 1
NODE_RANK = 0
MAX_STEPS = 20  # optimizer steps per rank (0: no limit)
STEPS_PER_EPOCH = 5  # batches per DataLoader epoch (0: no limit)
TIMEOUT_S = 300.0  # the whole probe
LOG_LIMIT_MB = 16.0  # job.log keeps this much per rank
# The adaptive stall timeout never goes below this: a step gap of a few seconds is normal.
STALL_FLOOR_S = 8.0
# More processes than this on one node is a typo, and torchrun would try to start every one.
MAX_NPROC_PER_NODE = 1024

# preflight
PREFLIGHT_TIMEOUT_S = 10.0  # per node, ssh included
FANOUT = 64  # nodes asked at once
REMOTE_PYTHON = "python3"
