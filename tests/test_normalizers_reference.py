"""Each normaliser against an independent reference: torch, the entmax package, slow loops."""

from __future__ import annotations

import math

import entmax
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from attnlimits import normalizers as nz
from attnlimits.normalizers import POLY_COEFFS

# ---------------------------------------------------------------- slow references


def _threshold_projection(z: np.ndarray, power: float, scale: float) -> np.ndarray:
    """p = [scale·z - τ]_+^power with Σ p = 1, τ found by root bracketing (no sorting)."""
    zs = scale * z

    def excess(tau: float) -> float:
        return float((np.clip(zs - tau, 0, None) ** power).sum() - 1.0)

    # excess > 0 at max - 2 (the top key alone gives 2^power - 1), = -1 at max
    tau = brentq(excess, zs.max() - 2.0, zs.max(), xtol=1e-15, rtol=1e-15, maxiter=500)
    return np.clip(zs - tau, 0, None) ** power


def sparsemax_ref(z: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the simplex, one row."""
    return _threshold_projection(z, 1.0, 1.0)


def entmax15_ref(z: np.ndarray) -> np.ndarray:
    return _threshold_projection(z, 2.0, 0.5)


def adaptive_listing(logits: np.ndarray) -> np.ndarray:
    """Paper B, Figure 4, transcribed literally to numpy for one row (-inf = masked)."""

    def sm(v: np.ndarray) -> np.ndarray:
        e = np.exp(v - v.max())
        return e / e.sum()

    original_probs = sm(logits)
    entropy = np.sum(-original_probs * np.log(original_probs + 1e-9))
    beta = max(np.polyval(POLY_COEFFS, entropy), 1.0) if entropy > 0.5 else 1.0
    return sm(logits * beta)


def stieltjes_ref(v: np.ndarray, q: float) -> np.ndarray:
    """(λ - v)^{-q} with Σ = 1, λ by Brent's method on [max + 1, max + n^{1/q}], one row;
    no renormalisation (the root is solved to machine precision)."""
    top = v.max()

    def excess(lam: float) -> float:
        return float(((lam - v) ** -q).sum() - 1.0)

    lam = brentq(excess, top + 1.0, top + len(v) ** (1 / q), xtol=1e-14, rtol=1e-15, maxiter=500)
    return (lam - v) ** -q


def as_entmax_ref(v: np.ndarray, alpha: float, delta: float, beta: float, gamma: float):
    """α-entmax of (δ + β log(n + 1)^γ)·v by root bracketing, one row of n kept keys."""
    c = delta + beta * math.log(len(v) + 1) ** gamma
    return _threshold_projection(c * v, 1 / (alpha - 1), alpha - 1)


def stick_breaking_ref(l: list[float]) -> list[float]:
    sig = [1 / (1 + math.exp(-v)) for v in l]
    out = []
    for j in range(len(l)):
        a = sig[j]
        for k in range(j + 1, len(l)):
            a *= 1 - sig[k]
        out.append(a)
    return out


def _rows(x: torch.Tensor, mask: torch.Tensor):
    """(index, kept scores as float64 numpy, kept-column indices) per row of a 2-D input."""
    for i in range(x.shape[0]):
        cols = mask[i].nonzero().flatten()
        yield i, x[i, cols].double().numpy(), cols


# ---------------------------------------------------------------- softmax family


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("temperature", [0.05, 1.0, 8.0])
def test_softmax_matches_torch(dim: int, temperature: float, gen: torch.Generator) -> None:
    x = torch.randn(3, 4, 5, generator=gen)
    torch.testing.assert_close(
        nz.softmax(x, dim, temperature=temperature), torch.softmax(x / temperature, dim)
    )


@pytest.mark.parametrize("temperature", [1e-300, 1e39, 1e300])
def test_softmax_with_a_temperature_outside_float32_is_float64s(temperature: float) -> None:
    """A float32 row holding ±float32's max (their difference overflows to -inf) under a T
    beyond float32's range is float64's answer (found by the API fuzz: -inf / inf was NaN)."""
    big = torch.finfo(torch.float32).max
    x = torch.tensor([[big, -big, -1.4, 0.3, 0.0], [0.5, -0.5, -1.4, 0.0, 0.8]])
    got = nz.softmax(x, temperature=temperature)
    assert got.dtype == torch.float32 and bool(torch.isfinite(got).all())
    shifted = x.double() - x.double().amax(-1, keepdim=True)  # float64 holds the difference
    want = torch.softmax(shifted / temperature, -1).float()
    torch.testing.assert_close(got, want)


def test_softmax_mask_matches_neg_inf_fill_in_torch(gen: torch.Generator) -> None:
    x = torch.randn(6, 6, generator=gen)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    ref = torch.softmax(x.masked_fill(~causal, -math.inf), -1)
    torch.testing.assert_close(nz.softmax(x, mask=causal), ref)


def test_general_with_exp_is_softmax_and_custom_f(gen: torch.Generator) -> None:
    x = torch.randn(4, 6, generator=gen, dtype=torch.float64)
    mask = torch.rand(4, 6, generator=gen) > 0.3
    torch.testing.assert_close(nz.general(x, torch.exp, mask=mask), nz.softmax(x, mask=mask))
    f = 1 + x**2
    ref = torch.where(mask, f, 0) / torch.where(mask, f, 0).sum(-1, keepdim=True)
    torch.testing.assert_close(nz.general(x, lambda t: 1 + t**2, mask=mask), ref.nan_to_num())


@pytest.mark.parametrize("k", [1, 2, 4, 9])
def test_topk_matches_row_loop(k: int, gen: torch.Generator) -> None:
    x = torch.randn(10, 9, generator=gen, dtype=torch.float64)
    mask = torch.rand(10, 9, generator=gen) > 0.3
    out = nz.topk_softmax(x, mask=mask, k=k)
    ref = torch.zeros_like(x)
    for i, row, cols in _rows(x, mask):
        top = np.argsort(-row)[:k]
        e = np.exp(row[top] - row[top].max())
        ref[i, cols[top]] = torch.from_numpy(e / e.sum())
    torch.testing.assert_close(out, ref)
    assert ((out > 0).sum(-1) == mask.sum(-1).clamp_max(k)).all()


def test_topk_with_k_at_least_kept_is_softmax(gen: torch.Generator) -> None:
    x = torch.randn(3, 5, 7, generator=gen)
    mask = torch.rand(3, 5, 7, generator=gen) > 0.5
    torch.testing.assert_close(nz.topk_softmax(x, mask=mask, k=7), nz.softmax(x, mask=mask))
    torch.testing.assert_close(nz.topk_softmax(x, mask=mask, k=50), nz.softmax(x, mask=mask))


# ---------------------------------------------------------------- sparse family


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_sparse_match_entmax_package(dim: int, gen: torch.Generator) -> None:
    x = torch.randn(4, 6, 8, generator=gen, dtype=torch.float64) * 2
    torch.testing.assert_close(nz.sparsemax(x, dim), entmax.sparsemax(x, dim))
    torch.testing.assert_close(nz.entmax15(x, dim), entmax.entmax15(x, dim))
    for alpha in (1.1, 1.5, 2.0, 3.0):
        ours = nz.entmax_bisect(x, dim, alpha=alpha)
        torch.testing.assert_close(ours, entmax.entmax_bisect(x, alpha, dim))


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (nz.sparsemax, entmax.sparsemax),
        (nz.entmax15, entmax.entmax15),
        (lambda t: nz.entmax_bisect(t, alpha=1.3), lambda t: entmax.entmax_bisect(t, 1.3)),
    ],
)
def test_sparse_gradients_match_entmax_package(ours, theirs, gen: torch.Generator) -> None:
    x = torch.randn(5, 9, generator=gen, dtype=torch.float64) * 2
    w = torch.randn(5, 9, generator=gen, dtype=torch.float64)
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    (ours(a) * w).sum().backward()
    (theirs(b) * w).sum().backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_bisection_agrees_with_exact(gen: torch.Generator) -> None:
    x = torch.randn(6, 11, generator=gen, dtype=torch.float64) * 3
    mask = torch.rand(6, 11, generator=gen) > 0.3
    exact = nz.sparsemax(x, mask=mask)
    torch.testing.assert_close(nz.entmax_bisect(x, mask=mask, alpha=2.0), exact)
    exact = nz.entmax15(x, mask=mask)
    torch.testing.assert_close(nz.entmax_bisect(x, mask=mask, alpha=1.5), exact)
    near_softmax = nz.entmax_bisect(x, mask=mask, alpha=1.001)
    torch.testing.assert_close(near_softmax, nz.softmax(x, mask=mask), atol=5e-3, rtol=0)


@settings(max_examples=40, deadline=None)
@given(
    row=st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=12),
    keep_bits=st.integers(0, 2**12 - 1),
)
def test_sparsemax_and_entmax15_match_root_finding(row: list[float], keep_bits: int) -> None:
    x = torch.tensor([row], dtype=torch.float64)
    mask = torch.tensor([[bool(keep_bits >> j & 1) for j in range(len(row))]])
    for ours, ref in ((nz.sparsemax, sparsemax_ref), (nz.entmax15, entmax15_ref)):
        out = ours(x, mask=mask)
        expected = torch.zeros_like(x)
        for i, kept, cols in _rows(x, mask):
            if len(kept):  # an all-masked row stays 0
                expected[i, cols] = torch.from_numpy(ref(kept))
        torch.testing.assert_close(out, expected, atol=1e-9, rtol=1e-9)


def test_sparsemax_is_sparse_and_projection(gen: torch.Generator) -> None:
    x = torch.tensor([[3.0, 1.0, 0.5, -2.0], [0.1, 0.0, 0.0, 0.1]], dtype=torch.float64)
    out = nz.sparsemax(x)
    torch.testing.assert_close(out[0], torch.tensor([1.0, 0, 0, 0], dtype=torch.float64))
    torch.testing.assert_close(out[1], torch.full((4,), 0.25, dtype=torch.float64) + x[1] - 0.05)


# ---------------------------------------------------------------- length-aware softmaxes


@pytest.mark.parametrize("s", [0.43, 1.0])
def test_ssmax_matches_row_loop_under_causal_mask(s: float, gen: torch.Generator) -> None:
    L = 9
    x = torch.randn(2, L, L, generator=gen, dtype=torch.float64)
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    out = nz.ssmax(x, mask=causal, s=s)
    ref = torch.zeros_like(x)
    for b in range(2):
        for i in range(L):
            n = i + 1  # kept keys under a causal mask
            ref[b, i, :n] = torch.softmax(s * math.log(n) * x[b, i, :n], -1)
    torch.testing.assert_close(out, ref)
    assert (out[:, 0, 0] == 1).all()


def test_ssmax_takes_a_per_key_s_of_another_dtype(gen: torch.Generator) -> None:
    """Found by the API fuzz (2026-11-28): a float32 tensor s beside float64 scores raised
    torch's "cannot be converted ... without overflow" (the clamp to float64's maximum); it is
    taken in the scores' dtype, as a float64 s would be."""
    x = torch.randn(1, 1, 2, generator=gen, dtype=torch.float64)
    s32 = torch.tensor([1.0, 2.0])
    torch.testing.assert_close(nz.ssmax(x, s=s32), nz.ssmax(x, s=s32.double()))


def test_ssmax_sharpens_with_length(gen: torch.Generator) -> None:
    """The point of SSMax: the top weight of a fixed logit gap does not vanish as n grows."""
    tops = []
    for n in (16, 256, 4096):
        x = torch.zeros(1, n, dtype=torch.float64)
        x[0, 0] = 4.0
        tops.append((nz.ssmax(x, s=1.0)[0, 0].item(), nz.softmax(x)[0, 0].item()))
    assert tops[-1][0] > tops[0][0] > 0.9  # ssmax: n^{s·4} / (n^{s·4} + n - 1) grows
    assert tops[-1][1] < 0.02  # softmax disperses


@pytest.mark.parametrize("use_mask", [False, True])
def test_adaptive_matches_listing(use_mask: bool, gen: torch.Generator) -> None:
    x = (
        torch.randn(12, 16, generator=gen, dtype=torch.float64)
        * torch.linspace(0.1, 12, 12)[:, None]
    )
    mask = torch.rand(12, 16, generator=gen) > 0.3 if use_mask else torch.ones(12, 16).bool()
    out = nz.adaptive_softmax(x, mask=mask)
    masked = x.masked_fill(~mask, -math.inf).numpy()
    ref = np.stack([adaptive_listing(r) for r in masked])
    torch.testing.assert_close(out, torch.from_numpy(ref))
    entropy, beta = nz.adaptive_stats(x, mask=mask)
    assert entropy.shape == beta.shape == (12,)
    assert (beta >= 1).all() and (beta > 1).any() and (beta == 1).any()


def test_adaptive_stats_match_listing_and_empty_rows(gen: torch.Generator) -> None:
    x = torch.randn(3, 20, generator=gen, dtype=torch.float64) * 0.3
    mask = torch.ones(3, 20, dtype=torch.bool)
    mask[2] = False
    entropy, beta = nz.adaptive_stats(x, mask=mask)
    p = torch.softmax(x[0], -1)
    h = -(p * torch.log(p + 1e-9)).sum()
    torch.testing.assert_close(entropy[0], h)
    torch.testing.assert_close(beta[0].item(), float(np.polyval(POLY_COEFFS, h.item())))
    assert entropy[2] == 0 and beta[2] == 1


def test_adaptive_gradient_through_beta_is_optional(gen: torch.Generator) -> None:
    x = (torch.randn(4, 16, generator=gen, dtype=torch.float64) * 0.5).requires_grad_()
    w = torch.randn(4, 16, generator=gen, dtype=torch.float64)
    # literal torch transcription, gradient through β as in the (stop_gradient-free) listing
    p = torch.softmax(x, -1)
    h = -(p * torch.log(p + 1e-9)).sum(-1, keepdim=True)
    beta = torch.where(h > 0.5, nz.adaptive_beta(h).clamp_min(1.0), torch.ones_like(h))
    assert (beta > 1).all()
    (g_full,) = torch.autograd.grad((torch.softmax(beta * x, -1) * w).sum(), x)
    (g_const,) = torch.autograd.grad((torch.softmax(beta.detach() * x, -1) * w).sum(), x)
    (ours,) = torch.autograd.grad((nz.adaptive_softmax(x) * w).sum(), x)
    (ours_detached,) = torch.autograd.grad((nz.adaptive_softmax(x, detach_beta=True) * w).sum(), x)
    torch.testing.assert_close(ours, g_full)
    torch.testing.assert_close(ours_detached, g_const)
    assert not torch.allclose(g_full, g_const)


# ---------------------------------------------------------------- self-adjust


def test_ssa_forms_match_row_loop(gen: torch.Generator) -> None:
    x = torch.randn(8, 7, generator=gen, dtype=torch.float64) * 2
    x[1] = x[1].abs() + 0.5  # all positive: factor z / z_max
    x[2] = -x[2].abs() - 0.5  # all negative: the minimum gets 0
    mask = torch.rand(8, 7, generator=gen) > 0.25
    plain = nz.ssa(x, mask=mask)
    normed = nz.ssa_normalized(x, mask=mask)
    ref_plain, ref_normed = torch.zeros_like(x), torch.zeros_like(x)
    for i, z, cols in _rows(x, mask):
        if len(z) == 0:
            continue
        sm = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        lo, hi = min(z.min(), 0.0), max(0.0, z.max())
        ref_plain[i, cols] = torch.from_numpy(z * sm)
        ref_normed[i, cols] = torch.from_numpy((z - lo) / (hi - lo) * sm)
    torch.testing.assert_close(plain, ref_plain)
    torch.testing.assert_close(normed, ref_normed)


def test_ssa_normalized_degenerate_rows() -> None:
    x = torch.tensor([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0], [-1.0, -1.0, -1.0]], dtype=torch.float64)
    out = nz.ssa_normalized(x)
    assert (out[0] == 0).all()  # all-zero row: 0/0, the authors' eps-limit gives 0
    torch.testing.assert_close(out[1], torch.full((3,), 1 / 3, dtype=torch.float64))
    assert (out[2] == 0).all()  # every score is the (negative) minimum


# ---------------------------------------------------------------- unnormalised


def test_sigmoid_matches_formula(gen: torch.Generator) -> None:
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)
    mask = torch.rand(6, 8, generator=gen) > 0.3
    out = nz.sigmoid(x, mask=mask)
    ref = torch.zeros_like(x)
    for i, z, cols in _rows(x, mask):
        ref[i, cols] = torch.from_numpy(1 / (1 + np.exp(-(z - math.log(max(len(z), 1))))))
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(nz.sigmoid(x, bias=0.5), torch.sigmoid(x + 0.5))
    torch.testing.assert_close(  # l = 0: each weight 1/(n+1), sum n/(n+1)
        nz.sigmoid(torch.zeros(1, 8)).sum(), torch.tensor(8 / 9)
    )


def test_stick_breaking_matches_double_loop(gen: torch.Generator) -> None:
    x = torch.randn(2, 6, 6, generator=gen, dtype=torch.float64) * 2
    mask = torch.ones(6, 6, dtype=torch.bool).tril(-1)  # the paper's j < i
    out = nz.stick_breaking(x, mask=mask)
    ref = torch.zeros_like(x)
    for b in range(2):
        for i in range(6):
            ref[b, i, :i] = torch.tensor(stick_breaking_ref(x[b, i, :i].tolist()))
    torch.testing.assert_close(out, ref)
    rest = (1 - torch.sigmoid(x)).masked_fill(~mask, 1.0).prod(-1)
    torch.testing.assert_close(out.sum(-1), (1 - rest).masked_fill(~mask.any(-1), 0.0))


def test_stick_breaking_recency(gen: torch.Generator) -> None:
    """Equal logits: the most recent kept key gets the largest share."""
    out = nz.stick_breaking(torch.zeros(1, 5), mask=torch.tensor([[1, 1, 0, 1, 0]]).bool())
    torch.testing.assert_close(out, torch.tensor([[0.125, 0.25, 0.0, 0.5, 0.0]]))


# ---------------------------------------------------------------- sinks, softpick, ReLU, scalings


def _row_loop(x: torch.Tensor, mask: torch.Tensor, row_fn) -> torch.Tensor:
    """The naive reference: ``row_fn`` on each row's kept scores (float64), zeros elsewhere."""
    ref = torch.zeros_like(x)
    for i, kept, cols in _rows(x, mask):
        if len(kept):
            ref[i, cols] = torch.from_numpy(np.asarray(row_fn(kept), dtype=np.float64))
    return ref


def _exp_rows(c_of_n):
    """softmax(c(n)·l) for one row, n its kept keys."""

    def row(v: np.ndarray) -> np.ndarray:
        z = c_of_n(len(v)) * v
        e = np.exp(z - z.max())
        return e / e.sum()

    return row


REFERENCES = {
    "softmax1": (nz.softmax1, {}, lambda v: np.exp(v) / (1 + np.exp(v).sum())),
    "sink_softmax": (nz.sink_softmax, {"sink": 1.5},
                     lambda v: np.exp(v) / (np.exp(1.5) + np.exp(v).sum())),
    "softpick": (nz.softpick, {"eps": 1e-3}, lambda v: np.maximum(np.exp(v - v.max())
                 - np.exp(-v.max()), 0) / (np.abs(np.exp(v - v.max()) - np.exp(-v.max())).sum()
                 + 1e-3)),
    "softcap": (nz.softcap, {"cap": 2.0}, lambda v: _exp_rows(lambda n: 1.0)(2 * np.tanh(v / 2))),
    "relu": (nz.relu_attention, {}, lambda v: np.maximum(v, 0) / len(v)),
    "relu2": (nz.relu2_attention, {}, lambda v: np.maximum(v, 0) ** 2 / len(v)),
    "logn": (nz.logn_softmax, {"train_length": 4},
             _exp_rows(lambda n: max(1.0, math.log(n) / math.log(4)))),
    "yarn": (nz.yarn_softmax, {"factor": 8.0}, _exp_rows(lambda n: (0.1 * math.log(8) + 1) ** 2)),
    "llama4_temperature": (nz.llama4_temperature, {"attn_scale": 0.3, "floor_scale": 3},
                           _exp_rows(lambda n: 1 + 0.3 * math.log(n // 3 + 1))),
    "ssmax_trained": (nz.ssmax_trained, {"train_length": 4},
                      _exp_rows(lambda n: math.log(n) / math.log(4))),
    "as_entmax": (nz.as_entmax, {"alpha": 1.7, "delta": 0.5, "beta": 2.0, "gamma": -0.5},
                  lambda v: as_entmax_ref(v, 1.7, 0.5, 2.0, -0.5)),
    "stieltjes": (nz.stieltjes, {"q": 2.5}, lambda v: stieltjes_ref(v, 2.5)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_new_normalizers_match_row_loops(name: str, gen: torch.Generator) -> None:
    fn, params, row = REFERENCES[name]
    assert nz.get(name) is fn
    x = torch.randn(12, 11, generator=gen, dtype=torch.float64) * 2
    mask = torch.rand(12, 11, generator=gen) > 0.3
    mask[0] = False
    torch.testing.assert_close(fn(x, mask=mask, **params), _row_loop(x, mask, row))


def test_sinks_take_mass_and_softpick_zeroes_negative_logits() -> None:
    x = torch.tensor([[-30.0, -30.0], [30.0, -1.0]], dtype=torch.float64)
    s1 = nz.softmax1(x)
    assert s1[0].sum() < 1e-12 and s1[1, 0] == pytest.approx(1.0)  # can attend to nothing
    per_head = nz.sink_softmax(torch.zeros(2, 1, 3), sink=torch.tensor([[[0.0]], [[-50.0]]]))
    torch.testing.assert_close(per_head.sum(-1).flatten(), torch.tensor([0.75, 1.0]))
    sp = nz.softpick(torch.tensor([[2.0, 0.0, -1.0, 1.0]]))
    assert (sp[0, 1:3] == 0).all() and sp.sum() < 1


def test_length_scalings_leave_short_rows_alone_and_sharpen_long_ones(gen: torch.Generator) -> None:
    L = 40
    x = torch.randn(L, L, generator=gen, dtype=torch.float64)
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    plain = nz.softmax(x, mask=causal)
    logn = nz.logn_softmax(x, mask=causal, train_length=16)
    llama = nz.llama4_temperature(x, mask=causal, floor_scale=16)
    torch.testing.assert_close(logn[:16], plain[:16])  # n ≤ 16: c = 1
    torch.testing.assert_close(llama[:15], plain[:15])
    h = lambda p: -(p * p.clamp_min(1e-300).log()).sum(-1)  # noqa: E731
    assert (h(logn[20:]) < h(plain[20:])).all() and (h(llama[20:]) < h(plain[20:])).all()
    capped = nz.softcap_logits(torch.tensor([-math.inf, 0.0, 1e6]), cap=5.0)
    assert capped[0] == -math.inf and capped[2] == pytest.approx(5.0)


def test_ssmax_trained_is_ssmax_and_softmax_at_the_training_length(gen: torch.Generator) -> None:
    L, train = 24, 16
    x = torch.randn(2, L, L, generator=gen, dtype=torch.float64) * 2
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    out = nz.ssmax_trained(x, mask=causal, train_length=train)
    torch.testing.assert_close(out, nz.ssmax(x, mask=causal, s=1 / math.log(train)))
    plain = nz.softmax(x, mask=causal)
    torch.testing.assert_close(out[:, train - 1], plain[:, train - 1])  # n = 16 keys: c = 1
    h = lambda p: -(p * p.clamp_min(1e-300).log()).sum(-1)  # noqa: E731
    assert (h(out[:, 1 : train - 1]) > h(plain[:, 1 : train - 1])).all()  # softer before
    assert (h(out[:, train:]) < h(plain[:, train:])).all()  # sharper beyond
    c = nz.length_scaling.LENGTH_SCALES["ssmax_trained"](torch.tensor([1.0, 16.0, 256.0]), 16)
    torch.testing.assert_close(c, torch.tensor([0.0, 1.0, 2.0]))


# ---------------------------------------------------------------- ASEntmax, Stieltjes, cosine


def test_as_entmax_per_head_tensors_and_gradient_to_beta(gen: torch.Generator) -> None:
    x = torch.randn(2, 5, 7, generator=gen, dtype=torch.float64) * 2
    causal = torch.ones(5, 7, dtype=torch.bool).tril(2)
    beta = torch.tensor([[[0.0]], [[1.5]]], dtype=torch.float64, requires_grad=True)
    out = nz.as_entmax(x, mask=causal, beta=beta, gamma=2.0)
    torch.testing.assert_close(out[0], nz.entmax_bisect(x[0], mask=causal))  # β = 0, δ = 1
    torch.testing.assert_close(out[1], nz.as_entmax(x[1], mask=causal, beta=1.5, gamma=2.0))
    (out * torch.randn(out.shape, generator=gen, dtype=out.dtype)).sum().backward()
    assert beta.grad is not None and torch.isfinite(beta.grad).all() and beta.grad[1] != 0
    assert (out == 0).any() and (out[causal.expand_as(out)] == 0).any()  # sparse at kept keys


@pytest.mark.parametrize("q", [0.3, 1.0, 4.0, 16.0])
def test_stieltjes_matches_root_finding_and_is_stationary(q: float, gen: torch.Generator) -> None:
    x = torch.randn(10, 9, generator=gen, dtype=torch.float64) * 3
    mask = torch.rand(10, 9, generator=gen) > 0.3
    mask[0] = False
    out = nz.stieltjes(x, mask=mask, q=q)
    torch.testing.assert_close(out, _row_loop(x, mask, lambda v: stieltjes_ref(v, q)))
    # the maximiser of p·l + q/(q-1) Σ p^{1-1/q} (Σ log p at q = 1): l + p^{-1/q} = λ on the keys
    lam = torch.where(mask, x + out.clamp_min(1e-300) ** (-1 / q), math.nan)
    rows = mask.any(-1)
    spread = lam.nan_to_num(0).amax(-1) - torch.where(mask, lam, math.inf).amin(-1)
    assert (spread[rows] < 1e-8 * lam.nan_to_num(0).abs().amax(-1)[rows].clamp_min(1)).all()


def test_stieltjes_uniform_rows_long_rows_and_float32(gen: torch.Generator) -> None:
    torch.testing.assert_close(nz.stieltjes(torch.zeros(1, 5)), torch.full((1, 5), 0.2))
    x = torch.randn(2, 5000, generator=gen, dtype=torch.float64) * 4
    ref = nz.stieltjes(x, q=0.5)
    torch.testing.assert_close(ref[0].numpy(), stieltjes_ref(x[0].numpy(), 0.5))
    torch.testing.assert_close(nz.stieltjes(x.float(), q=0.5), ref.float(), rtol=1e-4, atol=1e-7)
    # q = 1, logits (3, 0): 1/μ + 1/(μ + 3) = 1 with μ = λ - 3, so μ = (√13 - 1)/2, p_top = 1/μ
    top = nz.stieltjes(torch.tensor([[3.0, 0.0]], dtype=torch.float64), q=1.0)[0, 0]
    assert top.item() == pytest.approx((math.sqrt(13) + 1) / 6, rel=1e-12)


def test_cosine_logits_match_loop_and_compose_with_softmax(gen: torch.Generator) -> None:
    q = torch.randn(2, 3, 4, 5, generator=gen, dtype=torch.float64)
    k = torch.randn(2, 1, 6, 5, generator=gen, dtype=torch.float64)  # one key head, broadcast
    k[0, 0, 2] = 0.0  # a zero key: logits 0
    scale = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64).view(3, 1, 1)  # per head
    out = nz.cosine_logits(q, k, scale=scale)
    assert out.shape == (2, 3, 4, 6)
    ref = torch.zeros_like(out)
    for b, h, i, j in np.ndindex(*out.shape):
        qi, kj = q[b, h, i].numpy(), k[b, 0, j].numpy()
        norms = max(np.linalg.norm(qi), 1e-12) * max(np.linalg.norm(kj), 1e-12)
        ref[b, h, i, j] = scale[h, 0, 0].item() * float(qi @ kj) / norms
    torch.testing.assert_close(out, ref)
    assert (out[0, :, :, 2] == 0).all() and (out.abs() <= scale + 1e-12).all()
    causal = torch.ones(4, 6, dtype=torch.bool).tril(2)
    swin = torch.softmax(ref.masked_fill(~causal, -math.inf), -1)  # Swin V2 Eq. 2 with B = 0
    torch.testing.assert_close(nz.softmax(nz.cosine_logits(q, k, scale=scale), mask=causal), swin)


@pytest.mark.parametrize(
    ("q", "k", "params", "match"),
    [
        (torch.zeros(2, 3), torch.zeros(2, 4), {}, "share d"),
        (torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64), {}, "dtype"),
        (torch.zeros(2, 2, 3), torch.zeros(3, 2, 3), {}, "broadcast"),
        (torch.full((2, 3), math.nan), torch.zeros(2, 3), {}, "NaN"),
        (torch.zeros(2, 3), torch.zeros(2, 3), {"scale": 0.0}, "scale"),
        (torch.zeros(2, 3), torch.zeros(2, 3), {"eps": -1.0}, "eps"),
        (torch.zeros(3), torch.zeros(3), {}, "share d"),
    ],
)
def test_cosine_logits_errors(q, k, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        nz.cosine_logits(q, k, **params)
