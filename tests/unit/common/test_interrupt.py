"""A Ctrl-C swallowed inside a ``__del__`` still stops the program (issue 14, item 13: under
load, SIGINT landed in an SQLAlchemy weakref callback, and the sweep ran on)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from helpers import ROOT

# The SIGINT's handler runs inside __del__ (the busy loop gives it the bytecode boundary), so
# its KeyboardInterrupt is printed as "Exception ignored" and dropped. Only a later SIGINT can
# stop the sleep that follows.
SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from sweep.common import interrupt
    if sys.argv[1] == "install":
        interrupt.install(resend_s=0.2)
    else:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    class Dropped:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                pass

    try:
        Dropped()
        print("after the dropped interrupt", flush=True)
        time.sleep(3)
        print("ran on")
    except KeyboardInterrupt:
        interrupt.handled()
        os.kill(os.getpid(), signal.SIGINT)  # ignored once handled
        print("interrupted")
""")


def run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_a_dropped_interrupt_is_sent_again_until_handled() -> None:
    res = run("install")
    # The first one was dropped, quietly: no "Exception ignored" traceback for it.
    assert "Traceback" not in res.stderr and "KeyboardInterrupt" not in res.stderr, res.stderr
    assert res.stdout.splitlines() == ["after the dropped interrupt", "interrupted"], res
    assert res.returncode == 0


def test_without_it_the_dropped_interrupt_is_lost() -> None:
    # The control: Python's own handler loses it, which is what the resending is for.
    res = run("plain")
    assert "Exception ignored" in res.stderr, res.stderr
    assert res.stdout.splitlines() == ["after the dropped interrupt", "ran on"], res
