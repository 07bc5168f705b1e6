"""shardsched benchmarks."""
