"""Build a tiny tokenizer and causal LM locally, with no downloads.

Every test and the CPU demo use this model: a byte-level BPE tokenizer trained on text the
package generates (so it covers Python code, the judge prompts and digits), and a randomly
initialised Qwen3-style causal LM of a few hundred thousand parameters. Both are written with
`save_pretrained` and reload with `AutoTokenizer` / `AutoModelForCausalLM`. The same seed
gives the same files.
"""

from __future__ import annotations

import builtins
import keyword
import random
from pathlib import Path
from typing import Any

__all__ = [
    "CHAT_TEMPLATE",
    "SPECIAL_TOKENS",
    "build_tiny_model",
    "build_tiny_tokenizer",
    "load_tiny_model",
    "tiny_corpus",
]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

# Qwen-style roles. `{% generation %}` marks assistant text so TRL's SFTTrainer can train on
# assistant tokens only (assistant_only_loss=True).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\n' }}"
    "{% else %}{{ message['content'] + '<|im_end|>' + '\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_WORDS = [
    "you",
    "are",
    "an",
    "expert",
    "reviewer",
    "compare",
    "solution",
    "a",
    "and",
    "solution",
    "b",
    "to",
    "the",
    "problem",
    "trace",
    "them",
    "mentally",
    "on",
    "test",
    "cases",
    "including",
    "edge",
    "cases",
    "prefer",
    "the",
    "more",
    "robust",
    "one",
    "when",
    "both",
    "look",
    "correct",
    "reason",
    "first",
    "then",
    "give",
    "ratings",
    "rating",
    "from",
    "1",
    "to",
    "10",
    "where",
    "10",
    "means",
    "correct",
    "and",
    "robust",
    "5",
    "borderline",
    "1",
    "incorrect",
    "write",
    "a",
    "python",
    "function",
    "that",
    "returns",
    "the",
    "answer",
    "is",
    "this",
    "solution",
    "correct",
    "answer",
    "yes",
    "or",
    "no",
    "think",
    "step",
    "by",
    "step",
    "final",
    "answer",
    "boxed",
    "list",
    "string",
    "number",
    "sum",
    "of",
    "the",
    "elements",
    "given",
    "an",
    "integer",
    "n",
    "return",
    "true",
    "if",
    "false",
    "otherwise",
    "sorted",
    "reverse",
    "maximum",
    "minimum",
    "count",
    "characters",
    "words",
    "in",
    "a",
    "sentence",
    "check",
    "whether",
]

_CODE_SNIPPETS = [
    "def {f}({a}):\n    return {a} + {n}\n",
    "def {f}({a}, {b}):\n    if {a} > {b}:\n        return {a}\n    return {b}\n",
    "def {f}({a}):\n    total = 0\n    for x in {a}:\n        total += x\n    return total\n",
    "def {f}({a}):\n    return sorted({a}, reverse=True)[:{n}]\n",
    "def {f}({a}):\n    return [x * {n} for x in {a} if x % 2 == 0]\n",
    "def {f}({a}):\n    while {a} > {n}:\n        {a} = {a} // 2\n    return {a}\n",
    "def {f}({a}: str) -> bool:\n    return {a} == {a}[::-1]\n",
    "import math\n\ndef {f}({a}):\n    return math.sqrt({a}) if {a} >= 0 else None\n",
    "assert {f}({n}) == {m}\nassert {f}([{n}, {m}]) == {m}\n",
]


def tiny_corpus(seed: int = 0, num_lines: int = 3000) -> list[str]:
    """Generated training text for the tokenizer: prose, code, chat turns, tags and digits."""
    rng = random.Random(seed)
    # Python's own vocabulary, so code tokenises into words rather than bytes.
    words = _WORDS + sorted(keyword.kwlist) + sorted(n for n in dir(builtins) if n.islower())
    names = ["solve", "add", "count", "is_valid", "find_max", "helper", "f", "g", "check"]
    args = ["x", "y", "n", "nums", "s", "arr", "k", "items", "text"]
    lines: list[str] = []
    for i in range(num_lines):
        kind = i % 5
        if kind == 0:
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 20))))
        elif kind == 1:
            template = rng.choice(_CODE_SNIPPETS)
            lines.append(
                template.format(
                    f=rng.choice(names),
                    a=rng.choice(args),
                    b=rng.choice(args),
                    n=rng.randint(0, 999),
                    m=rng.randint(0, 99999),
                )
            )
        elif kind == 2:
            a, b = rng.randint(0, 9999), rng.randint(0, 9999)
            lines.append(f"{a} + {b} = {a + b}; {a} * {b} = {a * b}")
        elif kind == 3:
            ra, rb = rng.randint(1, 10), rng.randint(1, 10)
            lines.append(
                f"<rating_A>{ra}</rating_A> <rating_B>{rb}</rating_B> <rating>{ra}</rating>"
            )
        else:
            body = " ".join(rng.choice(_WORDS) for _ in range(6))
            lines.append(f"```python\n# {body}\n```\n\\boxed{{{rng.randint(0, 500)}}}")
    return lines


def build_tiny_tokenizer(seed: int = 0, vocab_size: int = 1024) -> Any:
    """Train a byte-level BPE tokenizer (digits split one per token) and wrap it for HF."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    # Digits become single tokens so that numbers (and ratings 1..10) tokenise predictably.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(tiny_corpus(seed), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<think>", "</think>"],
        chat_template=CHAT_TEMPLATE,
        model_max_length=4096,
    )


def build_tiny_model(
    out_dir: str | Path,
    seed: int = 0,
    *,
    hidden_size: int = 64,
    num_layers: int = 4,
    intermediate_size: int = 192,
    head_dim: int = 32,
    num_heads: int | None = None,
    num_kv_heads: int | None = None,
    vocab_size: int = 1024,
    tie_word_embeddings: bool = True,
) -> Path:
    """Write a tokenizer and a randomly initialised Qwen3-style LM to `out_dir`.

    Defaults give about 260k parameters. Deterministic for a given `seed`. One model for
    both engines: the attention heads are `head_dim` wide (32 by default, the narrowest
    vLLM's CPU attention accepts; it takes 32, 64, 80, 96, 112, 128, ...), `num_heads`
    defaults to `hidden_size // head_dim` (at least 1) and `num_kv_heads` to half of it
    (at least 1), so the default width 64 has 2 query heads sharing 1 key/value head.
    """
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer(seed=seed, vocab_size=vocab_size)
    heads = num_heads or max(1, hidden_size // head_dim)
    kv_heads = num_kv_heads or max(1, heads // 2)
    if heads % kv_heads:
        raise ValueError(f"num_heads {heads} must be a multiple of num_kv_heads {kv_heads}")
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=4096,
        tie_word_embeddings=tie_word_embeddings,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=True,
        max_new_tokens=64,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def load_tiny_model(path: str | Path, padding_side: str = "left") -> tuple[Any, Any]:
    """Load a model and tokenizer saved by `build_tiny_model` (or any HF causal LM folder).

    transformers 5 does not save `padding_side`, so it is set here.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = padding_side
    model = AutoModelForCausalLM.from_pretrained(path)
    return model, tokenizer
