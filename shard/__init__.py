"""shardsched shard."""
