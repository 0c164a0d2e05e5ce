"""``compare``, the streamed backward and ``scan`` against PyTorch's SDPA at the same shapes.

- compare: each normaliser's forward as ``compare`` runs it (``compare.forward.run_forward``:
  the swapped kernel, the per-head statistics on sampled rows, the LM head's losses) against
  the same forward through SDPA with no normaliser and no statistics (the base model and the
  same chunked losses), interleaved; one sequence at the longest length (the default runs 3).
- streamed backward: one forward + backward (loss = mean logit) with ``attnlimits_adaptive``
  (its streamed kernel) against SDPA's, interleaved (``bench_streaming_backward.py``'s model).
- scan: one window's pass as ``scan`` makes it (``capture_qkv`` at the longest length and every
  statistic of ``scan.compute._layer_parts``; the induction pass left out) against one SDPA
  forward per length, as the issue defines the floor (the statistics' own floor not added).
"""

from __future__ import annotations

from typing import Any

from _floors_common import interleaved, row, tiny_causal_lm

_CHUNK = 1024  # positions per slice of the LM head, as compare.forward does


def _sdpa_losses(model: Any, ids: Any) -> None:
    import torch
    from torch import nn

    model.set_attn_implementation("sdpa")
    with torch.inference_mode():
        hidden = model.base_model(ids).last_hidden_state[0]
        head, n = model.get_output_embeddings(), ids.shape[1] - 1
        for i in range(0, n, _CHUNK):
            j = min(i + _CHUNK, n)
            nn.functional.cross_entropy(head(hidden[i:j]).float(), ids[0, i + 1 : j + 1])


def _lm(quick: bool, L: int) -> tuple[Any, Any, int]:
    """(causal LM, ids [1, L], its context)."""
    if quick:
        model, ids = tiny_causal_lm(L, "sdpa")
        return model, ids, L
    from attnlimits.capture import load_model
    from attnlimits.corpus import load_text, token_windows

    loaded = load_model("smollm2-135m")
    loaded.model.set_attn_implementation("sdpa")
    ids = token_windows(loaded.tokenizer, load_text(), L, 1)
    return loaded.model, ids, loaded.info.max_context or L


def compare_rows(quick: bool) -> list[dict[str, Any]]:
    from attnlimits.experiments.compare import Config
    from attnlimits.experiments.compare.forward import run_forward

    cfg = Config.quick() if quick else Config()
    L = cfg.max_length
    model, ids, context = _lm(quick, L)
    out, total, floor_total = [], 0.0, 0.0
    for spec, (name, params) in cfg.specs(context).items():

        def ours(name: str = name, params: dict = params) -> None:
            run_forward(model, ids, name, params, cfg.lengths, cfg.rows, block_size=cfg.block_size)

        t, f = interleaved(ours, lambda: _sdpa_losses(model, ids), 2)  # full: 40 s a forward
        out.append(row("compare", spec, t, f, "SDPA forward + losses, no statistics",
                       f"L = {L}, one sequence"))  # fmt: skip
        total, floor_total = total + t, floor_total + f
    out.append(row("compare", "every normaliser (sum)", total, floor_total,
                   "SDPA forward + losses, no statistics",
                   f"L = {L}, one sequence ({cfg.sequences} in the run)"))  # fmt: skip
    return out


def backward_rows(quick: bool) -> list[dict[str, Any]]:
    L = 512 if quick else 8192
    model, ids = tiny_causal_lm(L, "sdpa")
    model.train()

    def step(impl: str) -> None:
        model.set_attn_implementation(impl)
        model.zero_grad(set_to_none=True)
        model(ids).logits.mean().backward()

    t, f = interleaved(lambda: step("attnlimits_adaptive"), lambda: step("sdpa"), 2 if quick else 3)
    note = f"random 2-layer Llama, SmolLM2's attention shapes, L = {L}"
    return [row("streamed backward", "adaptive, forward + backward", t, f,
                "SDPA forward + backward", note)]  # fmt: skip


def scan_rows(quick: bool) -> list[dict[str, Any]]:
    import importlib

    import torch

    from attnlimits.capture import capture_qkv
    from attnlimits.experiments.scan import Config

    compute = importlib.import_module("attnlimits.experiments.scan.compute")
    cfg = Config.quick() if quick else Config()
    L = max(cfg.lengths)
    model, ids, _ = _lm(quick, L)

    def ours() -> None:
        capture_qkv(  # the first window's pass: the token rows too
            model, ids, on_layer=lambda qkv: compute._layer_parts(qkv, cfg.lengths, cfg, True)
        )

    def floor() -> None:
        model.set_attn_implementation("sdpa")
        with torch.no_grad():
            for n in cfg.lengths:
                model.base_model(ids[:, :n])

    t, f = interleaved(ours, floor, 2 if quick else 3)
    lengths = ", ".join(map(str, cfg.lengths))
    note = f"lengths {lengths}; the first window (token rows too); the induction pass left out"
    return [row("scan", "one window, every layer", t, f, "one SDPA forward per length", note)]
