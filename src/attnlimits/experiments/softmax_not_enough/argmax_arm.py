"""§3's "Setting temperature to zero will then degrade accuracy", measured: the trained softmax
models of a run evaluated with a hard argmax in place of softmax (temperature → 0), at
inference only, on the run's own test sets. Nothing is trained.

The argmax arm is :func:`attnlimits.normalizers.topk_softmax` with k = 1 (:data:`ARGMAX`): all
of the attention on the item with the largest logit, the limit of softmax(e/T) as T → 0. Ties
of the largest logit are broken by ``torch.topk`` (one item kept), where the limit would
split the attention evenly between them; in float32 a tie needs two items with the same
features (priority and class), whose readouts are the same, so the two agree on these data.

Each size draws exactly the sets the run drew (:func:`.evaluate.evaluate` with the run's set
count per size, no early stop: the same generator and chunks, so the same sets), and the
softmax arm is evaluated again beside the argmax arm in the same pass, so the pair shares its
encoding and sets; the fresh softmax hits are checked against the run's stored ones
(:func:`argmax_accuracy` reports the share that agree). The rows go into the run's
``argmax_accuracy`` table (:func:`.seeds.run_max_retrieval`), which :func:`.findings.degrade`
judges; ``python -m attnlimits.experiments.softmax_not_enough.add_tables RUN`` adds it to a
run made before it existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from attnlimits.claims import by_interval
from attnlimits.experiments.softmax_not_enough.claims import interval
from attnlimits.experiments.softmax_not_enough.config import EvalConfig, NormSpec
from attnlimits.experiments.softmax_not_enough.evaluate import evaluate, summary_table
from attnlimits.experiments.softmax_not_enough.model import MaxRetrievalModel
from attnlimits.experiments.softmax_not_enough.uncertainty import unpack_hits

__all__ = ["ARGMAX", "OUTCOME", "OUTCOME_ADAPTIVE", "TABLE", "argmax_accuracy", "argmax_table"]

#: The hard argmax (temperature → 0): top-1 softmax, every weight on the largest logit.
ARGMAX: NormSpec = ("topk", {"k": 1})
#: The run table the arm writes (norm ``softmax`` and ``argmax`` rows, :func:`evaluate`'s
#: columns plus ``agree``: the share of the softmax hits equal to the run's stored ones).
TABLE = "argmax_accuracy"


def argmax_accuracy(
    model: MaxRetrievalModel,
    accuracy: pd.DataFrame,
    cfg: EvalConfig,
    sizes: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Softmax and :data:`ARGMAX` on the sets of the run's ``accuracy`` table (each size's
    set count there, drawn by ``cfg``'s generator), per (norm, seed, size): :func:`evaluate`'s
    columns and ``agree``, the share of this pass's softmax hits equal to the stored ones (1
    where the sets and the models are the run's)."""
    stored = accuracy[accuracy["norm"] == "softmax"].sort_values("seed")
    norms = {"softmax": ("softmax", {}), "argmax": ARGMAX}
    parts = []
    for n in sizes or sorted(int(s) for s in stored["size"].unique()):
        at = stored[stored["size"] == n]
        m = int(at["n_sets"].min())
        one = replace(cfg, sizes=(n,), n_sets=m, target_se=None, max_items=None)
        acc = evaluate(model, one, norms)
        fresh = acc[acc["norm"] == "softmax"].sort_values("seed")
        same = unpack_hits(fresh["hits"].to_numpy(), m) == unpack_hits(at["hits"].to_numpy(), m)
        parts.append(acc.assign(agree=float(same.mean())))
    return pd.concat(parts, ignore_index=True)


#: The size table's outcome column: argmax against softmax at one size, in the one comparison
#: vocabulary (:func:`~attnlimits.claims.by_interval`, argmax's point of view, no margin).
OUTCOME = "argmax vs softmax"
#: The same against adaptive temperature (the round-5 referee's point 15): argmax − adaptive,
#: paired on the same seeds and sets (the arm draws the run's sets, so its hits pair with the
#: stored adaptive hits set by set).
OUTCOME_ADAPTIVE = "argmax vs adaptive"


def _against_adaptive(acc: pd.DataFrame, adaptive: pd.DataFrame) -> pd.DataFrame:
    """Per size: argmax − adaptive with its paired interval over seeds and test sets
    (:func:`.evaluate.summary_table` with adaptive as the baseline), on the sizes where both
    arms have the same set count (the same sets)."""
    arm = acc[acc["norm"] == "argmax"].drop(columns="agree")
    other = adaptive[adaptive["norm"] == "adaptive"].drop(columns="mode", errors="ignore")
    both = arm.merge(other[["seed", "size", "n_sets"]], on=["seed", "size", "n_sets"])
    keep = both[["seed", "size"]].drop_duplicates()
    other = other.merge(keep, on=["seed", "size"])
    s = summary_table(pd.concat([arm.merge(keep), other], ignore_index=True), "adaptive")
    return s[s["norm"] == "argmax"].set_index("size")


def argmax_table(acc: pd.DataFrame, adaptive: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per size of :data:`TABLE`'s rows: the sets, softmax and argmax accuracy (mean over seeds
    and sets, 95 % interval over both), argmax − softmax with its paired interval
    (:func:`.evaluate.summary_table`, :mod:`attnlimits.claims.statistics`), its outcome
    (:data:`OUTCOME`) and the share of the softmax hits equal to the run's stored ones; given
    the run's ``accuracy`` table (``adaptive``), argmax − adaptive with its paired interval and
    outcome (:data:`OUTCOME_ADAPTIVE`; "—" at a size without the same sets)."""
    s = summary_table(acc.drop(columns="agree"))
    soft = s[s["norm"] == "softmax"].set_index("size")
    arg = s[s["norm"] == "argmax"].set_index("size")
    agree = acc.groupby("size")["agree"].min()
    versus = None if adaptive is None else _against_adaptive(acc, adaptive)
    rows = []
    for n in sorted(arg.index):
        a, b = arg.loc[n], soft.loc[n]
        row = {
            "size": int(n),
            "sets": int(a["n_sets"]),
            "softmax (%)": interval(b["mean"], b["ci_low"], b["ci_high"]),
            "argmax (%)": interval(a["mean"], a["ci_low"], a["ci_high"]),
            "argmax − softmax (pts)": interval(a["diff"], a["diff_low"], a["diff_high"]),
            OUTCOME: by_interval(float(a["diff_low"]), float(a["diff_high"])),
        }
        if versus is not None:
            v = versus.loc[n] if n in versus.index else None
            row["argmax − adaptive (pts)"] = (
                "—" if v is None else interval(v["diff"], v["diff_low"], v["diff_high"])
            )
            row[OUTCOME_ADAPTIVE] = (
                "—" if v is None else by_interval(float(v["diff_low"]), float(v["diff_high"]))
            )
        row["softmax hits as stored"] = f"{float(agree[n]):.4f}"
        rows.append(row)
    return pd.DataFrame(rows)
