"""Benchmarks; never imported by the product."""
