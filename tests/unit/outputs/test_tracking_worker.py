"""The MLflow worker process of ``python -m sweep`` (`sweep.outputs.tracking_worker`): calls run
there in the order sent, a `SweepError` comes back with its message, a queued call's error
reaches its handler by the next call, Ctrl-C does not stop it, and neither a closed pipe, a
killed sweep nor a dead worker leaves anything hanging.

Each case forks from a fresh interpreter (a script), never from pytest's process. The scripts
put a stand-in for `tracking.tag_run` in place before the fork, so the worker runs it and
writes down which process it ran in, in which order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from helpers import run_cli
from sweep.common.errors import SweepError
from sweep.outputs import tracking, tracking_worker

STAND_IN = textwrap.dedent("""
    import json, os, signal, sys, time
    from pathlib import Path
    from sweep.common.errors import SweepError
    from sweep.outputs import tracking, tracking_worker

    trail = Path(sys.argv[1])

    def tag_run(uri, run_id, key, value):
        with trail.open("a") as f:
            f.write(f"{run_id} {os.getpid()}\\n")
        if value == "fail":
            raise SweepError(f"tagging {run_id} failed", hint="a hint")
        if value.startswith("sleep"):
            time.sleep(float(value[5:]))
        return [run_id, key]

    tracking.tag_run = tag_run
    main_pid = os.getpid()

    def ran():
        return [line.split() for line in trail.read_text().splitlines()]
""")


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    res = run_cli("-c", STAND_IN + textwrap.dedent(body), str(tmp_path / "trail"), cwd=tmp_path,
                  timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def test_calls_run_in_the_worker_in_order_and_errors_come_back(tmp_path: Path) -> None:
    res = _script(tmp_path, """
        assert tracking_worker.start()
        worker = tracking_worker.worker_pid()
        assert worker not in (None, main_pid)
        errors = []
        tracking_worker.submit(tracking.tag_run, "u", "a", "k", "sleep0.5",
                               on_error=errors.append)
        tracking_worker.submit(tracking.tag_run, "u", "b", "k", "fail", on_error=errors.append)
        assert errors == []  # b waits behind a, in the worker
        assert tracking_worker.call(tracking.tag_run, "u", "c", "k", "ok") == ["c", "k"]
        assert [str(e) for e in errors] == ["tagging b failed (a hint)"]  # by then
        assert [type(e) for e in errors] == [SweepError]
        try:
            tracking_worker.call(tracking.tag_run, "u", "d", "k", "fail")
        except SweepError as exc:
            raised = str(exc)
        assert raised == str(SweepError("tagging d failed", hint="a hint"))
        # Ctrl-C goes to the whole process group; the worker goes on serving.
        os.kill(worker, signal.SIGINT)
        time.sleep(0.3)
        assert tracking_worker.call(tracking.tag_run, "u", "e", "k", "ok") == ["e", "k"]
        tracking_worker.stop()  # nothing left to do: ended and reaped
        try:
            os.kill(worker, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive
        tracking_worker.call(tracking.tag_run, "u", "f", "k", "ok")  # now in this process
        print(json.dumps({"main": main_pid, "worker": worker, "ran": ran()}))
    """)
    out = json.loads(res.stdout.splitlines()[-1])
    ran = out["ran"]
    assert [r[0] for r in ran] == ["a", "b", "c", "d", "e", "f"]
    assert {int(r[1]) for r in ran[:5]} == {out["worker"]}
    assert int(ran[5][1]) == out["main"]


def test_a_dead_worker_fails_what_it_had_and_the_sweep_goes_on_without_it(
        tmp_path: Path) -> None:
    res = _script(tmp_path, """
        assert tracking_worker.start()
        worker = tracking_worker.worker_pid()
        errors = []
        tracking_worker.submit(tracking.tag_run, "u", "a", "k", "sleep30",
                               on_error=errors.append)
        while not trail.exists():  # a has started (after the worker's import of MLflow)
            time.sleep(0.05)
        os.kill(worker, signal.SIGKILL)  # e.g. the out-of-memory killer
        try:
            tracking_worker.call(tracking.tag_run, "u", "b", "k", "ok")
        except SweepError as exc:
            lost = str(exc)
        after = tracking_worker.call(tracking.tag_run, "u", "c", "k", "ok")
        print(json.dumps({"main": main_pid, "worker": worker, "lost": lost, "after": after,
                          "errors": [str(e) for e in errors], "ran": ran()}))
    """)
    out = json.loads(res.stdout.splitlines()[-1])
    worker = out["worker"]
    assert out["errors"] == [f"MLflow worker process {worker} ended (killed by signal 9) "
                             "before it had done tag_run"]
    assert out["lost"].startswith(f"MLflow worker process {worker} ended (killed by signal 9): "
                                  "whether tag_run was done is unknown")
    assert out["after"] == ["c", "k"]
    # a ran in the worker (and was killed there), b never ran, c ran in the sweep's process
    assert out["ran"] == [["a", str(worker)], ["c", str(out["main"])]]


def test_a_begun_call_is_waited_for_when_its_result_is_asked(tmp_path: Path) -> None:
    res = _script(tmp_path, """
        assert tracking_worker.start()
        worker = tracking_worker.worker_pid()
        started = time.time()
        parent = tracking_worker.begin(tracking.tag_run, "u", "a", "k", "sleep1")
        failing = tracking_worker.begin(tracking.tag_run, "u", "b", "k", "fail")
        sent_in = time.time() - started  # did not wait for a's second
        assert parent.result() == ["a", "k"] and parent.result() == ["a", "k"]
        try:
            failing.result()
        except SweepError as exc:
            error = str(exc)
        lost = tracking_worker.begin(tracking.tag_run, "u", "c", "k", "sleep30")
        while len(ran()) < 3:
            time.sleep(0.05)
        os.kill(worker, signal.SIGKILL)
        try:
            lost.result()
        except SweepError as exc:
            gone = str(exc)
        print(json.dumps({"sent_in": sent_in, "error": error, "gone": gone, "worker": worker}))
    """)
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["sent_in"] < 0.5
    assert out["error"] == "tagging b failed (a hint)"
    assert out["gone"] == (f"MLflow worker process {out['worker']} ended (killed by signal 9) "
                           "before it had done tag_run")


def test_a_later_call_takes_a_begun_result_without_waiting_for_it(tmp_path: Path) -> None:
    """The sweep's first job logs its run under the parent run the worker is still creating:
    `Promise.later` stands for the result, the worker puts it in; a failed begun call is the
    later call's error; run here (the worker gone), the reply already read is put in."""
    res = _script(tmp_path, """
        assert tracking_worker.start()
        errors = []
        parent = tracking_worker.begin(tracking.tag_run, "u", "p", "k", "sleep1")
        started = time.time()
        assert not parent.ready()
        tracking_worker.submit(tracking.tag_run, "u", parent.later(0), "child", "ok",
                               on_error=errors.append)
        tracking_worker.submit(tracking.tag_run, "u", "x", "k", "ok", on_error=errors.append)
        sent_in = time.time() - started  # neither waited for p's second
        assert parent.result() == ["p", "k"] and parent.ready()
        failed = tracking_worker.begin(tracking.tag_run, "u", "q", "k", "fail")
        tracking_worker.submit(tracking.tag_run, "u", failed.later(0), "child", "ok",
                               on_error=errors.append)
        tracking_worker.drain()
        tracking_worker.stop()  # from now on calls run in this process
        ok = tracking_worker.begin(tracking.tag_run, "u", "r", "k", "ok")
        here = tracking_worker.call(tracking.tag_run, "u", ok.later(0), "child", "ok")
        print(json.dumps({"sent_in": sent_in, "errors": [str(e) for e in errors],
                          "here": here, "ran": [r[0] for r in ran()]}))
    """)
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["sent_in"] < 0.5
    # the child ran after p, under p's result; q failed, so its child never ran
    assert out["ran"] == ["p", "p", "x", "q", "r", "r"]
    assert out["errors"] == ["tag_run failed: tagging q failed"]
    assert out["here"] == ["r", "child"]


def test_the_worker_exits_when_its_pipe_closes(tmp_path: Path) -> None:
    res = _script(tmp_path, """
        assert tracking_worker.start()
        assert tracking_worker.call(tracking.tag_run, "u", "a", "k", "ok") == ["a", "k"]
        worker = tracking_worker.worker_pid()
        tracking_worker._WORKER.conn.close()  # as when this process ends without stop()
        deadline = time.time() + 20
        while time.time() < deadline:
            pid, status = os.waitpid(worker, os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        print(json.dumps({"exited": bool(pid) and os.WIFEXITED(status),
                          "code": os.WEXITSTATUS(status) if pid else None}))
    """)
    assert json.loads(res.stdout.splitlines()[-1]) == {"exited": True, "code": 0}


def _gone_or_zombie(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"  # dead, waiting for a reaper that may not reap (PID 1 of a container)


def test_a_killed_sweep_leaves_no_worker_even_one_blocked_in_a_call(tmp_path: Path) -> None:
    script = STAND_IN + textwrap.dedent("""
        assert tracking_worker.start()
        tracking_worker.submit(tracking.tag_run, "u", "a", "k", "sleep600",
                               on_error=print)
        print(tracking_worker.worker_pid(), flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "trail")],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        worker = int(proc.stdout.readline())
        deadline = time.time() + 30
        while not (tmp_path / "trail").exists() and time.time() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "trail").exists()  # the worker is in its 600 s call
        proc.send_signal(signal.SIGKILL)
        # The worker held a copy of stdout: the pipe closes only when it is gone too.
        proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.time() + 10
    while not _gone_or_zombie(worker) and time.time() < deadline:
        time.sleep(0.1)
    assert _gone_or_zombie(worker)


def test_no_worker_where_fork_is_not_safe_or_not_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, and no fork of pytest's process: a thread is running, or the switch is on."""
    calls: list[tuple[str, ...]] = []

    def tag_run(uri: str, run_id: str, key: str, value: str) -> None:
        calls.append((run_id, str(os.getpid())))
        if value == "fail":
            raise SweepError("no")

    monkeypatch.setattr(tracking, "tag_run", tag_run)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        assert tracking_worker.start() is False
    finally:
        stop.set()
        thread.join()
    monkeypatch.setenv(tracking_worker.INPROC_ENV, "1")
    assert tracking_worker.start() is False
    assert tracking_worker.worker_pid() is None
    errors: list[SweepError] = []
    tracking_worker.submit(tracking.tag_run, "u", "a", "k", "fail", on_error=errors.append)
    assert [str(e) for e in errors] == ["no"]  # at once, in this process
    tracking_worker.call(tracking.tag_run, "u", "b", "k", "ok")
    assert calls == [("a", str(os.getpid())), ("b", str(os.getpid()))]
    with pytest.raises(TypeError, match=r"not a function of sweep\.outputs\.tracking"):
        tracking_worker.call(json.dumps, {})
