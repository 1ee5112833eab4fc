"""Faults of the labelling page (issue 14): two processes writing one golden file, and a
client that stalls in the middle of its request body."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import ROOT
from sweep.label.store import GoldenFile

# One writer process: appends N new items (qids PREFIX000...), or edits q001 N times, each
# edit re-reading the file for the line's current digest (as a reloaded page would).
WRITER = textwrap.dedent("""
    import sys
    from sweep.label.store import GoldenFile, StaleError
    path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gf = GoldenFile(path)
    quote = "You can return most Kestrel Home products within 30 days of delivery"
    def item(qid, question):
        return {"qid": qid, "question": question,
                "evidence": [{"path": "returns/refund-policy.md", "quote": quote}]}
    done = 0
    while done < n:
        if mode == "edit":
            entry = next(e for e in gf.entries() if e.qid == "q001")
            try:
                gf.replace("q001", entry.digest, item("q001", f"edited question number {done}"))
            except StaleError:
                continue  # the other process changed the file between our read and write
        else:
            gf.append(item(f"{mode}{done:03d}", f"appended question number {done}"))
        done += 1
""")


def _item(qid: str) -> str:
    return json.dumps({"qid": qid, "question": "how long can i send it back",
                       "evidence": [{"path": "returns/refund-policy.md",
                                     "quote": "within 30 days of delivery"}]})


def test_two_processes_writing_one_golden_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text(_item("q001") + "\n" + _item("q002") + "\n")
    n = 40
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    # Two appenders and one editor at once: an edit replaces the whole file, so before the
    # cross-process lock an append landing between its read and its rename was lost.
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), mode, str(n)], env=env,
                              stderr=subprocess.PIPE, text=True)
             for mode in ("a", "b", "edit")]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    entries = GoldenFile(path).entries()
    qids = [e.qid for e in entries]
    expected = {"q001", "q002", *(f"{p}{i:03d}" for p in "ab" for i in range(n))}
    assert sorted(q for q in qids if q) == sorted(expected)  # every append kept, none twice
    assert len(entries) == len(expected)
    edited = next(e.obj for e in entries if e.qid == "q001")
    assert edited is not None and edited["question"] == f"edited question number {n - 1}"
    # Each writer's own appends stay in the order it made them.
    for prefix in "ab":
        mine = [q for q in qids if q and q.startswith(prefix)]
        assert mine == [f"{prefix}{i:03d}" for i in range(n)]
