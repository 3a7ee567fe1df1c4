"""Pair the calls of two msprobe dumps, also across frameworks (PyTorch bench, MindSpore target).

Four passes, each only over the calls the previous ones left unpaired; when a pass's rule does
not decide (two candidates with the same key, unequal counts), the calls stay unpaired:

1. **Exact name**: ``Functional.linear.0.forward`` on both sides.
2. **Normalised API and call counter**: the framework prefix is dropped (``Torch.cos`` = ``Mint.cos``
   = ``Functional.cos``; for MindSpore ``Primitive.<attr>.<Class>`` the class is the API), the name
   is lowercased without ``_`` and a leading ``npu_`` (``NPU.npu_rms_norm`` = ``Primitive.norm.RmsNorm``),
   and ``API_ALIASES`` maps the few APIs the frameworks name differently. Within one (normalised
   API, direction), calls pair by counter, but only if each side spells that API one way: counters
   count calls per spelling, so ``Torch.add`` + ``Tensor.add`` on one side do not line up with
   ``Mint.add`` on the other.
3. **Call order**: within one (normalised API, direction), the k-th remaining call pairs with the
   k-th, when both sides have the same number of them left.
4. **Modules** (``Module.*`` / ``Cell.*``): same class (lowercased, ``_`` dropped; ``MODULE_ALIASES``:
   MindSpore ``Dense`` is PyTorch ``Linear``), direction and call counter; among several, the pair
   sharing the longest tail of the module path wins, then the most path segments in common
   (``layers.0.attention`` vs ``layers.0.self_attention``).

What stays unpaired is reported by the caller as target-only or bench-only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.ingest.msprobe_names import parse_call

# APIs the frameworks name differently, after normalisation (both spellings map to the value).
# Each pair appears in msprobe's own cross-framework test data (MindSpore vs PyTorch dumps).
API_ALIASES: dict[str, str] = {
    "flashattentionscore": "fusionattention",  # ops.flash_attention_score / torch_npu.npu_fusion_attention
    "logicalor": "or",                         # mint.logical_or / Tensor.__or__ on bool masks
}
# MindSpore nn.Cell classes under their PyTorch nn.Module names (lowercased, without "_").
MODULE_ALIASES: dict[str, str] = {"dense": "linear", "sequentialcell": "sequential"}



@dataclass(frozen=True)
class CallPair:
    target: str | None
    bench: str | None


def pair_calls(target: Sequence[str], bench: Sequence[str]) -> list[CallPair]:
    """Pairs (and singles) covering every call once, in target execution order; a bench-only call
    comes right after the pair of the bench call before it."""
    matched: dict[str, str] = {}   # target -> bench
    free_bench = set(bench)
    for name in target:
        if name in free_bench:
            matched[name] = name
            free_bench.discard(name)
    for match in (_by_api_key, _by_api_order, _by_module):
        left_target = [t for t in target if t not in matched]
        left_bench = [b for b in bench if b in free_bench]
        for t, b in match(left_target, left_bench):
            matched[t] = b
            free_bench.discard(b)
    return _merge_order(target, bench, matched)


def normalised_api(api: str) -> str:
    parts = api.split(".")
    name = parts[-1] if parts[0] == "Primitive" else ".".join(parts[1:]) or parts[0]
    name = name.lower()
    name = name.removeprefix("npu_").replace("_", "")
    return API_ALIASES.get(name, name)


@dataclass(frozen=True)
class _ApiCall:
    name: str
    api: str          # as spelt, old names with "." (Torch_relu -> Torch.relu)
    counter: int


def _api_calls(calls: Sequence[str]) -> dict[tuple[str, str], list[_ApiCall]]:
    """API calls (not modules) by (normalised API, direction), in execution order."""
    groups: dict[tuple[str, str], list[_ApiCall]] = defaultdict(list)
    for call in calls:
        parts = parse_call(call)
        if parts is not None and parts.kind == "api":
            groups[(normalised_api(parts.name), parts.direction)].append(_ApiCall(call, parts.name, parts.counter))
    return groups


def _by_api_key(target: Sequence[str], bench: Sequence[str]) -> list[tuple[str, str]]:
    # Counters count calls of one API as spelt; they only line up when each side spells the
    # group's API one way (Mint.add vs Torch.add, not Torch.add and Tensor.add on one side).
    bench_groups = _api_calls(bench)
    pairs = []
    for group, targets in _api_calls(target).items():
        benches = bench_groups.get(group, [])
        if len({c.api for c in targets}) == 1 and len({c.api for c in benches}) == 1:
            by_counter = {c.counter: c.name for c in benches}
            pairs.extend((c.name, by_counter[c.counter]) for c in targets if c.counter in by_counter)
    return pairs


def _by_api_order(target: Sequence[str], bench: Sequence[str]) -> list[tuple[str, str]]:
    bench_groups = _api_calls(bench)
    pairs = []
    for group, targets in _api_calls(target).items():
        benches = bench_groups.get(group, [])
        if len(targets) == len(benches):
            pairs.extend((t.name, b.name) for t, b in zip(targets, benches, strict=True))
    return pairs


def _by_module(target: Sequence[str], bench: Sequence[str]) -> list[tuple[str, str]]:
    groups: dict[tuple[str, str, int], tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]]]]
    groups = defaultdict(lambda: ([], []))
    for side, calls in ((0, target), (1, bench)):
        for call in calls:
            parts = parse_call(call)
            if parts is not None and parts.kind == "module":
                cls = parts.name.lower().replace("_", "")
                key = (MODULE_ALIASES.get(cls, cls), parts.direction, parts.counter)
                groups[key][side].append((call, parts.path.split(".")))
    pairs = []
    for targets, benches in groups.values():
        candidates = sorted(
            ((_path_likeness(tp, bp), -i, -j, t, b)
             for i, (t, tp) in enumerate(targets) for j, (b, bp) in enumerate(benches)),
            reverse=True)
        used_t: set[str] = set()
        used_b: set[str] = set()
        for _, _, _, t, b in candidates:
            if t not in used_t and b not in used_b:
                pairs.append((t, b))
                used_t.add(t)
                used_b.add(b)
    return pairs


def _path_likeness(a: list[str], b: list[str]) -> tuple[int, int]:
    tail = 0
    while tail < min(len(a), len(b)) and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return tail, sum((Counter(a) & Counter(b)).values())


def _merge_order(target: Sequence[str], bench: Sequence[str], matched: dict[str, str]) -> list[CallPair]:
    target_pos = {t: i for i, t in enumerate(target)}
    bench_partner = {b: t for t, b in matched.items()}
    keyed: list[tuple[tuple[int, int, int], CallPair]] = [
        ((i, 0, 0), CallPair(t, matched.get(t))) for i, t in enumerate(target)]
    anchor = -1
    for j, b in enumerate(bench):
        if b in bench_partner:
            anchor = target_pos[bench_partner[b]]
        else:
            keyed.append(((anchor, 1, j), CallPair(None, b)))
    return [pair for _, pair in sorted(keyed, key=lambda item: item[0])]
