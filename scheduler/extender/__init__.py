"""Scheduler extenders: upstream's HTTP filter / prioritize / preempt / bind protocol (``extender.go``)."""
