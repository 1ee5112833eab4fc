"""The link to a sweep's runs table in the MLflow UI (issue 14, item 18; the browser test in
tests/e2e/test_mlflow_ui_browser.py opens it)."""

from __future__ import annotations

from sweep.outputs.tracking import ui_link


def test_a_sqlite_store_links_to_make_ui_in_model_training_mode() -> None:
    assert ui_link("sqlite:////tmp/x/mlflow.db", "7") == (
        "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning")
    assert ui_link("sqlite:////tmp/x/mlflow.db", "7", port=8080).startswith(
        "http://127.0.0.1:8080/#/experiments/7/runs?")


def test_a_server_is_its_own_ui_and_other_stores_have_no_link() -> None:
    assert ui_link("http://mlflow.team:5000/", "3") == (
        "http://mlflow.team:5000/#/experiments/3/runs?workflowType=machine_learning")
    assert ui_link("databricks", "3") is None


def test_the_comparison_table_link_opens_the_parent_runs_artifact_in_the_classic_view() -> None:
    # issue 45: MLflow 3's run page cuts the description (the table) after three lines
    from sweep.outputs.tracking import artifact_link

    assert artifact_link("sqlite:////tmp/x/mlflow.db", "7", "abc", "comparison.md") == (
        "http://127.0.0.1:5000/#/experiments/7/runs/abc/artifacts/comparison.md"
        "?workflowType=machine_learning")
    assert artifact_link("http://mlflow.team:5000/", "3", "r", "comparison.md",
                         port=8080).startswith("http://mlflow.team:5000/#/experiments/3/runs/r/")
    assert artifact_link("databricks", "3", "r", "comparison.md") is None
