"""Writing and listing a kwok-style fleet in the embedded Redis store.

    python -m benchmarks.fleet --nodes 20000 --json FILE

- fleet_write: every node written with the store's pipelined bulk create, against one
  create call (one round trip) per node;
- fleet_list: listing every node and parsing it into Node objects (what a shard does at
  start), against one get call per node.

Each repeat writes into its own key prefix of one embedded redis-server, so every write
starts from an empty store. Items are {"optimised_ms", "baseline_ms", "ratio"} (medians).
"""
from __future__ import annotations

import itertools

from common.tools.fleet import generate
from common.model.objects import parse_node
from common.store.embedded import EmbeddedRedis
from common.store.redis_store import RedisStore

from . import harness


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="mixed", choices=("uniform", "mixed"))
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    nodes = generate(args.nodes, args.profile, args.seed)
    names = [d["metadata"]["name"] for d in nodes]
    serial = itertools.count()
    with EmbeddedRedis() as redis:
        def fresh_store() -> RedisStore:
            return RedisStore(redis.url, prefix=f"bench{next(serial)}:")

        stores: list[RedisStore] = []
        bulk = harness.time_ms(lambda: stores[-1].create_many(nodes), args.repeat,
                               lambda: stores.append(fresh_store()))
        one_by_one = harness.time_ms(lambda: [stores[-1].create(d) for d in nodes],
                                     max(1, args.repeat // 2), lambda: stores.append(fresh_store()))
        store = stores[0]
        listed = harness.time_ms(lambda: [parse_node(d) for d in store.list("Node")[0]], args.repeat)
        got = harness.time_ms(lambda: [parse_node(store.get("Node", n)) for n in names],
                              max(1, args.repeat // 2))
        for s in stores:
            s.close()
    results = {"fleet_write": harness.compare(bulk, one_by_one),
               "fleet_list": harness.compare(listed, got)}
    return harness.report(f"{args.nodes} {args.profile} nodes in the embedded Redis "
                        "(medians, ratio = baseline / optimised)", results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
