"""shardsched dispatcher."""
