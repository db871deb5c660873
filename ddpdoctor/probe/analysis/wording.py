"""Moved to ddpdoctor/probe/wording.py (the watchdog's looks word places too, and launch/ does not
import analysis/). Kept only for the check modules another wave-2 branch is editing
(latent_desync, bucket_bandwidth, bucket_sizes, exposed_comm) and analysis/frameworks.py; drop it
once they import ddpdoctor.probe.wording."""

from ddpdoctor.probe.wording import (at, called_from, counted, location, name_list, natural_sorted,  # noqa: F401
                                     rank_list, ranges, seconds, steps_text, verb)
