"""Each sample scored at the temperature it was drawn at (``pairrl.train.row_temperatures``
and ``PairRLTrainer._get_per_token_logps_and_entropies``), on a hand-built batch of the tiny
model: solutions drawn at 1.0 (the trainer's temperature), judgements at 0.4.

The reference is written out here: ``log_softmax(logits / T_row)`` at each completion
token, from one plain forward of the whole batch. The trainer's path differs in what is
computed where (padding buckets, row chunks recomputed in the backward, a chunked head),
so values agree up to float rounding (1e-5, as in test_chunked_logps.py); a row scored at
the wrong temperature is off by 0.05 or more here.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from trainer_stub import loss_trainer

from pairrl.config import ConfigError
from pairrl.rollout.layout import JUDGEMENT, NO_PAIR, SOLUTION, TEMPERATURE_COLUMN, UNLABELLED
from pairrl.train.config import LossConfig
from pairrl.train.row_temperatures import (
    bias_free_head,
    check_scorable,
    mixed,
    report_rollout_temperatures,
    sample_temperatures,
    scored_row_temperatures,
    scoring_rows,
    scoring_temperatures,
)
from pairrl.train.trainer import PairRLTrainer

TEMPERATURES = {SOLUTION: 1.0, JUDGEMENT: 0.4}
TYPES = [SOLUTION, JUDGEMENT, SOLUTION, JUDGEMENT, JUDGEMENT, SOLUTION]
PROMPTS = [
    "Write f(x) = x.",
    "Judge A and B. " * 6,
    "Write g.",
    "Judge these. " * 9,
    "Rate A.",
    "f",
]
LENGTHS = [3, 5, 2, 4, 6, 1]
ADVANTAGES = [0.5, -1.0, 0.25, 0.75, -0.5, 1.0]
CHUNKINGS = {
    "one_forward": LossConfig(max_forward_tokens=None, logits_chunk_tokens=1024),
    "recomputed_row_chunks": LossConfig(max_forward_tokens=40, logits_chunk_tokens=3),
}
VALUES = {"rtol": 0.0, "atol": 1e-5}
# gradients of the summed log-probs reach ~5 here and differ by at most ~5e-7 of a
# parameter's largest gradient on this model: 1e-5 of it leaves a 20x margin
GRADIENT_SHARE = 1e-5


@pytest.fixture(scope="module")
def model(tiny_model_dir: Path) -> Any:
    from pairrl.tiny_model import load_tiny_model

    model, _ = load_tiny_model(tiny_model_dir)
    return model.train()


@pytest.fixture(scope="module")
def batch(tiny_model_dir: Path) -> dict[str, torch.Tensor]:
    """Left-padded prompts, right-padded completions, as TRL's batch holds them."""
    from pairrl.tiny_model import load_tiny_model

    _, tokenizer = load_tiny_model(tiny_model_dir)
    pad = tokenizer.pad_token_id
    prompts = [tokenizer(p)["input_ids"] for p in PROMPTS]
    width, keep = max(map(len, prompts)), max(LENGTHS)
    gen = torch.Generator().manual_seed(0)
    rows = []
    for prompt, n in zip(prompts, LENGTHS, strict=True):
        completion = torch.randint(10, 200, (n,), generator=gen).tolist() + [pad] * (keep - n)
        lead = width - len(prompt)
        rows.append(([pad] * lead + prompt, [0] * lead + [1] * len(prompt), completion, n))
    completion_mask = torch.tensor([[1] * n + [0] * (keep - n) for *_, n in rows])
    return {
        "prompt_ids": torch.tensor([r[0] for r in rows]),
        "prompt_mask": torch.tensor([r[1] for r in rows]),
        "completion_ids": torch.tensor([r[2] for r in rows]),
        "completion_mask": completion_mask,
        "advantages": torch.tensor(ADVANTAGES),
        "num_items_in_batch": completion_mask.sum().float(),
        TEMPERATURE_COLUMN: torch.tensor([TEMPERATURES[t] for t in TYPES]),
    }


def _ids_and_mask(batch: dict) -> tuple[torch.Tensor, torch.Tensor, int]:
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    return ids, mask, batch["completion_ids"].size(1)


def _by_hand(model: Any, batch: dict, temperatures: torch.Tensor) -> torch.Tensor:
    """log_softmax(logits / T_row) of each completion token; 0 on padding."""
    ids, mask, keep = _ids_and_mask(batch)
    logits = model(input_ids=ids, attention_mask=mask).logits[:, -keep - 1 : -1]
    logps = torch.log_softmax(logits.float() / temperatures[:, None, None], dim=-1)
    logps = logps.gather(-1, ids[:, -keep:, None]).squeeze(-1)
    return logps * batch["completion_mask"]


def _trainer(
    loss: LossConfig,
    temperatures: dict[str, float] | None = TEMPERATURES,
    processes: int = 1,
    distributed: str = "NO",
) -> Any:
    """A trainer at the solution temperature (``trainer_stub.loss_trainer``), its rows drawn
    at ``temperatures`` (None: all at the trainer's)."""
    trainer = loss_trainer(
        PairRLTrainer, loss, TEMPERATURES[SOLUTION], processes=processes, distributed=distributed
    )
    trainer.mixed_temperatures = temperatures is not None and mixed(temperatures)
    return trainer


def _trainer_logps(trainer: Any, model: Any, batch: dict) -> torch.Tensor:
    ids, mask, keep = _ids_and_mask(batch)
    logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, keep)
    return logps


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_each_rollout_row_is_scored_at_the_temperature_it_was_drawn_at(
    model: Any, batch: dict, chunking: str
) -> None:
    """As TRL scores the rollout's rows (old or reference log-probs): at the temperatures
    the rollout reported in the scope the trainer opened around TRL's call."""
    real = batch["completion_mask"].bool()
    with torch.no_grad(), scoring_rows():
        report_rollout_temperatures(batch[TEMPERATURE_COLUMN].tolist())
        got = _trainer_logps(_trainer(CHUNKINGS[chunking]), model, batch)
        expected = _by_hand(model, batch, batch[TEMPERATURE_COLUMN])
        at_trainer_temperature = _by_hand(model, batch, torch.ones(len(TYPES)))
    torch.testing.assert_close(got[real], expected[real], **VALUES)
    assert not got[~real].any()
    judged = torch.tensor([t == JUDGEMENT for t in TYPES])[:, None] & real
    assert (at_trainer_temperature - expected)[judged].abs().max() > 0.05  # the test can fail
    torch.testing.assert_close(got[~judged & real], at_trainer_temperature[~judged & real])


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_gradients_are_those_of_each_rows_own_temperature(
    model: Any, batch: dict, chunking: str
) -> None:
    """Row chunks recomputed in the backward must get their rows' temperatures again.
    Scored at the trainer's temperature instead, the gradients are off by far more than
    the tolerance."""
    real = batch["completion_mask"].bool()

    def grads(logps: torch.Tensor) -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        logps[real].sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    trainer = _trainer(CHUNKINGS[chunking])
    with scoring_rows(batch[TEMPERATURE_COLUMN]):  # as compute_loss opens it
        ours = grads(_trainer_logps(trainer, model, batch))
    expected = grads(_by_hand(model, batch, batch[TEMPERATURE_COLUMN]))
    wrong = grads(_by_hand(model, batch, torch.ones(len(TYPES))))
    assert ours.keys() == expected.keys()
    for name, grad in ours.items():
        atol = GRADIENT_SHARE * float(expected[name].abs().max())
        torch.testing.assert_close(grad, expected[name], rtol=0.0, atol=atol, msg=name)
    assert max(float((wrong[n] - expected[n]).abs().max()) for n in ours) > 0.1


def test_the_loss_scores_the_micro_batch_at_its_rows_temperatures(model: Any, batch: dict) -> None:
    """With old log-probs equal to the rows' own-temperature log-probs every ratio is 1, so
    TRL's DAPO loss is -sum(A_i * n_i) / sum(n_i) = -(1.5 - 5 + 0.5 + 3 - 3 + 1) / 21 = 2/21.
    The rows are given shuffled (as TRL's micro-batches are), so only the batch's own
    column, not the rollout's order, gives each row its temperature."""
    order = torch.tensor([3, 0, 5, 1, 4, 2])
    part = {k: v[order] if v.dim() else v for k, v in batch.items()}
    with torch.no_grad():
        part["old_per_token_logps"] = _by_hand(model, part, part[TEMPERATURE_COLUMN])
    loss = _trainer(CHUNKINGS["one_forward"]).compute_loss(model, part)
    assert loss.item() == pytest.approx(2 / 21, abs=1e-6)
    without = {k: v for k, v in part.items() if k != TEMPERATURE_COLUMN}
    with pytest.raises(RuntimeError, match="no 'pairrl_temperature' column"):
        _trainer(CHUNKINGS["one_forward"]).compute_loss(model, without)
    assert _trainer(LossConfig(), None).compute_loss(model, without).item() != pytest.approx(
        2 / 21, abs=1e-3
    )  # scored at the trainer's temperature, the judgements' ratios are not 1


def test_row_temperatures_from_the_config_and_when_none_are_needed() -> None:
    assert not mixed(sample_temperatures(0.6, 0.6))
    assert sample_temperatures(1.0, 0.4) == {**TEMPERATURES, NO_PAIR: 1.0, UNLABELLED: 1.0}
    assert mixed(sample_temperatures(1.0, 0.4))
    # every row at the trainer's temperature (a GRPO batch): scored as one, as TRL does
    assert scoring_temperatures(torch.ones(4), 4, 1.0) is None
    column = torch.tensor([1.0, 0.4, 1.0, 0.4, 0.4, 1.0])
    assert scoring_temperatures(column, 6, 1.0).tolist() == pytest.approx(column.tolist())
    with pytest.raises(RuntimeError, match="6 sampling temperatures for 4 rows"):
        scoring_temperatures(column, 4, 1.0)


def test_rows_of_two_temperatures_are_never_scored_outside_a_scope(model: Any, batch: dict) -> None:
    """Out of the loss and of TRL's scoring of a fresh batch there is no row's temperature
    to know: refused, not scored at the trainer's. The scope ends with its block."""
    with pytest.raises(RuntimeError, match="scored outside the loss and the rollout"):
        _trainer_logps(_trainer(CHUNKINGS["one_forward"]), model, batch)
    with pytest.raises(RuntimeError, match="rollout ran outside"):
        report_rollout_temperatures([1.0])
    with scoring_rows(torch.ones(2)):
        assert scored_row_temperatures().tolist() == [1.0, 1.0]
        with scoring_rows():  # a nested scope does not see the outer one's column
            assert scored_row_temperatures() is None
    assert scored_row_temperatures() is None
    with torch.no_grad():  # one temperature: TRL's path, no scope needed
        _trainer_logps(_trainer(CHUNKINGS["one_forward"], None), model, batch)


def test_two_temperatures_are_refused_without_the_chunked_head(model: Any) -> None:
    """Several processes, DeepSpeed or FSDP (no chunked head) or a head with a bias: TRL's
    fused head would score every row at the trainer's temperature."""
    check_scorable(TEMPERATURES, bias_free_head(model))
    check_scorable(sample_temperatures(0.6, 0.6), None)
    with pytest.raises(ConfigError, match=r"\(0.4\) differs .* \(1.0\).*make the two equal"):
        check_scorable(TEMPERATURES, None)
    for trainer in (
        _trainer(CHUNKINGS["one_forward"], processes=2),
        _trainer(CHUNKINGS["one_forward"], distributed="DEEPSPEED"),
    ):
        assert trainer._chunked_head(model) is None
    biased = SimpleNamespace(
        get_output_embeddings=lambda: torch.nn.Linear(4, 8, bias=True), config=model.config
    )
    assert bias_free_head(biased) is None
    assert bias_free_head(model) is model.get_output_embeddings()
