"""Small helpers below every layer that config, preemption and plugins share."""
