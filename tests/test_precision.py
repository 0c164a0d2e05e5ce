"""Models in their own precision (issue 54): ``--dtype``, ``auto``'s choice, the estimate's
bytes per weight, run.json, and how far a bfloat16 model's statistics may move from float32's.

The bound. The capture hands over maps computed in float32 from the layer's own q and k, so a
bfloat16 model differs from its float32 self only through its logits: with δ the largest
|Δs| over a run's scaled logits, every weight of a row satisfies p'/p ∈ [e^{-2δ}, e^{2δ}]
(softmax's ratio bound), so with r = e^{2δ} − 1:

- a mass or a maximum of weights (max weight, sink mass, previous-token and local mass,
  induction) moves by at most r;
- the entropy by at most r·H + 2δ ≤ r·log L + 2δ (H' = −Σ p'(log p + log p/p')), the
  normalised entropy by its log-key-count share of that, exp(H)/n (support fraction) by
  e^{r·log L + 2δ} − 1, β(H) by β's oscillation over that width;
- the spread max − min of the logits by 2δ; ‖diag(p) − ppᵀ‖₂ by 3r;
- a slope over log L (two lengths, log 2 apart) by twice its y's bound over log 2 (log max
  weight moves by 2δ).

δ itself is measured on the run's own inputs (both models captured), and checked against
what bfloat16's rounding allows (relative 2⁻⁸ per rounding, a few dozen roundings deep).
The grid statistics (critical N, the head's kind) are steps, so they are held to agree on
most heads; N_s/N, a count that the rounded values move too, within a tenth of its range.
On this model the derived bounds are 16 (the spread) to 2,000 (the masses) times what moves
(δ ≈ 0.015: the entropy moves by 3e-4 where 0.19 is allowed): they catch a map or a statistic
gone wrong, not a float32 one computed in half precision, which
test_capture_hands_over_float32_and_leaves_the_forward_alone checks.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from attnlimits.capture import capture, load_model
from attnlimits.capture.precision import check_dtype, upcast
from attnlimits.cli import app
from attnlimits.corpus import load_text, spread_windows
from attnlimits.experiments import _precision, budget, skeleton
from attnlimits.experiments.compare.config import Config as CompareConfig
from attnlimits.experiments.limitations.config import Config as LimitationsConfig
from attnlimits.experiments.long_context.config import Config as LongContextConfig
from attnlimits.experiments.scan import EXPERIMENT
from attnlimits.experiments.scan.compute import induction_ids
from attnlimits.experiments.scan.config import Config
from attnlimits.experiments.scan.cost import estimate
from attnlimits.normalizers.adaptive import adaptive_beta
from tiny_models import tiny_model_dir

CONFIGS = (Config, LimitationsConfig, CompareConfig, LongContextConfig)
#: The commands that load a pretrained model (clrs-text fine-tunes one: float32 only).
COMMANDS = (
    ["scan", "smollm2-135m"],
    ["compare"],
    ["reproduce", "limitations"],
    ["demo", "long-context"],
)
#: Masses and maxima of a row's weights: each moves by at most r = e^{2δ} − 1.
MASSES = ("max_weight", "sink_mass", "prev_token", "local_mass", "induction", "prev_token_repeated")


@pytest.fixture(scope="module")
def text(book_path):
    return load_text(book_path)


@pytest.fixture(scope="module")
def sharp_llama(tmp_path_factory, text):
    """A tiny Llama whose q and k are scaled up so its logits spread over several units (a
    random one's attention is nearly uniform: no statistic would move)."""
    from transformers import LlamaForCausalLM

    folder = tiny_model_dir(tmp_path_factory.mktemp("prec"), "llama", text[:100_000])
    model = LlamaForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(5.0)
            layer.self_attn.k_proj.weight.mul_(5.0)
    model.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("config", CONFIGS)
def test_every_config_takes_the_four_names_and_refuses_others(config):
    for name in ("auto", "float32", "bfloat16", "float16"):
        assert config(dtype=name).dtype == name
    for bad in ("bf16", "float64", "", None, 16):
        with pytest.raises(ValueError, match="dtype must be one of auto, float32"):
            config(dtype=bad)
    assert check_dtype("float16") == "float16"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_dtype_is_one_line_and_exit_2(command, tmp_path):
    result = CliRunner().invoke(app, [*command, "--dtype", "bf16", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == ["error: --dtype must be one of auto, float32, bfloat16, float16, got 'bf16'"]
    assert not (tmp_path / "o").exists()


def test_the_estimate_counts_bytes_per_weight(sharp_llama, monkeypatch):
    cfg = Config.quick(model=str(sharp_llama))
    shape_params = {d: estimate(Config.quick(model=str(sharp_llama), dtype=d)) for d in
                    ("float32", "bfloat16", "float16")}  # fmt: skip
    weights = {d: e.memory[f"the weights of {sharp_llama}"] for d, e in shape_params.items()}
    assert weights["float32"] == 2 * weights["bfloat16"] == 2 * weights["float16"] > 0
    others = {k: v for k, v in shape_params["float32"].memory.items() if "weights" not in k}
    assert others == {
        k: v for k, v in shape_params["bfloat16"].memory.items() if "weights" not in k
    }
    assert estimate(cfg).peak_bytes == shape_params["float32"].peak_bytes  # float32: it fits


def _shape(monkeypatch, dtype):
    """The named model's shape, stored in ``dtype`` (None: a GGUF)."""
    real = _precision.model_shape
    monkeypatch.setattr(_precision, "model_shape", lambda name: replace(real(name), dtype=dtype))


@pytest.mark.parametrize(
    ("own", "device", "room", "chosen"),
    [
        ("bfloat16", "cpu", 1e15, "float32"),  # float32 fits: float32
        ("bfloat16", "cpu", 1e6, "bfloat16"),  # it does not: the checkpoint's own
        ("float16", "cpu", 1e6, "float16"),
        ("float32", "cpu", 1e6, "float32"),  # a float32 checkpoint stays (the budget refuses)
        (None, "cpu", 1e15, "float32"),  # a GGUF: float32 where it fits
        (None, "cpu", 1e6, "bfloat16"),  # else halved
        ("bfloat16", "cuda", 1e15, "bfloat16"),  # on a GPU: its own, even where float32 fits
        (None, "cuda", 1e15, "float32"),
    ],
)
def test_auto_picks(own, device, room, chosen, monkeypatch):
    _shape(monkeypatch, own)
    monkeypatch.setattr(budget, "available_memory", lambda device="cpu": room)
    cfg = Config.quick(device=device)  # the device is not checked here
    got = _precision.precision(cfg, estimate)
    assert got.dtype == chosen
    assert bool(got.why) == (chosen != "float32")  # the stderr line: only when not float32
    explicit = _precision.precision(Config.quick(device=device, dtype="float16"), estimate)
    assert explicit == _precision.Precision("float16")  # given: no line, whatever fits
    weights = estimate(cfg).memory["the weights of smollm2-135m"]
    params = _precision.model_shape("smollm2-135m").params
    assert weights == {"float32": 4, "bfloat16": 2, "float16": 2}[chosen] * params


def test_capture_hands_over_float32_and_leaves_the_forward_alone(sharp_llama, text):
    f32 = load_model(str(sharp_llama), dtype=torch.float32)
    bf16 = load_model(str(sharp_llama), dtype=torch.bfloat16)
    assert next(bf16.model.parameters()).dtype == torch.bfloat16
    ids = torch.arange(2, 66)[None]
    caps = capture(bf16, ids, on_layer=lambda c: c)
    for cap in caps.values():
        for name in ("hidden_in", "q", "k", "v", "scores", "weights"):
            assert getattr(cap, name).dtype == torch.float32, name
        # the float32 maps are the float32 softmax of the (upcast) q·k
        want = torch.matmul(cap.q, cap.k.repeat_interleave(2, 1).transpose(2, 3)) * cap.scaling
        torch.testing.assert_close(cap.scores, want)
    plain = bf16.model(ids).logits  # eager, in bfloat16
    from attnlimits.capture import capturing

    with capturing(bf16, lambda c: None), torch.no_grad():
        seen = bf16.model(ids).logits
    assert torch.equal(plain, seen)  # the model's own forward keeps its precision, bit for bit
    assert upcast(plain).dtype == torch.float32 and upcast(ids).dtype == ids.dtype
    assert f32.model.dtype == torch.float32


def _delta(folder, text, cfg) -> float:
    """δ: the largest |Δ scaled logit| between the model in float32 and in bfloat16 over the
    scan's own inputs (its book windows and induction tokens), kept keys only."""
    f32 = load_model(str(folder), dtype=torch.float32)
    bf16 = load_model(str(folder), dtype=torch.bfloat16)
    windows = spread_windows(f32.tokenizer, text, cfg.max_length, cfg.windows).ids
    inputs = [windows[w : w + 1] for w in range(cfg.windows)]
    inputs += [induction_ids(f32, cfg.induction_period, w, cfg.seed) for w in range(cfg.windows)]
    worst, top = 0.0, 0.0
    for ids in inputs:
        a = capture(f32, ids, on_layer=lambda c: (c.scores, c.mask))
        b = capture(bf16, ids, on_layer=lambda c: c.scores)
        for layer, (scores, mask) in a.items():
            diff = (scores - b[layer]).abs().masked_fill(~mask, 0)
            worst = max(worst, float(diff.max()))
            top = max(top, float(scores.masked_fill(~mask, 0).abs().max()))
    # what bfloat16 allows: its unit roundoff 2^-9 relative, over the few dozen roundings
    # between the embedding and a 2-layer model's logits (here ~10 a layer)
    assert 0 < worst <= 40 * 2.0**-9 * top, (worst, top)
    return worst


@pytest.mark.slow
def test_a_bfloat16_scan_stays_within_the_derived_bound_of_float32(sharp_llama, text, tmp_path):
    cfg = {"model": str(sharp_llama), "text": None}
    runs = {}
    for dtype in ("float32", "bfloat16"):
        config = Config.quick(**cfg, dtype=dtype)
        skeleton.run(EXPERIMENT, config, tmp_path / dtype, progress=False)
        meta = json.loads((tmp_path / dtype / "run.json").read_text())
        assert meta["params"]["dtype"] == dtype and meta["model"]["dtype"] == dtype
        runs[dtype] = pd.read_parquet(tmp_path / dtype / "tables" / "heads.parquet")
    keys = ["layer", "head", "length"]
    a, b = (runs[d].set_index(keys).sort_index() for d in ("float32", "bfloat16"))
    delta = _delta(sharp_llama, text, Config.quick(**cfg))
    r, log_l = math.expm1(2 * delta), math.log(max(Config.quick().lengths))
    h_bound = r * log_l + 2 * delta
    grid = np.linspace(0, log_l, 4001)
    beta = adaptive_beta(torch.from_numpy(grid)).numpy()
    width = int(np.ceil(h_bound / (grid[1] - grid[0])))
    oscillation = max(float(np.ptp(beta[i : i + width + 1])) for i in range(len(grid)))
    bounds = {
        **dict.fromkeys(MASSES, r),
        "entropy": h_bound,
        "entropy_norm": h_bound / math.log(2),
        "support_fraction": math.expm1(h_bound),
        "beta": oscillation,
        "logit_spread": 2 * delta,
        "jacobian_norm": 3 * r,
        "dispersion_slope": 2 * 2 * delta / math.log(2),
        "entropy_slope": 2 * h_bound / math.log(2),
    }
    assert r < 0.25  # the bound says something about a weight
    moved = 0.0
    for column, bound in bounds.items():
        diff = (a[column] - b[column]).abs()
        assert (a[column].isna() == b[column].isna()).all(), column
        assert diff.max() <= bound + 1e-6, (column, float(diff.max()), bound)
        moved = max(moved, float(diff.max()))
    assert moved > 0  # the bfloat16 run did differ
    spread = float(a["entropy"].max() - a["entropy"].min())
    assert bounds["entropy"] < spread / 2  # tighter than what tells the heads apart
    for column in ("critical_n", "kind"):  # steps: most heads agree
        same = (a[column] == b[column]) | (a[column].isna() & b[column].isna())
        assert same.mean() >= 0.8, (column, float(same.mean()))
    # N_s/N counts keys inside a ball whose radius the values set too (v is rounded as well):
    # a count, not bounded by δ; held within a tenth of its range over the heads (measured:
    # at most 4 of its 1/(16·12) steps on this model)
    sep = (a["separability"] - b["separability"]).abs().max()
    assert sep <= 0.1 * np.ptp(a["separability"]), sep
