"""Shared pieces of shardsched: object model, stores, config, data structures."""
