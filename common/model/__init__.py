"""The object model: Kubernetes objects parsed from their documents (pods, nodes, pod
groups, storage kinds), label selectors, resource quantities, the limits every object
meets, admission of manifests, and which watch events change nothing a scheduler reads.
"""
