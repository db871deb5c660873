"""`ddpdoctor preflight`: options and run.py drive it; hosts, resolve, recorded facts, NIC
logic, the port hold and the cluster model are parent-side; node/ holds the stdlib-only programs
shipped to nodes; transport/ reaches them; collective_smoke.py is the cross-node smoke test
(collective_result.py its result types, which cluster.py carries)."""

from ddpdoctor.core.deprecated import make_callable

make_callable(__name__, "run_preflight")
