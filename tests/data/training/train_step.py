"""Tiny training step under msprobe PrecisionDebugger (CPU). Variants make the faults."""
import json, sys, os
import torch, torch.nn as nn, torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger

variant, task, out = sys.argv[1], sys.argv[2], sys.argv[3]
torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.GroupNorm(2, 8) if os.environ.get("NORM") == "group" else nn.BatchNorm2d(8)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.ln = nn.LayerNorm(32, eps=eps)
        self.fc2 = nn.Linear(32, 10)
    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.ln(self.fc1(x)))
        return self.fc2(x)

net = Net(eps=1.0 if variant == "eps" else 1e-5)
if variant == "weight":
    with torch.no_grad():
        net.fc1.weight.mul_(1.5)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(1 if variant == "batch" else 0)
x = torch.randn(4, 3, 16, 16, generator=gen)
y = torch.randint(0, 10, (4,), generator=gen)
if variant == "step":   # one optimizer step ahead of the reference
    loss = F.cross_entropy(net(x), y); loss.backward(); opt.step(); opt.zero_grad()
cfg = {"task": task, "dump_path": out, "rank": [], "step": [], "level": "L1",
       "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "md5" if task == "md5" else "statistics"}}
if task == "md5":
    cfg["task"] = "statistics"
cfgpath = os.path.join(out + ".json")
os.makedirs(out, exist_ok=True)
json.dump(cfg, open(cfgpath, "w"))
dbg = PrecisionDebugger(config_path=cfgpath)
dbg.start(model=net)
if variant == "bf16":
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(net(x), y)
else:
    loss = F.cross_entropy(net(x), y)
loss.backward()
opt.step()
dbg.stop()
dbg.step()
