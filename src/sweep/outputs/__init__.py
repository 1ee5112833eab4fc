"""What a run leaves behind: report files, the per-question views (misses.html), plots, and MLflow (tracking, the only mlflow import)."""
