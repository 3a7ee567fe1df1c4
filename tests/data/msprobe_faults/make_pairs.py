"""Make the msprobe comparisons of tests/data/msprobe_faults with the real tool (see PROVENANCE.md).

    python make_pairs.py OUT_DIR

needs torch (CPU) and mindstudio-probe 26.2.0. Each run of the three small networks below is dumped
by msprobe's PrecisionDebugger at level L1 in statistics, tensor and md5 mode (one debugger step
per run; the debugger is one per process, so each mode dumps in a process of its own:
``python make_pairs.py --dump TASK DIR``), and each pair listed in PAIRS is compared with
``msprobe compare`` (``--xlsx`` too for the float16 overflow); the two dump.json files of that pair
are kept for ``advisor run --bench --target``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    """linear -> relu -> linear -> softmax -> linear; ``gain`` scales the middle weights so that its
    output overflows float16 (65504) when it is large."""

    def __init__(self, gain: float = 1.0) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 64), nn.Linear(64, 64), nn.Linear(64, 10)
        with torch.no_grad():
            self.fc2.weight.mul_(gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.softmax(self.fc2(F.relu(self.fc1(x))), dim=-1))


class Tokens(nn.Module):
    """embedding -> LayerNorm -> masked single-head attention -> linear, on int64 token ids."""

    def __init__(self) -> None:
        super().__init__()
        self.emb, self.ln = nn.Embedding(50, 32), nn.LayerNorm(32)
        self.q, self.k, self.o = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 5)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.ln(self.emb(ids))
        scores = torch.matmul(self.q(x), self.k(x).transpose(-1, -2)) / 5.6
        scores = scores.masked_fill(mask[:, None, :] == 0, float("-inf"))
        return self.o(torch.matmul(F.softmax(scores, -1), x))


class Decoder(nn.Module):
    """conv -> BatchNorm -> relu -> interpolate (x2, ``mode``) -> conv."""

    def __init__(self, mode: str = "bilinear") -> None:
        super().__init__()
        self.c1, self.bn, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Conv2d(8, 3, 3, padding=1)
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c2(F.interpolate(F.relu(self.bn(self.c1(x))), scale_factor=2, mode=self.mode))


class SmallConvNet(nn.Module):
    """conv -> relu -> conv -> relu -> global average pool -> linear, on an image batch."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2, self.fc = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.adaptive_avg_pool2d(F.relu(self.c2(F.relu(self.c1(x)))), 1).flatten(1))


def runs() -> dict:
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    ids = torch.randint(1, 50, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[:, 6:] = 0
    image = torch.randn(2, 3, 8, 8)

    def mlp(dtype=torch.float32, gain=1.0):
        torch.manual_seed(1)
        model = MLP(gain).eval().to(dtype)
        return model, lambda: model(x.to(dtype))

    def tokens(ids_=ids):
        torch.manual_seed(2)
        model = Tokens().eval()
        return model, lambda: model(ids_, mask)

    pixels = torch.randint(0, 256, (2, 3, 16, 16)).float()
    scaled = pixels / 255
    normalised = (scaled - 0.5) / 0.5

    def photo(x):
        torch.manual_seed(4)
        model = SmallConvNet().eval()
        return model, lambda: model(x)

    def decoder(mode="bilinear", train=False):
        torch.manual_seed(3)
        model = Decoder(mode).train(train)
        return model, lambda: model(image)

    return {
        # the same weights held in float32, float16 (model.half()) and bfloat16; gain 1e5 overflows float16
        "mlp_fp32": lambda: mlp(), "mlp_fp16": lambda: mlp(torch.float16), "mlp_bf16": lambda: mlp(torch.bfloat16),
        "big_fp32": lambda: mlp(gain=1e5), "big_fp16": lambda: mlp(torch.float16, 1e5),
        "big_bf16": lambda: mlp(torch.bfloat16, 1e5),
        # token ids shifted by one (an off-by-one tokenizer)
        "tokens": lambda: tokens(), "tokens_shifted": lambda: tokens(ids + 1),
        # interpolate's mode changed; BatchNorm left in training mode (model.eval() forgotten)
        "decoder": lambda: decoder(), "decoder_nearest": lambda: decoder("nearest"),
        "decoder_train": lambda: decoder(train=True),
        # preprocessing: (x / 255 - 0.5) / 0.5 on the reference; /255 forgotten, the normalisation applied
        # twice, or left out on the target
        "photo": lambda: photo(normalised), "photo_not_scaled": lambda: photo((pixels - 0.5) / 0.5),
        "photo_normalised_twice": lambda: photo((normalised - 0.5) / 0.5),
        "photo_not_normalised": lambda: photo(scaled),
    }


# (file stem, reference run, target run, tasks)
PAIRS = (
    ("fp16_overflow", "big_fp32", "big_fp16", ("statistics", "tensor", "md5")),
    ("bf16_no_overflow", "big_fp32", "big_bf16", ("statistics", "tensor")),
    ("fp16_model", "mlp_fp32", "mlp_fp16", ("statistics", "md5")),
    ("bf16_model", "mlp_fp32", "mlp_bf16", ("statistics",)),
    ("token_ids", "tokens", "tokens_shifted", ("statistics", "md5")),
    ("interpolate_mode", "decoder", "decoder_nearest", ("statistics",)),
    ("batchnorm_training", "decoder", "decoder_train", ("statistics",)),
    ("input_not_scaled", "photo", "photo_not_scaled", ("statistics",)),
    ("input_normalised_twice", "photo", "photo_normalised_twice", ("statistics",)),
    ("input_not_normalised", "photo", "photo_not_normalised", ("statistics",)),
)


def dump(task: str, directory: Path) -> dict[str, Path]:
    """Every run as one step of one debugger: the folder of each run's dump.json."""
    from msprobe.pytorch import PrecisionDebugger

    config = {"task": "tensor" if task == "tensor" else "statistics", "dump_path": str(directory), "rank": [],
              "step": [], "level": "L1", "extra_info": True, "async_dump": False}
    if task == "tensor":
        config["tensor"] = {"scope": [], "list": [], "data_mode": ["all"]}
    else:
        config["statistics"] = {"scope": [], "list": [], "data_mode": ["all"],
                                "summary_mode": "md5" if task == "md5" else "statistics"}
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    debugger = PrecisionDebugger(config_path=str(directory / "config.json"))
    names = sorted(runs())
    for name in names:
        model, run = runs()[name]()
        debugger.start(model)
        with torch.no_grad():
            run()
        debugger.stop()
        debugger.step()
    return {name: next((directory / f"step{i}").glob("*/dump.json")).parent for i, name in enumerate(names)}


def main(out: Path) -> None:
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    folders = {}
    for task in ("statistics", "tensor", "md5"):
        subprocess.run([sys.executable, __file__, "--dump", task, str(work / task)], check=True)
        folders[task] = {name: Path(folder) for name, folder in
                         json.loads((work / task / "folders.json").read_text(encoding="utf-8")).items()}
    for stem, reference, target, tasks in PAIRS:
        for task in tasks:
            ref, tgt = folders[task][reference], folders[task][target]
            for extra in ([], ["--xlsx"]) if stem == "fp16_overflow" and task == "statistics" else ([],):
                result = work / "compare" / f"{stem}_{task}{extra[0] if extra else ''}"
                result.mkdir(parents=True)
                subprocess.run(["msprobe", "compare", "-tp", str(tgt / "dump.json"), "-gp", str(ref / "dump.json"),
                                "-o", str(result), *extra], check=True, capture_output=True)
                for made in result.glob("compare_result_*"):
                    shutil.copy2(made, out / f"{stem}_{task}{made.suffix}")
        if stem == "fp16_overflow":
            shutil.copy2(folders["statistics"][reference] / "dump.json", out / f"{stem}_bench_dump.json")
            shutil.copy2(folders["statistics"][target] / "dump.json", out / f"{stem}_target_dump.json")
    shutil.rmtree(work)


if __name__ == "__main__":
    if sys.argv[1] == "--dump":
        made = dump(sys.argv[2], Path(sys.argv[3]))
        (Path(sys.argv[3]) / "folders.json").write_text(json.dumps({k: str(v) for k, v in made.items()}),
                                                        encoding="utf-8")
    else:
        main(Path(sys.argv[1]))
