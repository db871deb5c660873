"""`ddpdoctor probe`: launch/ starts and watches the job, inrank/ runs inside each rank (the
instruments), analysis/ turns telemetry into a run model, report.py makes the Report.
telemetry.py is the record schema both sides share; rundir.py owns the run dir's file names."""

from ddpdoctor.core.deprecated import make_callable

make_callable(__name__, "run_probe")
