"""The simple-function recipe's parts: tasks and their split, the warm start's data, the
training chat template (no model is loaded here; the end-to-end job is
tests/test_recipe_smollm2_job.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pairrl.errors import InputError
from pairrl.recipes.simple_functions.conversations import (
    LabelledBlock,
    build_conversations,
    label_blocks,
)
from pairrl.recipes.simple_functions.prompts import prompt_kit
from pairrl.recipes.simple_functions.tasks import all_tasks, split_tasks, template_tasks
from pairrl.recipes.simple_functions.templates import TEMPLATES
from pairrl.rewards.code_extract import first_code_block
from pairrl.rewards.executor import Executor
from pairrl.rewards.ratings import parse_pair_ratings, parse_rating
from pairrl.train.chat_template import training_chat_template

# SmolLM2-135M-Instruct's chat template, as its GGUF file carries it
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def test_the_templates_give_150_tasks_held_out_by_template() -> None:
    tasks = all_tasks()
    assert len(tasks) >= 150 and len({t.task_id for t in tasks}) == len(tasks)
    train, heldout = split_tasks(0.25, split_seed=1234)
    assert len(train) + len(heldout) == len(tasks)
    template_of = lambda task: task.task_id.split("/")[1]  # noqa: E731
    assert not {template_of(t) for t in train} & {template_of(t) for t in heldout}
    assert round(len(TEMPLATES) * 0.25) == len({template_of(t) for t in heldout})
    assert split_tasks(0.25, 1234) == (train, heldout)  # fixed by the split seed alone
    assert split_tasks(0.25, 99)[1] != heldout
    with pytest.raises(ValueError, match="heldout_share"):
        split_tasks(1.0, 0)


def test_a_task_states_its_function_and_computes_its_asserts() -> None:
    task = template_tasks(next(t for t in TEMPLATES if t.key == "sum_above"))[1]  # k = 3
    assert task.entry_point == "sum_above_3"
    assert task.prompt == (
        "Write a Python function `sum_above_3(nums)` that returns the sum of the numbers in "
        "the list nums that are greater than 3."
    )
    # inputs [1, 2, 3], [], [-5, 10, 0, 7], [4, 4, 9]: worked by hand
    assert task.tests.cases == (
        "assert sum_above_3([1, 2, 3]) == 0",
        "assert sum_above_3([]) == 0",
        "assert sum_above_3([-5, 10, 0, 7]) == 17",
        "assert sum_above_3([4, 4, 9]) == 17",
    )


def test_hidden_tests_accept_a_right_function_and_refuse_wrong_ones() -> None:
    tasks = {t.entry_point: t for t in all_tasks()}
    right = "def count_a(s):\n    return s.count('a')\n"
    off_by_one = "def count_a(s):\n    return s.count('a') + 1\n"
    crash = "def count_a(s):\n    return s.count('a')\nprint(count_a())\n"
    with Executor(workers=1, timeout_s=5.0) as executor:
        labelled = label_blocks(
            [tasks["count_a"]],
            [[f"```python\n{right}```", f"```python\n{off_by_one}```", crash, "no code"]],
            executor,
        )
    # "crash" has no fence, "no code" neither: both dropped; the rest by their labels
    assert labelled == [[LabelledBlock(right, True), LabelledBlock(off_by_one, False)]]


def test_the_first_code_block_is_the_function() -> None:
    text = "Sure:\n```python\ndef f(n):\n    return n\n```\nTest it:\n```python\nprint(f(\n```"
    assert first_code_block(text) == "def f(n):\n    return n\n"
    assert first_code_block("```\ndef g():\n    pass\n```") == "def g():\n    pass\n"
    assert first_code_block("```python\n\n```") is None
    assert first_code_block("def f(): return 1") is None


def test_the_warm_start_teaches_own_passing_blocks_and_labels_as_ratings() -> None:
    kit = prompt_kit()
    solved, unsolved = all_tasks()[:2]
    good, bad = LabelledBlock("def f():\n    return 1\n", True), LabelledBlock("x = (", False)
    conversations = build_conversations(
        [solved, unsolved],
        [[good, bad], [bad]],
        kit,
        seed=0,
        solutions_per_task=2,
        pairs_per_task=3,
        pointwise_per_task=2,
        ab_per_task=1,
    )
    solutions = [c for c in conversations if c[0]["content"].endswith("code block.")]
    # one passing block: one solution; the unsolved task gets none
    assert [c[-1]["content"] for c in solutions] == ["```python\ndef f():\n    return 1\n```"]
    assert solutions[0][0]["content"].startswith(solved.prompt)
    pairs = [c for c in conversations if "Solution A:" in c[0]["content"]]
    assert len(pairs) == 3  # the unsolved task has one block: no pair
    for conv in pairs:
        a_first = conv[0]["content"].index("return 1") < conv[0]["content"].index("x = (")
        assert parse_pair_ratings(conv[-1]["content"]) == ((9, 1) if a_first else (1, 9))
    singles = [c for c in conversations if c[0]["content"].endswith("</rating>.")]
    assert len(singles) == 3  # two blocks of the first task, one of the second
    for conv in singles:
        assert parse_rating(conv[-1]["content"]) == (9 if "return 1" in conv[0]["content"] else 1)
    yes_no = [c for c in conversations if c[0]["content"].endswith("B for no.")]
    assert len(yes_no) == 2  # one block of each task
    for conv in yes_no:
        assert conv[-1]["content"] == ("A" if "return 1" in conv[0]["content"] else "B")
    assert len(conversations) == len(solutions) + len(pairs) + len(singles) + len(yes_no)


def test_a_chatml_template_gets_markers_and_renders_the_same(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.chat_template = SMOLLM2_TEMPLATE
    marked = training_chat_template(tokenizer)
    assert marked is not None and "{% generation %}" in marked
    conversation = [
        {"role": "user", "content": "Write f."},
        {"role": "assistant", "content": "<rating>9</rating>"},
    ]
    plain = tokenizer.apply_chat_template(conversation, tokenize=False)
    assert (
        tokenizer.apply_chat_template(conversation, tokenize=False, chat_template=marked) == plain
    )
    tokenizer.chat_template = marked
    assert training_chat_template(tokenizer) is None  # already marked


def test_a_template_without_a_known_form_is_a_clear_error(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.chat_template = (
        "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    )
    with pytest.raises(InputError, match="generation"):
        training_chat_template(tokenizer)
