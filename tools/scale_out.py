"""Move a namespace from a magnetar broker to another cluster (Apache Pulsar, or another magnetar)
with geo-replication, as docs/SCALE-OUT.md describes:

1. register the target cluster on magnetar (ClusterData: its http:// and pulsar:// URLs, and the
   credentials magnetar's replicator presents there), and the tenant and namespace on the target;
2. allow the target cluster for the tenant on magnetar and add it to the namespace's replication
   clusters; the target's namespace replicates to itself only (one way: nothing comes back) and
   deduplicates (what a crashed magnetar sends again is dropped);
3. load every topic of the namespace on magnetar (a topic replicates once loaded), then wait until
   every topic's ``replication.<target>.replicationBacklog`` is 0;
4. print what to change in the clients (the service URL) and the counts per topic on both sides.

Run it with magnetar started with ``replicationStartAt=earliest`` (broker.conf) or
``MAGNETAR_REPLICATION_START_AT=earliest`` so that what is stored already moves too.

    python tools/scale_out.py --magnetar-http http://edge:8080 --target-cluster core \\
        --target-http http://core:8080 --target-broker pulsar://core:6650 --namespace acme/orders
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any


class Admin:
    """Admin REST calls to one cluster."""

    def __init__(self, base: str, token: str | None) -> None:
        self.base = base.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 204)) -> Any:
        """The decoded answer; SystemExit with the cluster's reason on any other status."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except OSError as exc:
            raise SystemExit(f"error: {self.base}: {exc}") from None
        if status not in ok:
            raise SystemExit(f"error: {method} {self.base}{path}: {status} {raw.decode(errors='replace')}")
        return json.loads(raw) if raw else None


def step(text: str) -> None:
    """Say what happens now."""
    print(f"==> {text}", flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--magnetar-http", required=True, help="magnetar's admin URL (http://host:8080)")
    p.add_argument("--magnetar-token", help="a superuser token for magnetar")
    p.add_argument("--magnetar-cluster", default="standalone", help="magnetar's clusterName")
    p.add_argument("--target-cluster", required=True, help="the target's clusterName")
    p.add_argument("--target-http", required=True, help="the target's admin URL")
    p.add_argument("--target-broker", required=True, help="the target's pulsar:// URL")
    p.add_argument("--target-token", help="a superuser token for the target (also what the replicator sends)")
    p.add_argument("--namespace", required=True, help="tenant/namespace to move")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the backlogs to drain")
    return p.parse_args(argv)


def register(edge: Admin, core: Admin, args: argparse.Namespace) -> str:
    """Steps 1 and 2; returns magnetar's cluster name."""
    tenant, _, _ = args.namespace.partition("/")
    local = edge.call("GET", "/admin/v2/clusters")
    local_name = args.magnetar_cluster
    step(f"register cluster {args.target_cluster} on magnetar ({local_name})")
    data: dict[str, Any] = {"serviceUrl": args.target_http, "brokerServiceUrl": args.target_broker}
    if args.target_token:
        data |= {"authenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
                 "authenticationParameters": f"token:{args.target_token}"}
    if args.target_cluster in local:
        edge.call("POST", f"/admin/v2/clusters/{args.target_cluster}", data)
    else:
        edge.call("PUT", f"/admin/v2/clusters/{args.target_cluster}", data)
    step(f"tenant {tenant} and namespace {args.namespace} on {args.target_cluster}")
    info = edge.call("GET", f"/admin/v2/tenants/{tenant}")
    target_info = {"adminRoles": info.get("adminRoles", []), "allowedClusters": [args.target_cluster]}
    core.call("PUT", f"/admin/v2/tenants/{tenant}", target_info, ok=(204, 409))
    core.call("PUT", f"/admin/v2/namespaces/{args.namespace}", ok=(204, 409))
    core.call("POST", f"/admin/v2/namespaces/{args.namespace}/replication", [args.target_cluster])
    # what a crashed magnetar sends again is dropped there (by the original producer's sequence ids)
    core.call("POST", f"/admin/v2/namespaces/{args.namespace}/deduplication", True)
    step(f"replicate {args.namespace} from {local_name} to {args.target_cluster}")
    allowed = sorted(set(info.get("allowedClusters", [])) | {local_name, args.target_cluster})
    edge.call("POST", f"/admin/v2/tenants/{tenant}", {**info, "allowedClusters": allowed})
    edge.call("POST", f"/admin/v2/namespaces/{args.namespace}/replication", [local_name, args.target_cluster])
    return local_name


def wait_drained(edge: Admin, args: argparse.Namespace) -> dict[str, int]:
    """Step 3: every topic loaded and its backlog to the target at 0; message counts per topic."""
    topics = [t for t in edge.call("GET", f"/admin/v2/namespaces/{args.namespace}/topics?mode=PERSISTENT")
              if t.startswith("persistent://")]
    step(f"{len(topics)} topics; waiting for their replication backlogs to reach 0")
    deadline = time.monotonic() + args.timeout
    counts: dict[str, int] = {}
    for topic in topics:
        path = "/admin/v2/persistent/" + topic.removeprefix("persistent://") + "/stats"
        while True:
            stats = edge.call("GET", path)
            repl = stats.get("replication", {}).get(args.target_cluster)
            if repl is not None and repl.get("replicationBacklog") == 0 and repl.get("connected"):
                counts[topic] = int(repl.get("msgOutCounter", 0))
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"error: {topic}: replication backlog not drained in {args.timeout} s: {repl}")
            time.sleep(1)
    return counts


def main(argv: list[str]) -> int:
    """Run the steps; 0 when every topic is replicated."""
    args = parse_args(argv)
    edge = Admin(args.magnetar_http, args.magnetar_token)
    core = Admin(args.target_http, args.target_token)
    register(edge, core, args)
    counts = wait_drained(edge, args)
    for topic, count in counts.items():
        print(f"{topic}: {count} messages replicated since this broker started")
    step(f"done: point producers and consumers at {args.target_broker} (serviceUrl) and {args.target_http} "
         "(admin); then remove the replication (namespaces set-clusters) and the old broker")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
