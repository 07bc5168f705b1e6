"""The default plugins, one per module, with kube-scheduler's behaviour."""
