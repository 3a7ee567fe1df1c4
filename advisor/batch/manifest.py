"""Batch manifests (YAML): which comparisons to analyse together, with which options.

::

    title: Nightly accuracy watch          # heading of the index page (default: the file name)
    output: reports/nightly                # index.html, digest.md, history.sqlite, one folder per job
    history: reports/nightly/history.sqlite   # default: OUTPUT/history.sqlite
    workers: 4                             # default: every core
    defaults:                              # options for every job (a job's own options go on top)
      formats: [html, json]
      thresholds: {float16.cosine: 0.98}
    jobs:
      - name: resnet50-fp16                # unique; names the job in the history and on the index
        input: runs/resnet50/result_20240506112307.csv   # the comparison result (required)
        output: resnet50                   # report folder inside OUTPUT (default: the name); see allow_outside
        graph: runs/resnet50/model.onnx    # recorded and hashed; see below
        dumps: {golden: runs/resnet50/golden, target: runs/resnet50/npu}
        config: runs/resnet50/build.json
        rules: [team-rules/]               # extra rule packs
        builtin_rules: true
        input_nodes: [images]              # or "images;mask"
        thresholds: {cosine: 0.995}        # same keys as --threshold
        params: {problem-node.min_confidence: 0.7}   # same keys as --set
        disable: [single-point-deviation]
        severity: {fp16-overflow-masked: error}
        comparison_format: msaccucmp
        max_op_facts: 2000
        lang: zh
        formats: html,md                   # or a list
        backends: [ascend, onnxruntime]    # remedy files (like --backend; default: the config's tool)
        verify: true                       # check the diagnosis on the CPU (like --verify; needs graph and dumps)

Relative paths are relative to the manifest's folder (``output`` of a job: to ``OUTPUT``). A job's
``output`` stays inside ``OUTPUT``, and the manifest's own ``output`` and ``history`` inside the
manifest's folder (no absolute path, no ``..``), unless the manifest says ``allow_outside: true`` at the
top: a manifest from someone else cannot make a batch write elsewhere (``-o`` and ``--db`` on the
command line may name any folder). Option
keys mean what the same ``advisor run`` options mean; project settings (``advisor.toml``) apply
underneath, as for ``advisor run``.

``graph``, ``dumps`` and ``config`` are what ``advisor run --graph --dumps --config`` reads; they are
hashed too (a change re-runs the job) and recorded in the history. ``evidence: {graph: "*.onnx",
golden: cpu, target: npu, config: "build*.json"}`` at the top makes a job that does not name one of them
take it from beside its input, found by those names (a role left out: its documented names, see
advisor/batch/evidence.py, which ``advisor batch --scan`` always uses). A job's reports include the
remedy files (``remedy/``) when its diagnosis has a fix, and with ``verify`` the repro packs (``replay/``).

A mistake (unknown key, wrong type, duplicate name) stops the batch before anything runs, with
the file, line and column, and the nearest known key for a misspelt one. A missing *input* file is
not a manifest mistake: that job fails with its error and the others run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from ..advice import LANGUAGES
from ..config import ProjectConfig
from ..defaults import DEFAULT_OUTPUT, HISTORY_FILE
from ..errors import RulePackError, UsageError
from ..remedy import parse_backends
from ..report import get_reporter
from ..text import suggest
from ..yamlfile import LineDict, load_yaml
from .evidence import ROLES as EVIDENCE_ROLES
from .evidence import Evidence, find_evidence, patterns
from .jobs import OPTION_KEYS, Batch, Job, make_job, merge_layers, settings_layer

TOP_KEYS = ("title", "output", "history", "workers", "allow_outside", "evidence", "defaults", "jobs")
JOB_KEYS = ("name", "input", "output", "graph", "dumps", "config", *OPTION_KEYS)
DUMPS_KEYS = ("golden", "target")


class ManifestError(UsageError):
    """The manifest is malformed. Nothing has run; the message names file, line and column."""


def load_manifest(path: Path, settings: ProjectConfig, *, output: Path | None = None,
                  history: Path | None = None) -> Batch:
    """Read and check a manifest. ``output``/``history`` (command line) override the manifest's."""
    try:
        root = load_yaml(path)
    except RulePackError as exc:   # the YAML loader's error type; here it is a manifest problem
        raise ManifestError(exc.message, path=exc.path, line=exc.line, column=exc.column) from None
    reader = _Reader(path)
    if not isinstance(root, LineDict):
        reader.fail("a manifest is a mapping with a 'jobs:' list", root)
    reader.check_keys(root, TOP_KEYS, "manifest")
    base = path.absolute().parent
    allow_outside = reader.boolean(root, "allow_outside") if "allow_outside" in root else False
    own_output, own_history = (_own_path(reader, root, key, base, allow_outside) for key in ("output", "history"))
    out = output or own_output or base / DEFAULT_OUTPUT
    defaults = root.get("defaults", LineDict())
    if not isinstance(defaults, LineDict):
        reader.fail("'defaults' must be a mapping of job options", root, "defaults")
    reader.check_keys(defaults, OPTION_KEYS, "defaults")
    default_layer = read_options(reader, defaults, base)
    nodes = root.get("jobs")
    if not isinstance(nodes, list) or not nodes:
        reader.fail("'jobs' must be a non-empty list of jobs", root, "jobs" if "jobs" in root else None)
    base_layers = [settings_layer(settings), default_layer]
    names = _evidence_names(reader, root)
    jobs = [_job(reader, node, base, out, base_layers, settings, allow_outside, names) for node in nodes]
    check_unique(jobs, lambda job, message: reader.fail(message, line=job.line))
    workers = root.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        reader.fail("'workers' must be a whole number of at least 1", root, "workers")
    title = reader.string(root, "title") or path.stem
    return Batch(source=str(path.resolve()), digest=batch_digest(jobs), title=title, output=out,
                 history=history or own_history or out / HISTORY_FILE,
                 jobs=jobs, workers=workers)


def _own_path(reader: _Reader, root: LineDict, key: str, base: Path, allow_outside: bool) -> Path | None:
    """The manifest's own ``output`` or ``history``: inside the manifest's folder, as a job's output is
    inside the batch output, unless the manifest allows outside (the command line's -o / --db may name
    any place: the user typed them)."""
    text = reader.string(root, key)
    problem = check_job_name(text) if text is not None and not allow_outside else None
    if problem:
        reader.fail(f"the batch's '{key}' is a path inside the manifest's folder: '{text}' {problem} (or set "
                    "'allow_outside: true' at the top of the manifest, or give it on the command line)", root, key)
    return None if text is None else _relative(base, text)


def batch_digest(jobs: list[Job]) -> str:
    text = json.dumps([job.spec() for job in jobs], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_unique(jobs: list[Job], fail: Callable[[Job, str], NoReturn]) -> None:
    """Job names identify jobs in the history; report folders must not be shared."""
    names: dict[str, Job] = {}
    outdirs: dict[Path, Job] = {}
    for job in jobs:
        if job.name in names:
            fail(job, f"job name '{job.name}' is used twice (first at line {names[job.name].line})")
        names[job.name] = job
        outdir = job.outdir.resolve()
        if outdir in outdirs:
            fail(job, f"job '{job.name}' writes its reports into the folder of job '{outdirs[outdir].name}' "
                      f"({job.outdir}); give it its own 'output'")
        outdirs[outdir] = job


def check_job_name(name: str) -> str | None:
    """Why ``name`` cannot be a job name (it is also the default report folder), or None."""
    if not name or name != name.strip():
        return "must be a non-empty name without leading or trailing spaces"
    if any(ord(c) < 32 or c in "\\\x7f" for c in name):
        return "must not hold control characters or backslashes"
    parts = PurePosixPath(name).parts
    if name.startswith("/") or any(p in (".", "..") for p in parts) or "//" in name or name.endswith("/"):
        return "must be a relative folder name ('a', 'team/model'), without '.' or '..' parts"
    return None


def read_options(reader: _Reader, node: LineDict, base: Path) -> dict[str, Any]:
    """One option layer from a mapping whose keys were already checked."""
    layer: dict[str, Any] = {}
    if "rules" in node:
        layer["rules"] = [_relative(base, p) for p in reader.strings(node, "rules")]
    if "builtin_rules" in node:
        layer["builtin_rules"] = reader.boolean(node, "builtin_rules")
    if "verify" in node:
        layer["verify"] = reader.boolean(node, "verify")
    if "input_nodes" in node:
        value = node["input_nodes"]
        names = value.split(";") if isinstance(value, str) else reader.strings(node, "input_nodes")
        layer["input_nodes"] = tuple(n.strip() for n in names if n.strip())
    if "thresholds" in node:
        layer["thresholds"] = [f"{k}={_scalar(v)}" for k, v in reader.scalars(node, "thresholds").items()]
    if "params" in node:
        layer["params"] = [f"{k}={_scalar(v)}" for k, v in reader.scalars(node, "params").items()]
    if "disable" in node:
        layer["disable"] = reader.strings(node, "disable")
    if "severity" in node:
        layer["severity"] = {k: _scalar(v) for k, v in reader.scalars(node, "severity").items()}
    if "comparison_format" in node:
        layer["comparison_format"] = reader.string(node, "comparison_format")
    if "max_op_facts" in node:
        value = node["max_op_facts"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            reader.fail("'max_op_facts' must be a whole number of at least 1", node, "max_op_facts")
        layer["max_op_facts"] = value
    if "lang" in node:
        lang = reader.string(node, "lang")
        if lang not in LANGUAGES:
            reader.fail(f"'lang' must be one of {', '.join(LANGUAGES)}, not '{lang}'", node, "lang")
        layer["lang"] = lang
    if "formats" in node:
        layer["formats"] = _formats(reader, node)
    if "backends" in node:
        value = node["backends"]
        try:
            layer["backends"] = parse_backends([value] if isinstance(value, str) else reader.strings(node, "backends"),
                                               "'backends'")
        except UsageError as exc:
            reader.fail(exc.message, node, "backends")
    return layer


def _evidence_names(reader: _Reader, root: LineDict) -> dict[str, tuple[str, ...]] | None:
    """The manifest's ``evidence:`` (role -> globs, over the documented names), or None without one."""
    if "evidence" not in root:
        return None
    node = root["evidence"]
    if not isinstance(node, LineDict):
        reader.fail("'evidence' must be a mapping of roles (graph, golden, target, config) to file names", root,
                    "evidence")
    reader.check_keys(node, EVIDENCE_ROLES, "evidence")
    given = {role: ([node[role]] if isinstance(node[role], str) else reader.strings(node, role)) for role in node}
    return patterns({role: tuple(g.strip() for g in globs if g.strip()) for role, globs in given.items()})


def _job(reader: _Reader, node: Any, base: Path, out: Path, base_layers: list[Mapping[str, Any]],
         settings: ProjectConfig, allow_outside: bool = False,
         evidence: Mapping[str, tuple[str, ...]] | None = None) -> Job:
    if not isinstance(node, LineDict):
        reader.fail("each job is a mapping with at least 'name' and 'input'", node)
    reader.check_keys(node, JOB_KEYS, "job")
    name = reader.string(node, "name", required=True)
    problem = check_job_name(name)
    if problem:
        reader.fail(f"job name '{name}' {problem}", node, "name")
    input_path = reader.path(node, "input", base, required=True)
    dumps = None
    if "dumps" in node:
        spec = node["dumps"]
        if not isinstance(spec, LineDict):
            reader.fail("'dumps' must be a mapping {golden: FOLDER, target: FOLDER}", node, "dumps")
        reader.check_keys(spec, DUMPS_KEYS, "dumps")
        golden, target = (reader.path(spec, key, base, required=True) for key in DUMPS_KEYS)
        dumps = (golden, target)
    output = reader.string(node, "output")
    problem = check_job_name(output) if output is not None and not allow_outside else None
    if problem:
        reader.fail(f"a job's 'output' is a folder inside the batch output: '{output}' {problem} "
                    "(or set 'allow_outside: true' at the top of the manifest)", node, "output")
    outdir = out / (Path(output).expanduser() if output and allow_outside else output or name)
    options = merge_layers([*base_layers, read_options(reader, node, base)])
    found = find_evidence(input_path.parent, evidence) if evidence is not None else Evidence()
    return make_job(name, input_path, outdir, options, graph=reader.path(node, "graph", base) or found.graph,
                    dumps=dumps or found.dumps, config=reader.path(node, "config", base) or found.config,
                    settings=settings.source, line=node.where()[0])


def _formats(reader: _Reader, node: LineDict) -> tuple[str, ...]:
    value = node["formats"]
    names = value.split(",") if isinstance(value, str) else reader.strings(node, "formats")
    formats = tuple(dict.fromkeys(n.strip().lower() for n in names if n.strip()))
    if not formats:
        reader.fail("'formats' names no report format", node, "formats")
    for fmt in formats:
        try:
            get_reporter(fmt)
        except UsageError as exc:
            reader.fail(exc.message, node, "formats")
    return formats


def _scalar(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _relative(base: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


class _Reader:
    """Typed access to manifest mappings; every mistake names the manifest, line and column."""

    def __init__(self, path: Path) -> None:
        self.file = path

    def fail(self, message: str, node: Any = None, key: str | None = None, *, line: int | None = None) -> NoReturn:
        column = None
        if isinstance(node, LineDict):
            line, column = node.where(key)
        raise ManifestError(message, path=self.file, line=line or None, column=column or None)

    def check_keys(self, node: LineDict, allowed: tuple[str, ...], what: str) -> None:
        for key in node:
            if key not in allowed:
                self.fail(f"unknown {what} key '{key}'{suggest(str(key), list(allowed))}; "
                          f"known: {', '.join(allowed)}", node, str(key))

    def string(self, node: LineDict, key: str, required: bool = False) -> str | None:
        if key not in node:
            if required:
                self.fail(f"'{key}' is required", node)
            return None
        value = node[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(f"'{key}' must be a non-empty string", node, key)
        return value.strip()

    def path(self, node: LineDict, key: str, base: Path, required: bool = False) -> Path | None:
        text = self.string(node, key, required)
        return None if text is None else _relative(base, text)

    def strings(self, node: LineDict, key: str) -> list[str]:
        value = node[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            self.fail(f"'{key}' must be a list of strings", node, key)
        return [v.strip() for v in value]

    def boolean(self, node: LineDict, key: str) -> bool:
        value = node[key]
        if not isinstance(value, bool):
            self.fail(f"'{key}' must be true or false", node, key)
        return value

    def scalars(self, node: LineDict, key: str) -> dict[str, Any]:
        value = node[key]
        if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
            self.fail(f"'{key}' must be a mapping of names to values, e.g. {{cosine: 0.995}}", node, key)
        return {str(k): v for k, v in value.items()}
