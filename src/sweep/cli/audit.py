"""``sweep audit``: what the golden set can be trusted to decide.

    sweep audit [--json] [--html FILE] [--threshold 0.9] [--no-embedding] [--all]
                [--sweep latest|PARENT_RUN_ID] [--experiment NAME] [--tracking-uri URI]
                [--detect D] [--no-power] [overrides...]

The same audit runs with ``sweep validate --audit`` and is written (audit.json, audit.html) to
each sweep's folder and logged to its parent run. Its power line (what the set can decide)
comes from a sweep scored on the set: the latest in the MLflow store, or ``--sweep``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep.application.audit import run_audit
from sweep.cli.args import detect_arg, selection_args
from sweep.common.errors import SweepError
from sweep.config.checks import check_config
from sweep.config.compose import compose
from sweep.config.specs import JobSpec, build_job_spec
from sweep.evaluation.audit import AuditSpec
from sweep.outputs.audit_report import audit_html, audit_json, audit_text


def add_audit_options(parser: argparse.ArgumentParser) -> None:
    """The audit's options, shared with ``sweep validate --audit``."""
    parser.add_argument("--threshold", type=float, default=AuditSpec.dup_threshold,
                        help="cosine similarity (bundled MiniLM) at or above which two "
                             f"questions are near-duplicates (default {AuditSpec.dup_threshold})")
    parser.add_argument("--no-embedding", action="store_true",
                        help="near-duplicates by normalised text only (no model is loaded)")
    parser.add_argument("--html", metavar="FILE", help="also write the audit as an HTML page")
    # The power line: the set alone has no spread to size a difference from; a sweep on it has.
    selection_args(parser)
    detect_arg(parser)
    parser.add_argument("--no-power", action="store_true",
                        help="no power line (reads no sweep from MLflow)")


def audit_from_args(job: JobSpec, args: argparse.Namespace) -> dict[str, Any]:
    if not 0.0 < args.threshold <= 1.0:
        raise SweepError(f"--threshold: must be in (0, 1], got {args.threshold}")
    report = run_audit(job, embed=not args.no_embedding,
                       spec=AuditSpec(dup_threshold=args.threshold))
    if not args.no_power:
        report["set"]["power"] = power_from_args(report, args)
    return report


def power_from_args(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """What the audited set can decide, from the selected sweep's best and runner-up among
    the configurations that scored this set (`decision.sweep_power`)."""
    from sweep.decide.decision import sweep_power
    from sweep.decide.runs import default_uri

    fingerprint = (report.get("inputs") or {}).get("golden_fingerprint")
    with tempfile.TemporaryDirectory(prefix="sweep-audit-") as tmp:
        return sweep_power(args.tracking_uri or default_uri(), args.experiment, args.sweep,
                           fingerprint, Path(tmp), args.detect)


def write_html(path: str, report: dict[str, Any]) -> None:
    from sweep.common.files import atomic_write

    try:
        atomic_write(Path(path), audit_html(report))
    except OSError as exc:
        raise SweepError(f"--html {path}: cannot write ({exc.strerror or exc})") from None
    print(f"audit page: {path}", file=sys.stderr)


def cmd_audit(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep audit", description="Audit the golden set: synthetic smell, near-duplicate "
        "questions, ambiguous evidence, answers split across chunks, coverage.")
    parser.add_argument("--json", action="store_true", help="the whole audit as JSON")
    parser.add_argument("--all", action="store_true", help="list every finding in the text")
    add_audit_options(parser)
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. golden.path=FILE")
    args = parser.parse_args(argv)
    cfg = compose(args.overrides)
    check_config(cfg)
    report = audit_from_args(build_job_spec(cfg), args)
    if args.html:
        write_html(args.html, report)
    sys.stdout.write(audit_json(report) if args.json else audit_text(report, 0 if args.all
                                                                     else 20))
    return 0
