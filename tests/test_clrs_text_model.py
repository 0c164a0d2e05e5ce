"""``attnlimits reproduce clrs-text`` (paper B §4.2): the model (``clrs_text/model.py``):
the loss on answer tokens, micro-batches, byte tokens, cached greedy decoding, the adaptive arm,
training that stops on validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlimits.experiments.clrs_text import attn_implementation
from attnlimits.experiments.clrs_text.model import (
    ByteTokenizer,
    ModelSize,
    build_model,
    greedy_answers,
    make_batch,
    step_gradients,
    train_model,
)


def test_the_loss_is_on_answer_tokens_only():
    q, a = [[1, 2, 3], [4, 5]], [[6, 7], [8, 9, 10, 11]]
    ids, labels = make_batch(q, a)
    assert ids.tolist() == [[1, 2, 3, 6, 7, 0], [4, 5, 8, 9, 10, 11]]
    assert labels.tolist() == [[-100, -100, -100, 6, 7, -100], [-100, -100, 8, 9, 10, 11]]


@pytest.mark.parametrize("arm", ["softmax", "adaptive"])
@pytest.mark.parametrize("micro", [1, 2, 3, 5, 8])
def test_micro_batches_give_the_padded_batchs_loss_and_gradient(arm, micro):
    """``step_gradients`` (texts sorted by length, each micro-batch padded to its own longest)
    against the naive step kept here: one batch padded to the longest text, transformers' mean
    loss over the answer tokens; float64, texts of unequal lengths, more micro-batches than
    texts included. transformers computes the loss in float32 whatever the model's dtype, so
    the tolerance is float32's; a micro-batch's own mean (the usual mistake) is off by ~10 %."""
    model, _ = build_model(ModelSize(2, 16, 2, 32, 128), attn_implementation(arm), seed=3)
    model = model.double()
    rng = np.random.default_rng(micro)
    q = [[int(t) for t in rng.integers(1, 127, size=n)] for n in (9, 3, 17, 5, 12)]
    a = [[int(t) for t in rng.integers(1, 127, size=n)] for n in (4, 11, 2, 7, 1)]
    ids, labels = make_batch(q, a)
    naive = model(input_ids=ids, labels=labels).loss
    naive.backward()
    want = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    loss = step_gradients(model, q, a, micro=micro)
    assert torch.allclose(loss, naive.detach(), rtol=1e-6, atol=0)
    for n, p in model.named_parameters():
        assert torch.allclose(p.grad, want[n], rtol=1e-5, atol=1e-9), n
    with pytest.raises(ValueError, match="micro"):
        step_gradients(model, q, a, micro=0)


def test_bytes_round_trip_and_non_ascii_is_refused():
    tok = ByteTokenizer()
    text = "minimum:\nkey: [0.548 0.715]\nmin:\n"
    assert tok.decode(tok.encode([text])[0]) == text
    with pytest.raises(UnicodeEncodeError):
        tok.encode(["β"])


def _greedy_without_cache(model, tok, question: str, n: int) -> str:
    ids = torch.tensor([tok.encode([question])[0]])
    for _ in range(n):
        nxt = model(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], 1)
    text = tok.decode(ids[0, -n:].tolist())
    cut = text.find("\n\n")
    return text if cut < 0 else text[: cut + 2]


@pytest.mark.parametrize("arm", ["softmax", "adaptive"])
def test_cached_greedy_decoding_is_plain_greedy_decoding(arm):
    model, tok = build_model(ModelSize(1, 16, 2, 32, 128), attn_implementation(arm), seed=1)
    model.eval()
    qs = ["minimum:\nkey: [0.5 0.7]\nmin:\n", "minimum:\nkey: [0.1 0.2]\nmin:\n", "ab\n"]
    got = greedy_answers(model, tok, qs, 6, batch=2)
    with torch.no_grad():
        assert got == [_greedy_without_cache(model, tok, q, 6) for q in qs]
        # one budget per question: each row is cut at its own, whatever shares its batch
        budgets = [3, 7, 2]
        got = greedy_answers(model, tok, qs, budgets, batch=2)
        want = [_greedy_without_cache(model, tok, q, n) for q, n in zip(qs, budgets, strict=True)]
        assert got == want
    with pytest.raises(ValueError, match="max_new"):
        greedy_answers(model, tok, qs, [3, 0, 2])
    with pytest.raises(ValueError, match="max_new"):
        greedy_answers(model, tok, qs, [3, 2])


def _sharp(impl: str):
    model, tok = build_model(ModelSize(1, 16, 2, 32, 128), impl, seed=0)
    with torch.no_grad():  # large logits: the adaptive rule sharpens where softmax would not
        model.model.layers[0].self_attn.q_proj.weight.mul_(8.0)
    return model, tok


def test_adaptive_arm_trains_with_gradients_through_every_parameter():
    model, tok = _sharp("attnlimits_adaptive")
    ids, labels = make_batch(tok.encode(["key: [0.548 0.715]\n"] * 2), tok.encode(["1\n\n"] * 2))
    loss = model(input_ids=ids, labels=labels).loss
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    softmax, _ = _sharp("sdpa")
    other = softmax(input_ids=ids, labels=labels).loss
    assert (
        abs(float(loss.detach()) - float(other.detach())) > 1e-4
    )  # the adaptive arm really changes attention


def test_training_stops_on_validation_and_keeps_the_best_check():
    """``train_model``: a check every 2 steps; a worst part at the target stops training; the
    model returned is the one of the best score, not the last."""
    model, tok = build_model(ModelSize(1, 16, 2, 32, 64), "sdpa", seed=0)
    q, a = tok.encode(["ab\n"] * 4), tok.encode(["c\n\n"] * 4)
    groups = np.zeros(4, dtype=int)
    states, scores = [], iter([(0.2, 0.2), (0.8, 0.5), (0.3, 0.3)])

    def check(m):
        states.append({k: v.clone() for k, v in m.state_dict().items()})
        return next(scores)

    r = train_model(model, q, a, groups, steps=6, batch=2, lr=1e-2, seed=0, check=check,
                    check_every=2, stop_at=0.9)  # fmt: skip
    assert r.steps == 6 and [c[0] for c in r.checks] == [2, 4, 6]
    assert all(torch.equal(v, states[1][k]) for k, v in r.model.state_dict().items())
    model, _ = build_model(ModelSize(1, 16, 2, 32, 64), "sdpa", seed=0)
    r = train_model(model, q, a, groups, steps=6, batch=2, lr=1e-2, seed=0,
                    check=lambda m: (1.0, 1.0), check_every=2, stop_at=0.9)  # fmt: skip
    assert r.steps == 2 and len(r.checks) == 1
