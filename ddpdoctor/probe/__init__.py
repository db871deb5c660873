"""`ddpdoctor probe`: the launcher, the instruments injected into each rank, telemetry, the run
model. The package is also callable: `ddpdoctor.probe("train.py", ...)` is the Python API
(ddpdoctor/api.py says why it is done this way)."""

from ddpdoctor.api import callable_module

callable_module(__name__, "probe")
