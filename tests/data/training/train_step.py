"""One tiny training step under msprobe's PrecisionDebugger on the CPU; the variant injects the fault.

``NORM=group python train_step.py VARIANT MODE DUMP_DIR``: VARIANT ref | weight | eps | batch | step | bf16,
MODE statistics | md5. See PROVENANCE.md for how the committed comparisons were made from the dumps.
"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger

variant, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, eps: float = 1e-5) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.GroupNorm(2, 8) if os.environ.get("NORM") == "group" else nn.BatchNorm2d(8)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.ln = nn.LayerNorm(32, eps=eps)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = F.relu(self.ln(self.fc1(torch.flatten(x, 1))))
        return self.fc2(x)


net = Net(eps=1.0 if variant == "eps" else 1e-5)
if variant == "weight":
    with torch.no_grad():
        net.fc1.weight.mul_(1.5)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(1 if variant == "batch" else 0)
x = torch.randn(4, 3, 16, 16, generator=gen)
y = torch.randint(0, 10, (4,), generator=gen)
if variant == "step":  # the target is one optimizer step ahead of the reference
    F.cross_entropy(net(x), y).backward()
    opt.step()
    opt.zero_grad()
summary = "md5" if mode == "md5" else "statistics"
config = {"task": "statistics", "dump_path": out, "rank": [], "step": [], "level": "L1",
          "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": summary}}
os.makedirs(out, exist_ok=True)
with open(out + ".json", "w") as handle:
    json.dump(config, handle)
debugger = PrecisionDebugger(config_path=out + ".json")
debugger.start(model=net)
if variant == "bf16":
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(net(x), y)
else:
    loss = F.cross_entropy(net(x), y)
loss.backward()
opt.step()
debugger.stop()
debugger.step()
