"""Evidence facts: the probes' numbers on the tensors rules care about, and the build config.

``evidence_facts`` probes a few tensors (the network inputs; optionally the inputs of other ops a
caller names) and returns one ``evidence`` fact per tensor: the probe results of
:mod:`advisor.evidence.probes` with their confidences, which op and row it belongs to (``index``
joins it to the op fact), and what the build config says about that input (``cfg_*``), so a rule
sees in one fact both "the target input is the golden one normalised again" and "the build
already folds mean/std into the model". ``config_facts`` turns the build config itself into a
``config`` fact (:mod:`advisor.evidence.config`). FACT_FIELDS in advisor/facts/schema.py lists
every field.

Facts stay few (a handful of tensors): each probed tensor is loaded whole, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..catalogs import load_catalog
from ..facts.builder import clean_fact
from ..facts.thresholds import Thresholds
from ..ingest.config_file import read_build_config
from ..ingest.table import ComparisonTable, lower_isin
from ..tensors.dump_names import safe_name
from ..tensors.inventory import DumpFile, DumpFolder, scan_folder
from ..tensors.lineage import fingerprint, load_dump
from ..tensors.pairing import plan_rows
from .config import config_fact, config_facts
from .normalisation import Moments, affine_from_statistics, normalization_stats_errors
from .probes import ProbeKnobs, affine_fields, normalization_fits, probe_pair

__all__ = ["GoldenInputs", "config_fact", "config_facts", "evidence_facts", "read_build_config", "statistics_facts"]


def evidence_facts(golden_dir: Path, target_dir: Path, table: ComparisonTable, network: dict,
                   build_config: dict | None, *, ops: Sequence[str] = (),
                   input_nodes: Sequence[str] = (), dumps: GoldenInputs | None = None,
                   thresholds: Thresholds | None = None) -> list[dict]:
    """One ``evidence`` fact per probed tensor.

    - ``golden_dir`` / ``target_dir``: the dump folders the comparison was made from (any naming
      ``advisor compare`` reads).
    - ``table``: the ComparisonTable; its rows say which tensors exist, their op index and name.
    - ``network``: the network fact (``output_deviates`` is copied onto each evidence fact).
    - ``build_config``: the ``config`` fact (``config_facts(path)[0]``) or a raw knob mapping
      (AIPP files it references are then not read), or None.
    - ``ops``: names of other ops whose inputs to probe too; ``input_nodes``: the network input
      ops when the user named them (default: Data-like ops, else the first op's inputs).
    - ``dumps``: the same folders as a :class:`GoldenInputs` another consumer uses too, so they are
      scanned, and the comparison's pairing planned, once.
    - ``thresholds``: their ``probes`` knobs steer the probes (knowledge/thresholds.yaml's when None).
    """
    knobs = ProbeKnobs.from_thresholds(thresholds)
    dumps = dumps or GoldenInputs(golden_dir, target_dir, table)
    config = _config(build_config)
    rows = _probed_rows(table.frame, ops, input_nodes)
    located = dumps.locate(rows)
    folded = _folded_constants(config)
    facts = []
    for row, (target_file, golden_file, why) in zip(rows.to_dict("records"), located, strict=True):
        fact = _identity(row, network)
        if target_file is None or golden_file is None:
            fact.update(probed=False, skipped=why)
        else:
            target, golden = load_dump(target_file.path), load_dump(golden_file.path)
            fact.update(probe_pair(target, golden, knobs).fields())
            fact["golden_tensor"] = golden_file.path.name
            constants = folded.get(row["_input_position"]) if fact["is_input"] else None
            if constants is not None and fact.get("probed"):
                fact.update(_folded_fits(target, golden, *constants))
        fact.update(_statistics(row, folded, knobs))
        fact.update(_statistics_fit(row, knobs))
        fact.update(_config_crosscheck(fact, config, knobs.known_tolerance))
        facts.append(clean_fact(fact))
    return facts


def statistics_facts(table: ComparisonTable, network: dict, build_config: dict | None, *,
                     input_nodes: Sequence[str] = (), thresholds: Thresholds | None = None) -> list[dict]:
    """One ``evidence`` fact per network input when no dumps are given: what the comparison's own
    statistics of the input (mean and std per side) say, checked against the normalisation the build
    folds into the model, and the build config's cross-check fields."""
    knobs = ProbeKnobs.from_thresholds(thresholds)
    config = _config(build_config)
    folded = _folded_constants(config)
    facts = []
    for row in _probed_rows(table.frame, (), input_nodes).to_dict("records"):
        fact = {**_identity(row, network), "probed": False, "skipped": "no dumps: the comparison's statistics only"}
        fact.update(_statistics(row, folded, knobs))
        fact.update(_statistics_fit(row, knobs))
        fact.update(_config_crosscheck(fact, config, knobs.known_tolerance))
        facts.append(clean_fact(fact))
    return facts


def _statistics(row: dict[str, Any], folded: dict[int, tuple[np.ndarray, np.ndarray]], knobs: ProbeKnobs
                ) -> dict[str, Any]:
    """``stats_*`` of a network input's row: its (mean, std) per side as the comparison gives them and,
    when the build folds a normalisation into the model with one mean and std (a per-channel one
    cannot be checked on whole-tensor statistics), how well they fit it applied once more or expected
    (:func:`advisor.evidence.normalisation.normalization_stats_errors`)."""
    moments = [row.get(k) for k in ("npu_mean", "npu_std", "golden_mean", "golden_std")]
    if not row.get("_network_input") or not all(isinstance(v, float) and np.isfinite(v) for v in moments):
        return {}
    out: dict[str, Any] = {"stats_target_mean": moments[0], "stats_target_std": moments[1],
                           "stats_golden_mean": moments[2], "stats_golden_std": moments[3]}
    constants = folded.get(row["_input_position"])
    if constants is None:
        return out
    mean, std = constants
    if np.ptp(mean) > 0 or np.ptp(std) > 0 or not np.all(std != 0):
        return {**out, "cfg_norm_stats_checked": False}
    errors = normalization_stats_errors((moments[0], moments[1]), (moments[2], moments[3]), float(mean[0]),
                                        float(std[0]), knobs.stats_abs_tolerance, knobs.stats_rel_tolerance)
    return {**out, "cfg_norm_stats_checked": True, "cfg_norm_again_stats_error": errors["again"],
            "cfg_norm_expected_stats_error": errors["expected"], "stats_identity_error": errors["identity"]}


def _statistics_fit(row: dict[str, Any], knobs: ProbeKnobs) -> dict[str, Any]:
    """``norm_*`` of a network input from its printed statistics alone (msprobe's max, min, mean and
    norm; the std follows from the norm and the shape): the affine map they imply between the two
    sides, read as the dumps' probe reads one (a scale, a normalisation missing or applied twice),
    ``norm_basis`` ``statistics``. Nothing when a statistic is missing."""
    if not row.get("_network_input"):
        return {}
    sides = [_moments(row, side) for side in ("npu", "golden")]
    if sides[0] is None or sides[1] is None:
        return {}
    fit = affine_from_statistics(sides[0], sides[1], knobs)
    if fit is None:
        return {}
    return {**affine_fields(fit), "norm_basis": "statistics", "target_min": float(sides[0].low[0]),
            "target_max": float(sides[0].high[0]), "golden_min": float(sides[1].low[0]),
            "golden_max": float(sides[1].high[0])}


def _moments(row: dict[str, Any], side: str) -> Moments | None:
    """One side's whole-tensor moments from a row: mean, std (printed, or from the L2 norm and the
    element count of the printed shape), min and max."""
    values = [row.get(f"{side}_{name}") for name in ("mean", "min", "max")]
    if not all(isinstance(v, float) and np.isfinite(v) for v in values):
        return None
    mean, low, high = values
    std = row.get(f"{side}_std")
    if not (isinstance(std, float) and np.isfinite(std)):
        norm, count = row.get(f"{side}_norm"), _elements(row.get("shape" if side == "npu" else "golden_shape"))
        if not (isinstance(norm, float) and np.isfinite(norm)) or not count:
            return None
        std = float(np.sqrt(max(norm * norm / count - mean * mean, 0.0)))
    return Moments(*(np.array([v], dtype=np.float64) for v in (mean, std, low, high)), integral=None)


def _elements(shape: object) -> int:
    """The element count of a printed shape (``[2, 3, 16, 16]``); 0 when it cannot be read."""
    if not isinstance(shape, str):
        return 0
    try:
        dims = [int(d) for d in shape.strip("[]() ").replace(" ", "").split(",") if d]
    except ValueError:
        return 0
    return int(np.prod(dims)) if dims else 0


def _config(build_config: dict | None) -> dict[str, Any] | None:
    if build_config is None:
        return None
    return build_config if build_config.get("fact") == "config" else config_fact(build_config)


def _probed_rows(frame: pd.DataFrame, ops: Sequence[str], input_nodes: Sequence[str]) -> pd.DataFrame:
    """The rows of the tensors to probe: each network input once, then the named ops' inputs."""
    body = frame[~frame["is_network_output"].fillna(False).astype(bool)]
    is_data = lower_isin(body["op_type"], set(load_catalog("network_input")))
    if input_nodes:
        chosen = body["op_name"].isin(input_nodes)
        wanted = chosen & ((is_data & (body["io"] == "output")) | (~is_data & (body["io"] == "input")))
    elif is_data.any():
        wanted = is_data & (body["io"] == "output")
    else:
        first = body["op_index"].min()
        wanted = (body["op_index"] == first) & (body["io"] == "input")
    named = body["op_name"].isin(ops) & (body["io"] == "input") & ~wanted
    selected = body[wanted | named]
    # The network input's position (MagicMind's input index) is its rank among the inputs in execution order.
    position = selected["op_index"].where(wanted[wanted | named].to_numpy()).rank(method="dense") - 1
    return (selected.assign(_network_input=wanted[wanted | named].to_numpy(), _input_position=position)
            .drop_duplicates("tensor_id"))


def _folded_constants(config: dict[str, Any] | None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Network input index -> (mean, std) the build folds into the model (the config fact's
    ``normalized_inputs`` / ``norm_mean`` / ``norm_std``)."""
    if not config or not config.get("normalization_in_model") or not isinstance(config.get("norm_mean"), str):
        return {}
    inputs = str(config.get("normalized_inputs", "0")).split(";")
    means, stds = str(config["norm_mean"]).split(";"), str(config.get("norm_std", "")).split(";")
    if not (len(inputs) == len(means) == len(stds)):
        return {}
    return {int(i): (np.array([float(v) for v in m.split(",")]), np.array([float(v) for v in s.split(",")]))
            for i, m, s in zip(inputs, means, stds, strict=True)}


def _folded_fits(target: np.ndarray, golden: np.ndarray, mean: np.ndarray, std: np.ndarray) -> dict[str, Any]:
    """``cfg_norm_again_fit`` / ``cfg_norm_expected_fit``: the build's own constants checked on the
    two inputs (:func:`advisor.evidence.probes.normalization_fits`)."""
    fits = normalization_fits(np.asarray(target), np.asarray(golden), mean, std)
    if fits is None:
        return {"cfg_norm_checked": False}
    return {"cfg_norm_checked": True, "cfg_norm_again_fit": fits[0], "cfg_norm_expected_fit": fits[1]}


def _identity(row: dict[str, Any], network: dict) -> dict[str, Any]:
    tensor = str(row["tensor_id"])
    return {"id": f"evidence:{tensor}", "fact": "evidence", "tensor": tensor, "op": row["op_name"],
            "index": row["op_index"], "op_type": row["op_type"], "io": row["io"], "slot": row["slot"],
            "is_input": bool(row["_network_input"]), "table_cosine": row["cosine"],
            "output_deviates": network.get("output_deviates")}


class GoldenInputs:
    """The dump folders of a comparison, scanned once: ``inputs(op, slot)`` -> the golden tensor of
    an op's input (or None), and :meth:`locate` for rows of the table.

    The input probes and the quantisation evidence (:mod:`advisor.evidence.layers`, which recomputes
    a layer from its golden input) need a few tensors of a possibly large dump folder: the folders
    are scanned on first use and the comparison's pairing (which fingerprints every dump) is planned
    at most once, whoever asks first."""

    def __init__(self, golden_dir: Path, target_dir: Path, table: ComparisonTable) -> None:
        self.dirs = (Path(golden_dir), Path(target_dir))
        self.frame = table.frame
        self._folders: tuple[DumpFolder, DumpFolder] | None = None
        self._keys: tuple[dict, dict] | None = None
        self._planned: dict[tuple[str, str, str], DumpFile | None] | None = None

    def __call__(self, op: str, slot: int) -> np.ndarray | None:
        frame = self.frame
        rows = frame[(frame["op_name"] == op) & (frame["io"] == "input")
                     & (frame["slot"].astype(str) == str(slot))].head(1)
        if rows.empty:
            return None
        ((_, golden_file, _),) = self.locate(rows)
        return load_dump(golden_file.path) if golden_file is not None else None

    def golden_output(self, op: str, slot: int = 0) -> np.ndarray | None:
        """The golden dump of ``op``'s output ``slot`` (a network input's: its name), or None."""
        golden_files, _ = self._by_key()
        found = golden_files.get((safe_name(op), "output", str(slot)))
        return load_dump(found.path) if found is not None else None

    def locate(self, rows: pd.DataFrame) -> list[tuple[DumpFile | None, DumpFile | None, str]]:
        """(target file, golden file, why not found) per row. A Data op's output pairs with the golden
        dump of its GroundTruth name; any other input goes through the comparison's pairing (lineage)."""
        golden_files, target_files = self._by_key()
        found = []
        for row in rows.to_dict("records"):
            key = (safe_name(str(row["op_name"])), str(row["io"]), str(row["slot"]))
            target_file = target_files.get(key)
            if target_file is None:
                found.append((None, None, f"no target dump for {row['tensor_id']}"))
                continue
            golden_file = None
            ground_truth = row["golden_ops"]
            if row["io"] == "output" and isinstance(ground_truth, str) and ground_truth != "*":
                golden_file = golden_files.get((safe_name(ground_truth.split(",")[-1]), "output", str(row["slot"])))
            if golden_file is None:
                golden_file = self._plan().get(key)
            found.append((target_file, golden_file,
                          "" if golden_file else f"no golden dump pairs with {row['tensor_id']}"))
        return found

    def _scanned(self) -> tuple[DumpFolder, DumpFolder]:
        if self._folders is None:
            self._folders = (scan_folder(self.dirs[0], "golden"), scan_folder(self.dirs[1], "target"))
        return self._folders

    def _by_key(self) -> tuple[dict, dict]:
        if self._keys is None:
            golden, target = self._scanned()
            self._keys = (golden.by_key(), target.by_key())
        return self._keys

    def _plan(self) -> dict[tuple[str, str, str], DumpFile | None]:
        if self._planned is None:
            self._planned = _planned_goldens(*self._scanned())
        return self._planned


def _planned_goldens(golden: DumpFolder, target: DumpFolder) -> dict[tuple[str, str, str], DumpFile | None]:
    """Target tensor -> golden tensor as ``advisor compare`` pairs them (fingerprints every dump)."""
    prints = {str(f.path): fingerprint(f.path) for f in target.files}
    plan = plan_rows(golden, target, prints)
    return {row.target.name.tensor_key: row.golden for row in plan.rows
            if row.target is not None and row.labels.npu_op != "Node_Output"}


def _config_crosscheck(fact: dict[str, Any], config: dict[str, Any] | None, tolerance: float) -> dict[str, Any]:
    """``cfg_*``: what the build config says about this input, next to what the probes found."""
    if config is None or not fact.get("is_input"):
        return {"cfg_known": False, "cfg_normalization_in_model": False, "cfg_channel_swap": False,
                "cfg_layout_converted": False}
    out: dict[str, Any] = {
        "cfg_known": True, "cfg_tool": config.get("tool"),
        "cfg_normalization_in_model": bool(config.get("normalization_in_model")),
        "cfg_channel_swap": bool(config.get("aipp_channel_swap")),
        "cfg_layout_converted": bool(config.get("layout_converted")),
        "cfg_normalization_knob": config.get("normalization_knob"),
        "cfg_layout_conversion": config.get("layout_conversion"),
    }
    implied = (fact.get("norm_mean"), fact.get("norm_std"))
    folded = (config.get("norm_mean"), config.get("norm_std"))
    if all(isinstance(v, str) for v in (*implied, *folded)):
        out["cfg_norm_matches"] = (_same_numbers(implied[0], folded[0], tolerance)
                                   and _same_numbers(implied[1], folded[1], tolerance))
    return out


def _same_numbers(a: str, b: str, tolerance: float) -> bool:
    """Per-channel constants agree within the known-constants tolerance (one number broadcasts)."""
    x = np.array([float(v) for v in a.split(",")])
    y = np.array([float(v) for v in b.split(",")])
    if x.size != y.size and 1 not in (x.size, y.size):
        return False
    return bool(np.allclose(x, y, rtol=tolerance, atol=1e-6))
