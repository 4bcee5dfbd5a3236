"""The HF sampler's prefill: the next token's logits only (``logits_to_keep=1``, what
``pairrl.rollout.samplers.hf.HFSampler`` asks for) against a logit row per prompt token.

A batch of left-padded prompts goes through the model once; only the last position's
logits are ever read. With a 49,152-token vocabulary (SmolLM2) a row per prompt token is
batch x length x 49,152 floats (3.8 GB at 64 x 300) and an LM head over every position.
Each variant runs in its own process (its peak RSS is its own), alternating, ``--repeats``
times; prints median seconds per prefill, the ratio, and peak RSS.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/hf_prefill.py --model smollm2 --batch 64 --length 300
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time


def prefill(model_path: str, batch: int, length: int, keep: int, repeats: int) -> dict:
    """Seconds per prefill (each repeat) and this process's peak RSS in MB."""
    import torch
    from transformers import AutoModelForCausalLM

    from pairrl.model_source import resolve_model_path

    model = AutoModelForCausalLM.from_pretrained(resolve_model_path(model_path)).eval()
    ids = torch.randint(100, 1000, (batch, length), generator=torch.Generator().manual_seed(0))
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            started = time.perf_counter()
            logits = model(input_ids=ids, logits_to_keep=keep).logits[:, -1, :]
            times.append(time.perf_counter() - started)
    del logits
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": times, "peak_mb": peak_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="model folder, .gguf or smollm2")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=300, help="prompt tokens per row")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(prefill(args.model, args.batch, args.length, args.child, args.repeats)))
        return
    runs: dict[str, list[dict]] = {"next token (1)": [], "every position (0)": []}
    for _ in range(2):
        for name, keep in (("next token (1)", 1), ("every position (0)", 0)):
            cmd = [sys.executable, __file__, "--model", args.model, "--batch", str(args.batch),
                   "--length", str(args.length), "--repeats", str(args.repeats), "--child", str(keep)]  # fmt: skip
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
    median = {n: statistics.median(t for r in rs for t in r["seconds"]) for n, rs in runs.items()}
    for name, rs in runs.items():
        peak = max(r["peak_mb"] for r in rs)
        print(f"{name:>20}: {median[name]:.2f} s per prefill, peak RSS {peak:.0f} MB")
    ratio = median["every position (0)"] / median["next token (1)"]
    print(f"every position / next token: {ratio:.2f}x ({args.batch} x {args.length} tokens)")


if __name__ == "__main__":
    main()
