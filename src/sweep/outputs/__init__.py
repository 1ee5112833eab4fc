"""What a run leaves behind: the report files (report) and the MLflow store (tracking)."""
