"""`ddpdoctor preflight`: options and run.py drive it; hosts, resolve, recorded facts, NIC
logic, the port hold and the cluster model are parent-side; node/ holds the stdlib-only programs
shipped to nodes; transport/ reaches them; collective/ is the cross-node smoke test."""

from ddpdoctor.core.deprecated import make_callable

make_callable(__name__, "run_preflight")
