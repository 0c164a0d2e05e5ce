"""Argument strategies for the API fuzz (tests/test_api_fuzz.py): a shared *world* (heads,
queries, keys, d, dtype, value scale) and one *role* per kind of argument; and the
normalisers' contract, checked by both fuzzes (tests/test_fuzz.py too).

A role draws a good value from the world (so that the arguments of one call fit together:
``attn [H, Q, K]``, ``x [H, K, d]``, ``mask [H, Q, K]``) and a bad one, the kind a careless
caller passes: another container (list, numpy), dtype (int, half) or device (meta), a wrong
shape (empty key axis, 1-D, one key or head too many), NaN or ±inf, extreme magnitudes,
out-of-range numbers, strings and ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from attnlimits import normalizers

DrawFn = Callable[..., Any]
DTYPES = (torch.float32, torch.float32, torch.float64, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class World:
    """Sizes, dtype and value scale shared by the arguments of one call."""

    h: int
    q: int
    k: int
    d: int
    dtype: torch.dtype
    seed: int
    scale: float  # logits and vectors are N(0, 1) times this
    extreme: bool  # logits also hold ±(dtype max) and -inf
    mask_p: float  # fraction of masked entries (rows may end up all masked)

    def gen(self, salt: int) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed * 7919 + salt)

    @property
    def big(self) -> float:
        return float(torch.finfo(self.dtype).max)

    def randn(self, *shape: int, salt: int, scale: float | None = None) -> torch.Tensor:
        s = self.scale if scale is None else scale
        t = torch.randn(*shape, generator=self.gen(salt), dtype=torch.float64) * s
        return t.clamp(-self.big / 4, self.big / 4).to(self.dtype)


@st.composite
def worlds(draw: DrawFn) -> World:
    return World(
        h=draw(st.integers(1, 3)),
        q=draw(st.integers(1, 4)),
        k=draw(st.integers(2, 7)),
        d=draw(st.integers(1, 4)),
        dtype=draw(st.sampled_from(DTYPES)),
        seed=draw(st.integers(0, 2**16)),
        scale=draw(st.sampled_from((1.0, 1.0, 1e-3, 30.0, 1e4))),
        extreme=draw(st.booleans()),
        mask_p=draw(st.sampled_from((0.0, 0.0, 0.3, 0.7))),
    )


@dataclass(frozen=True)
class Role:
    """How to draw one argument: ``good(draw, world)`` and the ``bad`` values to try instead."""

    good: Callable[[DrawFn, World], Any]
    bad: Callable[[DrawFn, World, Any], Any]
    tags: frozenset[str] = field(default_factory=frozenset)


# ------------------------------------------------------------------ bad values by kind

BAD_NUMBERS: tuple[Any, ...] = (
    0.0, -1.0, math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-300, 5e-324, 10**400, True,
    "1.0", None, [1.0], np.float64(math.nan), torch.tensor(math.nan), torch.tensor([1.0, 2.0]),
)  # fmt: skip
BAD_INTS: tuple[Any, ...] = (0, -1, -(10**18), True, 2.5, "3", None, math.nan, [2], 10**30)


def _bad_from(values: Sequence[Any]) -> Callable[[DrawFn, World, Any], Any]:
    return lambda draw, w, good: draw(st.sampled_from(values))


def _with_one(t: torch.Tensor, value: float) -> torch.Tensor:
    t = t.clone()
    if t.numel():
        t.view(-1)[t.numel() // 2] = value
    return t


def bad_tensor(draw: DrawFn, w: World, good: Any) -> Any:
    """A careless replacement for the tensor ``good``."""
    if good is None:  # an optional mask left out: abuse a full one
        good = _keep(w)
    t = good if isinstance(good, torch.Tensor) else torch.as_tensor(good)
    floating = t.is_floating_point()
    as_float = t.float() if t.dtype == torch.bfloat16 else t
    options: list[Callable[[], Any]] = [
        lambda: as_float.tolist(),
        lambda: as_float.numpy(),
        lambda: t.to("meta"),
        lambda: t[..., :0] if t.ndim else t.reshape(1)[:0],
        lambda: t.reshape(-1),
        lambda: t.reshape(-1)[0] if t.numel() else torch.tensor(0.5),
        lambda: torch.cat([t, t[..., -1:]], -1) if t.ndim else t,  # one key too many
        lambda: torch.cat([t, t[:1]], 0) if t.ndim else t,  # one head too many
        lambda: None,
        lambda: "tensor",
        lambda: t.mT.contiguous().mT if t.ndim >= 2 else t,  # same values, not contiguous
    ]
    if floating:
        options += [
            lambda: t.to(torch.int64),
            lambda: _with_one(t, math.nan),
            lambda: _with_one(t, math.inf),
            lambda: _with_one(t, -math.inf),
            lambda: _with_one(t, w.big),
            lambda: _with_one(t, -w.big),
            lambda: t.to(draw(st.sampled_from((torch.float16, torch.bfloat16, torch.float64)))),
        ]
    else:
        options += [lambda: t.float(), lambda: t.to(torch.uint8)]
    return draw(st.sampled_from(options))()


# ------------------------------------------------------------------ tensors


def _softmax_rows(w: World, scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    z = scores.double().masked_fill(~keep, -math.inf)
    p = torch.softmax(z, -1).nan_to_num(0.0)
    return p.to(w.dtype)


def _keep(w: World, salt: int = 1) -> torch.Tensor:
    return torch.rand(w.h, w.q, w.k, generator=w.gen(salt)) >= w.mask_p


def scores_good(draw: DrawFn, w: World) -> torch.Tensor:
    t = w.randn(w.h, w.q, w.k, salt=0)
    if w.extreme:
        idx = torch.randint(0, t.numel(), (max(1, t.numel() // 3),), generator=w.gen(2))
        vals = torch.tensor([w.big, -w.big, -math.inf, 0.0], dtype=torch.float64)
        pick = torch.randint(0, 4, idx.shape, generator=w.gen(3))
        t.view(-1)[idx] = vals[pick].to(w.dtype)
    return t


def weights_good(draw: DrawFn, w: World) -> torch.Tensor:
    """Rows summing to one over the kept keys of :func:`mask_good` (0 elsewhere)."""
    return _softmax_rows(w, w.randn(w.h, w.q, w.k, salt=0).double().clamp(-50, 50), _keep(w))


def mask_good(draw: DrawFn, w: World) -> torch.Tensor | None:
    form = draw(st.sampled_from(("none", "full", "full", "broadcast")))
    if form == "none":
        return None
    keep = _keep(w)
    return keep[:1] if form == "broadcast" else keep


def key_mask_good(draw: DrawFn, w: World) -> torch.Tensor | None:
    return None if draw(st.booleans()) else _keep(w)[:, 0, :]


def x_good(draw: DrawFn, w: World) -> torch.Tensor:
    return w.randn(w.h, w.k, w.d, salt=4, scale=draw(st.sampled_from((1.0, 1e-3, 1e3))))


def sphere_good(draw: DrawFn, w: World) -> torch.Tensor:
    """Unit vectors, in float32 for half worlds (rounded to half they miss rtol = 1e-3)."""
    x = w.randn(w.h, w.k, w.d, salt=4, scale=1.0).double() + 1e-3
    dtype = torch.float32 if w.dtype in (torch.float16, torch.bfloat16) else w.dtype
    return (x / x.norm(dim=-1, keepdim=True)).to(dtype)


def tensor_role(
    make: Callable[[DrawFn, World], Any], *tags: str, bad: Callable[..., Any] = bad_tensor
) -> Role:
    return Role(make, bad, frozenset(tags))


SCORES = tensor_role(scores_good, "scores")
WEIGHTS = tensor_role(weights_good, "weights")
MASK = Role(mask_good, bad_tensor, frozenset({"mask"}))
KEY_MASK = Role(key_mask_good, bad_tensor, frozenset({"mask"}))
X = tensor_role(x_good)
SPHERE = tensor_role(sphere_good)
ROW_WEIGHTS = tensor_role(lambda draw, w: weights_good(draw, w)[..., 0, :])  # [H, K]
ENTROPY = tensor_role(lambda draw, w: torch.rand(w.h, w.q, generator=w.gen(5)).to(w.dtype) * 2)
POS_ROWS = tensor_role(lambda draw, w: torch.rand(w.h, w.k, generator=w.gen(6)).to(w.dtype) + 0.5)
ROWS = tensor_role(lambda draw, w: w.randn(w.h, w.k, salt=7))
VECTOR = tensor_role(lambda draw, w: w.randn(w.h, w.d, salt=8))
MATRIX = tensor_role(lambda draw, w: w.randn(w.h, 3, w.d, salt=9, scale=1.0))
UNIT = tensor_role(lambda draw, w: torch.rand(w.h, w.q, generator=w.gen(10)).to(w.dtype))
NONNEG_ROWS = tensor_role(lambda draw, w: torch.rand(w.h, w.q, generator=w.gen(11)).to(w.dtype))
VALUES = tensor_role(lambda draw, w: w.randn(w.h, w.q, salt=12))
VALID = tensor_role(lambda draw, w: torch.rand(w.h, w.q, generator=w.gen(13)) > 0.3)


# ------------------------------------------------------------------ numbers and the rest


def number(lo: float, hi: float, *, tensor: bool = False, ints: bool = False) -> Role:
    """A real number in [lo, hi] (sometimes a 0-d tensor where ``tensor``)."""

    def good(draw: DrawFn, w: World) -> Any:
        if ints:
            v: Any = draw(st.integers(int(lo), int(hi)))
        else:
            v = draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))
        if tensor and draw(st.booleans()):
            return torch.tensor(float(v), dtype=torch.float64)
        return v

    return Role(good, _bad_from(BAD_NUMBERS))


def integer(lo: int, hi: int | Callable[[World], int], bad: Sequence[Any] = BAD_INTS) -> Role:
    def good(draw: DrawFn, w: World) -> int:
        top = hi(w) if callable(hi) else hi
        return int(draw(st.integers(lo, max(lo, top))))

    return Role(good, _bad_from(bad))


def fixed(*values: Any, bad: Sequence[Any] = (None, "bogus", 3, ["x"])) -> Role:
    return Role(lambda draw, w: draw(st.sampled_from(values)), _bad_from(bad))


N = integer(1, lambda w: w.k - 1, bad=(*BAD_INTS, 10**6))


def ns_good(draw: DrawFn, w: World) -> list[int]:
    return draw(st.lists(st.integers(1, w.k - 1), min_size=1, max_size=3))


NS = Role(ns_good, _bad_from(([], [0], [10**6], [1.5], "12", None, 3, [True], [[1]])))
GENERATOR = Role(
    lambda draw, w: None if draw(st.booleans()) else torch.Generator().manual_seed(w.seed),
    _bad_from((5, "seed", [1])),
)
BOOL = Role(lambda draw, w: draw(st.booleans()), _bad_from((True, False)))


def f_good(draw: DrawFn, w: World) -> Callable[[torch.Tensor], torch.Tensor]:
    return draw(st.sampled_from((lambda t: torch.sigmoid(t) + 0.5, lambda t: 2.0 + torch.tanh(t))))


F = Role(
    f_good,
    _bad_from((5, "exp", None, lambda t: t[..., :1], lambda t: -(t.abs()) - 1.0, lambda t: 5.0)),
)


def assert_normaliser_contract(
    name: str, scores: torch.Tensor, mask: Any, out: Any, dim: int = -1
) -> None:
    """What the registry promises for ``normalizers.get(name)(scores, dim, mask=mask)``:
    shape, dtype and device kept, finite, masked (and ``-inf``) entries exactly 0 (so
    all-masked rows are zeros), rows summing as ``INFO`` says, non-negative where promised."""
    assert isinstance(out, torch.Tensor) and out.shape == scores.shape, name
    assert out.dtype == scores.dtype and out.device == scores.device, name
    if out.is_meta:
        return
    keep = ~torch.isneginf(scores)
    if mask is not None:
        keep = keep & mask
    keep = keep.expand(scores.shape).movedim(dim, -1)
    o = out.movedim(dim, -1).double()
    assert torch.isfinite(o).all(), (name, scores, out)
    assert (o[~keep] == 0).all(), (name, "masked entries not 0")
    info = normalizers.info(name)
    tol = 4 * scores.shape[dim] * torch.finfo(scores.dtype).eps + 1e-12
    sums, rows = o.sum(-1), keep.any(-1)
    if info.row_sum == "one":
        assert torch.allclose(sums[rows], torch.ones_like(sums[rows]), atol=tol), (name, sums)
    elif info.row_sum == "at_most_one":
        assert (sums <= 1 + tol).all(), (name, sums)
    if info.nonnegative:
        assert (o >= 0).all(), (name, o)
