"""The HF sampler's token pick (``pick_tokens``) against per-row ``torch.multinomial``.

Every decode step of ``pairrl.rollout.samplers.hf.HFSampler`` draws one token per row,
each row from its own seeded generator (so a seed reproduces a completion whatever the
batch). The reference draws with ``torch.multinomial`` row by row; the sampler draws the
same tokens (checked here, and in ``tests/test_samplers.py``) with the exponential noise
per row and one division and argmax for the batch. Prints milliseconds per decode step
for both and the ratio, for a batch and vocabulary like the main job's benchmark runs.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/hf_sampling.py --batch 256 --vocab 950
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pairrl.rollout.samplers.base import SamplingParams
from pairrl.rollout.samplers.hf import pick_tokens


def reference_pick(
    logits: torch.Tensor, temperature: float, generators: list[torch.Generator]
) -> torch.Tensor:
    """Softmax, then one ``torch.multinomial`` call per row with its row's generator."""
    probs = torch.softmax(logits / temperature, dim=-1)
    rows = [torch.multinomial(probs[b], 1, generator=generators[b]) for b in range(len(probs))]
    return torch.cat(rows)


def time_steps(pick, steps: int, batch: int) -> tuple[float, list[torch.Tensor]]:
    """Median milliseconds per step of ``pick(generators)`` over ``steps`` steps."""
    generators = [torch.Generator().manual_seed(1000 + b) for b in range(batch)]
    times, picks = [], []
    for _ in range(steps):
        started = time.perf_counter()
        picks.append(pick(generators))
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), picks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="rows per decode step")
    parser.add_argument("--vocab", type=int, default=950, help="vocabulary size")
    parser.add_argument("--steps", type=int, default=100, help="decode steps timed")
    parser.add_argument("--temperature", type=float, default=0.6)
    args = parser.parse_args()

    logits = 3 * torch.randn(args.batch, args.vocab, generator=torch.Generator().manual_seed(0))
    params = SamplingParams(temperature=args.temperature, max_tokens=1, seed=0)
    active = [True] * args.batch

    def batched(gens: list[torch.Generator]) -> torch.Tensor:
        return pick_tokens(logits, params, gens, active)

    ref_ms, ref_picks = time_steps(
        lambda g: reference_pick(logits, args.temperature, g), args.steps, args.batch
    )
    new_ms, new_picks = time_steps(batched, args.steps, args.batch)
    same = all(torch.equal(a, b) for a, b in zip(ref_picks, new_picks, strict=True))
    print(f"batch {args.batch}, vocab {args.vocab}, {args.steps} steps (median ms per step)")
    print(f"  per-row torch.multinomial  {ref_ms:7.2f} ms")
    print(f"  pick_tokens (HFSampler)    {new_ms:7.2f} ms")
    print(f"  ratio (reference / sampler) {ref_ms / new_ms:6.2f}x; same tokens: {same}")
    if not same:
        raise SystemExit("the sampler drew different tokens from torch.multinomial")


if __name__ == "__main__":
    main()
