"""`ddpdoctor probe`: driver.py takes the options (options.py) through a run dir to the Report
(report.py). launch/ starts and watches the job, inrank/ runs inside each rank (the
instruments), run_model/ loads what the run dir holds, analysis/ turns it into what the checks
read. records/ is what both sides write and read (the record schema, the run dir's file names);
words/ how findings say ranks and sites. Nothing below this package imports its modules."""

from ddpdoctor.core.deprecated import make_callable

make_callable(__name__, "run_probe")
