"""Every `sweep ...` and `python -m sweep ...` command in the README's and the documentation
site's shell blocks parses with the command line as it is today: a subcommand's options go
through its own argparse parser (stopped right after parsing, so nothing runs), and Hydra
overrides compose into the schema (the first value of each swept key), so a renamed option,
key or value shows here before a reader copies it.

Commands with a placeholder a reader fills in (``<run id>``, ``…``) cannot be parsed as
written; they are counted, and the count is bounded so that placeholders stay the exception.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator

import pytest

from helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.S)
_COMMAND = re.compile(r"(?:\.venv/bin/)?(?:sweep|python -m sweep(?:\.cli)?)(?=\s|$)")
_PLACEHOLDER = re.compile(r"<[^>]*>|…|\.\.\.")


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def _assignments(line: str) -> dict[str, str]:
    """``G=a; T="b c"`` -> {"G": "a", "T": "b c"}; {} for any other line."""
    try:
        words = shlex.split(line.replace(";", " "), comments=True)
    except ValueError:
        return {}
    pairs = [w.split("=", 1) for w in words]
    if not words or not all(len(p) == 2 and re.fullmatch(r"[A-Z_][A-Z0-9_]*", p[0])
                            for p in pairs):
        return {}
    return dict(pairs)  # type: ignore[arg-type]


def _commands() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        variables: dict[str, str] = {}  # NAME=value lines before a command on the page
        for block in _BLOCK.finditer(text):
            first_line = text.count("\n", 0, block.start(1)) + 1
            lines = block.group(1).split("\n")
            i = 0
            while i < len(lines):
                number, line = first_line + i, lines[i]
                while line.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line[:-1] + " " + lines[i]
                i += 1
                line = line.strip()
                if line.startswith("$ "):
                    line = line[2:]
                line = _VAR.sub(lambda m, v=variables: v.get(m.group(1) or m.group(2),
                                                             m.group(0)), line)
                if _COMMAND.match(line):
                    yield f"{page.relative_to(ROOT)}:{number}", line
                else:
                    variables.update(_assignments(line))


COMMANDS = list(_commands())


def _code(line: str) -> str:
    """The command without its trailing comment."""
    try:
        return shlex.join(shlex.split(line, comments=True))
    except ValueError:  # an unbalanced quote: left as written, to fail in the test
        return line


CHECKABLE = [(where, line) for where, line in COMMANDS if not _PLACEHOLDER.search(_code(line))]


def test_the_pages_show_commands_and_few_placeholders() -> None:
    assert len(CHECKABLE) >= 50, len(CHECKABLE)
    assert len(COMMANDS) - len(CHECKABLE) <= 0.15 * len(COMMANDS)


class _Parsed(Exception):
    """Raised in place of running a command once its arguments are parsed."""


@pytest.fixture
def parse_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse parses as always (an unknown option or a missing argument still exits 2),
    then stops the command."""
    for name in ("parse_args", "parse_intermixed_args"):
        original = getattr(argparse.ArgumentParser, name)

        def stop(self, *args, _original=original, **kwargs):
            _original(self, *args, **kwargs)
            raise _Parsed

        monkeypatch.setattr(argparse.ArgumentParser, name, stop)


def _overrides_compose(tokens: list[str]) -> None:
    """Hydra overrides (``key=value``, ``+key=value``, ``experiment=NAME``) compose into the
    schema; a swept value list is checked by its first value. Hydra's own keys (``hydra.*``)
    are Hydra's to check at run time."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from sweep.config.compose import compose

    parsed = OverridesParser.create().parse_overrides(tokens)
    plain = []
    for override in parsed:
        key = override.get_key_element()
        if key.lstrip("+~").startswith("hydra.") or key.startswith("hydra/"):
            continue
        if override.is_sweep_override():
            first = next(iter(override.sweep_string_iterator()))
            plain.append(f"{key}={first}")
        else:
            plain.append(override.input_line)
    compose(plain)


@pytest.mark.parametrize(("where", "line"), CHECKABLE, ids=[w for w, _ in CHECKABLE])
def test_a_documented_command_parses(where: str, line: str, parse_only: None) -> None:
    from sweep.cli.main import COMMANDS as SUBCOMMANDS

    tokens = shlex.split(line, comments=True)
    while tokens and tokens[0] != "sweep" and not tokens[0].endswith("/sweep"):
        tokens.pop(0)  # "python", "-m" before "sweep" / "sweep.cli"
        if tokens and tokens[0] in ("sweep", "sweep.cli"):
            break
    words = tokens[1:]
    if words and words[0] in SUBCOMMANDS:
        name, argv = words[0], words[1:]
        if "--help" in argv or "-h" in argv:
            return
        try:
            SUBCOMMANDS[name](argv)
        except _Parsed:
            pass
        except SystemExit as exc:
            pytest.fail(f"{where}: `sweep {name}` does not parse {argv} (exit {exc.code})")
        overrides = [a for a in argv if "=" in a and not a.startswith("-")]
        if overrides:
            _overrides_compose(overrides)
        return
    flags = [w for w in words if w.startswith("-") and w not in ("-m", "--multirun")]
    if flags:
        # Hydra's own flags (--help, --cfg job, --info): Hydra parses them; nothing to compose
        assert set(flags) <= {"--help", "--cfg", "--info", "--resolve", "--package", "-p",
                              "--config-dir", "-cd", "--config-name", "-cn"}, (where, flags)
        return
    _overrides_compose([w for w in words if w not in ("-m", "--multirun")])
