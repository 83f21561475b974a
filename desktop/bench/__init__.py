"""Benchmarks that print numbers (medians, p95s, ratios), registered under `keepmind bench`."""
