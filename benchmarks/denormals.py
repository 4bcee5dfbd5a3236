"""Denormal floats flushed to zero (``pairrl.cpu_floats``) against kept, side by side.

The log-softmax forward and backward of a confident model's logits (the top token 40
above the rest, as a trained judge's) at temperatures 1.0 and 0.4, interleaved A/B
repeats on one thread; prints the median seconds of each and the ratio. At 0.4 most
probabilities are below float32's smallest normal number, so the kept run computes with
denormals.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/denormals.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def timed(logits: torch.Tensor, flush: bool) -> float:
    """Seconds for one log-softmax forward and backward with denormals flushed or kept."""
    torch.set_flush_denormal(flush)
    x = logits.clone().requires_grad_()
    started = time.perf_counter()
    torch.log_softmax(x, dim=-1)[:, 0].sum().backward()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="A/B pairs per temperature")
    parser.add_argument("--rows", type=int, default=4000, help="token positions")
    parser.add_argument("--vocab", type=int, default=1000, help="vocabulary size")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logits = torch.randn(args.rows, args.vocab, generator=torch.Generator().manual_seed(0)) * 3
    logits[:, 0] += 40.0
    for temperature in (1.0, 0.4):
        scaled = logits / temperature
        kept, flushed = [], []
        for _ in range(args.repeats):
            kept.append(timed(scaled, flush=False))
            flushed.append(timed(scaled, flush=True))
        a, b = statistics.median(kept), statistics.median(flushed)
        print(f"T={temperature}: kept {a:.4f} s, flushed {b:.4f} s, kept/flushed {a / b:.2f}x")
    torch.set_flush_denormal(False)


if __name__ == "__main__":
    main()
