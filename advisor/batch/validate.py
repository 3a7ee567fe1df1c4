"""Check every job's options against its rule packs before anything runs.

A misspelt rule id in ``disable``, an unknown ``params`` key or a broken extra rule pack is a
mistake in the batch, not in one night's input: it would fail every job that shares it, one by one.
So the parent checks each distinct option set once, up front, and stops the batch (exit 2) naming
the manifest line, the way ``advisor run`` stops before reading a large input.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine.loading import load_packs, parse_param_overrides, select_rules
from ..engine.registry import Registry
from ..errors import AdvisorError
from ..facts.providers import load_providers
from ..facts.thresholds import load_thresholds
from .jobs import Batch, Job
from .manifest import ManifestError


def check_options(batch: Batch) -> None:
    """Raise ManifestError (with the job's manifest line when there is one) on the first bad option."""
    checked: set[tuple] = set()
    for job in batch.jobs:
        key = (job.rule_packs, job.builtin_rules, job.disable, job.severity, job.params, job.thresholds)
        if key in checked:
            continue
        _check(job, _fail_for(batch, job))
        checked.add(key)


def _check(job: Job, fail: Callable[[AdvisorError], None]) -> None:
    try:
        registry = Registry()                  # the job's own, as analyse() makes it
        load_providers(registry)
        pack_set = load_packs(job.rule_packs, builtin=job.builtin_rules, registry=registry)
        rules = select_rules(pack_set.rules, job.disable, dict(job.severity))
        parse_param_overrides(job.params, rules)
        load_thresholds((*pack_set.thresholds(), *job.thresholds))
    except AdvisorError as exc:
        fail(exc)


def _fail_for(batch: Batch, job: Job) -> Callable[[AdvisorError], None]:
    def fail(exc: AdvisorError) -> None:
        message = f"job '{job.name}': {exc.one_line()}"
        if job.line is not None and not batch.source.startswith("scan:"):
            raise ManifestError(message, path=batch.source, line=job.line) from None
        raise ManifestError(message) from None

    return fail
