"""``advisor post``: two runs' detections -> facts -> the ``post`` rules -> Diagnosis, through the
same engine, ranking and reports as ``advisor run``. The network's output may agree op for op while
the product is broken by what happens after it: class ids, box geometry, decode, threshold, NMS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .detections import ImagesInfo, read_annotations, read_detections, read_images_info
from .diagnosis import Diagnosis, PackInfo
from .engine.loading import load_packs, select_rules
from .engine.ranking import rank_findings
from .engine.registry import Registry
from .engine.runner import run_rules
from .errors import InputFormatError
from .facts.thresholds import load_thresholds
from .pipeline import check_settings, pack_params
from .post.measure import Knobs, measure

COMMAND = "post"
CONSISTENT_KIND = "detections_consistent"     # the finding that says the two post-processings agree
STAGES = ("reading rule packs", "reading detections", "measuring", "firing rules", "ranking findings")


@dataclass
class PostOptions:
    golden: Path
    target: Path
    mapping: Path | None = None               # YAML column mapping of CSV detections (both runs)
    annotations: Path | None = None           # COCO instances file: per-class AP
    images_info: Path | None = None           # image and network input sizes
    input_size: tuple[float, float] | None = None    # --input-size, over the images-info file's
    rule_packs: list[Path] = field(default_factory=list)
    builtin_rules: bool = True
    plugins: bool = True
    thresholds: tuple[str, ...] = ()          # knobs: "post.match_iou=0.6"
    params: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    severity: dict[str, str] = field(default_factory=dict)
    settings: Path | None = None


def analyse_post(options: PostOptions, stage: Callable[[str], None] | None = None) -> Diagnosis:
    stage = stage or (lambda name: None)
    stage(STAGES[0])
    registry = Registry()
    pack_set = load_packs(options.rule_packs, builtin=options.builtin_rules, installed=options.plugins,
                          registry=registry, command=COMMAND)
    check_settings(options.settings, pack_set.rules, pack_set.thresholds())
    rules = select_rules(pack_set.rules, options.disable, options.severity)
    params = pack_params(pack_set.params(), pack_set.rules, rules, options.params)
    thresholds = load_thresholds((*pack_set.thresholds(), *options.thresholds))
    stage(STAGES[1])
    golden = read_detections(options.golden, options.mapping)
    target = read_detections(options.target, options.mapping)
    annotations = read_annotations(options.annotations) if options.annotations else None
    info = read_images_info(options.images_info) if options.images_info else ImagesInfo()
    if options.input_size is not None:
        info = ImagesInfo(options.input_size, info.sizes)
    if not len(golden) and not len(target):
        raise InputFormatError("neither run kept a detection: nothing to compare", path=options.golden)
    stage(STAGES[2])
    measured = measure(golden, target, annotations, info, Knobs.from_thresholds(thresholds))
    stage(STAGES[3])
    result = run_rules(rules, measured.facts, params)
    stage(STAGES[4])
    root, ordered = rank_findings(result.findings, result.explanations, {r.id: r.priority for r in rules})
    network = {**measured.summary, "consistent": any(f.kind == CONSISTENT_KIND for f in ordered)}
    return Diagnosis(
        root_cause=root,
        findings=ordered,
        network=network,
        inputs={"golden": str(options.golden), "target": str(options.target), "format": golden.format,
                **({"mapping": str(options.mapping)} if options.mapping else {}),
                **({"annotations": str(options.annotations)} if options.annotations else {}),
                **({"images_info": str(options.images_info)} if options.images_info else {})},
        packs=[PackInfo(p.name, p.version, str(p.source), len(p.rules)) for p in pack_set.packs],
        thresholds={},
        overrides={"thresholds": [*pack_set.thresholds(), *options.thresholds], "params": params,
                   "disabled": list(options.disable), "severity": dict(options.severity),
                   "settings": str(options.settings) if options.settings else None,
                   **({"input_size": list(info.input_size)} if info.input_size else {})},
        version=__version__,
        warnings=pack_set.warnings,
        advice_pages=dict(registry.advice.inline),
        backends=("any",),        # post-processing is the user's own code: the backend-neutral fix leads
        post=measured.exhibit,
    )
