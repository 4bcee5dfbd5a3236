"""Padding buckets: run a padded batch as at most two narrower ones when that pads less.

A batch that mixes short rows (solutions) with ~2-3x longer ones (pairwise judgements)
pays the longest row's width on every row. Splitting it into a narrow and a wide bucket,
each trimmed to its own widest row, computes the same values up to float rounding:
masked positions take no part in attention and rotary attention depends only on
relative positions. The RL update (``forward_in_buckets``, prompts
left-padded) and the warm start (``right_padded_buckets``, conversations right-padded)
both split this way. Within a bucket, ``token_chunks`` cuts the rows into chunks of at most a
token budget (rows x width), so that one forward never holds more activations than that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

__all__ = ["forward_in_buckets", "padding_buckets", "right_padded_buckets", "token_chunks"]


def padding_buckets(widths: list[int], min_saving: float = 0.25) -> list[list[int]]:
    """Row indices in one bucket, or two (narrow rows, wide rows) if that pads less.

    ``widths[i]`` is the width row ``i`` needs (its real tokens). A bucket costs ``rows x
    its widest row``; the split point over the rows sorted by width is the one with the
    lowest total cost. It is used only if it saves at least ``min_saving`` of the
    one-bucket cost, since every extra forward has a fixed cost (small length differences
    are not worth it).
    """
    order = sorted(range(len(widths)), key=lambda i: widths[i])
    sorted_widths = [widths[i] for i in order]
    n = len(order)
    best_cost, best_k = n * (sorted_widths[-1] if n else 0), n
    for k in range(1, n):
        cost = k * sorted_widths[k - 1] + (n - k) * sorted_widths[-1]
        if cost < best_cost:
            best_cost, best_k = cost, k
    if best_k == n or best_cost > (1.0 - min_saving) * n * sorted_widths[-1]:
        return [order]
    return [order[:best_k], order[best_k:]]


def token_chunks(rows: list[int], width: int, max_tokens: int | None) -> list[list[int]]:
    """``rows`` (each ``width`` tokens wide) as consecutive chunks of at most ``max_tokens``
    tokens, of near-equal row counts; one row is never split, so a single row wider than the
    budget is a chunk of its own. ``max_tokens`` None: one chunk.

    >>> token_chunks([4, 0, 2, 1, 3], width=100, max_tokens=250)
    [[4], [0, 2], [1, 3]]
    """
    if max_tokens is None or not rows:
        return [rows]
    per_chunk = max(1, max_tokens // max(width, 1))
    count = -(-len(rows) // per_chunk)
    # near-equal chunks (5 rows at most 2 per chunk: 1 + 2 + 2, not 2 + 2 + 1) keep the matrix
    # products of every chunk about as wide
    return [rows[i * len(rows) // count : (i + 1) * len(rows) // count] for i in range(count)]


def right_padded_buckets(batch: dict[str, Any]) -> list[dict[str, Any]]:
    """A right-padded batch as one or two sub-batches, each cut to its widest row.

    Every ``(rows, length)`` tensor of ``batch`` (``input_ids``, ``attention_mask``,
    ``labels``, ...) is split by rows and cut to the bucket's widest real row; anything
    else is passed on as it is. A batch whose mask is not right padding (a row with a
    real token after a padded one), or without an ``attention_mask``, stays whole.
    """
    mask = batch.get("attention_mask")
    if mask is None or mask.dim() != 2:
        return [batch]
    lengths = mask.sum(dim=1)
    columns = torch.arange(mask.size(1), device=mask.device)
    if not torch.equal(mask != 0, columns[None, :] < lengths[:, None]):
        return [batch]
    buckets = padding_buckets(lengths.tolist())
    if len(buckets) == 1:
        return [batch]
    shape = mask.shape
    parts = []
    for rows in buckets:
        index = torch.tensor(rows, device=mask.device)
        width = int(lengths[index].max())
        parts.append(
            {
                key: value[index, :width]
                if isinstance(value, torch.Tensor) and value.shape[:2] == shape
                else value
                for key, value in batch.items()
            }
        )
    return parts


def forward_in_buckets(
    forward: Callable[..., tuple[torch.Tensor, torch.Tensor | None]],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    max_tokens: int | None = None,
    recompute: bool = False,
    row_values: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``forward(input_ids, attention_mask)`` per padding bucket and token chunk, results in
    the input order; with ``row_values`` (one per row), ``forward(ids, mask, values)`` gets
    its chunk's rows' values too.

    Prompts are left-padded to the batch's widest one, so a batch mixing short solution
    prompts with long judgement prompts pays the long width on every row. Each bucket drops
    the leading columns that are padding in all its rows: masked keys take no part in
    attention and rotary attention depends only on relative positions, so the per-token
    log-probs are the same up to float rounding (checked in tests/test_train_padding.py).
    Each bucket is then cut into chunks of at most ``max_tokens`` (rows x width,
    ``token_chunks``). With ``recompute`` and several chunks, all but the last run under
    ``torch.utils.checkpoint``: the forward keeps only their inputs and outputs, and the
    backward recomputes one chunk at a time, so the activations held at once are about one
    chunk's, for one more forward of those chunks.
    """
    pieces = _row_pieces(attention_mask, logits_to_keep, max_tokens)
    extra = () if row_values is None else (row_values,)
    if len(pieces) == 1 and pieces[0][1] == 0:
        return forward(input_ids, attention_mask, *extra)
    logps, entropies, order = [], [], []
    for i, (rows, trim) in enumerate(pieces):
        index = torch.tensor(rows, device=input_ids.device)
        args = (input_ids[index, trim:], attention_mask[index, trim:], *(v[index] for v in extra))
        if recompute and i < len(pieces) - 1:
            lp, ent = checkpoint(forward, *args, use_reentrant=False)
        else:
            # the last chunk's backward runs first, while nothing else is recomputed
            lp, ent = forward(*args)
        logps.append(lp)
        entropies.append(ent)
        order.extend(rows)
    inverse = torch.empty(len(order), dtype=torch.long, device=input_ids.device)
    inverse[torch.tensor(order, device=input_ids.device)] = torch.arange(
        len(order), device=input_ids.device
    )
    entropy = None if entropies[0] is None else torch.cat(entropies)[inverse]
    return torch.cat(logps)[inverse], entropy


def _row_pieces(
    attention_mask: torch.Tensor, logits_to_keep: int, max_tokens: int | None
) -> list[tuple[list[int], int]]:
    """(rows, leading columns to drop) per forward: padding buckets, each in token chunks.
    One bucket is not trimmed (its rows keep the batch's width, as one forward would)."""
    prompt_width = attention_mask.size(1) - logits_to_keep
    real = attention_mask[:, :prompt_width] != 0
    # first real prompt column per row (prompt_width when a row has no prompt token)
    first = torch.where(real.any(dim=1), real.int().argmax(dim=1), prompt_width)
    buckets = padding_buckets((prompt_width - first).tolist())
    pieces = []
    for rows in buckets:
        trim = int(first[rows].min()) if len(buckets) > 1 else 0
        width = attention_mask.size(1) - trim
        pieces.extend((chunk, trim) for chunk in token_chunks(rows, width, max_tokens))
    return pieces
