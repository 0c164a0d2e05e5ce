"""Why Alg. 3's critical N sits at about 0.75·L for L = 32…128 (paper A, finding iii).

    python benchmarks/limitations_critical_rows.py [--samples 8]

Hypothesis tested: under a causal mask a row t has t + 1 keys and rows with fewer than N + 1
keys are left out, so at N near L only the late rows remain, and the test might accept there
because of which rows are averaged. On the first of 4 spread windows (the run's default count when
the doc's table was made; the first window moves with the count), with a
dense grid N = 1 … ⌊0.9·L⌋ over every row, the script finds the critical N (KS at α = 0.01
over all heads, as the run does) with three row sets:

- SmolLM2, the run's rows: every row of the first L with ≥ N + 1 keys (a different set per N);
- SmolLM2, fixed rows: only rows t ≥ 0.9·L, the same rows at every N (no exclusion at all);
- MiniLM (bidirectional): every row sees all L keys, nothing is excluded.

If the row exclusion made the pattern, the fixed rows and MiniLM would move it. They do not
(docs/limitations.md): the test accepts once I_N covers about three quarters of each row's keys,
where d̃ and E both tend to the same limit (Corollary 2, N → L) whatever the model; 0.75·L
itself is the grid point (…, 0.625·L, 0.75·L, …) just above. E exact: Monte Carlo of Eq. 8 over
every row (``--samples`` random I_N per row). Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import importlib

import numpy as np
import pandas as pd
import torch
from scipy.stats import ks_2samp

from attnlimits.capture import LayerCapture, capture, load_model
from attnlimits.corpus import load_text, spread_windows
from attnlimits.experiments.report import markdown_table
from attnlimits.metrics import distance_curve, expected_distance_curve_mc

compute = importlib.import_module("attnlimits.experiments.limitations.compute")
LENGTHS = (32, 64, 128)
WINDOWS = 4  # spread windows; the script reads the first
FORMS = {"exact": "E exact", "derived": "E derived", "printed": "E printed"}


def per_row(cap: LayerCapture, length: int, samples: int) -> dict[str, torch.Tensor]:
    """d̃ and each form of E per (head, row, N) on the first ``length`` rows, N = 1 … 0.9·L."""
    ns = list(range(1, int(0.9 * length) + 1))
    attn = cap.weights[0].float()[:, :length, :length]
    mask = cap.mask[0].expand_as(cap.weights[0])[:, :length, :length]
    x = compute.per_key_vectors(cap, "values")[..., :length, :]
    c = distance_curve(attn, x, ns, mask=mask, forms=("derived", "main_text"))
    gen = torch.Generator().manual_seed(cap.layer)
    mc, _ = expected_distance_curve_mc(attn, x, ns, mask=mask, samples=samples, generator=gen)
    valid = c.valid.expand_as(c.distance)
    out = {"d": c.distance, "exact": mc, "derived": c.expected["derived"]}
    out["printed"] = c.expected["main_text"]
    return {k: torch.where(valid, v.double(), torch.nan) for k, v in out.items()}


def critical(per_layer: list[dict[str, torch.Tensor]], form: str, first_row: int) -> int | None:
    """First N (1, 2, …) where KS over heads does not separate d̄ from Ē at α = 0.01."""

    def head_means(key: str) -> np.ndarray:
        return np.concatenate([torch.nanmean(p[key][:, first_row:], 1).numpy() for p in per_layer])

    d, e = head_means("d"), head_means(form)  # (heads, n_N)
    for j in range(d.shape[1]):
        if ks_2samp(d[:, j], e[:, j]).pvalue >= 0.01:
            return j + 1
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(2)
    text = load_text()
    rows = []
    for model in ("smollm2-135m", "minilm-l6"):
        loaded = load_model(model)
        ids = spread_windows(loaded.tokenizer, text, 128, WINDOWS, source="book").ids
        for length in LENGTHS:
            per_layer: list[dict[str, torch.Tensor]] = []

            def grab(
                cap: LayerCapture, n: int = length, out: list[dict[str, torch.Tensor]] = per_layer
            ) -> None:
                out.append(per_row(cap, n, args.samples))

            # causal: the first L rows of a 128-token window are a window of L (prefix blocks)
            capture(loaded, ids[0:1, : 128 if loaded.info.causal else length], on_layer=grab)
            sets = {"every row with ≥ N + 1 keys (the run's)": 0}
            if loaded.info.causal:
                sets["fixed rows t ≥ 0.9·L (no exclusion)"] = int(np.ceil(0.9 * length))
            for name, first in sets.items():
                row = {"model": model, "L": length, "rows": name}
                for form, label in FORMS.items():
                    c = critical(per_layer, form, first)
                    row[label] = f"{c} ({c / length:.2f}·L)" if c else f"> {int(0.9 * length)}"
                rows.append(row)
    print(markdown_table(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
