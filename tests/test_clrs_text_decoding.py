"""Greedy decoding stops at the answer's end however the tokenizer spells the blank line
(issue 57: SmolLM2's ``--quick`` spent most of its time decoding past it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from attnlimits.experiments.clrs_text.model import ModelSize, build_model, greedy_answers

#: a subword vocabulary: the blank line as one token (4) or across two (2 then 3)
_VOCAB = ["?", "x", "y\n", "\nz", "\n\n", "a", "q", "b"]
#: per question's last token, the tokens a scripted model makes, one per call
_SCRIPT = {5: [1, 2, 3, 1, 1, 1, 1, 1, 1, 1], 7: [5, 4, 1, 1, 1, 1, 1, 1, 1, 1]}


class _Tokenizer:
    def encode(self, texts):
        return [[6, 5 if t == "A" else 7] for t in texts]

    def decode(self, ids):
        return "".join(_VOCAB[i] for i in ids)


class _Scripted(torch.nn.Module):
    """Makes :data:`_SCRIPT`'s tokens (logits one-hot) and counts its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, input_ids, use_cache=True, cache=None):
        self.calls += 1
        rows, k = (input_ids[:, -1].tolist(), 0) if cache is None else cache
        logits = torch.zeros(len(rows), input_ids.shape[1], len(_VOCAB))
        for i, r in enumerate(rows):
            logits[i, -1, _SCRIPT[r][k]] = 1.0
        return SimpleNamespace(logits=logits, cache=(rows, k + 1))


def test_decoding_stops_at_a_blank_line_in_one_token_or_across_two():
    """Row A's blank line spans two tokens ("y\\n", "\\nz"), row B's is one ("\\n\\n"): both
    answers are cut after it, and decoding ends once both have made it (3 calls, not 10)."""
    model = _Scripted()
    got = greedy_answers(model, _Tokenizer(), ["A", "B"], 10)
    assert got == ["xy\n\n", "a\n\n"]
    assert model.calls == 3


def test_decoding_stops_at_each_rows_budget():
    """Row B ends at its 2nd token; row A's budget is 2, so after 2 tokens every row is done:
    2 calls, and A is cut at its budget."""
    model = _Scripted()
    got = greedy_answers(model, _Tokenizer(), ["A", "B"], [2, 10])
    assert got == ["xy\n", "a\n\n"]
    assert model.calls == 2


def test_without_an_end_decoding_runs_to_the_budget():
    model = _Scripted()
    assert greedy_answers(model, _Tokenizer(), ["A"], 1) == ["x"]
    assert model.calls == 1
    _SCRIPT[9] = [1] * 6
    try:

        class _Never(_Tokenizer):
            def encode(self, texts):
                return [[6, 9] for _ in texts]

        model = _Scripted()
        assert greedy_answers(model, _Never(), ["C"], 6) == ["x" * 6]
        assert model.calls == 6
    finally:
        del _SCRIPT[9]


@pytest.mark.parametrize("attention", ["sdpa", "attnlimits_adaptive"])
@pytest.mark.parametrize("positions", ["rope", "none"])
def test_left_padded_batches_give_each_rows_own_answer(attention, positions):
    """Questions of different lengths in one left-padded batch (mask and positions from each
    row's first real token) decode to what each gets alone, with RoPE and without, for softmax
    and adaptive temperature; every row gets its own budget."""
    model, tok = build_model(ModelSize(2, 32, 4, 64, 128, positions), attention, seed=3)
    torch.manual_seed(0)
    with torch.no_grad():  # large random weights: answers that depend on every token and place
        for p in model.parameters():
            p.normal_(0.0, 0.5)
    questions = ["3 1 2:", "[0.5 0.25]", "ab", "minimum: key: [9 8 7 6 5]"]
    budgets = [9, 14, 5, 12]
    alone = [greedy_answers(model, tok, [q], b)[0] for q, b in zip(questions, budgets, strict=True)]
    together = greedy_answers(model, tok, questions, budgets, padded=True)
    assert together == alone
    assert [len(a) for a in alone] == budgets  # no blank line made: every budget used
    assert len({a[1:] for a in alone}) == len(alone)  # and the answers differ
