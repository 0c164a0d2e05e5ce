"""attnlimits scan: the per-head values against materialised maps, the rules, the run end to end."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os

import numpy as np
import pandas as pd
import pytest
import torch

from attnlimits import metrics
from attnlimits.capture import capture, capture_qkv, load_model
from attnlimits.corpus import load_text
from attnlimits.experiments import skeleton
from attnlimits.experiments.scan import EXPERIMENT, Config, critical_table, kinds
from attnlimits.experiments.scan.config import band
from attnlimits.experiments.scan.heads import band_means, duplicate_keys, sampled_rows
from attnlimits.experiments.scan.taxonomy import dispersion_slopes, flag_heads, head_kind
from attnlimits.experiments.scan.tokens import TOKEN_ROWS, TOP_K, attention_rows
from attnlimits.metrics import critical_n
from tiny_models import tiny_model_dir

#: the module, not the function the package exports under the same name
scan_compute = importlib.import_module("attnlimits.experiments.scan.compute")
LENGTHS = (16, 32, 64)


@pytest.fixture(scope="module")
def text(book_path):
    return load_text(book_path)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("scan_models")
    families = ("llama", "bert")
    return {f: tiny_model_dir(root, f, text[:100_000], max_positions=128) for f in families}


# ---- the rules ---------------------------------------------------------------------------------


def test_config_presets_and_bad_values():
    assert Config.quick().lengths == (128, 256) and Config.quick(windows=3).windows == 3
    assert Config.preset(model="minilm-l6").lengths == (256, 512)  # its 512 positions
    assert Config.preset(model="minilm-l6", lengths=(1024,)).lengths == (1024,)  # given: kept
    assert Config(lengths=(512, 256)).lengths == (256, 512)  # sorted; a repeat is refused
    for bad in (
        {"lengths": (2,)},
        {"lengths": ()},
        {"rows": 1},
        {"windows": 0},
        {"ks_alpha": 1.0},
        {"critical_fraction": 0.0},
        {"model": " "},
    ):
        with pytest.raises(ValueError):
            Config(**bad)
    with pytest.raises(TypeError, match="unknown scan setting"):
        Config.preset(lenghts=(4,))


def test_band_is_the_rows_that_see_half_to_all_of_l_keys():
    assert band(256, causal=True) == (128, 256)
    assert band(256, causal=False) == (0, 256)


def test_kinds_take_the_first_rule_met():
    df = pd.DataFrame(
        {
            "induction": [0.5, 0.1, 0.1, 0.1, 0.1, 0.1, np.nan],
            "sink_mass": [0.9, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1],
            "prev_token": [0.9, 0.9, 0.6, 0.1, 0.1, 0.1, 0.1],
            "local_mass": [0.9, 0.9, 0.9, 0.6, 0.1, 0.1, 0.1],
            "max_weight": [0.9, 0.9, 0.9, 0.9, 0.4, 0.1, 0.1],
        }
    )
    assert list(kinds(df)) == [
        "induction",
        "sink",
        "previous-token",
        "local",
        "sharp",
        "broad",
        "broad",
    ]


def test_head_kind_is_the_kind_at_most_lengths_ties_to_the_longer():
    df = pd.DataFrame(
        {
            "layer": 0,
            "head": [0, 0, 0, 1, 1],
            "length": [1, 2, 3, 1, 2],
            "kind": ["sink", "sharp", "sink", "sink", "broad"],
        }
    )
    assert head_kind(df).to_dict() == {(0, 0): "sink", (0, 1): "broad"}


def test_dispersion_slope_of_one_over_l_is_minus_one():
    lengths = np.array([64, 128, 256, 512])
    df = pd.DataFrame(
        {
            "layer": 0,
            "head": np.repeat([0, 1], 4),
            "length": np.tile(lengths, 2),
            "max_weight": np.r_[3.0 / lengths, np.full(4, 0.5)],
            "entropy": np.r_[np.log(lengths), np.full(4, 1.0)],
        }
    )
    s = dispersion_slopes(df).set_index("head")
    assert s.loc[0, "dispersion_slope"] == pytest.approx(-1.0)
    assert s.loc[0, "entropy_slope"] == pytest.approx(1.0)
    assert s.loc[1, "dispersion_slope"] == pytest.approx(0.0, abs=1e-12)


def test_flags():
    df = pd.DataFrame(
        {
            "length": 100,
            "critical_n": [13, 12, -1, -1],
            "n_max_tested": [50, 50, 11, 12],
            "support_fraction": [0.07, 0.05, 0.0, 0.0],
            "dispersion_slope": [-1.0, -0.4, np.nan, -0.8],
            "jacobian_norm": [0.001, 0.1, np.nan, 0.5],
            "duplicate_keys": [3, 0, np.nan, 0],
        }
    )
    f = flag_heads(df, 0.06)
    # the layer's critical N past 2 × 0.06 L, or none (-1) while the grid reaches that far
    assert f["flag_layer_critical_n"].tolist() == [True, False, False, True]
    assert f["flag_active_set"].tolist() == [True, False, False, False]
    assert f["flag_dispersing"].tolist() == [True, False, False, True]
    assert f["flag_vanishing_gradient"].tolist() == [True, False, False, False]
    assert f["flag_assumption2"].tolist() == [True, False, False, False]


def test_the_critical_n_flag_spares_the_grid_point_nearest_the_papers():
    """At L = 256 the power-of-two grid's first N past 0.06 L is 16 (0.0625 L): as close to
    paper A's ≈ 0.06 L as the grid gets, not flagged; 32 (0.125 L) and none found up to L/2
    are."""
    df = pd.DataFrame(
        {
            "length": 256,
            "critical_n": [16, 32, -1, 8],
            "n_max_tested": 128,
            "support_fraction": 0.0,
            "dispersion_slope": 0.0,
            "jacobian_norm": 0.5,
            "duplicate_keys": 0,
        }
    )
    f = flag_heads(df, 0.06)
    assert f["flag_layer_critical_n"].tolist() == [False, True, True, False]


def test_duplicate_keys_against_pairs():
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(2, 12, 3, generator=gen)
    v[0, 5] = v[0, 2]
    v[0, 9] = v[0, 2]
    v[1, 0] = v[1, 11]
    want = [
        sum(any(torch.equal(v[h, i], v[h, j]) for j in range(12) if j != i) for i in range(12))
        for h in range(2)
    ]
    assert want == [3, 2]
    assert duplicate_keys(v, torch.tensor([0, 0, 1, 1])).tolist() == [3, 3, 2, 2]


def test_critical_table_is_paper_a_alg3_over_heads():
    """Per length and layer, the same critical N as metrics.critical_n on the per-head means."""
    rng = np.random.default_rng(0)
    rows = []
    for layer in range(2):
        for head in range(12):
            for n in (1, 2, 4, 8):
                e = rng.normal(10, 1)
                d = e - (8.0 if n < 4 + 2 * layer else 0.0) + rng.normal(0, 0.3)
                rows += [
                    {
                        "length": 32,
                        "layer": layer,
                        "head": head,
                        "N": n,
                        "window": w,
                        "row": r,
                        "distance": d,
                        "expectation": e,
                    }
                    for w in range(2)
                    for r in range(3)
                ]
    samples = pd.DataFrame(rows)
    by_layer, _, tests = critical_table(samples, 0.01)
    per_head = samples.groupby(["layer", "N", "head"])[["distance", "expectation"]].mean()
    for layer in range(2):
        sub = per_head.xs(layer, level="layer")
        ns = [1, 2, 4, 8]
        d = np.stack([sub.xs(n, level="N")["distance"].to_numpy() for n in ns])
        e = np.stack([sub.xs(n, level="N")["expectation"].to_numpy() for n in ns])
        want = critical_n(ns, d, e, alpha=0.01).critical_n
        assert by_layer.set_index("layer").loc[layer, "critical_n"] == want
    assert by_layer["critical_n"].tolist() == [4, 8]
    assert set(tests["scope"]) == {"layer", "model"}


# ---- per-head values against materialised maps -------------------------------------------------


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_band_means_and_sampled_rows_match_the_materialised_map(model_dirs, family):
    loaded = load_model(str(model_dirs[family]))
    ids = torch.randint(0, 50, (1, 64), generator=torch.Generator().manual_seed(1))
    cfg = Config(lengths=LENGTHS, rows=5, ns=(1, 2, 4))
    lengths = LENGTHS if loaded.info.causal else (64,)
    streamed = capture_qkv(
        loaded, ids, on_layer=lambda c: (band_means(c, lengths, cfg), sampled_rows(c, 64, cfg))
    )
    maps = capture(loaded, ids, on_layer=lambda c: (c.weights[0].double(), c.mask[0, 0]))
    for layer, (means, (per_head, samples)) in streamed.items():
        w, keep = maps[layer]
        for length in lengths:
            a, b = band(length, loaded.info.causal)
            sub = means[means["length"] == length].set_index("head")
            rows = w[:, a:b, :length] if loaded.info.causal else w
            km = keep[a:b, :length] if loaded.info.causal else keep
            want = {
                "entropy": metrics.attention_entropy(rows, mask=km).mean(-1),
                "max_weight": metrics.max_weight(rows, mask=km).mean(-1),
                "sink_mass": rows[..., 0].mean(-1),
                "prev_token": torch.stack(  # row 0 has no previous token: weight 0
                    [rows[:, i, a + i - 1] * (a + i > 0) for i in range(b - a)], -1
                ).mean(-1),
            }
            for name, ref in want.items():
                np.testing.assert_allclose(
                    sub[name].to_numpy(),
                    ref.numpy(),
                    rtol=1e-4,
                    atol=1e-6,
                    err_msg=f"{family} {name} L={length}",
                )
        assert per_head["jacobian_norm"].between(0, 0.5).all()
        assert per_head["separability"].between(0, 1).all()
        assert samples["distance"].notna().all() and (samples["distance"] >= 0).all()


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_attention_rows_are_a_naive_softmax_of_the_captured_logits(model_dirs, family, monkeypatch):
    """Full rows at L <= 32 (FULL_ROWS_UP_TO lowered to 32), the top-k elsewhere: each stored
    weight is exp(s − max) / Σ exp over the row's kept keys of the model's own scores, the top-k
    are the k largest, and each row keeps exactly min(k, keys) or all its keys."""
    tokens = importlib.import_module("attnlimits.experiments.scan.tokens")
    monkeypatch.setattr(tokens, "FULL_ROWS_UP_TO", 32)
    loaded = load_model(str(model_dirs[family]))
    ids = torch.randint(0, 50, (1, 64), generator=torch.Generator().manual_seed(2))
    lengths = LENGTHS if loaded.info.causal else (64,)
    stored = capture_qkv(
        loaded, ids, on_layer=lambda c: pd.concat([attention_rows(c, n) for n in lengths])
    )
    maps = capture(loaded, ids, on_layer=lambda c: (c.scores[0].double(), c.mask[0, 0]))
    for layer, got in stored.items():
        scores, keep = maps[layer]  # (head, query, key), (query, key)
        assert got.groupby(["length", "head"])["row"].nunique().eq(TOKEN_ROWS).all()
        for (length, head, row), at in got.groupby(["length", "head", "row"]):
            s = scores[head, row, :length].numpy()
            kept = keep[row, :length].numpy()
            w = np.where(kept, np.exp(s - s[kept].max()), 0.0)
            w = w / w.sum()
            assert (at["keys"] == kept.sum()).all()
            want_n = kept.sum() if length <= 32 else min(TOP_K, kept.sum())
            assert len(at) == want_n, (family, layer, length, head, row)
            np.testing.assert_allclose(at["weight"], w[at["key"]], rtol=1e-5, atol=1e-7)
            assert kept[at["key"]].all()
            top = at[at["rank"] <= TOP_K]
            assert len(top) == min(TOP_K, kept.sum())
            assert top["weight"].min() >= np.delete(w, top["key"]).max(initial=0) * (1 - 1e-6)
            assert sorted(at["rank"]) == list(range(1, len(at) + 1))


# ---- the run ----------------------------------------------------------------------------------


def test_scan_runs_end_to_end_resumes_and_redraws(model_dirs, tmp_path, monkeypatch):
    cfg = Config(
        model=str(model_dirs["llama"]),
        lengths=LENGTHS,
        windows=2,
        rows=4,
        ns=(1, 2, 4),
        induction_period=8,
    )
    out = tmp_path / "scan"
    report = skeleton.run(EXPERIMENT, cfg, out, progress=False)
    heads = pd.read_parquet(out / "tables" / "heads.parquet")
    for col in (
        "layer",
        "head",
        "length",
        "entropy",
        "max_weight",
        "sink_mass",
        "kind",
        "logit_spread",
        "beta",
        "critical_n",
        "separability",
        "jacobian_norm",
        "dispersion_slope",
        "induction",
        "entropy_std",
        "flag_dispersing",
    ):
        assert col in heads, col
    assert len(heads) == 2 * 4 * len(LENGTHS) and (heads["windows"] == 2).all()
    assert (out / "tables" / "heads.csv").is_file()
    summary = pd.read_parquet(out / "tables" / "head_summary.parquet")
    assert len(summary) == 8 and summary["kind"].notna().all()
    text = report.read_text()
    for section in ("## Head kinds", "## Flagged heads", "## Differences from the papers"):
        assert section in text
    for fig in ("heatmaps", "kinds", "dispersion"):
        assert (out / "figures" / f"{fig}.png").is_file()
    rows = pd.read_parquet(out / "tables" / "attention_rows.parquet")
    tokens = pd.read_parquet(out / "tables" / "tokens.parquet")
    assert (out / "tables" / "attention_rows.csv").is_file()
    # the first window's tokens, each decoded on its own; every length, TOKEN_ROWS rows per head
    loaded = load_model(cfg.model)
    ids = tokens["token_id"].to_numpy()
    assert tokens["position"].tolist() == list(range(max(LENGTHS)))
    assert tokens["text"].tolist() == [loaded.tokenizer.decode([int(i)]) for i in ids]
    assert set(rows.groupby(["layer", "head", "length"])["row"].nunique()) == {TOKEN_ROWS}
    sampled = [np.unique(np.linspace(n // 2, n - 1, TOKEN_ROWS).round()) for n in LENGTHS]
    assert len(rows) == 8 * sum((r + 1).sum() for r in sampled)  # L <= 256: whole causal rows

    def no_forward(*args, **kwargs):
        raise AssertionError("a resumed scan with every part saved runs no forward")

    monkeypatch.setattr(scan_compute, "capture_qkv", no_forward)
    (out / "tables").rename(tmp_path / "old_tables")
    skeleton.run(EXPERIMENT, cfg, out, progress=False)
    again = pd.read_parquet(out / "tables" / "heads.parquet")
    pd.testing.assert_frame_equal(again, heads)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "tables" / "attention_rows.parquet"), rows)
    assert skeleton.redraw(out) == report


def test_bidirectional_model_gets_one_pass_per_length(model_dirs, tmp_path):
    cfg = Config(model=str(model_dirs["bert"]), lengths=(16, 32), windows=1, rows=4, ns=(1, 2))
    skeleton.run(EXPERIMENT, cfg, tmp_path / "bert", progress=False)
    heads = pd.read_parquet(tmp_path / "bert" / "tables" / "heads.parquet")
    assert sorted(heads["length"].unique()) == [16, 32]
    assert "induction" not in heads or heads["induction"].isna().all()


def test_a_model_whose_attention_skips_the_interface_is_named(model_dirs, tmp_path, monkeypatch):
    monkeypatch.setattr(scan_compute, "capture_qkv", lambda *a, **k: {})
    cfg = Config(model=str(model_dirs["llama"]), lengths=(16,), windows=1, rows=4, ns=(1,))
    with pytest.raises(ValueError, match=r"attention interface.*eager, sdpa"):
        skeleton.run(EXPERIMENT, cfg, tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()


def test_the_docs_print_the_rules_the_code_applies():
    from attnlimits.experiments.scan.claims import DIFFERENCES
    from attnlimits.experiments.scan.taxonomy import FLAGS, KINDS
    from conftest import REPO

    doc = (REPO / "docs" / "scan.md").read_text(encoding="utf-8")
    for kind, column, _, rule in KINDS:
        assert f"| {kind} | `{column or '—'}` | {rule} |" in doc, kind
    for name, says in FLAGS.items():
        assert f"| `flag_{name}` | {says} |" in doc, name
    for line in DIFFERENCES:
        assert f"- {line}" in doc


# ---- a model's files, not its path, key its parts; its weights must fit (issue 43, 5 and 6) ----


def _replace_weights(folder, seed: int, change=None) -> None:
    """Other weights of the same shapes under the same name, size and mtime (``change``
    edits the tensors first)."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    before = path.stat()
    gen = torch.Generator().manual_seed(seed)
    weights = {k: torch.randn(v.shape, generator=gen) for k, v in load_file(path).items()}
    if change is not None:
        change(weights)
    save_file(weights, path, metadata={"format": "pt"})
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert change is not None or path.stat().st_size == before.st_size


def test_a_resume_over_a_model_whose_files_changed_recomputes(tmp_path, text):
    folder = tiny_model_dir(tmp_path / "model", "llama", text[:100_000], max_positions=128)
    cfg = Config(model=str(folder), lengths=(16, 32), windows=1, rows=4, ns=(1, 2))
    out, fresh = tmp_path / "run", tmp_path / "fresh"
    skeleton.run(EXPERIMENT, cfg, out, progress=False)
    first = pd.read_parquet(out / "tables" / "heads.parquet")
    _replace_weights(folder, seed=1)
    skeleton.run(EXPERIMENT, cfg, out, progress=False)  # a resume: the same settings
    resumed = pd.read_parquet(out / "tables" / "heads.parquet")
    skeleton.run(EXPERIMENT, cfg, fresh, progress=False)
    pd.testing.assert_frame_equal(resumed, pd.read_parquet(fresh / "tables" / "heads.parquet"))
    assert not np.allclose(resumed["entropy"], first["entropy"]), "the old weights' parts"


def test_incomplete_weights_are_refused_unless_allowed_and_then_reported(tmp_path, text):
    folder = tiny_model_dir(tmp_path / "model", "llama", text[:100_000], max_positions=128)
    _replace_weights(folder, seed=0, change=lambda w: w.pop("model.layers.1.mlp.up_proj.weight"))
    cfg = Config(model=str(folder), lengths=(16,), windows=1, rows=4, ns=(1,))
    with pytest.raises(OSError, match=r"1 missing \(model\.layers\.1\.mlp\.up_proj\.weight\)"):
        skeleton.run(EXPERIMENT, cfg, tmp_path / "refused", progress=False)
    assert not (tmp_path / "refused").exists()
    allowed = dataclasses.replace(cfg, allow_incomplete_weights=True)
    report = skeleton.run(EXPERIMENT, allowed, tmp_path / "run", progress=False).read_text()
    assert "**Incomplete weights.**" in report and "model.layers.1.mlp.up_proj.weight" in report
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["model"]["incomplete"] == {"missing": ["model.layers.1.mlp.up_proj.weight"]}
    assert meta["params"]["allow_incomplete_weights"] is True
