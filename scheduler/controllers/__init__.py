"""Status writers that act as controllers beside the scheduler (PodGroup status)."""
