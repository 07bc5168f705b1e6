"""Operator tooling that only the command line and the benchmarks use: the local
multi-process stack, verify, fleets, `top` and the terminal reports.
"""
