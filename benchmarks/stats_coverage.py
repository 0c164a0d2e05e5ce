"""Coverage of the paired comparison over seeds × shared questions, for each method we weighed.

The design of paper B's max retrieval and of CLRS-Text: two arms, each trained once per seed,
every model answering the same Q questions; the target is the difference of the arms'
accuracies over new seeds and new questions. The generating model (logit scale), per
simulation::

    logit p[arm, s, q] = μ[arm] + σ_seed·(√ρ·z_s + √(1−ρ)·z[arm, s]) + b_q + σ_arm·c[arm, q]
    y[arm, s, q] ~ Bernoulli(p[arm, s, q])

a seed effect (partly shared by the two arms of one seed index, ρ), a question difficulty b_q ~
N(0, σ_q²) both arms share, an arm × question effect (some questions favour one arm) and the
binary outcome's own noise (the seed × question interaction). The true difference is
E[p_A − p_B] over new seeds and questions (a Monte Carlo of 4·10⁶ draws). Scenarios:
``seed`` (seed-dominated), ``question`` (question-dominated), ``ceiling`` (both arms near
97 %, most outcomes 1). Designs: paper B's 10 seeds × 32, 256 and 1,024 test sets (its
largest to smallest sizes) and its ``--quick`` 2 seeds × 32 and 500; CLRS-Text's 3 and 5 seeds
× 100 questions (one length) and × 300 (a regime pooled over three lengths).

Methods (each a 95 % interval of the difference):

- ``two_way_t``: :func:`attnlimits.claims.statistics.paired_seeds_questions` (the one we use);
- ``anova_t``: the two-way ANOVA's unbiased variance of the mean, (MS_seed + MS_question −
  MS_residual)/(S·Q) (floored at its largest term's), Satterthwaite degrees of freedom: the
  interaction counted once, not twice;
- ``seeds_t``: the paired t-interval over seeds (``scipy.stats.ttest_rel``), questions left out;
- ``welch``: Welch's interval between the arms' per-seed accuracies (``ttest_ind``,
  ``equal_var=False``), pairing and questions left out;
- ``crossed``: the pigeonhole bootstrap (Owen 2007) percentile interval, seeds and questions
  resampled independently (paper B's former method), ``--boot`` resamples;
- ``crossed_tcorr``: the same widened about the estimate by t_{S−1}/z·√(S/(S − 1)) below 10
  seeds (paper B's former ``seed_factor``; 1 at 10 seeds).

Run (prints a Markdown table, coverage in %, and the seconds it took)::

    python benchmarks/stats_coverage.py [--sims 2000] [--boot 400] [--seed 0] [--seeds 2 10]

Vectorised over simulations (and resamples): the loops run over the fixed design cases and
methods, and over chunks of simulations only to bound the bootstrap's memory.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from attnlimits.claims.statistics import paired_seeds_questions

SCENARIOS = {  # μ (reference, arm), σ_seed, ρ, σ_q, σ_arm
    "seed": ((1.0, 1.5), 0.6, 0.3, 1.0, 0.2),
    "question": ((1.0, 1.3), 0.1, 0.3, 1.5, 1.2),
    "ceiling": ((3.5, 4.0), 0.4, 0.3, 1.0, 0.3),
}
DESIGNS = (  # (seeds, questions, the experiment's design it stands for)
    (2, 32, "paper B --quick, 2 seeds × 32 sets"),
    (2, 500, "paper B --quick, 2 seeds × 500 sets"),
    (10, 32, "paper B, 10 seeds × 32 sets"),
    (10, 256, "paper B, 10 seeds × 256 sets"),
    (10, 1024, "paper B, 10 seeds × 1,024 sets"),
    (3, 100, "CLRS-Text, 3 seeds × 100 questions"),
    (5, 100, "CLRS-Text, 5 seeds × 100 questions"),
    (3, 300, "CLRS-Text, 3 seeds × 300 (pooled)"),
    (5, 300, "CLRS-Text, 5 seeds × 300 (pooled)"),
)
METHODS = ("two_way_t", "anova_t", "seeds_t", "welch", "crossed", "crossed_tcorr")
LEVEL = 0.95


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def truth(scenario: str, rng: np.random.Generator, draws: int = 4_000_000) -> float:
    """E[p_arm − p_reference] over new seeds and questions (Monte Carlo)."""
    mu, s_seed, rho, s_q, s_arm = SCENARIOS[scenario]
    z = rng.standard_normal((5, draws))
    shared = s_seed * np.sqrt(rho) * z[0]
    own = s_seed * np.sqrt(1 - rho) * z[1:3]
    b = s_q * z[3]
    c = s_arm * rng.standard_normal((2, draws))
    p = _sigmoid(np.asarray(mu)[:, None] + shared + own + b + c)
    return float((p[1] - p[0]).mean())


def simulate(scenario: str, sims: int, S: int, Q: int, rng: np.random.Generator) -> np.ndarray:
    """Outcomes ``[sims, 2 arms, S, Q]`` (reference first) as float32 0/1."""
    mu, s_seed, rho, s_q, s_arm = SCENARIOS[scenario]
    shared = np.sqrt(rho) * rng.standard_normal((sims, 1, S, 1))
    own = np.sqrt(1 - rho) * rng.standard_normal((sims, 2, S, 1))
    b = s_q * rng.standard_normal((sims, 1, 1, Q))
    c = s_arm * rng.standard_normal((sims, 2, 1, Q))
    logit = np.asarray(mu, np.float32)[None, :, None, None] + s_seed * (shared + own) + b + c
    return (rng.random(logit.shape, np.float32) < _sigmoid(logit)).astype(np.float32)


def _counts(rng: np.random.Generator, shape: tuple[int, int], n: int) -> np.ndarray:
    """``shape`` resamples of ``n`` units with replacement, as counts per unit / n."""
    rows = shape[0] * shape[1]
    drawn = rng.integers(0, n, size=(rows, n)) + n * np.arange(rows)[:, None]
    return (np.bincount(drawn.ravel(), minlength=rows * n) / n).reshape(*shape, n)


def crossed(d: np.ndarray, boot: int, rng: np.random.Generator, chunk: int) -> np.ndarray:
    """Pigeonhole bootstrap percentile intervals of the mean of ``d [sims, S, Q]``: ``[2, sims]``
    (``chunk`` simulations at a time)."""
    sims, S, Q = d.shape
    out = np.empty((2, sims))
    for lo in range(0, sims, chunk):  # memory only: chunk × boot × Q weights at a time
        part = d[lo : lo + chunk]
        n = len(part)
        u = _counts(rng, (n, boot), S).astype(np.float32)  # (n, B, S)
        w = _counts(rng, (n, boot), Q).astype(np.float32)  # (n, B, Q)
        by_seed = np.matmul(part, w.transpose(0, 2, 1))  # (n, S, B): question-resampled means
        means = np.einsum("nsb,nbs->nb", by_seed, u)  # (n, B)
        out[:, lo : lo + n] = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=1)
    return out


def anova(d: np.ndarray) -> np.ndarray:
    """The ``anova_t`` interval of the mean of ``d [sims, S, Q]``: ``[2, sims]``."""
    _, S, Q = d.shape
    m = d.mean((-1, -2), keepdims=True)
    rows, cols = d.mean(-1, keepdims=True), d.mean(-2, keepdims=True)
    ms = np.stack(
        [
            Q * ((rows - m) ** 2).sum((-1, -2)) / (S - 1),
            S * ((cols - m) ** 2).sum((-1, -2)) / (Q - 1),
            ((d - rows - cols + m) ** 2).sum((-1, -2)) / ((S - 1) * (Q - 1)),
        ]
    )  # (3, sims)
    coef = np.array([1.0, 1.0, -1.0])[:, None]
    dfs = np.array([S - 1, Q - 1, (S - 1) * (Q - 1)], float)[:, None]
    var = np.maximum((coef * ms).sum(0), ms[:2].max(0)) / (S * Q)
    with np.errstate(invalid="ignore", divide="ignore"):
        nu = ((coef * ms).sum(0)) ** 2 / ((coef * ms) ** 2 / dfs).sum(0)
    nu = np.where(np.isfinite(nu) & (nu >= 1), nu, S - 1)
    half = stats.t.ppf((1 + LEVEL) / 2, nu) * np.sqrt(var)
    return np.stack([m[:, 0, 0] - half, m[:, 0, 0] + half])


def seed_factor(S: int) -> float:
    """Paper B's former widening below 10 seeds: t_{S−1}/z · √(S/(S − 1))."""
    if S >= 10:
        return 1.0
    q = (1 + LEVEL) / 2
    return float(stats.t.ppf(q, S - 1) / stats.norm.ppf(q) * np.sqrt(S / (S - 1)))


def intervals(y: np.ndarray, boot: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every method's interval ``[2, sims]`` on outcomes ``y [sims, 2, S, Q]``."""
    ref, arm = y[:, 0], y[:, 1]
    d = (arm - ref).astype(np.float64)
    S = y.shape[2]
    out = {}
    r = paired_seeds_questions(arm, ref)
    out["two_way_t"] = np.stack([r.low, r.high])
    out["anova_t"] = anova(d)
    acc_a, acc_r = arm.mean(-1, dtype=np.float64), ref.mean(-1, dtype=np.float64)  # (sims, S)
    with np.errstate(invalid="ignore", divide="ignore"):
        ci = stats.ttest_rel(acc_a, acc_r, axis=-1).confidence_interval(LEVEL)
        out["seeds_t"] = np.stack([ci.low, ci.high])
        ci = stats.ttest_ind(acc_a, acc_r, axis=-1, equal_var=False).confidence_interval(LEVEL)
        out["welch"] = np.stack([ci.low, ci.high])
    boot_ci = crossed(
        d.astype(np.float32), boot, rng, chunk=max(1, 20_000_000 // (boot * d.shape[-1]))
    )
    out["crossed"] = boot_ci
    est = d.mean((-1, -2))
    f = seed_factor(S)
    out["crossed_tcorr"] = np.stack([est - f * (est - boot_ci[0]), est + f * (boot_ci[1] - est)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--boot", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, nargs="*", help="only the designs with these seeds")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    truths = {s: truth(s, rng) for s in SCENARIOS}
    print(f"true differences: {', '.join(f'{k} {v:.4f}' for k, v in truths.items())}")
    print("| design | scenario | " + " | ".join(METHODS) + " |")
    print("|---|---|" + "---:|" * len(METHODS))
    summary: dict[tuple[str, str], list[float]] = {}
    designs = [d for d in DESIGNS if not args.seeds or d[0] in args.seeds]
    for S, Q, name in designs:  # the fixed design cases
        for scenario, true in truths.items():
            y = simulate(scenario, args.sims, S, Q, rng)
            cov = {}
            for method, (lo, hi) in intervals(y, args.boot, rng).items():
                cov[method] = 100 * float(np.mean((lo <= true) & (true <= hi)))
                summary.setdefault((name, method), []).append(cov[method])
            print(f"| {name} | {scenario} | " + " | ".join(f"{cov[m]:.1f}" for m in METHODS) + " |")
    print()
    print("min–max over the scenarios:")
    print("| design | " + " | ".join(METHODS) + " |")
    print("|---|" + "---:|" * len(METHODS))
    for _, _, name in designs:
        cells = [summary[(name, m)] for m in METHODS]
        print(f"| {name} | " + " | ".join(f"{min(c):.0f}–{max(c):.0f}" for c in cells) + " |")
    print(
        f"\n{args.sims} simulations per cell, {args.boot} resamples; "
        f"{time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
