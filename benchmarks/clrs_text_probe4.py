"""Probe 4 (issue 57): probe 3 with a lower learning rate. The rule below is also in
docs/clrs_text.md, "Probe 4", committed alone before this ran.

    python benchmarks/clrs_text_probe4.py [WORK_FOLDER] [START_BY_UTC] [END_UTC]

**The rule** (every setting ours): probe 3's rule (``benchmarks/clrs_text_probe3.py``) in
every part (task and data, NoPE in both arms, cap 6,000 steps, 5 % warm-up and cosine decay
over the cap, teacher-forced checks every 250 steps, ``stop_at`` 0.98, the stop rule with
K = 4 and the trivial floor, the per-seed gate, the choice from seed 0 with its 90-minute
projection, the arm gate) **except the learning rate**, the lever probe 3's outcome points
to (its rate was still 74 % of 3e-3 at step 2,250, where probe 2's adaptive arm left the
plateau only as its rate fell). The candidates, both 2 layers, width 64, 4 heads, batch 32:

- **lr1e-3**: rate 1e-3 (the other rate of the default's grid);
- **lr5e-4**: rate 5e-4.

A tie in the projected default goes to lr1e-3. When both arms of the winner pass the gate,
the winner becomes the CPU default in a later commit (minimum, these lengths, NoPE, the stop
rule with its floor, cap 6,000, the winner's rate, batch 32), with its tables and its time;
if one arm passes, that is reported and the default is not changed; with no winner, no
design passes and the default is not changed.

*Time*: the units run side by side (up to 4 processes), started in a scheduler group at
nice -10 (``/proc/self/autogroup``) so that other work on the machine does not starve them;
the projection reads CPU seconds, which the load does not change much. No unit starts after
START_BY_UTC (default 16:45); a unit still training at END_UTC (default 17:35) stops at its
next check and counts as "deadline" (not converged), as in probe 3. Writes
docs/data/clrs_text/probe4_units.csv, probe4_validation.csv, probe4_test.csv and
probe4_paired.csv.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("PROBE3_CANDIDATES", "lr1e-3,lr5e-4")
os.environ.setdefault("PROBE_NAME", "probe4")

# the module reads the two settings above; its workers inherit them
import clrs_text_probe3

if __name__ == "__main__":
    sys.argv[1:] = [
        sys.argv[1] if len(sys.argv) > 1 else "/tmp/clrs_probe4",
        sys.argv[2] if len(sys.argv) > 2 else "16:45",
        sys.argv[3] if len(sys.argv) > 3 else "17:35",
    ]
    clrs_text_probe3.main()
