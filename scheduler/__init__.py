"""py-scheduler: a secondary Kubernetes scheduler in Python."""
