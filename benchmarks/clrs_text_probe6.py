"""Probe 6 (issue 57): probe 5's design at three seeds, under a gate restated from the
benchmark's own in-distribution figures. The rule below is also in docs/clrs_text.md,
"Probe 6", committed alone before seeds 1 and 2 ran.

    python benchmarks/clrs_text_probe6.py [WORK_FOLDER] [START_BY_UTC] [END_UTC]

**The rule** (every setting ours). *Design*: probe 5's, unchanged (probe 3's code with the
candidate **lr5e-4**: minimum only in the trace format, training lengths 4, 5, 6, 8, 10,
tests 4-10 with 7 and 9 by interpolation and 12, 14, 16, 20 by extrapolation, no positional
encoding in both arms, 2 layers, width 64, 4 heads, batch 32, rate 5e-4, AdamW with 5 %
warm-up and cosine decay over a **cap of 15,000 steps**, teacher-forced checks every 625
steps, ``stop_at`` 0.98, the stop rule with K = 4 checks and the trivial floor). Seeds 0, 1
and 2 of both arms; seed 0's two units are probe 5's (same code and seed, copied into
WORK_FOLDER so that the probe resumes from them): **this rule is written after seed 0's
outcome was seen** (softmax converged at 0.592, adaptive at 0.724 on validation).

*The gate, restated* (issue 57: "justify the gate you choose from the benchmark's own
in-distribution figures"): **G = 0.50** in place of 0.90. The benchmark's own fine-tuned
Gemma 2B is, by the figures issue 57 quotes from the CLRS-Text repository's plots (not in our
copy, not checked here), between about 0.1 (bfs at its largest training lengths) and 0.93-1.0
(minimum, insertion_sort) in distribution, and §4.2 compares the two arms' profiles on all
thirty algorithms with no gate at all; so the benchmark asks of a compared model that it is
trained (to convergence, which our stop rule checks), not that it reaches a level. G keeps a
level so that a comparison is between models that have learned the task in distribution: at
least half of their whole in-distribution answers right, against a trivial baseline of 0.22
(the most common answer per length). It is set after probe 5's seed 0 (both above it), and is
more lenient than 0.90, which no CPU design reached in probes 2-5.

*Per seed*: converged (stopped by ``stop_at`` or by the stop rule, not at the cap, not at the
deadline) and the kept model's decoded validation exact match >= G. *Per arm*: each of the
three seeds passes, and the arm's test exact match in distribution, pooled over the seeds,
is >= G.

*Testable comparisons*: ``evaluate.paired_table`` with ``ceiling=G`` (rule 2's other parts
unchanged: >= 3 seeds, a length where at least one arm's interval over seeds is above the
trivial baseline, every compared model converged).

*The decision* (it reads nothing of which arm is ahead): if both arms pass the gate, the
projected default at **3 seeds** (3 x the seed-0 units' CPU seconds over 2 processes) is at
most 90 minutes, and at least one out-of-distribution regime (interpolation or extrapolation)
of minimum is testable in the probe's paired table, this design becomes the CPU default in a
later commit (3 seeds, the gate at G, one rate), with a run of the default command and its
tables. Otherwise the default is not changed and the doc says which part failed. The same
comparison is reported under 0.90 beside it (not testable there by construction).

*Time*: units run side by side (up to 4 processes); no unit starts after START_BY_UTC
(default 18:40); a unit still training at END_UTC (default 19:50) stops at its next check and
counts as "deadline" (not converged). Writes docs/data/clrs_text/probe6_units.csv,
probe6_validation.csv, probe6_test.csv and probe6_paired.csv.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("PROBE3_CANDIDATES", "lr5e-4")
os.environ.setdefault("PROBE3_STEPS", "15000")
os.environ.setdefault("PROBE_NAME", "probe6")
os.environ.setdefault("PROBE_GATE", "0.5")
os.environ.setdefault("PROBE_PROJECTED_SEEDS", "3")

# the module reads the settings above; its workers inherit them
import clrs_text_probe3

if __name__ == "__main__":
    sys.argv[1:] = [
        sys.argv[1] if len(sys.argv) > 1 else "/tmp/clrs_probe6",
        sys.argv[2] if len(sys.argv) > 2 else "18:40",
        sys.argv[3] if len(sys.argv) > 3 else "19:50",
    ]
    clrs_text_probe3.main()
