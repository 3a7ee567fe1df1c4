"""Time ``read_graph`` on synthetic GE graph dumps (protobuf text, Build stage) of a given size, and the
graph queries on a 100k-op graph.

    python -m benchmarks.graph_load                 # 3.5 MB, 35 MB, 121 MiB, and a 100k-op dump
    python -m benchmarks.graph_load --mb 3.5 --ops 0

Each ``read_graph`` prints its CPU time and MB/s beside baselines measured on the same file in the
same run: reading the bytes and counting the lines (``bytes.count``), and one ``re.findall`` over
the text for every ``key:`` line (the least a regex-driven reader must do). The load average is
printed too: on a shared machine the ratios mean more than the seconds.

The dumps are generated, not copied: ops look like real Build-stage ops (a chain of fused Conv /
BNInferenceD / TransData ops with input and output descriptors, ~30 attributes each, original op
names and pass names), at about 5 KB per op like the real dumps in the shared realdata.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from advisor.graph import Graph, ge_ops, read_graph
from advisor.graph.model import gc_paused
from advisor.graph.protobuf_text import parse

T = TypeVar("T")
OP_TYPES = ("Conv2D", "BNInferenceD", "LeakyRelu", "TransData", "Cast", "Add", "BatchMatMulV2")
PASSES = ("BatchNormPreprocessFusionPass", "BatchNormBnInferFusionPass", "HostBNFusionPass")


def _desc(dims: tuple[int, ...], dtype: str = "DT_FLOAT16", indent: str = "      ") -> str:
    """The fields of a tensor descriptor as DebugString prints them at ``indent`` (its message's + 2)."""
    shape = "".join(f"{indent}  dim: {d}\n" for d in dims)
    attrs = "".join(
        f'{indent}attr {{\n{indent}  key: "{key}"\n{indent}  value {{\n{indent}    {value}\n'
        f"{indent}  }}\n{indent}}}\n"
        for key, value in (("origin_format", 's: "NCHW"'), ("origin_data_type", 's: "DT_FLOAT"'),
                           ("format_for_int", "i: 0"), ("origin_format_is_set", "b: true"),
                           ("placement", "i: 0"), ("_is_zero_copy_block", "b: false")))
    origin = "".join(f"{indent}      i: {d}\n" for d in dims)
    attrs += (f'{indent}attr {{\n{indent}  key: "origin_shape"\n{indent}  value {{\n{indent}    list {{\n'
              f"{origin}{indent}      val_type: VT_LIST_INT\n{indent}    }}\n{indent}  }}\n{indent}}}\n")
    return (f"{indent}dtype: {dtype}\n{indent}shape {{\n{shape}{indent}}}\n{indent}layout: \"NCHW\"\n{attrs}"
            f"{indent}size: 1024\n{indent}device_type: \"NPU\"\n{indent}real_dim_cnt: {len(dims)}\n")


def op_text(name: str, op_type: str, inputs: Sequence[str] = (), originals: Sequence[str] = (),
            pass_name: str = "", *, op_id: int = 0, detailed: bool = False, inserted: bool = False) -> str:
    """One ``op { ... }`` block of a Build-stage dump: ``inputs`` as ``"src:slot"`` refs (slot -1 a
    control edge), ``originals`` as ``_datadump_original_op_names``; ``inserted`` writes that list
    empty, as GE does for an op the compiler added (Cast, TransData); ``detailed`` adds ~24 attributes
    and input/output descriptors (about 5 KB an op, like real dumps)."""
    lines = [f'  op {{\n    name: "{name}"\n    type: "{op_type}"\n']
    lines += [f'    input: "{ref}"\n' for ref in inputs]
    if originals or inserted:
        listed = "".join(f'          s: "{o}"\n' for o in originals)
        lines.append(f'    attr {{\n      key: "_datadump_original_op_names"\n      value {{\n        list {{\n{listed}'
                     f"          val_type: VT_LIST_STRING\n        }}\n      }}\n    }}\n")
    if pass_name:
        lines.append(f'    attr {{\n      key: "pass_name"\n      value {{\n        s: "{pass_name}"\n'
                     "      }\n    }\n")
    if detailed:
        for k in range(24):
            value = (f'i: {k * op_id}', 'b: true', f's: "te_{op_type.lower()}_{k:02d}_kernel0"')[k % 3]
            lines.append(f'    attr {{\n      key: "_attr_{k:02d}"\n      value {{\n        {value}\n'
                         "      }\n    }\n")
        lines.append(f"    id: {op_id}\n    stream_id: 0\n")
        channels = (16 * (1 + (op_id - 1) % 8), 16 * (1 + op_id % 8))  # the input is the previous op's output
        lines.append(f"    input_desc {{\n{_desc((1, channels[0], 56, 56))}    }}\n")
        lines.append(f"    output_desc {{\n{_desc((1, channels[1], 56, 56))}    }}\n")
    lines.append("  }\n")
    return "".join(lines)


def _op(i: int, detailed: bool) -> str:
    op_type = OP_TYPES[i % len(OP_TYPES)]
    name = f"{op_type}_{i}"
    inputs = []
    if i:
        inputs.append(f"{OP_TYPES[(i - 1) % len(OP_TYPES)]}_{i - 1}:0")
    if i > 1 and i % 5 == 0:
        inputs.append(f"{OP_TYPES[(i - 2) % len(OP_TYPES)]}_{i - 2}:-1")
    originals = [f"{name}_orig_{k}" for k in range(1 + i % 3)]
    return op_text(name, op_type, inputs, originals, PASSES[i % 3], op_id=i, detailed=detailed)


def write_dump(path: Path, ops: Iterable[str], name: str = "synthetic_graph") -> int:
    """Write a GE proto text dump (one graph) of the ``op { ... }`` blocks ``ops``; returns the op count."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(f'graph {{\n  name: "{name}"\n')
        for text in ops:
            out.write(text)
            count += 1
        out.write('  attr {\n    key: "_session_graph_id"\n    value {\n      s: "0_1"\n    }\n  }\n}\n')
    return count


def generate(path: Path, *, megabytes: float = 0.0, ops: int = 0, detailed: bool = True) -> int:
    """Write a dump of about ``megabytes`` (or exactly ``ops`` ops); returns the op count."""
    target = int(megabytes * 1e6)

    def blocks() -> Iterator[str]:
        written = count = 0
        while (ops and count < ops) or (not ops and written < target):
            text = _op(count, detailed)
            written += len(text)
            count += 1
            yield text

    return write_dump(path, blocks())


def _timed(label: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = fn()
    print(f"  {label:<28} {time.perf_counter() - start:8.3f} s")
    return result


def _cpu(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def _read_and_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


_KEY_LINE = re.compile(rb"^ *key: ", re.MULTILINE)


def _findall_keys(path: Path) -> int:
    return len(_KEY_LINE.findall(path.read_bytes()))


def _parser_read(path: Path) -> Graph:
    """The file through ``protobuf_text.parse`` (what any layout but GE's own is read with)."""
    text = path.read_text(encoding="utf-8")
    with gc_paused():
        return ge_ops.build_graph(parse(text), source=path, format="ge-text")


def bench_read(path: Path, with_parser: bool = False) -> Graph:
    """``read_graph`` beside the baselines (CPU seconds, MB/s, multiple of the first baseline)."""
    size = path.stat().st_size
    print(f"  load average {os.getloadavg()[0]:.2f}; {size / 1e6:.1f} MB ({size / 2**20:.1f} MiB)")
    rows: list[tuple[str, Callable[[Path], Any]]] = [
        ("read bytes + count lines", _read_and_count), ("re.findall of key: lines", _findall_keys),
        ("read_graph", read_graph)]
    if with_parser:
        rows.append(("protobuf_text.parse + build", _parser_read))
    baseline, graph = 0.0, None
    for label, fn in rows:
        seconds, result = _cpu(lambda fn=fn: fn(path))
        baseline = baseline or seconds
        graph = result if label == "read_graph" else graph
        print(f"  {label:<28} {seconds:8.3f} s CPU  {size / 1e6 / max(seconds, 1e-9):8.1f} MB/s"
              f"  {seconds / max(baseline, 1e-9):6.1f}x the read")
    assert graph is not None
    print(f"  ({len(graph)} ops)")
    return graph


def bench(path: Path, with_parser: bool = False) -> None:
    graph = bench_read(path, with_parser)
    _timed("topological_order", graph.topological_order)
    _timed("golden_to_target", lambda: graph.golden_to_target)
    middle = graph.nodes[len(graph) // 2].name
    _timed("neighbourhood(depth=3)", lambda: graph.neighbourhood(middle, 3))
    _timed("to_frame", graph.to_frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="*", default=[3.5, 35.0, 121 * 2**20 / 1e6],
                        help="dump sizes in MB (default: 3.5, 35 and 121 MiB = 126.9 MB)")
    parser.add_argument("--ops", type=int, default=100_000, help="also a lean dump with this many ops (0: skip)")
    parser.add_argument("--with-parser", action="store_true",
                        help="also time protobuf_text.parse (the reader of other layouts; ~4x slower)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.mb:
            path = Path(tmp) / f"ge_proto_{mb:g}MB_Build.txt"
            generate(path, megabytes=mb)
            print(f"GE proto text, {mb:g} MB target:")
            bench(path, args.with_parser)
        if args.ops:
            path = Path(tmp) / f"ge_proto_{args.ops}ops_Build.txt"
            generate(path, ops=args.ops, detailed=False)
            print(f"GE proto text, {args.ops} ops (no descriptors):")
            bench(path, args.with_parser)


if __name__ == "__main__":
    main()
