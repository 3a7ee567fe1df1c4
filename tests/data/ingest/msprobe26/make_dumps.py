"""Writes the msprobe 26 dumps these fixtures were compared from (see PROVENANCE.md).

    python make_dumps.py OUT_DIR TASK LEVEL RUN [SUMMARY_MODE [EXTRA_INFO]]

TASK is ``statistics`` or ``tensor``; RUN is ``bench`` or ``target``; EXTRA_INFO ``true`` also writes
stack.json (and, at level ``mix``, construct.json). One training step of a tiny
network (Conv2d, BatchNorm2d in training mode, ReLU, Linear, a mean-reduced cross-entropy loss, SGD)
on the CPU under ``msprobe.pytorch.PrecisionDebugger``. The target run differs from the bench run by
one fault: BatchNorm's eps is 1e-2 instead of 1e-5.
"""

import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger


class TinyNet(torch.nn.Module):
    def __init__(self, eps: float) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4, eps=eps)
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(x.flatten(1))


def main() -> None:
    out, task, level, run = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    summary_mode = sys.argv[5] if len(sys.argv) > 5 else "statistics"
    extra_info = len(sys.argv) > 6 and sys.argv[6] == "true"
    out.mkdir(parents=True, exist_ok=True)
    config = {"task": task, "dump_path": str(out / "dump"), "rank": [], "step": [], "level": level,
              "extra_info": extra_info, "async_dump": False,
              task: {"scope": [], "list": [], "data_mode": ["all"]}}
    if task == "statistics":
        config[task]["summary_mode"] = summary_mode
    (out / "config.json").write_text(json.dumps(config, indent=2))
    torch.manual_seed(0)
    model = TinyNet(eps=1e-5 if run == "bench" else 1e-2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(2, 3, 4, 4)
    y = torch.tensor([0, 2])
    debugger = PrecisionDebugger(config_path=str(out / "config.json"))
    debugger.start(model)
    model.train()
    loss = F.cross_entropy(model(x), y, reduction="mean")
    loss.backward()
    optimizer.step()
    debugger.stop()
    debugger.step()


if __name__ == "__main__":
    main()
