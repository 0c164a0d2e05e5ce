"""Argument specs of the API fuzz (tests/test_api_fuzz.py): for every public function of
``normalizers``, ``metrics`` and ``theory``, the role of each argument (tests/api_fuzz_roles.py)
and where its result may be NaN or inf as documented (``nonfinite_ok``). Parameters with a
default and no role here are drawn from the default and the bad values of its kind."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from api_fuzz_roles import (
    BOOL,
    ENTROPY,
    GENERATOR,
    KEY_MASK,
    MASK,
    MATRIX,
    NONNEG_ROWS,
    NS,
    POS_ROWS,
    ROW_WEIGHTS,
    ROWS,
    SCORES,
    SPHERE,
    UNIT,
    VALID,
    VALUES,
    VECTOR,
    WEIGHTS,
    F,
    N,
    Role,
    X,
    bad_tensor,
    fixed,
    integer,
    number,
    tensor_role,
)
from attnlimits import normalizers

# ------------------------------------------------------------------ argument specs


@dataclass(frozen=True)
class Spec:
    """Roles of the arguments (defaulted ones not listed are drawn from their default) and
    where a result may be NaN or inf, as documented (``nonfinite_ok(args, path, leaf) -> bool
    tensor or bool`` for the leaf at ``path`` (``[field][key]``) of the result ``out``,
    broadcast over trailing grid axes)."""

    roles: dict[str, Role]
    nonfinite_ok: Callable[[dict[str, Any], str, Any], Any] | None = None
    check: Callable[[dict[str, Any], Any], None] | None = None


def _dim(ndim: int) -> Role:
    return Role(
        lambda draw, w: draw(st.sampled_from((-1, ndim - 1, 0, -ndim))),
        lambda draw, w, good: draw(st.sampled_from((ndim, -ndim - 1, 5, 1.5, "1", None, True))),
    )


DIM3 = _dim(3)
DIM2 = _dim(2)


def _default_role(param: inspect.Parameter) -> Role | None:
    """A role from the default value: the default itself, and bad values of its kind."""
    default = param.default
    if default is inspect.Parameter.empty or default is None:
        return None
    if isinstance(default, bool):
        return BOOL
    if isinstance(default, (int, float)):
        base = integer(int(default), int(default)) if isinstance(default, int) else None
        bad = base.bad if base else number(0, 1).bad
        return Role(lambda draw, w: default, bad)
    if isinstance(default, str):
        return fixed(default)
    if isinstance(default, tuple):
        return fixed(default, bad=([], "abc", None, [math.nan], ["bogus"], [None]))
    return None


def _kept(args: dict[str, Any], name: str, dim: int = -1) -> torch.Tensor:
    """Kept entries of ``args[name]``: its mask (if any) and not -inf."""
    t = args[name]
    keep = ~torch.isneginf(t) if t.is_floating_point() else torch.ones_like(t, dtype=torch.bool)
    if args.get("mask") is not None:
        keep = keep & args["mask"]
    return keep.movedim(dim, -1) if dim != -1 else keep


def _wide_spread(args: dict[str, Any], path: str, out: Any) -> Any:
    """logit_spread: NaN without a kept key; inf where max − min exceeds the dtype's range."""
    scores, dim = args["scores"], args.get("dim", -1)
    keep = _kept(args, "scores", dim)
    s = scores.double().movedim(dim, -1)
    hi = torch.where(keep, s, -math.inf).amax(-1)
    lo = torch.where(keep, s, math.inf).amin(-1)
    return ~keep.any(-1) | (hi - lo > torch.finfo(scores.dtype).max)


def _no_kept_key(args: dict[str, Any], path: str, out: Any) -> Any:
    return ~_kept(args, _first(args), args.get("dim", -1)).any(-1)


def _no_positive_weight(args: dict[str, Any], path: str, out: Any) -> Any:
    keep = _kept(args, "weights", args.get("dim", -1))
    w = args["weights"].movedim(args.get("dim", -1), -1)
    return ~(keep & (w > 0)).any(-1)


def _top_mass_nan(args: dict[str, Any], path: str, out: Any) -> Any:
    """top_mass: NaN where a row has fewer than N kept keys or no positive kept weight (the
    grid of N last, sorted, each N once)."""
    dim = args.get("dim", -1)
    keep = _kept(args, "weights", dim)
    w = args["weights"].movedim(dim, -1)
    ns = torch.tensor(sorted({int(n) for n in args["ns"]}))
    return (keep.sum(-1, keepdim=True) < ns) | ~(keep & (w > 0)).any(-1, keepdim=True)


def _first(args: dict[str, Any]) -> str:
    return next(iter(args))


def _short_rows(args: dict[str, Any], path: str, out: Any) -> Any:
    """Rows with fewer than N + 1 kept keys (N = the largest of n / ns), grid axis last when
    the output has one."""
    keep = _kept(args, _first(args))
    counts = keep.sum(-1)
    if "ns" in args:
        ns = torch.tensor(sorted({int(n) for n in args["ns"]}))
        return counts.unsqueeze(-1) < ns + 1
    return counts < args["n"] + 1


def _few_keys(args: dict[str, Any], path: str, out: Any) -> Any:
    """Heads with fewer than two kept keys (two distinct vectors for ``distinct``)."""
    x = args["x"].double()
    keep = torch.ones(x.shape[:-1], dtype=torch.bool)
    if args.get("mask") is not None:
        keep = keep & args["mask"]
    pair = keep[..., :, None] & keep[..., None, :] & ~torch.eye(x.shape[-2], dtype=torch.bool)
    pair = pair & (torch.cdist(x, x) > 0)  # distinct pairs: a superset of NaN for both forms
    return ~pair.any((-2, -1))


def _curve_bound(args: dict[str, Any], path: str, out: Any) -> Any:
    """distance_curve: bound and gap are NaN at the N outside ``bound_ns`` (documented)."""
    if path.startswith("[5]") and not path.startswith("[5][sharp]"):
        return _gap_inf(out.gap[path[4:-1]]) | _curve_bound(args, "[3]", out)
    if not path.startswith(("[3]", "[5]")):
        return False
    ns = sorted({int(n) for n in args["ns"]})
    return torch.tensor([n not in set(args["bound_ns"]) for n in ns]).expand(out.bound.shape)


def _gap_inf(gap: torch.Tensor) -> torch.Tensor:
    """The main-text and appendix Jensen-gap bounds are +inf where ||μ_i|| = 0 and the other
    keys spread (documented in docs/conventions.md; in low precision μ_i can round to 0).
    Where nothing spreads the term is 0, never 0/0, so NaN is not allowed."""
    return torch.isposinf(gap)


def _short_or_gap_inf(args: dict[str, Any], path: str, out: Any) -> Any:
    """theory.jensen_gap_bound: :func:`_short_rows`, and :func:`_gap_inf`."""
    return _short_rows(args, path, out) | (_gap_inf(out) & (args["form"] != "sharp"))


def _no_bound(args: dict[str, Any], path: str, out: Any) -> Any:
    """distance_metrics(with_bound=False): the bound is NaN (documented)."""
    if path == "[3]" and args["gap_form"] != "sharp":
        return _gap_inf(out.gap_bound)
    return path == "[1]" and not args["with_bound"]


def _zero_ball(args: dict[str, Any], path: str, out: Any) -> Any:
    """separability: the lower bound is -inf where the ball radius r is 0 and Σξ > 0 (its
    limit r → 0⁺) or r is so small that Σξ/(rN) overflows: a vacuous bound (documented); never
    NaN in a valid row (issue 54: r = 0 gave NaN)."""
    return path == "[1]" and torch.isneginf(out.lower)


def _no_valid_row(args: dict[str, Any], path: str, out: Any) -> Any:
    """row_mean: NaN where no row is valid, ±inf where a valid row is ±inf."""
    valid = args["valid"].expand_as(args["values"])
    dim = args.get("dim", -1)
    return ~valid.any(dim) | (torch.isinf(args["values"]) & valid).any(dim)


def _on_sphere(args: dict[str, Any], out: torch.Tensor) -> None:
    radius = float(args.get("radius", 1.0))
    norms = torch.linalg.vector_norm(out.double() / radius, dim=args.get("dim", -1))
    tol = 8 * torch.finfo(out.dtype).eps
    assert torch.allclose(norms, torch.ones_like(norms), atol=tol, rtol=tol), norms


def _sensitivity(g: Role) -> dict[str, Role]:
    temps = Role(
        lambda draw, w: draw(st.sampled_from((1.0, [0.5, 2.0], torch.tensor([1e-2, 10.0])))),
        lambda draw, w, good: draw(st.sampled_from(([], [0.0], [math.nan], "1", None, [[1, 2]]))),
    )
    return {"scores": SCORES, "temperatures": temps, "epsilons": temps, "mask": MASK,
            "dim": DIM3, "generator": g}  # fmt: skip


QUERIES = tensor_role(lambda draw, w: w.randn(w.h, w.q, w.d, salt=14, scale=1.0))
SEL_ALPHA = tensor_role(lambda draw, w: torch.rand(w.h, w.q, 3, generator=w.gen(15)).to(w.dtype))
POS = number(1e-3, 1e3, tensor=True)
POS_F = number(1e-3, 1e3)
LENGTH = number(1, 10**6, ints=True)
N_KEYS = Role(lambda draw, w: w.k if draw(st.booleans()) else torch.full((w.h, 1), w.k), bad_tensor)
CRIT_NS = Role(lambda draw, w: list(range(1, w.q + 1)), bad_tensor)
CRIT_SAMPLE = Role(
    lambda draw, w: draw(st.sampled_from((np.asarray, torch.as_tensor, lambda a: a.tolist())))(
        np.random.default_rng(w.seed).random((w.q, w.h + 3))
    ),
    lambda draw, w, good: bad_tensor(
        draw, w, torch.as_tensor(np.asarray(good), dtype=torch.float64)
    ),
)
WORK = (0, -1, True, 2.5, "3", None)  # bad sizes of work: no huge ones, which are just slow

SPECS: dict[str, Spec] = {
    # normalizers (the registry entries get theirs from _normaliser_spec)
    "normalizers.adaptive_beta": Spec({"entropy": ENTROPY}),
    "normalizers.adaptive_stats": Spec({"scores": SCORES, "dim": DIM3, "mask": MASK}),
    "normalizers.available": Spec({}),
    "normalizers.cosine_logits": Spec(
        {"q": QUERIES, "k": X, "scale": POS, "eps": number(1e-12, 1)}
    ),
    "normalizers.general": Spec({"scores": SCORES, "F": F, "dim": DIM3, "mask": MASK}),
    "normalizers.get": Spec({"name": fixed(*normalizers.available())}),
    "normalizers.info": Spec({"name": fixed(*normalizers.available())}),
    "normalizers.softcap_logits": Spec(
        {"scores": SCORES, "cap": POS}, lambda a, p, out: torch.isneginf(a["scores"])
    ),
    "normalizers.sums_to_one": Spec({"name": fixed(*normalizers.available())}),
    # metrics
    "metrics.attention_entropy": Spec(
        {"weights": WEIGHTS, "dim": DIM3, "mask": MASK}, _no_positive_weight
    ),
    "metrics.critical_n": Spec(
        {
            "n_values": CRIT_NS,
            "distances": CRIT_SAMPLE,
            "expectations": CRIT_SAMPLE,
            "alpha": number(1e-3, 0.5),
        }
    ),
    "metrics.distance_curve": Spec(
        {
            "attn": WEIGHTS,
            "x": X,
            "ns": NS,
            "mask": MASK,
            "bound_ns": NS,
            "forms": fixed(("derived",), ("derived", "main_text"), ("rms",)),
            "gap_forms": fixed((), ("main_text", "sharp")),
        },
        _curve_bound,
    ),
    "metrics.distance_metrics": Spec({"attn": WEIGHTS, "x": X, "n": N, "mask": MASK}, _no_bound),
    "metrics.effective_support": Spec(
        {"weights": WEIGHTS, "dim": DIM3, "mask": MASK}, _no_positive_weight
    ),
    "metrics.entropy_from_scores": Spec(
        {"scores": SCORES, "temperature": POS_F, "dim": DIM3, "mask": MASK}, _no_kept_key
    ),
    "metrics.expected_distance_curve_mc": Spec(
        {
            "attn": WEIGHTS,
            "x": X,
            "ns": NS,
            "mask": MASK,
            "samples": integer(2, 9, WORK),
            "generator": GENERATOR,
        },
        _short_rows,
    ),
    "metrics.expected_distance_exact": Spec(
        {"attn": WEIGHTS, "x": X, "n": N, "mask": MASK, "max_subsets": integer(10**4, 10**4, WORK)},
        _short_rows,
    ),
    "metrics.expected_distance_monte_carlo": Spec(
        {
            "attn": WEIGHTS,
            "x": X,
            "n": N,
            "mask": MASK,
            "samples": integer(1, 20, WORK),
            "generator": GENERATOR,
        },
        _short_rows,
    ),
    "metrics.finite_difference_sensitivity": Spec(_sensitivity(GENERATOR)),
    "metrics.jacobian_top_eigenvalue": Spec({"weights": WEIGHTS, "dim": DIM3, "mask": MASK}),
    "metrics.logit_spread": Spec({"scores": SCORES, "dim": DIM3, "mask": MASK}, _wide_spread),
    "metrics.max_weight": Spec(
        {"weights": WEIGHTS, "dim": DIM3, "mask": MASK}, _no_positive_weight
    ),
    "metrics.top_mass": Spec(
        {"weights": WEIGHTS, "ns": NS, "dim": DIM3, "mask": MASK}, _top_mass_nan
    ),
    "metrics.min_pairwise_distance": Spec({"x": X, "mask": KEY_MASK}, _few_keys),
    "metrics.min_pairwise_distances": Spec({"x": X, "mask": KEY_MASK}, _few_keys),
    "metrics.normalize_to_sphere": Spec({"x": X, "radius": POS_F, "dim": DIM3}, check=_on_sphere),
    "metrics.row_mean": Spec({"values": VALUES, "valid": VALID, "dim": DIM2}, _no_valid_row),
    "metrics.separability_curve": Spec(
        {
            "attn": WEIGHTS,
            "x": SPHERE,
            "ns": NS,
            "mask": MASK,
            "radius": fixed(None, 1.0),
            "delta": fixed(None, 0.0, 0.1),
        },
        _zero_ball,
    ),
    "metrics.separability_metrics": Spec(
        {
            "attn": WEIGHTS,
            "x": SPHERE,
            "n": N,
            "mask": MASK,
            "radius": fixed(None, 1.0),
            "delta": fixed(None, 0.0, 0.1),
        },
        _zero_ball,
    ),
    "metrics.softmax_jacobian_matrix": Spec({"weights": WEIGHTS, "temperature": POS_F}),
    "metrics.softmax_jacobian_norm": Spec(
        {"scores": SCORES, "temperature": POS_F, "dim": DIM3, "mask": MASK}
    ),
    "metrics.softmax_jacobian_norms": Spec(
        {k: v for k, v in _sensitivity(GENERATOR).items() if k not in ("epsilons", "generator")}
    ),
    "metrics.support_size": Spec(
        {"weights": WEIGHTS, "dim": DIM3, "mask": MASK, "atol": number(0, 0.5)}
    ),
    # theory
    "theory.binomial_standard_error": Spec(
        {"accuracy": number(0, 1), "n": number(1, 10**4, ints=True)}
    ),
    "theory.corollary3_bound_as_printed": Spec({"temperature": POS}),
    "theory.dispersion_bounds": Spec(
        {"length": LENGTH, "spread": number(0, 1e3, tensor=True), "temperature": POS}
    ),
    "theory.entropy_beta_derivative": Spec(
        {"logits": SCORES, "beta": number(-10, 10, tensor=True), "dim": DIM3, "mask": MASK},
        _no_kept_key,
    ),
    "theory.expected_distance": Spec(
        {"alpha": ROW_WEIGHTS, "x": X, "n": N, "mask": KEY_MASK}, _short_rows
    ),
    "theory.fixed_selection_bound": Spec(
        {
            "selected_mass": UNIT,
            "d1": NONNEG_ROWS,
            "max_selected_norm": NONNEG_ROWS,
            "n_keys": N_KEYS,
            "n": N,
        }
    ),
    "theory.full_selection_limit": Spec({"alpha": ROW_WEIGHTS}),
    "theory.heads_for_coverage": Spec({"p": number(1e-300, 1), "target": number(0, 0.999999)}),
    "theory.jensen_gap_bound": Spec(
        {"alpha": ROW_WEIGHTS, "x": X, "n": N, "mask": KEY_MASK}, _short_or_gap_inf
    ),
    "theory.large_context_limit": Spec({"alpha": ROW_WEIGHTS, "x": X, "mask": KEY_MASK}),
    "theory.lemma2_bound_as_printed": Spec(
        {
            "f_max": number(1, 10),
            "fprime_max": number(0, 10),
            "f_min": number(0.01, 1),
            "length": LENGTH,
        }
    ),
    "theory.logit_magnitude_bound": Spec({"query": VECTOR, "keys": X}),
    "theory.multihead_coverage": Spec({"p": number(0, 1, tensor=True), "heads": integer(0, 50)}),
    "theory.normalizer_jacobian": Spec({"f_values": POS_ROWS, "f_derivs": ROWS}),
    "theory.normalizer_jacobian_norm_bound": Spec(
        {
            "f_max": number(1, 10),
            "fprime_max": number(0, 10),
            "f_min": number(0.01, 1),
            "length": LENGTH,
        }
    ),
    "theory.normalizer_weight_bounds": Spec(
        {"length": LENGTH, "f_min": number(0.01, 1), "f_max": number(1, 10)}
    ),
    "theory.prob_not_selected": Spec({"n_keys": N_KEYS, "n": N}),
    "theory.projected_spread_bound": Spec(
        {"w_query": MATRIX, "w_key": MATRIX, "query": VECTOR, "items": X}
    ),
    "theory.separability_bounds": Spec(
        {
            "alpha": SEL_ALPHA,
            "r": number(1e-2, 2),
            "radius": number(0.5, 2),
            "delta": number(0, 0.5),
            "check": fixed(True, bad=(True,)),
        }
    ),
    "theory.sets_for_standard_error": Spec({"target_se": number(1e-4, 0.5), "p": number(0, 1)}),
    "theory.softmax_jacobian_norm_bound": Spec({"temperature": POS}),
    "theory.softmax_perturbation_bound": Spec(
        {"perturbation_norm": number(0, 1e3, tensor=True), "temperature": POS}
    ),
    "theory.softmax_weight_bounds": Spec(
        {"length": LENGTH, "delta": number(0, 10, tensor=True), "temperature": number(0.1, 10)}
    ),
    "theory.xi": Spec({"alpha": SEL_ALPHA, "radius": number(0.5, 2), "delta": number(0, 0.5)}),
}

#: Other words a message may use for an argument (N for n; M for the sphere's radius).
ALIASES = {"n": ("N",), "ns": ("N",), "n_values": ("N",), "radius": ("M",), "bound_ns": ("N",)}


#: Roles of the normalisers' own parameters (the others are drawn from their defaults).
NORMALISER_PARAMS: dict[str, dict[str, Role]] = {
    "as_entmax": {"alpha": number(1.05, 3), "n_iter": integer(1, 60, WORK),
                  "beta": number(0, 3, tensor=True), "gamma": number(-2, 2, tensor=True)},
    "entmax_bisect": {"alpha": number(1.05, 4), "n_iter": integer(1, 60, WORK)},
    "llama4_temperature": {"attn_scale": number(1e-3, 1e3), "floor_scale": integer(1, 10)},
    "logn_softmax": {"train_length": integer(2, 10**5)},
    "relu_attention": {"power": integer(1, 3)},
    "sigmoid": {"bias": Role(lambda draw, w: draw(st.sampled_from((None, 0.0, -2.0))),
                             number(0, 1).bad)},
    "sink_softmax": {"sink": number(-5, 5, tensor=True)},
    "softcap": {"cap": POS},
    "softmax": {"temperature": POS},
    "softpick": {"eps": number(1e-12, 1)},
    "ssmax": {"s": POS},
    "ssmax_trained": {"train_length": integer(2, 10**5)},
    "stieltjes": {"q": number(0.1, 16), "n_iter": integer(1, 60, WORK)},
    "topk_softmax": {"k": integer(1, 9)},
    "yarn_softmax": {"factor": number(1, 64)},
}  # fmt: skip


def _normaliser_spec(fn: Callable[..., Any]) -> Spec:
    extra = NORMALISER_PARAMS.get(fn.__name__, {})
    return Spec({"scores": SCORES, "dim": DIM3, "mask": MASK, **extra})


REGISTERED = {f"normalizers.{fn.__name__}": name for name, fn in normalizers.REGISTRY.items()}


def spec_of(qualname: str, fn: Callable[..., Any]) -> tuple[Spec, dict[str, Role]]:
    """The spec and a role for every parameter (``KeyError`` naming a parameter without one)."""
    spec = SPECS.get(qualname) or (_normaliser_spec(fn) if qualname in REGISTERED else None)
    if spec is None:
        raise KeyError(f"{qualname} has no argument strategy in SPECS")
    roles: dict[str, Role] = {}
    for name, param in inspect.signature(fn).parameters.items():
        role = spec.roles.get(name) or _default_role(param)
        if role is None:
            raise KeyError(f"{qualname}: no role for parameter {name!r}")
        roles[name] = role
    return spec, roles
