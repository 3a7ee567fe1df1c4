"""Helpers the inspection commands share: metric names, op-name matching, dump look-up, JSON-safe
values, and terminal rendering (tables that fit the terminal, colours only on a TTY)."""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..errors import InputFormatError, UsageError
from ..filekind import FileKind, sniff
from ..ingest.table import METRIC_COLUMNS, STAT_DIFF_COLUMNS
from ..inputfiles import open_input
from ..tensors.dump_names import safe_name
from ..tensors.inventory import DumpFile, comparison_format, scan_folder
from .tensor_text import read_text

#: Metrics where higher is better (a threshold is a floor); every other metric is an error (a ceiling).
HIGHER_IS_BETTER: frozenset[str] = frozenset({"cosine", "err_ratio_1e3", "err_ratio_5e3"})
#: Short names accepted on the command line.
METRIC_ALIASES: dict[str, str] = {
    "cos": "cosine", "red": "relative_euclidean_distance", "mae": "mean_absolute_error",
    "rmse": "root_mean_square_error", "kl": "kl_divergence", "max_abs": "max_abs_error",
    "max_rel": "max_relative_error", "mean_rel": "mean_relative_error", "are": "accumulated_relative_error",
}
SHORT_NAMES: dict[str, str] = {
    "cosine": "cos", "max_abs_error": "max_abs", "accumulated_relative_error": "acc_rel",
    "relative_euclidean_distance": "red", "kl_divergence": "kl", "mean_absolute_error": "mae",
    "root_mean_square_error": "rmse", "max_relative_error": "max_rel", "mean_relative_error": "mean_rel",
    # msprobe's statistics layout: the relative error of each statistic; MD5 mode: the checksums differ.
    "max_rel_diff": "max rel", "min_rel_diff": "min rel", "mean_rel_diff": "mean rel", "norm_rel_diff": "norm rel",
    "checksum_differs": "md5 differs",
}


def metric_name(text: str) -> str:
    """A canonical metric column name from a name or alias (``cos``, ``red``, ``CosineSimilarity``)."""
    key = re.sub(r"(?<!^)(?=[A-Z])", "_", text.strip()).lower() if any(c.isupper() for c in text) else text
    key = key.strip().lower().replace("-", "_")
    key = {"cosine_similarity": "cosine", "relative_euclidean_distance": "relative_euclidean_distance",
           "kullback_leibler_divergence": "kl_divergence", "max_absolute_error": "max_abs_error"}.get(key, key)
    key = METRIC_ALIASES.get(key, key)
    if key not in METRIC_COLUMNS and key not in STAT_DIFF_COLUMNS:
        raise UsageError(f"unknown metric {text!r}: use one of {', '.join(METRIC_COLUMNS + STAT_DIFF_COLUMNS)} "
                         f"(or {', '.join(METRIC_ALIASES)})")
    return key


def parse_threshold(text: str) -> tuple[str, float]:
    """``cosine=0.98`` -> ("cosine", 0.98)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise UsageError(f"expected METRIC=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"not a number in {text!r}") from None
    return metric_name(name), number


def squash(text: str) -> str:
    """Lower case without separators: what fuzzy name matching compares."""
    return re.sub(r"[\s._/\\:-]+", "", text.lower())


def fuzzy_contains(haystack: str, needle: str) -> bool:
    """Case-insensitive substring match that ignores ``. _ / \\ : -`` and spaces."""
    return needle.lower() in haystack.lower() or squash(needle) in squash(haystack)


def jsonable(value: Any) -> Any:
    """Plain JSON: NaN -> null, +-inf -> "inf"/"-inf", numpy scalars and arrays -> Python, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if math.isnan(number):
            return None
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return number
    if isinstance(value, Path):
        return str(value)
    try:
        import pandas as pd
        if value is pd.NA:
            return None
    except ImportError:  # pragma: no cover
        pass
    return value


# --- dump files by op name --------------------------------------------------------------------------

def parse_tensor_ref(ref: str) -> tuple[str, str, str]:
    """``conv1`` -> (conv1, output, 0); ``conv1:input:1`` -> (conv1, input, 1) (the table's tensor_id)."""
    match = re.match(r"^(?P<op>.+?):(?P<io>input|output):(?P<slot>[^:]+)$", ref)
    if match:
        return match["op"], match["io"], match["slot"]
    return ref, "output", "0"


def find_dump(folder: Path, ref: str) -> DumpFile:
    """The dump file in ``folder`` holding tensor ``ref`` (an op name, or ``op:io:slot``)."""
    dumps = scan_folder(Path(folder), "dump")
    op, io, slot = parse_tensor_ref(ref)
    keys = dumps.by_key()
    for candidate in (op, safe_name(op)):
        if (candidate, io, slot) in keys:
            return keys[(candidate, io, slot)]
    matches = {key: dump for key, dump in keys.items()
               if key[1:] == (io, slot) and fuzzy_contains(key[0], op)}
    if len(matches) == 1:
        return next(iter(matches.values()))
    if matches:
        names = ", ".join(sorted(k[0] for k in matches)[:8])
        raise UsageError(f"{ref!r} matches {len(matches)} dumped ops in {folder}: {names}")
    ops = sorted({key[0] for key in keys})
    raise InputFormatError(f"no dump of {op} {io} {slot} (ops dumped: {', '.join(ops[:8])}"
                           f"{', ...' if len(ops) > 8 else ''})", path=Path(folder))


def resolve_tensor_file(ref: str, dumps: Path | None) -> Path:
    """A path to an .npy file: ``ref`` itself when it is a file, else looked up by op name in ``dumps``."""
    path = Path(ref)
    if path.is_file():
        return path
    if dumps is None:
        raise InputFormatError("file not found (give --dumps DIR to name a tensor by its op)", path=path)
    return find_dump(dumps, ref).path


def load_array(path: Path) -> np.ndarray:
    """An ``.npy`` tensor, or a text export written by ``advisor tensor --txt``; any other file is
    an InputFormatError saying what the file is instead (advisor/filekind.py)."""
    path = Path(path)
    if not path.is_file():
        raise InputFormatError("file not found", path=path)
    kind = sniff(path, comparison_format)
    if kind.is_a("tensor-text"):
        return read_text(path)
    if not kind.is_a("npy"):
        raise not_a_tensor(path, kind)
    try:
        with open_input(path) as handle:
            array = np.load(handle, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputFormatError(f"a damaged .npy file ({exc})", path=path) from None
    if not isinstance(array, np.ndarray) or array.dtype.hasobject:
        raise InputFormatError("holds no numeric tensor", path=path)
    if array.dtype.kind not in "biuf":
        raise InputFormatError(f"holds {array.dtype} data, not numbers", path=path)
    return array


def not_a_tensor(path: Path, kind: FileKind) -> InputFormatError:
    """``x.csv: is a comparison CSV (msaccucmp), not a tensor: ...`` with what to do instead."""
    hint = {"comparison": ": analyse it with advisor run, or list its ops with advisor ops",
            "csv": " (a tensor is an .npy file, or the text export of advisor tensor --txt)",
            "text": " (a tensor is an .npy file, or the text export of advisor tensor --txt)",
            "json": "; two msprobe dump.json files are compared with advisor run --bench A --target B"}
    return InputFormatError(f"is {kind.description}, not a tensor{hint.get(kind.name, ' (.npy expected)')}",
                            path=path)


# --- terminal rendering -----------------------------------------------------------------------------

def use_colour(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ


def paint(text: str, colour: str | None, enabled: bool) -> str:
    codes = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}
    if not enabled or not colour:
        return text
    return f"\x1b[{codes[colour]}m{text}\x1b[0m"


def fmt(value: Any, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if math.isnan(number):
            return "-"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return f"{number:.{digits}g}"
    return str(value)


def terminal_width() -> int:
    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int | None = None,
                 shrink: Sequence[int] = (), colours: Sequence[Sequence[str | None]] | None = None,
                 colour: bool = False) -> str:
    """A plain-text table no wider than ``width``: columns in ``shrink`` (the long names) are cut
    with ``…`` first. ``colours`` gives per-cell colour names, applied after padding."""
    width = width or terminal_width()
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    for i in sorted(shrink, key=lambda i: -widths[i]):
        if excess <= 0:
            break
        cut = min(excess, widths[i] - max(len(headers[i]), 8))
        if cut > 0:
            widths[i] -= cut
            excess -= cut

    def clip(text: str, w: int) -> str:
        return text if len(text) <= w else text[: max(w - 1, 0)] + "…"

    lines = ["  ".join(clip(h, w).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r, row in enumerate(cells):
        parts = []
        for i, (text, w) in enumerate(zip(row, widths, strict=True)):
            padded = clip(text, w).ljust(w)
            tint = colours[r][i] if colours else None
            parts.append(paint(padded, tint, colour))
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)
