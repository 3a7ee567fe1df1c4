"""A workspace for batch tests: inputs copied from the committed scenarios, a manifest, the CLI."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.batch.store import HistoryStore
from advisor.cli import main
from tests.conftest import SCENARIOS, scenario_csv

# Generated scenarios (tests/data/scenarios, checked against a fresh generation elsewhere).
CLEAN = scenario_csv(SCENARIOS / "clean_bf16__mtcnn_pnet__mixed_bf16__s0")
CLEAN_FP16 = scenario_csv(SCENARIOS / "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0")
PROBLEM = scenario_csv(SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0")
OVERFLOW = scenario_csv(SCENARIOS / "fp16_overflow__byte_transformer__embedding_outliers__s0")
SPD = scenario_csv(SCENARIOS / "single_point_deviation__mtcnn_pnet__saturated_logits__s0")
MISMATCH = scenario_csv(SCENARIOS / "input_mismatch__mtcnn_rnet__shifted_crop__s1")


@dataclass
class Run:
    code: int
    out: str
    err: str


class Workspace:
    """Inputs live in ``root/inputs`` under stable names, so a job's input can change between runs."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.capsys = capsys
        self.out = root / "out"
        self.db = self.out / "history.sqlite"

    def put(self, name: str, source: Path | str) -> Path:
        """Write inputs/<name>.csv from a scenario CSV (a Path) or literal text (a str)."""
        path = self.root / "inputs" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, Path):
            shutil.copyfile(source, path)
        else:
            path.write_text(source, encoding="utf-8")
        return path

    def manifest(self, jobs: dict[str, dict[str, Any] | Path], name: str = "nightly.yaml", **top: Any) -> Path:
        """jobs: name -> scenario CSV (copied to inputs/) or a full job mapping."""
        entries = []
        for job, spec in jobs.items():
            if isinstance(spec, Path):
                self.put(job, spec)
                spec = {"input": f"inputs/{job}.csv"}
            entries.append({"name": job, **spec})
        path = self.root / name
        path.write_text(yaml.safe_dump({"output": "out", **top, "jobs": entries}, sort_keys=False),
                        encoding="utf-8")
        return path

    def batch(self, *args: str | Path) -> Run:
        code = main(["batch", *map(str, args)])
        captured = self.capsys.readouterr()
        return Run(code, captured.out, captured.err)

    def history(self, *args: str) -> Run:
        code = main(["history", "--db", str(self.db), *args])
        captured = self.capsys.readouterr()
        return Run(code, captured.out, captured.err)

    def history_json(self, *args: str) -> Any:
        run = self.history(*args, "--json")
        assert run.code == 0, run.err
        return json.loads(run.out)

    def store(self) -> HistoryStore:
        return HistoryStore.open(self.db)

    def statuses(self, run_id: int) -> dict[str, str]:
        store = self.store()
        try:
            return {row.job: row.status for row in store.results(run_id)}
        finally:
            store.close()


@pytest.fixture
def workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Workspace:
    return Workspace(tmp_path, capsys)
