"""What the API server's validation refuses that the parsers tolerate.

The parsers (objects.py and its siblings) read what the scheduler needs and refuse what they
cannot read; they also read what the store's watch shows, where the API server has already
validated every object. Manifests given to `create -f` and `simulate` have had no such check,
so admission runs this module's on them: the rules of kube-apiserver's validation
(k8s.io/kubernetes pkg/apis/core/validation) that shape what a scheduler sees: names, label
keys and values (and Services' and ReplicationControllers' selectors), duplicate taints,
container names and images, ports and host ports, resource names and requests against
limits, volumes' names and claims, restart policies, spread constraints, scheduling gates
and tolerations. The first
rule an object breaks is raised as an ObjectError naming the object and the field (the API
server lists them all; one is enough to refuse the object).
"""
from __future__ import annotations

import re

from .resources import parse_amount, parse_quantity
from .selectors import Field

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_PROTOCOLS = ("TCP", "UDP", "SCTP")
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")


def dns_label_error(value: str) -> str | None:
    """Why `value` is not an RFC 1123 label (a namespace, a container name), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS_LABEL.fullmatch(value):
        return ("must consist of lower case alphanumeric characters or '-', and must start and end "
                "with an alphanumeric character")
    return None


def dns_1035_label_error(value: str) -> str | None:
    """Why `value` is not an RFC 1035 label (a Service's name: it starts with a letter), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS_1035_LABEL.fullmatch(value):
        return ("must consist of lower case alphanumeric characters or '-', start with an alphabetic "
                "character, and end with an alphanumeric character")
    return None


def dns_subdomain_error(value: str) -> str | None:
    """Why `value` is not an RFC 1123 subdomain (most objects' names), or None."""
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not all(_DNS_LABEL.fullmatch(part) for part in value.split(".")):
        return ("must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
                "with an alphanumeric character")
    return None


def qualified_name_error(value: str) -> str | None:
    """Why `value` is not a label key (an optional DNS-subdomain prefix and '/', then a name of
    at most 63 characters), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or dns_subdomain_error(prefix)):
        return "prefix part must be a DNS subdomain (lower case alphanumeric characters, '-' or '.')"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return ("name part must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and "
                "ending with an alphanumeric character")
    return None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a label value (empty, or a name part), or None."""
    if value and (len(value) > 63 or not _QUALIFIED_NAME.fullmatch(value)):
        return ("must be empty or at most 63 characters of alphanumerics, '-', '_' or '.', starting and "
                "ending with an alphanumeric character")
    return None


def validate(doc: dict, kind: str, who: str) -> None:
    """Raise ObjectError for the first rule of the API server's validation `doc` (already
    parsed as a `kind`, so its fields have their types) breaks."""
    f = Field(who)
    _metadata(doc.get("metadata") or {}, kind, f.at("metadata"))
    spec = doc.get("spec") or {}
    if kind == "Node":
        _taints(spec.get("taints") or [], f.at("spec.taints"))
    elif kind == "Pod":
        _pod_spec(spec, f.at("spec"))
    elif kind in ("Service", "ReplicationController"):
        for key, value in (spec.get("selector") or {}).items():
            _check(f.at("spec.selector").at(key), qualified_name_error(key) or label_value_error(value))


def _check(f: Field, why: str | None) -> None:
    if why is not None:
        raise f.error(why)


def _metadata(meta: dict, kind: str, f: Field) -> None:
    name = meta.get("name") or ""
    rule = {"Namespace": dns_label_error, "Service": dns_1035_label_error}.get(kind, dns_subdomain_error)
    _check(f.at("name"), rule(name))
    if meta.get("namespace"):
        _check(f.at("namespace"), dns_label_error(meta["namespace"]))
    _labels(meta.get("labels") or {}, f.at("labels"))


def _labels(labels: dict, f: Field) -> None:
    for key, value in labels.items():
        _check(f.at(key), qualified_name_error(key) or label_value_error(value))


def _taints(taints: list, f: Field) -> None:
    """Keys and values as labels'; one taint per key and effect (the API server's 422)."""
    seen = set()
    for i, t in enumerate(taints):
        tf = f.at(i)
        _check(tf.at("key"), qualified_name_error(t.get("key") or ""))
        _check(tf.at("value"), label_value_error(t.get("value") or ""))
        pair = (t.get("key"), t.get("effect"))
        if pair in seen:
            raise tf.error(f"duplicate taint {pair[0]}:{pair[1]}: taints must be unique by key and effect pair")
        seen.add(pair)


def _pod_spec(spec: dict, f: Field) -> None:
    _volumes(spec.get("volumes") or [], f.at("volumes"))
    containers, inits = spec.get("containers") or [], spec.get("initContainers") or []
    names = _containers(containers, f.at("containers"), set())
    _containers(inits, f.at("initContainers"), names)
    _host_ports(containers, f.at("containers"))
    for key, value in (spec.get("nodeSelector") or {}).items():
        _check(f.at("nodeSelector").at(key), label_value_error(value))
    _spread_constraints(spec.get("topologySpreadConstraints") or [], f.at("topologySpreadConstraints"))
    _unique_names(spec.get("schedulingGates") or [], f.at("schedulingGates"), "scheduling gate")
    for i, t in enumerate(spec.get("tolerations") or []):
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            raise f.at("tolerations").at(i).at("effect").error("must be NoExecute when tolerationSeconds is set")
    if spec.get("restartPolicy", "Always") not in _RESTART_POLICIES:
        raise f.at("restartPolicy").error(f"unsupported value {spec['restartPolicy']!r} "
                                          f"(one of {', '.join(_RESTART_POLICIES)})")


def _volumes(volumes: list, f: Field) -> None:
    """Named (DNS labels, unique); a claim volume names its claim."""
    names = set()
    for i, v in enumerate(volumes):
        vf = f.at(i)
        name = v.get("name") or ""
        if not name:
            raise vf.at("name").error("is required")
        _check(vf.at("name"), dns_label_error(name))
        if name in names:
            raise vf.at("name").error(f"duplicate volume name {name!r}")
        names.add(name)
        claim = v.get("persistentVolumeClaim")
        if isinstance(claim, dict) and not claim.get("claimName"):
            raise vf.at("persistentVolumeClaim.claimName").error("is required")


def _containers(containers: list, f: Field, names: set) -> set:
    """Each container named (a DNS label, unique among the pod's containers and init
    containers, which share `names`), with an image, ports and resources as kube's."""
    for i, c in enumerate(containers):
        cf = f.at(i)
        name = c.get("name") or ""
        if not name:
            raise cf.at("name").error("is required")
        _check(cf.at("name"), dns_label_error(name))
        if name in names:
            raise cf.at("name").error(f"duplicate container name {name!r}")
        names.add(name)
        if not c.get("image"):
            raise cf.at("image").error("is required")
        _ports(c.get("ports") or [], cf.at("ports"))
        _resources(c.get("resources") or {}, cf.at("resources"))
    return names


def _ports(ports: list, f: Field) -> None:
    for i, p in enumerate(ports):
        pf = f.at(i)
        number = p.get("containerPort")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            raise pf.at("containerPort").error(f"must be between 1 and 65535, got {number!r}")
        if p.get("protocol", "TCP") not in _PORT_PROTOCOLS:
            raise pf.at("protocol").error(f"unsupported protocol {p['protocol']!r} (one of {', '.join(_PORT_PROTOCOLS)})")


def _host_ports(containers: list, f: Field) -> None:
    """No two ports of the pod's containers on one host port, protocol and host IP."""
    seen = set()
    for ci, c in enumerate(containers):
        for pi, p in enumerate(c.get("ports") or []):
            if not p.get("hostPort"):
                continue
            used = f"{p.get('protocol') or 'TCP'}/{p.get('hostIP') or ''}/{p['hostPort']}"
            if used in seen:
                raise f.at(ci).at("ports").at(pi).at("hostPort").error(f"duplicate host port {used}")
            seen.add(used)


def _overcommittable(resource: str) -> bool:
    """kube's IsOvercommitAllowed: native resources (no domain, or kubernetes.io's) but
    hugepages; extended resources' requests must equal their limits."""
    domain = resource.rpartition("/")[0]
    native = not domain or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return native and not resource.startswith("hugepages-")


def _resource_name(name: str, raw, f: Field) -> None:
    """A container may ask for the standard resources (and hugepages) by their bare names,
    anything else by a domain-qualified name; extended resources in whole units only."""
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            raise f.error(f"{name!r} must be a standard resource for containers "
                          f"({', '.join(_STANDARD_CONTAINER_RESOURCES)}, hugepages-*) or domain-qualified")
        return
    _check(f, qualified_name_error(name))
    if not _overcommittable(name) and not name.startswith("hugepages-"):
        if parse_quantity(raw) % 1:
            raise f.error(f"must be an integer, got {raw!r}")


def _resources(resources: dict, f: Field) -> None:
    limits = resources.get("limits") or {}
    for kind in ("requests", "limits"):
        for name, raw in (resources.get(kind) or {}).items():
            _resource_name(name, raw, f.at(kind).at(name))
    for name, raw in (resources.get("requests") or {}).items():
        amount = parse_amount(name, raw)[0]
        if name not in limits:
            if not _overcommittable(name):
                raise f.at("limits").error(f"a limit must be set for {name}, which cannot be overcommitted")
            continue
        limit = parse_amount(name, limits[name])[0]
        if amount != limit and not _overcommittable(name):
            raise f.at("requests").error(f"{name}: {raw} must be equal to {name} limit of {limits[name]}")
        if amount > limit:
            raise f.at("requests").error(f"{name}: {raw} must be less than or equal to {name} limit of {limits[name]}")


def _spread_constraints(constraints: list, f: Field) -> None:
    """One constraint per topologyKey and whenUnsatisfiable (kube blames the first of two)."""
    for i, c in enumerate(constraints):
        _check(f.at(i).at("topologyKey"), qualified_name_error(c.get("topologyKey") or ""))
        pair = (c.get("topologyKey"), c.get("whenUnsatisfiable"))
        if any((o.get("topologyKey"), o.get("whenUnsatisfiable")) == pair for o in constraints[i + 1:]):
            raise f.at(i).at("{topologyKey, whenUnsatisfiable}").error(
                f"duplicate constraint on topologyKey {pair[0]!r} with whenUnsatisfiable {pair[1]}")


def _unique_names(items: list, f: Field, what: str) -> None:
    seen = set()
    for i, item in enumerate(items):
        name = item.get("name")
        if name in seen:
            raise f.at(i).error(f"duplicate {what} {name!r}")
        seen.add(name)
