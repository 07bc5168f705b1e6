"""What every process runs on: the component base and runner, stream links, security,
health, metrics, logs, leader election, the event writer, the informer and the intake of
store events, rate limiting and the version.
"""
