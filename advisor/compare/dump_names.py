"""Moved to :mod:`advisor.tensors.dump_names`; this name stays only for ``facts/builder.py`` until that
module imports from ``advisor.tensors`` (it belongs to another part of the work)."""

from ..tensors.dump_names import NAMINGS, DumpName, parse_dump_name, safe_name

__all__ = ["NAMINGS", "DumpName", "parse_dump_name", "safe_name"]
