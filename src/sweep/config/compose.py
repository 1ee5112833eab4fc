"""Composing a configuration outside a Hydra job, and one-line errors from composition."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import is_dataclass
from typing import Any

import yaml
from omegaconf import OmegaConf

from sweep.common.errors import SweepError
from sweep.common.secret import (
    HINT,
    find_secrets,
    is_secret_key,
    secret_error,
    url_has_secret_query,
    url_has_userinfo,
)

# `scheme://user[:password]@` anywhere in an override's text (also inside a sweep list).
_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s,\]\[]+@")
# Any URL in an override's text, up to a sweep list's separator.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,\]\[]+")


def to_container(cfg: Any) -> dict[str, Any]:
    """Plain dict of a config (DictConfig or `Config` instance), enums as strings, resolved."""
    if is_dataclass(cfg) and not isinstance(cfg, type):
        cfg = OmegaConf.structured(cfg)
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)  # type: ignore[return-value]


def config_error_line(exc: BaseException) -> str:
    """One line from a Hydra/OmegaConf composition error and its cause.

    Hydra's own message says which override failed; the cause says why (the allowed values,
    the unknown key); a missing group option lists the available ones.
    """
    parts = []
    seen: set[str] = set()
    current: BaseException | None = exc
    while current is not None:
        lines = [ln.strip() for ln in str(current).splitlines() if ln.strip()]
        if lines and lines[0] not in seen:
            seen.add(lines[0])
            # "ConfigKeyError raised while composing config:" announces the reason on the
            # next line (Key 'api_key' not in 'GenerationConfig'): keep it
            parts.append(f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1
                         and not lines[1].startswith("Available options") else lines[0])
            if "Available options" in str(current):
                idx = next(i for i, ln in enumerate(lines) if ln.startswith("Available options"))
                options = [ln for ln in lines[idx + 1 :] if not ln.startswith(("Config search",
                                                                                "provider="))]
                parts.append(f"available: {', '.join(options)}")
        current = current.__cause__
    return "config: " + ": ".join(parts)


def _close(word: str, choices: Sequence[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)


def _schema_keys(section: str) -> list[str]:
    """The keys of one section of the schema (``chunk`` -> size, overlap, ...)."""
    import dataclasses

    from sweep.config.schema import Config

    field = {f.name: f for f in dataclasses.fields(Config)}.get(section)
    kind = field.type if field is not None else None
    if isinstance(kind, str):  # postponed annotations: the dataclass's own default instead
        kind = type(field.default_factory()) if callable(field.default_factory) else None
    return [f.name for f in dataclasses.fields(kind)] if dataclasses.is_dataclass(kind) else []


def composition_error_line(exc: BaseException) -> str:
    """One line for a composition error, with "did you mean" for a misspelt option of a
    config group (``embedding=bge_small``) or a misspelt key (``chunk.sise=128``): Hydra's
    own text lists its search path, or advises ``+chunk.sise``, which adds the typo."""
    import re

    text = "\n".join(str(e) for e in _chain(exc))
    missing = re.search(r"Could not (?:find|load) '([\w/.-]+)/([\w.-]+)'", text)
    if missing and "Available options" in text:
        group, option = missing.group(1), missing.group(2)
        block = text.split("Available options", 1)[1].splitlines()[1:]
        options = []
        for line in block:
            if not line.startswith(("\t", " ")) or not line.strip():
                break
            options.append(line.strip())
        near = _close(option, options)
        hint = (f"did you mean {' or '.join(f'{group}={o}' for o in near)}? " if near
                else "") + f"the options are {', '.join(options)}"
        return f"config: {group}={option}: no such option of {group} ({hint})"
    key = re.search(r"Could not override '([\w.]+)'", text)
    if key and re.search(r"Key '[\w]+' not in", text) and "." in key.group(1):
        section, _, name = key.group(1).rpartition(".")
        known = _schema_keys(section) if "." not in section else []
        near = _close(name, known)
        hint = (f"did you mean {' or '.join(f'{section}.{k}' for k in near)}?" if near
                else f"the keys of {section} are {', '.join(known)}" if known
                else "check its spelling")
        return f"config: {key.group(1)}: no such key ({hint})"
    return config_error_line(exc)


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def yaml_error_line(exc: BaseException) -> str:
    """``config: FILE:LINE:COL: problem`` for a YAML syntax error in a config file (PyYAML's
    marks are 0-based; shown 1-based, as editors count)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    if mark is None:
        return f"config: YAML error: {(str(exc).splitlines() or [''])[0]}"
    return f"config: {mark.name}:{mark.line + 1}:{mark.column + 1}: {problem}"


def compose(overrides: Sequence[str]) -> Any:
    """The composed config for ``overrides`` (Hydra's compose API, no job, no output dir)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from sweep.config.schema import Config, conf_dir, register

    register()
    refuse_secrets(overrides)
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3",
                                   job_name="sweep"):
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
        refuse_secrets_in(cfg)
        refuse_unknown_keys(cfg)
        typed: Config = OmegaConf.to_object(cfg)  # type: ignore[assignment]
        return typed
    except (HydraException, OmegaConfBaseException) as exc:
        raise SweepError(composition_error_line(exc)) from None
    except yaml.YAMLError as exc:
        raise SweepError(yaml_error_line(exc)) from None



_COMPOSE_ONCE = "_chunk_sweep_compose_once"
# Jobs composed before the sweeper's own check (`remember_composed`: the sweep's up-front check
# of every combination), by (master config, overrides): that check takes them instead of
# composing each again.
_EARLY: dict[tuple[int, tuple[str, ...]], tuple[Any, Any]] = {}


def remember_composed(master_config: Any, overrides: Sequence[str], cfg: Any) -> None:
    """Keep a job's config composed from ``master_config`` before the sweep starts, for the
    sweeper's batch check (`compose_jobs_once`) to take instead of composing it again."""
    _EARLY[(id(master_config), tuple(overrides))] = (master_config, cfg)


def _take_early(master_config: Any, overrides: Sequence[str]) -> Any:
    entry = _EARLY.pop((id(master_config), tuple(overrides)), None)
    return entry[1] if entry is not None and entry[0] is master_config else None


def compose_jobs_once() -> None:
    """Compose each job of a multirun once instead of twice, and most of them not at all.

    Hydra's sweeper composes every job's configuration to check the batch before launching
    any (`Sweeper.validate_batch_is_legal`), then the launcher composes it again to run it
    (`ConfigLoaderImpl.load_sweep_config`, same master config, same overrides, same result).
    Composition is most of a warm job's fixed cost (~0.23 s a job here). Here the check keeps
    what it composed and the launcher takes it, each once; a job the check did not compose
    (another launcher's worker process, a sweeper that does not validate) is composed as
    before. Within a batch, a job whose overrides differ from an already composed job's only
    in scalar values of dotted keys (``chunk.size=128`` vs ``=256``) is that job's config with
    the values set (`derive_job_config`), as Hydra itself sets them. Idempotent.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.plugins.sweeper import Sweeper

    if getattr(ConfigLoaderImpl.load_sweep_config, _COMPOSE_ONCE, False):
        return
    compose_job = ConfigLoaderImpl.load_sweep_config
    # (loader, master config, overrides) -> the configs the check composed, not yet launched
    checked: dict[tuple[int, int, tuple[str, ...]], list[tuple[Any, Any, Any]]] = {}

    def load_sweep_config(self: Any, master_config: Any, sweep_overrides: list[str]) -> Any:
        key = (id(self), id(master_config), tuple(sweep_overrides))
        for entry in checked.get(key, []):
            if entry[0] is self and entry[1] is master_config:  # ids can be reused
                checked[key].remove(entry)
                return entry[2]
        return compose_job(self, master_config, sweep_overrides)

    def validate_batch_is_legal(self: Any, batch: Any) -> None:
        loader = (self.hydra_context.config_loader
                  if getattr(self, "hydra_context", None) is not None else self.config_loader)
        composed: list[tuple[list[str], Any]] = []  # fully composed jobs of this batch
        for overrides in batch:
            job = list(overrides)
            # What the sweep's up-front check composed or derived already: each job once.
            # A derived config is the composed one, so it serves as a reference too.
            cfg = _take_early(self.config, job)
            if cfg is not None:
                composed.append((job, cfg))
            for ref_overrides, ref_cfg in composed if cfg is None else []:
                cfg = derive_job_config(ref_cfg, ref_overrides, job, self.config)
                if cfg is not None:
                    break
            if cfg is None:
                cfg = compose_job(loader, self.config, job)
                composed.append((job, cfg))
            checked.setdefault((id(loader), id(self.config), tuple(overrides)), []).append(
                (loader, self.config, cfg))

    setattr(load_sweep_config, _COMPOSE_ONCE, True)
    ConfigLoaderImpl.load_sweep_config = load_sweep_config  # type: ignore[method-assign]
    Sweeper.validate_batch_is_legal = validate_batch_is_legal  # type: ignore[method-assign]


_SCALARS = (str, int, float, bool, type(None))
# Each override text parsed once per process (Hydra's grammar costs ~0.5 ms an override; a
# derived job parses its own, the reference's and the task's): `Override` objects are only
# read here. Bounded: a process parses a few sweeps' overrides at most.
_PARSED: dict[str, Any] = {}
_PARSED_MAX = 4096


def _parsed(lines: Sequence[str]) -> list[Any]:
    """Hydra's ``OverridesParser.parse_overrides(lines)``, each line parsed once."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = []
    for line in lines:
        found = _PARSED.get(line)
        if found is None:
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            (found,) = OverridesParser.create().parse_overrides([line])
            _PARSED[line] = found
        out.append(found)
    return out


def derive_job_config(ref_cfg: Any, ref_overrides: Sequence[str], overrides: Sequence[str],
                      master_config: Any) -> Any:
    """The sweep job config Hydra would compose for ``overrides``, made from ``ref_cfg`` (what
    it composed for ``ref_overrides``); None unless the two lists differ only in the values of
    the same scalar, dotted, non-Hydra keys, each given once.

    Such overrides never reach the defaults list: Hydra composes the same tree and then sets
    them (`ConfigLoaderImpl._apply_overrides_to_config`, struct mode and the schema's types
    included), so this copies the reference and applies the differing ones with that very
    function, then rewrites the two Hydra fields that record the overrides
    (``hydra.overrides.task``, ``hydra.job.override_dirname``) as `load_configuration` does,
    and copies the master's resolver cache as `load_sweep_config` does. A group choice, an
    ``+``/``~`` override, a dict or list value, a repeated key: None (compose it). Any error
    setting a value: None too, so Hydra's composition reports it in its own words.
    """
    import copy

    from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
    from hydra.core.override_parser.types import OverrideType

    if len(ref_overrides) != len(overrides):
        return None
    try:
        ref = _parsed(ref_overrides)
        new = _parsed(overrides)
    except Exception:
        return None
    keys = [o.key_or_group for o in new]
    if len(set(keys)) != len(keys):
        return None
    differing = []
    for a, b in zip(ref, new, strict=True):
        if a.input_line == b.input_line:
            continue
        if not (a.key_or_group == b.key_or_group and "." in b.key_or_group
                and "/" not in b.key_or_group and b.package is None and a.package is None
                and not b.is_hydra_override()
                and a.type == b.type == OverrideType.CHANGE
                and not a.is_sweep_override() and not b.is_sweep_override()
                and isinstance(a.value(), _SCALARS) and isinstance(b.value(), _SCALARS)):
            return None
        differing.append(b)
    from omegaconf import OmegaConf

    cfg = copy.deepcopy(ref_cfg)
    try:
        ConfigLoaderImpl._apply_overrides_to_config(differing, cfg)
    except Exception:
        return None
    task = [o for o in _parsed(
        [*OmegaConf.to_container(master_config.hydra.overrides.hydra), *overrides])
        if not o.is_hydra_override()]
    cfg.hydra.overrides.task = [o.input_line for o in task]
    dirname = cfg.hydra.job.config.override_dirname
    cfg.hydra.job.override_dirname = get_overrides_dirname(
        overrides=task, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep,
        exclude_keys=dirname.exclude_keys)
    OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
    return cfg


def refuse_secrets_in(cfg: Any) -> None:
    """A one-line `SweepError` when a composed config holds a secret-looking key or a URL
    with credentials (from any section, an experiment file or a ``+`` override)."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(cfg, resolve=False) if OmegaConf.is_config(cfg) else cfg
    if isinstance(tree, dict):
        tree = {k: v for k, v in tree.items() if k != "hydra"}
    for key, reason in find_secrets(tree):
        raise SweepError(secret_error(key, reason), hint=HINT)


def unknown_keys(cfg: Any) -> list[str]:
    """Keys of a composed config that the schema does not have, each as one line with the
    nearest known key: a ``+`` override (``+chunk.sise=256``, the form Hydra's own hint
    suggests) adds a key struct mode would refuse, and nothing would ever read it."""
    import dataclasses
    import difflib

    from omegaconf import DictConfig, OmegaConf

    found: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        kind = OmegaConf.get_type(node)
        if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
            return  # a plain mapping field: any key is its own business
        known = [f.name for f in dataclasses.fields(kind)]
        for key in node:
            key = str(key)
            dotted = f"{prefix}{key}"
            if not prefix and key == "hydra":
                continue
            if key not in known:
                near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                found.append(f"config: {dotted}: unknown key"
                             + (f"; did you mean {prefix}{near[0]}?" if near else
                                f" (known under {prefix.rstrip('.') or 'the root'}: "
                                f"{', '.join(known)})"))
                continue
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_missing() \
                    and not child._is_none():
                walk(child, dotted + ".")

    if OmegaConf.is_config(cfg):
        walk(cfg, "")
    return found


def refuse_unknown_keys(cfg: Any) -> None:
    found = unknown_keys(cfg)
    if found:
        raise SweepError(found[0], hint="nothing reads a key the schema lacks")


def refuse_secrets(overrides: Sequence[str]) -> None:
    """The same rule on the command-line overrides themselves, before anything is composed
    (so ``generation.api_key=...`` gets this message, not Hydra's "use +")."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    for text in overrides:
        try:
            key = OverridesParser.create().parse_override(text).key_or_group
        except HydraException:  # Hydra reports a malformed override itself
            key = text.split("=", 1)[0]
        if is_secret_key(key):
            raise SweepError(secret_error(key.lstrip("+~"), "looks like a secret"), hint=HINT)
        value = text.split("=", 1)[-1]
        found = _URL_CREDENTIALS.search(value)
        # url_has_userinfo lets a PostgreSQL URL's role through (cache.url=postgresql://u@h/db)
        if found and url_has_userinfo(value[found.start():]):
            raise SweepError(secret_error(key.lstrip("+~"),
                                          "holds a URL with credentials (user:password@)"),
                             hint=HINT)
        if any(url_has_secret_query(m.group(0)) for m in _URL.finditer(value)):
            raise SweepError(secret_error(key.lstrip("+~"), "holds a URL with a password-like "
                                          "query parameter (?password=)"), hint=HINT)


def preflight_secrets(overrides: Sequence[str], config_name: str = "config", *,
                      plain_checked_later: bool = False) -> None:
    """`refuse_secrets` plus the composed config, for a Hydra run or multirun, BEFORE Hydra
    writes ``.hydra/`` and ``multirun.yaml``: once with the plain overrides, and once per value
    of each swept config group (``experiment=a,b``). A YAML syntax error is reported here as
    one ``file:line:col`` line (Hydra would print a traceback); any other composition error is
    left to Hydra, which reports it (and then writes nothing either). With
    ``plain_checked_later`` the plain overrides' composition is left to `check_composed` on
    the one Hydra makes itself before it writes anything (``sweep.cli.hydra_main``)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from sweep.config.schema import conf_dir, register

    refuse_secrets(overrides)
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:
        return
    plain = [o.input_line for o in parsed if not o.is_sweep_override()]
    variants = [] if plain_checked_later else [plain]
    for o in parsed:
        if o.is_sweep_override() and "." not in o.key_or_group and not o.is_hydra_override():
            try:
                values = list(o.sweep_string_iterator())
            except Exception:
                continue
            prefix = o.input_line.split("=", 1)[0]
            variants += [[*plain, f"{prefix}={v}"] for v in values]
    if not variants:
        return
    register()
    try:  # one Hydra set-up for every variant (it scans the search path and the schema)
        context = initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3",
                                        job_name="sweep")
    except Exception:  # left to Hydra, which reports it
        return
    with context:
        for variant in variants:
            try:
                cfg = hydra_compose(config_name=config_name, overrides=variant)
            except yaml.YAMLError as exc:  # Hydra itself would print the whole YAML traceback
                raise SweepError(yaml_error_line(exc)) from None
            except Exception:
                continue
            check_composed(cfg)


def check_composed(cfg: Any) -> None:
    """What `preflight_secrets` checks on each composed config: no secret-looking key or URL
    with credentials (`refuse_secrets_in`), no key the schema lacks (`refuse_unknown_keys`)."""
    refuse_secrets_in(cfg)
    refuse_unknown_keys(cfg)


def check_duplicate_overrides(overrides: Sequence[str]) -> list[str]:
    """A key (or config group) given twice: Hydra silently keeps the last one, so
    ``-m chunk.size=128,256 chunk.size=512`` would run one job. Refused when either is a sweep
    (an axis); otherwise returns one warning per repeated key."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # Hydra reports a malformed override itself
        return []
    seen: dict[str, Any] = {}
    warnings = []
    for o in parsed:
        if o.is_delete():
            continue
        key = o.key_or_group + (f"@{o.package}" if o.package else "")
        first = seen.get(key)
        if first is None:
            seen[key] = o
            continue
        if first.is_sweep_override() or o.is_sweep_override():
            raise SweepError(f"config: {key} is given twice ({first.input_line} and "
                             f"{o.input_line}); Hydra would keep only the last",
                             hint=f"give every value in one list: {key}=a,b,c")
        warnings.append(f"{key} is given twice ({first.input_line} and {o.input_line}); "
                        f"using the last, {o.input_line}")
    return warnings


def config_of_run(cfg: Any, run_config: dict[str, Any]) -> Any:
    """``cfg`` (corpus, caches) with a sweep run's result sections (chunk, embedding,
    retrieval, rerank, index) from its config.yaml."""
    from omegaconf.errors import OmegaConfBaseException

    from sweep.config.identity import RESULT_SECTIONS

    try:
        merged = OmegaConf.merge(OmegaConf.structured(cfg),
                                 {k: run_config[k] for k in RESULT_SECTIONS if k in run_config})
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        raise SweepError(f"the sweep's config.yaml does not fit this version's schema: "
                         f"{' '.join(str(exc).split())[:200]}") from None


def error_line(exc: BaseException) -> str:
    """One line for what stopped a job: a `SweepError` as it is, a configuration error as
    `config_error_line` says it, anything else with its type."""
    if isinstance(exc, SweepError):
        return str(exc)
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(exc, OmegaConfBaseException):
        return config_error_line(exc)
    return f"{type(exc).__name__}: {exc}"
