"""The policy loss a PairRL step minimises, on a batch worked out by hand: TRL's DAPO loss
(the default ``loss:`` section: clip 0.2 / 0.28, no KL, token-level ratios) over PairRL's
advantages, normalised by the step's completion tokens."""

from __future__ import annotations

import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from pairrl.train.config import LossConfig
from pairrl.train.trainer import PairRLTrainer

# Two rows of three completion tokens; the second row's last token is padding.
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])
OLD = torch.tensor([[-1.0, -2.0, -0.5], [-1.5, -1.0, -3.0]])  # log-probs when sampled
STEP = torch.tensor([[0.1, 0.4, -0.3], [-0.4, 0.05, 0.0]])  # log-ratio after an update
# A solution row with advantage +0.5, a judgement row with advantage -1.0 (lambda applied)
ADVANTAGES = torch.tensor([0.5, -1.0])


def _trainer(loss: LossConfig) -> PairRLTrainer:
    """A PairRLTrainer with only what TRL's loss reads: one process, no accumulation."""
    trainer = object.__new__(PairRLTrainer)
    trainer.loss_type, trainer.beta = loss.loss_type, loss.beta
    trainer.epsilon_low, trainer.epsilon_high = loss.epsilon_low, loss.epsilon_high
    trainer.importance_sampling_level = "token"
    trainer.top_entropy_quantile, trainer.off_policy_mask_threshold = 1.0, None
    trainer.aux_loss_enabled = trainer._entropy_bonus_enabled = trainer.use_vllm = False
    trainer.args = SimpleNamespace(delta=None, steps_per_generation=1)
    trainer.current_gradient_accumulation_steps = 1
    trainer.model = SimpleNamespace(training=True)
    trainer.accelerator = SimpleNamespace(
        num_processes=1, gather=lambda x: x, reduce=lambda x, reduction: x
    )
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    return trainer


def test_the_dapo_loss_over_pairrl_advantages_matches_the_hand_worked_batch() -> None:
    loss_cfg = LossConfig()
    assert (loss_cfg.loss_type, loss_cfg.epsilon_low, loss_cfg.epsilon_high) == ("dapo", 0.2, 0.28)
    assert loss_cfg.beta == 0.0
    trainer = _trainer(loss_cfg)
    new = (OLD + STEP).requires_grad_(True)
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: (new, torch.zeros_like(new), None)
    inputs = {
        "prompt_ids": torch.zeros(2, 1, dtype=torch.long),
        "prompt_mask": torch.ones(2, 1, dtype=torch.long),
        "completion_ids": torch.zeros(2, 3, dtype=torch.long),
        "completion_mask": MASK,
        "advantages": ADVANTAGES,
        "old_per_token_logps": OLD,
        "num_items_in_batch": torch.tensor(5.0),  # the step's completion tokens
    }
    loss = trainer._compute_loss(None, inputs)

    # Per token: ratio r = exp(step), clipped to [0.8, 1.28]; loss -min(r*A, clip(r)*A).
    # Row 1 (A = +0.5): r = 1.105171, 1.491825 (clipped to 1.28), 0.740818 (below 0.8: r*A
    # is the smaller, so unclipped): -0.552585, -0.640000, -0.370409.
    # Row 2 (A = -1.0): r = 0.670320 (clipped to 0.8: -0.8 is the smaller), 1.051271,
    # padding: +0.800000, +1.051271, 0.
    row1 = -0.5 * math.exp(0.1) - 0.5 * 1.28 - 0.5 * math.exp(-0.3)
    row2 = 0.8 + math.exp(0.05)
    assert row1 == pytest.approx(-1.562994, abs=1e-6)
    assert row2 == pytest.approx(1.851271, abs=1e-6)
    # DAPO: the sum over the batch's tokens divided by its 5 loss tokens
    assert loss.item() == pytest.approx((row1 + row2) / 5, abs=1e-6)
    assert loss.item() == pytest.approx(0.0576554, abs=1e-6)

    # The gradient: -A*r/5 on unclipped tokens, 0 on clipped ones and on padding.
    loss.backward()
    expected = [
        [-0.5 * math.exp(0.1) / 5, 0.0, -0.5 * math.exp(-0.3) / 5],
        [0.0, math.exp(0.05) / 5, 0.0],
    ]
    assert new.grad is not None
    assert new.grad.tolist() == [pytest.approx(row, abs=1e-6) for row in expected]
    # TRL's clip metrics count the clipped tokens: 1 high (row 1) and 1 low (row 2) of 5
    metrics = trainer._metrics["train"]
    assert metrics["clip_ratio/high_mean"] == [pytest.approx(1 / 5)]
    assert metrics["clip_ratio/low_mean"] == [pytest.approx(1 / 5)]
