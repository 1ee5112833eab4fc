"""One MLflow client per store and process, each experiment looked up once (issue 21)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.outputs import tracking


def test_one_client_per_store_and_the_experiment_looked_up_once(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = tracking.client_for(uri)
    assert tracking.client_for(uri) is client
    asked: list[str] = []
    lookup = client.get_experiment_by_name

    def counted(name: str) -> Any:
        asked.append(name)
        return lookup(name)

    client.get_experiment_by_name = counted
    first = tracking.ensure_experiment(client, uri, "reuse")
    assert tracking.ensure_experiment(client, uri, "reuse") == first
    assert asked == ["reuse"]
    assert client.get_experiment(first).name == "reuse"
    other = tracking.ensure_experiment(client, uri, "other")
    assert other != first and asked == ["reuse", "other"]

