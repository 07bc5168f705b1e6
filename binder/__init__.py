"""shardsched binder."""
