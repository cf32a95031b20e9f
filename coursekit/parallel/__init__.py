"""Parallel training: collectives, pipeline schedules, the parallelism advisor, scaling."""
