"""Hardware overflow records: the ``Opdebug.Node_OpDebug.{task}.{stream}.{timestamp}`` files of the
overflow ("npu_overflow", ``dump_debug_mode``) mode of the Ascend data dumper.

The file is a raw device dump (ascend_raw.py) whose first output holds the record. Two layouts
(facts: msaccucmp's ``dump_parse/dump_data_parser.py`` and ``overflow/overflow_analyse.py`` in the
mindstudio-probe wheel; the status meanings: precision_tool's ``lib/overflow/overflow.py``):

- 2048 bytes, unsigned 64-bit little-endian words. Three info blocks - DHA atomic add (128 B at 0),
  L2 atomic add (128 B at 128), AI Core (256 B at 256) - each ``model_id, stream_id, task_id,
  task_type, pc_start, para_base``; then the DHA atomic status (256 B at 512, first word), the L2
  atomic status (256 B at 768, first word) and the AI Core status block (1024 B at 1024:
  ``kernel_code, block_idx, status``). A block whose status is 0 did not overflow.
- newer: ``magic`` 0x5A5A5A5A, ``version``, then one accelerator entry (32-bit ``valid, acc_type,
  rsv, data_len``) with 64-bit words ``model_id, stream_id, task_id, task_type, context_id,
  thread_id`` and, for AI Core/Vector (acc_type 0/1), ``pc_start, para_base, core_id, block_id,
  status`` (version 1: four status words, OR-ed here); AI CPU (2): ``cpu_id, thread_id, status``
  after ``context_id``; SDMA (3): ``thread_id, src_addr, dst_addr, channel_id, status``.

Status bits of AI Core/Vector: 0x8 negation of the smallest integer, 0x10 integer overflow, 0x20
floating-point overflow, 0x80 negative input to a float-to-unsigned conversion, 0x100 overflow
converting FP32 (or int32) to FP16, 0x400 cube (matrix unit) accumulation overflow. DHA atomic
status: code in bits 8-15 (0x9 overflow, 0xA underflow, 0xB source NaN, 0xC destination NaN, 0xD
both NaN); L2 atomic status: code in bits 16-18 (1 overflow, 2 underflow, 3 source NaN, 4
destination NaN, 5 both NaN).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputFormatError
from .ascend_raw import RawName, output_bytes, parse_raw_name

OLD_SIZE = 2048
MAGIC = 0x5A5A5A5A

#: AI Core status bit -> (kind, what it means). The kinds name the overflow for facts and rules.
AI_CORE_BITS: dict[int, tuple[str, str]] = {
    0x8: ("integer", "negation of the smallest signed integer"),
    0x10: ("integer", "integer add, subtract, multiply or multiply-add overflow"),
    0x20: ("float", "floating-point computation overflow"),
    0x80: ("conversion", "negative input to a float-to-unsigned conversion"),
    0x100: ("conversion", "FP32 (or int32) to FP16 conversion overflow"),
    0x400: ("accumulation", "cube (matrix unit) accumulation overflow"),
}
DHA_CODES = {0x9: "overflow", 0xA: "underflow", 0xB: "source NaN", 0xC: "destination NaN", 0xD: "both NaN"}
L2_CODES = {1: "overflow", 2: "underflow", 3: "source NaN", 4: "destination NaN", 5: "both NaN"}
_ACC_TYPES = {0: "AI Core", 1: "AI Vector", 2: "AI CPU", 3: "SDMA"}


@dataclass(frozen=True)
class OverflowRecord:
    """One hardware overflow record, decoded."""

    file: Path
    name: RawName
    unit: str                    # AI Core | AI Vector | DHA atomic | L2 atomic | AI CPU | SDMA
    task_id: int
    stream_id: int
    status: int
    kinds: tuple[str, ...]       # float | conversion | accumulation | integer | atomic
    meanings: tuple[str, ...]    # one line per set bit or code

    @property
    def kind(self) -> str:
        """The kind that decides the fix when several bits are set: accumulation, then conversion, then float."""
        for kind in ("accumulation", "conversion", "float", "atomic", "integer"):
            if kind in self.kinds:
                return kind
        return "unknown"


def read_overflow_record(path: Path) -> list[OverflowRecord]:
    """The overflow entries of one Opdebug file (a unit whose status is 0 is left out)."""
    name = parse_raw_name(path.name)
    if name is None or not name.is_overflow_record:
        raise InputFormatError("not an overflow record: expected a name like "
                               "Opdebug.Node_OpDebug.<task>.<stream>.<timestamp>", path=path)
    data = output_bytes(path, 0)
    if len(data) >= 8 and struct.unpack_from("<I", data)[0] == MAGIC:
        return _new_layout(path, name, data)
    if len(data) != OLD_SIZE:
        raise InputFormatError(f"the overflow record holds {len(data)} bytes: expected {OLD_SIZE} or a record "
                               f"starting with the magic number {MAGIC:#x}", path=path)
    return _old_layout(path, name, data)


def decode_ai_core(status: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    bits = [bit for bit in sorted(AI_CORE_BITS) if status & bit]
    unknown = status & ~sum(AI_CORE_BITS)
    kinds = tuple(dict.fromkeys(AI_CORE_BITS[bit][0] for bit in bits))
    meanings = tuple(f"{bit:#x}: {AI_CORE_BITS[bit][1]}" for bit in bits)
    if unknown:
        meanings += (f"{unknown:#x}: status bits of no documented meaning",)
    return kinds, meanings


def _words(data: bytes, at: int, count: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{count}Q", data, at)


def _old_layout(path: Path, name: RawName, data: bytes) -> list[OverflowRecord]:
    records = []
    ai_core = _words(data, 256, 6)
    ai_status = _words(data, 1024 + 16, 1)[0]
    if ai_status:
        kinds, meanings = decode_ai_core(ai_status)
        records.append(OverflowRecord(path, name, "AI Core", ai_core[2], ai_core[1], ai_status, kinds, meanings))
    for unit, info_at, status_at, codes, shift, mask in (("DHA atomic", 0, 512, DHA_CODES, 8, 0xFF),
                                                         ("L2 atomic", 128, 768, L2_CODES, 16, 0x7)):
        status = _words(data, status_at, 1)[0]
        if status:
            info = _words(data, info_at, 6)
            code = (status >> shift) & mask
            meaning = f"{unit} add {codes.get(code, f'status code {code:#x}')}"
            records.append(OverflowRecord(path, name, unit, info[2], info[1], status, ("atomic",), (meaning,)))
    return records


def _new_layout(path: Path, name: RawName, data: bytes) -> list[OverflowRecord]:
    version = struct.unpack_from("<I", data, 4)[0]
    valid, acc_type, _, data_len = struct.unpack_from("<4I", data, 8)
    unit = _ACC_TYPES.get(acc_type, f"accelerator {acc_type}")
    words = data[24:24 + data_len]
    count = len(words) // 8
    if not valid or count < 6:
        raise InputFormatError(f"the overflow record's entry is not valid (valid={valid}, {len(words)} bytes)",
                               path=path)
    values = _words(words, 0, count)
    stream_id, task_id = values[1], values[2]
    if acc_type in (0, 1):
        status_words = values[10:14] if version == 1 else values[10:11]
        status = 0
        for word in status_words:
            status |= word
        kinds, meanings = decode_ai_core(status)
    else:
        status = values[-1]
        kinds, meanings = ("unknown",), (f"{unit} status {status:#x}",)
    if not status:
        return []
    return [OverflowRecord(path, name, unit, task_id, stream_id, status, kinds, meanings)]
