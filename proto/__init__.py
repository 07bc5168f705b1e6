"""shardsched proto."""
