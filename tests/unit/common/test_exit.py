"""`run_then_exit` (issue 21): the exit status sys.exit would give, exit handlers run and
output flushed, the interpreter's teardown skipped."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from sweep.common.exit import status_of

SCRIPT = textwrap.dedent("""
    import atexit, sys
    from sweep.common.exit import run_then_exit

    class Loud:
        def __del__(self):
            print("teardown ran", flush=True)

    KEPT = Loud()  # freed only by the interpreter's teardown
    atexit.register(lambda: print("handler ran"))

    def main():
        print("work done", end="")  # still in the pipe's buffer when main returns
        how = sys.argv[1]
        if how == "code":
            sys.exit(3)
        if how == "message":
            sys.exit("error: one line")
        if how == "raise":
            raise RuntimeError("boom")

    if sys.argv[2] == "plain":
        try:
            main()
        finally:
            print()
    else:
        run_then_exit(main)
""")


def _run(how: str, mode: str = "fast") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, how, mode], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("how", "status"), [("return", 0), ("code", 3), ("message", 1)])
def test_status_handlers_and_output_without_teardown(how: str, status: int) -> None:
    res = _run(how)
    assert res.returncode == status
    assert res.stdout.startswith("work done")
    assert "handler ran" in res.stdout
    assert "teardown ran" not in res.stdout
    assert ("error: one line" in res.stderr) == (how == "message")


def test_the_control_shows_what_a_plain_exit_does() -> None:
    res = _run("code", "plain")  # the same program ending the ordinary way
    assert res.returncode == 3
    assert "handler ran" in res.stdout and "teardown ran" in res.stdout


def test_an_exception_is_not_swallowed() -> None:
    res = _run("raise")
    assert res.returncode == 1
    assert "RuntimeError: boom" in res.stderr


def test_status_of_follows_sys_exit(capsys: pytest.CaptureFixture[str]) -> None:
    assert (status_of(None), status_of(0), status_of(130)) == (0, 0, 130)
    assert status_of("bad input") == 1
    assert capsys.readouterr().err == "bad input\n"


POOL = textwrap.dedent("""
    import concurrent.futures, sys
    from sweep.common.exit import run_then_exit

    def main():
        # Left running, as joblib's loky keeps its workers for the next call: at exit its
        # threading hook tells the workers to stop, then multiprocessing waits for them.
        pool = concurrent.futures.ProcessPoolExecutor(max_workers=2)
        print(sum(pool.map(abs, [-1, -2, -3])), flush=True)
        sys.exit(4)

    run_then_exit(main)
""")


def test_worker_processes_left_running_do_not_hang_the_exit() -> None:
    """The hang this fixed: a joblib sweep's process waited forever for loky's idle workers,
    because the exit skipped the thread shutdown where their pool tells them to stop."""
    res = subprocess.run([sys.executable, "-c", POOL], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 4, res.stderr[-2000:]
    assert res.stdout.strip() == "6"
