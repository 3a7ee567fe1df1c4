"""What the target did to class ids, measured on paired detections: the share each explanation
covers (a constant offset, a known numbering such as COCO's 80 <-> 91 ids, any consistent map).
Which share names a fault is the rules' call (rules/post/classes/)."""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

import numpy as np

from ..errors import KnowledgeError
from ..resources import data_dir
from ..yamlfile import load_yaml


@cache
def id_maps() -> dict[str, tuple[int, ...]]:
    """knowledge/post/class_id_maps.yaml: name -> the other numbering's id of each contiguous class."""
    path = data_dir("knowledge") / "post" / "class_id_maps.yaml"
    raw = load_yaml(path, KnowledgeError)
    maps = raw.get("maps") if isinstance(raw, dict) else None
    if not isinstance(maps, dict) or not all(isinstance(m, dict) and isinstance(m.get("ids"), list)
                                             for m in maps.values()):
        raise KnowledgeError("expected maps: {name: {ids: [...]}}", path=path)
    return {str(name): tuple(int(i) for i in m["ids"]) for name, m in maps.items()}


def _numbering_variants() -> dict[str, dict[int, int]]:
    """``coco_0_to_91``-style names -> golden id -> the target id that numbering gives it."""
    variants: dict[str, dict[int, int]] = {}
    for name, ids in id_maps().items():
        for base in (0, 1):
            forward = {k + base: v for k, v in enumerate(ids)}
            variants[f"{name}_{base}_to_full"] = forward
            variants[f"{name}_full_to_{base}"] = {v: k for k, v in forward.items()}
    return variants


def class_facts(golden: np.ndarray, target: np.ndarray) -> dict[str, Any]:
    """Class-id measurements on paired detections (``golden[i]`` is paired with ``target[i]``)."""
    golden = np.asarray(golden, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    n = len(golden)
    out: dict[str, Any] = {"pairs": n, "golden_classes": int(len(set(golden.tolist())))}
    if n == 0:
        return out
    out["agree_share"] = float(np.mean(golden == target))
    shifts = Counter(d for d in (target - golden).tolist() if d != 0)
    if shifts:
        shift, count = max(shifts.items(), key=lambda kv: (kv[1], -abs(kv[0])))
        out.update(offset=int(shift), offset_share=count / n)
    else:
        out.update(offset=0, offset_share=0.0)
    best_name, best_share = "", 0.0
    for name, table in _numbering_variants().items():
        share = float(np.mean([table.get(g) == t for g, t in zip(golden.tolist(), target.tolist(), strict=True)]))
        if share > best_share:
            best_name, best_share = name, share
    out.update(numbering=best_name, numbering_share=best_share,
               numbering_margin=best_share - out["offset_share"])
    out.update(_consistent_map(golden, target))
    out["map_margin"] = out["map_share"] - max(out["offset_share"], best_share)
    return out


def _consistent_map(golden: np.ndarray, target: np.ndarray) -> dict[str, Any]:
    """Each golden class's most frequent target class: how much of the pairs that map explains, how many
    classes it moves, whether it is one-to-one, and the moved part as text ('3->7, 7->3')."""
    mapping: dict[int, int] = {}
    explained = 0
    for g in sorted(set(golden.tolist())):
        counts = Counter(target[golden == g].tolist())
        t, c = counts.most_common(1)[0]
        mapping[g] = t
        explained += c
    moved = {g: t for g, t in mapping.items() if g != t}
    text = ", ".join(f"{g}->{t}" for g, t in list(moved.items())[:12]) + (" ..." if len(moved) > 12 else "")
    return {"map_share": explained / len(golden), "moved_classes": len(moved),
            "map_one_to_one": len(set(mapping.values())) == len(mapping), "map_text": text,
            "class_map": {str(g): t for g, t in mapping.items()}}
