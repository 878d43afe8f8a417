"""The persistent Optuna study: storage, the driver lock, and how trials are recorded."""
