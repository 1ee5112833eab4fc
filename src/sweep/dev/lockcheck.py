"""Check that the lock files agree with pyproject.toml (`make lock-check`, run by `make lint`).

    python -m sweep.dev.lockcheck --lock locks/venv.txt:test,slurm --lock locks/ray.txt:test,ray
    python -m sweep.dev.lockcheck --drift /tmp/chunk-sweep-latest/bin/python

A lock (written by `make lock`, uv's `pip compile --generate-hashes`) is what every venv is
installed from. It goes stale silently when pyproject.toml changes and nobody re-locks: a new
dependency is then missing from the install, or a raised lower bound is not met. This finds
both, and an entry without a hash (pip's --require-hashes would refuse the whole file). Every
lock file under locks/ must pin with ``==`` and carry hashes; the ones named with --lock are also
held against the project's dependencies plus the extras given after the colon.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

# The platform every lock is resolved for (the Makefile's UV_COMPILE): markers are read as
# there, so a dependency marked for another platform is not required of the lock.
LOCK_ENVIRONMENT = {"python_version": "3.11", "python_full_version": "3.11.7",
                    "sys_platform": "linux", "platform_system": "Linux",
                    "platform_machine": "x86_64", "os_name": "posix",
                    "implementation_name": "cpython", "platform_python_implementation": "CPython"}

# torch is installed on its own from locks/torch-{cpu,cuda}.txt (the build is the machine's
# choice), so the other locks leave it out on purpose.
INSTALLED_APART = frozenset({"torch"})

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s\\;]+)")


@dataclass(frozen=True)
class Pin:
    """One locked package: its version, how many hashes it carries, and its line in the file."""

    version: str
    hashes: int
    line: int


def parse_lock(text: str, source: str) -> tuple[dict[str, Pin], list[str]]:
    """The pins of one lock file, and a problem line for each entry that is not ``name==version``.

    Continuation lines (``--hash=...``) belong to the entry above them; comments and blank lines
    are skipped.
    """
    pins: dict[str, Pin] = {}
    problems: list[str] = []
    current: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("--hash="):
            if current is None:
                problems.append(f"{source}:{number}: a hash with no package above it")
                continue
            pin = pins[current]
            pins[current] = Pin(pin.version, pin.hashes + 1, pin.line)
            continue
        if raw[:1].isspace():
            continue  # a continuation that is not a hash (uv writes none; tolerated)
        match = _PIN.match(line)
        if match is None:
            problems.append(f"{source}:{number}: not pinned with == ({line.split()[0]})")
            current = None
            continue
        current = canonicalize_name(match.group(1))
        pins[current] = Pin(match.group(3), 0, number)
    for name, pin in pins.items():
        if pin.hashes == 0:
            problems.append(f"{source}:{pin.line}: {name}=={pin.version} has no --hash "
                            "(pip --require-hashes refuses the file; re-run make lock)")
    return pins, problems


def project_requirements(pyproject: dict, extras: list[str]) -> list[Requirement]:
    """The project's dependencies and those of the named extras, as on the lock's platform."""
    project = pyproject["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in optional]
    if unknown:
        raise SystemExit(f"error: pyproject.toml has no extra {', '.join(unknown)} "
                         f"(extras: {', '.join(sorted(optional))})")
    texts = list(project.get("dependencies", []))
    for extra in extras:
        texts.extend(optional[extra])
    requirements = []
    for text in texts:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or marker.evaluate({**LOCK_ENVIRONMENT, "extra": ""}):
            requirements.append(requirement)
    return requirements


def check_against(requirements: list[Requirement], pins: dict[str, Pin], source: str) -> list[str]:
    """A problem line for each requirement the lock misses or pins outside its range."""
    problems = []
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        if name in INSTALLED_APART:
            continue
        pin = pins.get(name)
        if pin is None:
            problems.append(f"{source}: {requirement} is required by pyproject.toml but not "
                            "locked (run make lock)")
        elif not requirement.specifier.contains(Version(pin.version), prereleases=True):
            problems.append(f"{source}:{pin.line}: {name}=={pin.version} is outside "
                            f"pyproject.toml's {requirement} (run make lock)")
    return problems


def torch_problems(locks: Path) -> list[str]:
    """Both torch locks pin torch, and the same release (the CPU build adds a +cpu label)."""
    versions = {}
    problems = []
    for build in ("cpu", "cuda"):
        path = locks / f"torch-{build}.txt"
        if not path.is_file():
            problems.append(f"{path}: missing (make lock writes it)")
            continue
        pins, _ = parse_lock(path.read_text(encoding="utf-8"), str(path))
        if "torch" not in pins:
            problems.append(f"{path}: pins no torch")
            continue
        versions[build] = pins["torch"].version
    if len(versions) == 2 and Version(versions["cpu"]).public != Version(versions["cuda"]).public:
        problems.append(f"{locks}: torch-cpu.txt pins {versions['cpu']} but torch-cuda.txt "
                        f"pins {versions['cuda']}: one release for both builds")
    return problems


def check(root: Path, held: dict[str, list[str]]) -> list[str]:
    """Every problem with the locks under ``root/locks``: hashes and pins in every file, and
    pyproject.toml's ranges in each file of ``held`` (lock file name -> extras)."""
    locks = root / "locks"
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    problems: list[str] = []
    files = sorted(locks.glob("*.txt"))
    if not files:
        return [f"{locks}: no lock files (run make lock)"]
    parsed = {}
    for path in files:
        pins, found = parse_lock(path.read_text(encoding="utf-8"), f"locks/{path.name}")
        parsed[path.name] = pins
        problems.extend(found)
    for name, extras in held.items():
        if name not in parsed:
            problems.append(f"locks/{name}: missing (run make lock)")
            continue
        problems.extend(check_against(project_requirements(pyproject, extras), parsed[name],
                                      f"locks/{name}"))
    problems.extend(torch_problems(locks))
    return problems


def drift(python: str, lock: Path) -> list[str]:
    """One line per package whose version in another environment differs from the lock."""
    script = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: "
              "d.version for d in m.distributions()}))")
    found = json.loads(subprocess.run([python, "-c", script], check=True, capture_output=True,
                                      text=True).stdout)
    pins, _ = parse_lock(lock.read_text(encoding="utf-8"), str(lock))
    lines = []
    for name, version in sorted(found.items(), key=lambda item: item[0].lower()):
        pin = pins.get(canonicalize_name(name))
        if pin is not None and pin.version != version:
            lines.append(f"  {canonicalize_name(name)}: {pin.version} (lock) -> {version}")
    return lines


def _held(values: list[str]) -> dict[str, list[str]]:
    held = {}
    for value in values:
        name, _, extras = value.partition(":")
        held[Path(name).name] = [extra for extra in extras.split(",") if extra]
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweep.dev.lockcheck", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path.cwd(),
                        help="the repository (pyproject.toml and locks/); default: here")
    parser.add_argument("--lock", action="append", default=[], metavar="FILE:EXTRA,EXTRA",
                        help="a lock to hold against the dependencies and these extras")
    parser.add_argument("--drift", metavar="PYTHON",
                        help="list what another environment has that differs from locks/venv.txt")
    args = parser.parse_args(argv)
    if args.drift:
        lines = drift(args.drift, args.root / "locks" / "venv.txt")
        print(f">> {len(lines)} packages differ from locks/venv.txt in {args.drift}")
        for line in lines:
            print(line)
        return 0
    problems = check(args.root, _held(args.lock))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f">> locks/ agree with pyproject.toml ({len(list((args.root / 'locks').glob('*.txt')))} "
          "lock files, every entry pinned and hashed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
