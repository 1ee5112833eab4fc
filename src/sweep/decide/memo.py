"""The gate's run memo: ``sweep baseline check`` does not run again what nothing has changed.

A CI gate re-runs on every pull request, and most pull requests touch neither the corpus, the
golden set, the configuration nor the code that scores them. When every input of the gated run
is as it was, its numbers are too (the pipeline is deterministic given its inputs and the caches
a warm run reads), so ``check`` reads them from ``<cache.dir>/gate/<key>.json`` and compares them
with the baseline without importing the pipeline. The idea is DVC's run cache: a stage whose
dependencies and parameters hash the same is not run.

Two layers, so that a lookup needs only the standard library:

- the **key** hashes what determines the composed configuration and the code: the overrides,
  every file under ``conf/`` (experiments included) and under the project's own ``conf/``,
  the environment variables the configuration can read, the working directory, the package's source, the installed
  distributions and the Python version;
- the memo lists the **inputs** the composed configuration reads, each with its digest: the
  corpus and the golden set by content, each local model folder by ``folder_signature``, a
  tokenizer.json and a stop-word file by content. A lookup recomputes them; one that differs
  means a run. Both are taken before the run (`prepare`): a file edited while it runs makes
  the memo stale, never wrong.

A configuration with a part whose answers are not on disk (an endpoint: served embeddings or
reranking, a Chroma server, generation, a judge, contextual headers; a model or tokenizer
named by hub id) is never memoised. Neither is one with ``cache.enabled=false``. ``check --rerun`` ignores the
memo; ``sweep cache clear`` removes it.

A memo is **sealed**: an HMAC-SHA256 of its whole content, keyed by ``$CHUNK_SWEEP_MEMO_SECRET``
when that is set (a CI secret) and by nothing otherwise (a self-check). A memo whose seal does
not match (its numbers edited, or sealed under another secret or none) means a run, with a
warning. The self-check catches an edit by hand or by a script that does not know the seal; it
does not stop someone who reads this module, who can recompute it. Only the secret does: a job
without it (a pull request from a fork) cannot write a memo that a job with it accepts. The
threat model is docs/endpoints-and-caches.md's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sweep.common.files import (
    DIGESTS_FOLDER,
    atomic_write,
    content_digest,
    folder_signature,
    read_text_regular,
)
from sweep.common.paths import (
    PACKAGE_DIR,
    PROJECT_ROOT,
    conf_path,
    resolve_user_path,
    user_conf_path,
)
from sweep.common.seal import SECRET_ENV as SECRET_ENV  # the variable tests and docs name here
from sweep.common.seal import seal as common_seal
from sweep.common.seal import seal_problem, sealed_with
from sweep.data.abstentions import ABSTENTIONS_NAME

log = logging.getLogger(__name__)

FOLDER = "gate"
FORMAT = 2  # 2: sealed
# Variables that move a default (the cache, the config folder, where models are found) or that
# a library reads when it loads a model. Values whose names look secret stay out of the key.
_ENV_PREFIXES = ("CHUNK_SWEEP_", "HF_", "SENTENCE_TRANSFORMERS", "TRANSFORMERS_", "TIKTOKEN_")
# ...apart from those that change how a run talks or logs, never what it computes.
_ENV_IGNORED = frozenset({"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
                          "HF_HUB_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_TELEMETRY",
                          "TRANSFORMERS_VERBOSITY", "CHUNK_SWEEP_PROGRESS", "CHUNK_SWEEP_DEBUG"})
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_OC_ENV = re.compile(r"oc\.env\s*:\s*([A-Za-z_][A-Za-z0-9_]*)")


# --- the key ---------------------------------------------------------------------------------

def _conf_texts(folder: Path) -> Iterable[str]:
    for top, _dirs, names in os.walk(folder, followlinks=True):
        for name in names:
            if name.endswith((".yaml", ".yml")):
                try:
                    yield read_text_regular(Path(top) / name, errors="replace")
                except OSError:
                    continue


def _environment(conf: Path, overrides: Sequence[str],
                 texts: Sequence[str] | None = None) -> dict[str, str]:
    texts = list(_conf_texts(conf)) if texts is None else texts
    named = {m for text in (*texts, *overrides) for m in _OC_ENV.findall(text)}
    named |= {k for k in os.environ if k.startswith(_ENV_PREFIXES)}
    return {k: os.environ.get(k, "\0unset") for k in sorted(named - _ENV_IGNORED)
            if not _SECRET.search(k)}


def _distributions() -> list[str]:
    """Every installed distribution's name and version, as its metadata folder names them
    (a listing of each import path; nothing is imported)."""
    found: set[str] = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                found.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    return sorted(found)


def memo_key(overrides: Sequence[str]) -> str | None:
    """What decides the composed configuration and the code that runs it, hashed; None when
    configuration can come from outside ``conf/`` (a Hydra search path names other folders)."""
    conf = conf_path()
    user = user_conf_path()  # the project's conf/, layered over the bundled one
    texts = [*_conf_texts(conf), *(_conf_texts(user) if user else ())]
    if any("searchpath" in t for t in (*texts, *overrides)):
        return None
    payload = {
        "format": FORMAT,
        "overrides": list(overrides),
        "conf": content_digest(conf),
        "user_conf": content_digest(user) if user else None,
        "env": _environment(conf, overrides, texts),
        "cwd": os.getcwd(),
        "project_root": str(PROJECT_ROOT),
        "source": content_digest(PACKAGE_DIR),
        "distributions": _distributions(),
        "python": sys.version,
        "executable": sys.executable,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def predicted_cache_dir(overrides: Sequence[str]) -> Path | None:
    """``cache.dir`` as composing would give it, read off the overrides and the environment
    (the default's own rule); None when the overrides leave it to an interpolation. A memo is
    written only where the composed configuration agrees (`prepare` checks)."""
    given = [o.split("=", 1)[1] for o in overrides
             if o.lstrip("+").split("=", 1)[0] == "cache.dir" and "=" in o]
    if given:
        value = given[-1]
        return None if "${" in value else resolve_user_path(value, "cache.dir")
    env = os.environ.get("CHUNK_SWEEP_CACHE_DIR")
    return (resolve_user_path(env, "CHUNK_SWEEP_CACHE_DIR") if env
            else resolve_user_path(PROJECT_ROOT / ".cache", "cache.dir"))


def _memo_path(overrides: Sequence[str]) -> tuple[Path, str] | None:
    cache = predicted_cache_dir(overrides)
    if cache is None or any(o.lstrip("+") in ("cache.enabled=false", "cache.enabled=False")
                            for o in overrides):
        return None
    key = memo_key(overrides)
    return None if key is None else (cache / FOLDER / f"{key}.json", key)


# --- the inputs ------------------------------------------------------------------------------

def _digest(item: Mapping[str, str], digests: Path | None) -> str:
    """``digests``: the cache's memo of model file digests (`folder_signature`), or None."""
    if item["kind"] == "content":
        return content_digest(item["path"])
    return folder_signature(item["path"], digests)


def run_inputs(plain: Mapping[str, Any]) -> tuple[list[dict[str, str]], str]:
    """The files and folders the resolved configuration ``plain`` reads, with their digests
    now; or no inputs and the reason it cannot be memoised."""
    from sweep.config.axes import AXES, model_settings, remote_choices
    from sweep.config.identity import active_sections
    from sweep.embedding.models import resolve_model_path

    sections = active_sections(plain)
    chunk = plain.get("chunk") or {}
    if not (plain.get("cache") or {}).get("enabled", False):
        return [], "cache.enabled=false"
    # generation and a judge are never memoised, whatever their method (the gated run is the
    # retrieval half); any other choice answering from outside the machine (a registry entry
    # with the `remote` trait: a served model, a Chroma server, contextual headers) neither.
    remote = [name for name, on in (("generation", "generation" in sections),
                                    ("a judge", "judge" in sections)) if on]
    remote += remote_choices(plain, tuple(s for s in sections
                                          if s not in ("generation", "judge")))
    if remote:
        return [], f"{remote[0]} answers from outside the machine's files"
    golden = resolve_user_path(plain["golden"]["path"], "golden.path")
    inputs = [{"kind": "content", "path": str(resolve_user_path(plain["corpus"]["path"],
                                                                "corpus.path"))},
              {"kind": "content", "path": str(golden)},
              # questions the corpus cannot answer, scored by the run (data/abstentions.py)
              {"kind": "content", "path": str(golden.with_name(ABSTENTIONS_NAME))}]
    # Files named by value: a tokenizer.json (or its folder), a stop-word list.
    tokenizer = str(chunk.get("tokenizer", ""))
    if tokenizer not in AXES["chunk.tokenizer"]:  # the named ones ship in installed packages
        if not Path(tokenizer).exists():
            return [], f"chunk.tokenizer={tokenizer!r} is not a file on this machine (a hub id)"
        inputs.append({"kind": "content",
                       "path": str(resolve_user_path(tokenizer, "chunk.tokenizer"))})
    stopwords = str((plain.get("retrieval") or {}).get("bm25_stopwords", "english"))
    if stopwords not in ("english", "none", ""):
        inputs.append({"kind": "content",
                       "path": str(resolve_user_path(stopwords, "retrieval.bm25_stopwords"))})
    # The model folders the chosen entries load (each entry's `model_keys`: the embedding
    # model, or the teacher a static model is distilled from; a cross-encoder; the model an
    # embedded boundary cuts with).
    for key, name in model_settings(plain, sections):
        path = Path(resolve_model_path(name))
        if not path.exists():
            return [], f"{key}={name!r} is not a folder on this machine (a hub id)"
        inputs.append({"kind": "model", "path": str(resolve_user_path(path, key))})
    digests = resolve_user_path(str(plain["cache"]["dir"]), "cache.dir") / DIGESTS_FOLDER
    for item in inputs:
        item["digest"] = _digest(item, digests)
    return inputs, ""


def changed_input(inputs: Iterable[Mapping[str, str]], digests: Path | None = None
                  ) -> str | None:
    """The first input whose digest is not the recorded one, or None (``digests``: as
    `_digest`'s)."""
    for item in inputs:
        if _digest(item, digests) != item["digest"]:
            return item["path"]
    return None


# --- the seal --------------------------------------------------------------------------------

def _sealed_with() -> str:
    return sealed_with()


def seal(doc: Mapping[str, Any]) -> str:
    """The HMAC of everything in ``doc`` but its seal, under `SECRET_ENV` (empty when unset)."""
    return common_seal(doc, default=_scalar)


def _seal_problem(doc: Mapping[str, Any]) -> str | None:
    return seal_problem(doc, default=_scalar)


# --- reading and writing ---------------------------------------------------------------------

def lookup(overrides: Sequence[str]) -> tuple[dict[str, Any] | None, str]:
    """The memoised run for ``overrides`` when every input is unchanged, and a line saying
    where it came from or why there is none."""
    where = _memo_path(overrides)
    if where is None:
        return None, ("no memo: the cache is off, its folder is an interpolation, or a Hydra "
                      "search path reaches outside conf/")
    path, key = where
    try:
        doc = json.loads(read_text_regular(path))
    except FileNotFoundError:
        return None, "no memo for these inputs"
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable memo (%s); running", path, exc)
        return None, f"{path}: unreadable memo"
    if (not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key
            or not isinstance(doc.get("inputs"), list) or not isinstance(doc.get("run"), dict)):
        log.warning("%s: not a memo of this version; running", path)
        return None, f"{path}: not a memo of this version"
    problem = _seal_problem(doc)
    if problem is not None:
        log.warning("%s: not used: %s; running", path, problem)
        return None, f"{path}: {problem}"
    try:
        changed = changed_input(doc["inputs"], path.parent.parent / DIGESTS_FOLDER)
    except (KeyError, TypeError, OSError):
        return None, f"{path}: unreadable inputs"
    if changed is not None:
        return None, f"{changed} changed since the memo"
    return doc["run"], f"reused the run of {doc.get('written', '?')} ({path})"


def _scalar(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (json writes it as that number)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} in the run is not JSON")


class Pending(NamedTuple):
    """A run about to be made: where its memo goes, under which key, from which inputs."""

    path: Path
    key: str
    overrides: list[str]
    inputs: list[dict[str, str]]


def prepare(overrides: Sequence[str], plain: Mapping[str, Any]) -> Pending | str:
    """Before the run of ``plain`` (composed from ``overrides``): its key and its inputs'
    digests, both taken now, so that a file edited while the configuration runs makes the memo
    stale, never wrong; or why the run is not memoised."""
    inputs, why = run_inputs(plain)
    if why:
        return why
    where = _memo_path(overrides)
    if where is None:
        return "its cache folder is an interpolation, or a Hydra search path leaves conf/"
    path, key = where
    composed = resolve_user_path(str(plain["cache"]["dir"]), "cache.dir")
    if composed != path.parent.parent:
        return f"cache.dir composes to {composed}, not the {path.parent.parent} a check reads"
    return Pending(path, key, list(overrides), inputs)


def store(pending: Pending, run: Mapping[str, Any]) -> Path | None:
    """Write the memo of ``run``; None where the cache cannot be written (a warning: the gate
    still reports its numbers)."""
    from datetime import UTC, datetime

    doc = {"format": FORMAT, "key": pending.key,
           "written": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "overrides": pending.overrides, "inputs": pending.inputs, "run": run,
           "sealed_with": _sealed_with()}
    try:
        doc["seal"] = seal(doc)
        atomic_write(pending.path, json.dumps(doc, indent=1, default=_scalar) + "\n")
    except (OSError, TypeError) as exc:
        log.warning("%s: could not write the gate's memo (%s)", pending.path, exc)
        return None
    return pending.path
