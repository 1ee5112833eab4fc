"""What a run leaves behind: report files, plots, and MLflow (the only mlflow import)."""
