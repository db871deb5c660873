"""The program each node runs for a multi-node attach (over ssh, or one srun task per node):
observe this node's ranks of the job and print the observation as one marked JSON line.

    python -m ddpdoctor.attach.node --duration 5 --rate 50 [--node-rank N] [--master-port P]

--node-rank keeps the ranks whose GROUP_RANK (torchrun's node rank) is N, so that two "nodes"
that are one machine (loopback tests) do not report the same ranks twice; under srun it
defaults to SLURM_NODEID.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys

from ddpdoctor.attach.observation import NODE_MARKER as MARKER


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ddpdoctor.attach.node")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=50)
    parser.add_argument("--node-rank", type=int, default=None)
    parser.add_argument("--master-port", type=int, default=None)
    parser.add_argument("--host", default=None)
    args = parser.parse_args(argv)
    node_rank = args.node_rank
    if node_rank is None and os.environ.get("SLURM_NODEID", "").isdigit():
        node_rank = int(os.environ["SLURM_NODEID"])
    host = args.host or socket.gethostname()
    try:
        from ddpdoctor.attach.driver import choose_job, observe

        job = choose_job([], args.master_port, node_rank)
        observation = observe(job, args.duration, args.rate, host=host)
        payload = {"host": host, "node_rank": node_rank, "observation": observation.to_dict()}
    except Exception as exc:  # noqa: BLE001 - node 0 reports it as this node's failure
        payload = {"host": host, "node_rank": node_rank, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(MARKER + json.dumps(payload) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
