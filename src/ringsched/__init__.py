"""ringsched: GADGET online scheduling of ring-all-reduce (RAR) training jobs on GPU clusters.

Package map (arrows point down only):
    cli        -> everything below (thin: parses, validates, prints)
    perfmodel  -> how fast a RAR job runs on a placement (pure numpy functions + calibration)
    cluster    -> servers, racks, bandwidths (validated specs)
    objectives -> utilities of completion time
    errors     -> InputError: one clear line, exit code 2
"""

__version__ = "0.1.0"
