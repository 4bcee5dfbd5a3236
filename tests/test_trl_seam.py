"""The private TRL symbols pairrl touches (``pairrl.train.trl_seam`` lists them): each one
is still there, with the parameters pairrl passes, in the installed TRL. A release that
renames or reshapes one fails here, naming it and where pairrl uses it."""

from __future__ import annotations

import importlib
import importlib.util
import inspect

import pytest

from pairrl.train.trl_seam import ATTRIBUTES, BEHAVIOURS, METHODS, PinnedMethod


def owner(spec: str) -> type:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def changed(method: PinnedMethod, cls: type) -> str | None:
    """What changed about ``method`` on ``cls`` (None: nothing pairrl relies on)."""
    found = getattr(cls, method.name, None)
    if found is None:
        return f"{method.owner}.{method.name} is gone ({method.used_in})"
    params = tuple(inspect.signature(found).parameters)[: len(method.params)]
    if params != method.params:
        return f"{method.owner}.{method.name}: {params}, not {method.params} ({method.used_in})"
    return None


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_each_private_method_keeps_its_parameters(method: PinnedMethod) -> None:
    problem = changed(method, owner(method.owner))
    assert problem is None, problem


@pytest.mark.parametrize("attribute", ATTRIBUTES, ids=lambda a: a[1])
def test_each_attribute_is_still_set_where_pairrl_expects_it(
    attribute: tuple[str, str, str],
) -> None:
    spec, text, used_in = attribute
    source = inspect.getsource(owner(spec).__init__)
    assert text in source, f"{spec}.__init__ no longer holds {text!r} ({used_in})"


@pytest.mark.parametrize("behaviour", BEHAVIOURS, ids=lambda b: b[2].strip())
def test_each_behaviour_pairrl_relies_on_is_still_in_the_source(
    behaviour: tuple[str, str, str, str],
) -> None:
    spec, method, text, used_in = behaviour
    source = inspect.getsource(getattr(owner(spec), method))
    assert text in source, f"{spec}.{method} no longer holds {text!r} ({used_in})"


def test_the_engine_class_the_cpu_build_swaps_is_there() -> None:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed: the colocated engine is not used")
    import trl.generation.vllm_generation as vllm_generation

    assert hasattr(vllm_generation, "LLM"), "trl.generation.vllm_generation.LLM is gone"


def test_the_public_hook_the_rollout_enters_by() -> None:
    from trl import GRPOTrainer

    assert "rollout_func" in inspect.signature(GRPOTrainer.__init__).parameters


def test_a_renamed_parameter_or_a_missing_method_is_caught() -> None:
    class Reshaped:
        def _generate_single_turn(self, prompts, images, multimodal_fields, n):
            return None

    pinned = next(m for m in METHODS if m.name == "_generate_single_turn")
    assert "not ('self', 'prompt_ids'" in str(changed(pinned, Reshaped))
    assert "is gone" in str(changed(pinned, object))
