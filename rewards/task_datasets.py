"""Tasks from a ``datasets`` source, with a column mapping.

One ``path`` names the source, told apart in this order:

* an existing folder: a dataset saved with ``save_to_disk`` (a ``DatasetDict`` folder
  gives its ``split``);
* an existing ``.parquet`` file (read with pyarrow, nothing is copied);
* any other existing file: a task file (``pairrl.rewards.task_loaders.load_tasks``);
* a path that looks local (it starts with ``/``, ``.`` or ``~``, or ends in a file
  suffix) but does not exist: an error naming it;
* anything else: a hub id (``openai/gsm8k``), loaded with ``datasets.load_dataset(path,
  subset, split=split)``, which reads the local cache when offline (``HF_HUB_OFFLINE=1``).

Rows go through the task-file row parser, after ``columns`` (``{task field: column}``)
renamed them: ``{problem: question}`` reads GSM8K. A mapped column that is absent is an
error naming it and the columns there are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pairrl.errors import InputError
from pairrl.rewards.task_loaders import load_tasks, rows_to_tasks
from pairrl.rewards.tasks import Task

__all__ = [
    "DatasetRows",
    "SourceKind",
    "check_task_source",
    "load_task_source",
    "open_rows",
    "source_kind",
]

SourceKind = Literal["folder", "parquet", "file", "hub"]
_SUFFIXES = (".json", ".jsonl", ".gz", ".parquet", ".arrow", ".csv")
EXPECTED = (
    "a task file (JSON/JSONL, optionally .gz), a parquet file, a dataset folder "
    "(save_to_disk) or a datasets hub id"
)


@dataclass(frozen=True)
class DatasetRows:
    """A dataset's rows (dicts), its column names, and how messages name it."""

    where: str
    columns: list[str]
    rows: Iterable[dict[str, Any]]
    id_prefix: str  # task ids of rows without one: <id_prefix>/<row index>


def source_kind(path: str) -> SourceKind:
    """Which kind of source ``path`` names (see the module docstring); raises
    :class:`InputError` for a local-looking path that does not exist."""
    local = Path(path).expanduser()
    if local.is_dir():
        return "folder"
    if local.is_file():
        return "parquet" if local.suffix == ".parquet" else "file"
    if path.startswith(("/", ".", "~")) or path.endswith(_SUFFIXES) or path.count("/") > 1:
        raise InputError(f"{path}: file not found; expected {EXPECTED}")
    return "hub"


def check_task_source(path: str, columns: dict[str, str] | None = None) -> SourceKind:
    """Cheap checks before anything loads: the path exists (local kinds) and the mapped
    columns are in a parquet file's schema."""
    kind = source_kind(path)
    if columns and kind == "parquet":
        _check_columns(path, _parquet_columns(path), columns)
    return kind


def open_rows(path: str, subset: str | None = None, split: str = "train") -> DatasetRows:
    """The rows of a parquet file, a dataset folder or a hub id (not a task file)."""
    kind = source_kind(path)
    if kind == "file":
        raise InputError(f"{path}: a task file, not a dataset; expected {EXPECTED}")
    if kind == "parquet":
        import pyarrow.parquet as pq

        names = _parquet_columns(path)
        return DatasetRows(path, names, pq.read_table(path).to_pylist(), Path(path).stem)
    if kind == "folder":
        data = _open_folder(path, split)
        return DatasetRows(path, list(data.column_names), data, Path(path).name)
    data = _open_hub(path, subset, split)
    where = f"{path} ({subset or 'default'}, split {split})"
    prefix = path.split("/")[-1] + (f"/{subset}" if subset else "")
    return DatasetRows(where, list(data.column_names), data, prefix)


def load_task_source(
    path: str,
    columns: dict[str, str] | None = None,
    subset: str | None = None,
    split: str = "train",
) -> list[Task]:
    """Every task of ``path`` (any kind above), rows renamed by ``columns``; a source that
    holds no task is an :class:`InputError`."""
    if source_kind(path) == "file":
        return load_tasks(path, columns)
    rows = open_rows(path, subset, split)
    _check_columns(rows.where, rows.columns, columns or {})
    tasks = rows_to_tasks(iter(rows.rows), rows.where, columns, 0, rows.id_prefix)
    if not tasks:
        raise InputError(f"{rows.where}: holds no task (no rows); expected {EXPECTED}")
    return tasks


def _parquet_columns(path: str) -> list[str]:
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{path}: not a readable parquet file: {exc}") from None


def _check_columns(where: str, names: list[str], columns: dict[str, str]) -> None:
    for task_field, column in columns.items():
        if column not in names:
            raise InputError(
                f"{where}: column {column!r} (task field {task_field!r} in the column "
                f"mapping) is not there; its columns are: {', '.join(names)}"
            )


def _open_folder(path: str, split: str) -> Any:
    import datasets

    try:
        data = datasets.load_from_disk(path)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: not a dataset folder saved with save_to_disk: {exc}") from None
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise InputError(
                f"{path}: no split {split!r}; its splits are: {', '.join(sorted(data))}"
            )
        return data[split]
    return data


def _open_hub(path: str, subset: str | None, split: str) -> Any:
    import datasets

    try:
        return datasets.load_dataset(path, subset, split=split)
    except Exception as exc:  # offline misses, unknown ids and bad splits all land here
        raise InputError(
            f"{path} (subset {subset!r}, split {split!r}): cannot be loaded as a datasets hub "
            f"id ({type(exc).__name__}: {str(exc)[:300]}); offline, a hub dataset must be in "
            f"the local cache; expected {EXPECTED}"
        ) from None
