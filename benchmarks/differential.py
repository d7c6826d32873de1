"""The differential run at scale: thousands of requests to pumice and to a real kube-apiserver 1.20, compared.

    python benchmarks/differential.py                  # 3,000 requests, the agreement table per kind
    python benchmarks/differential.py -n 10000 -v      # more, and every disagreement printed
    python benchmarks/differential.py --kinds Pod,Job  # only these kinds of the corpus
    python benchmarks/differential.py --sweep          # every request the test can draw, each once (~13,000)

The same corpus, mutations and answer classes as ``tests/kube/test_differential.py`` (``tests/kube/differential``):
a real kube-apiserver (``../shared/tools/kube-1.20``, built by its build.sh) is started on free loopback ports,
prepared as a Volcano cluster (``pumice crds``, Volcano's webhooks from ``pumice.webhooks``, the root and default
queues); pumice serves the same API in-process over a store guarded as ``pumice up``'s. Both are stopped at the
end. "dev" counts answers that differ by a deviation listed in the README, "diff" the others.
"""

from __future__ import annotations

import argparse
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--requests", type=int, default=3000, help="requests to send (default 3000)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every disagreement")
    parser.add_argument("--kinds", default="", help="comma-separated kinds of the corpus (default: every kind)")
    parser.add_argument("--sweep", action="store_true",
                        help="send every request the mutations can make, each once, instead of -n random ones")
    args = parser.parse_args()

    from hypothesis import HealthCheck, Phase, given, settings
    from rich.console import Console
    from rich.table import Table
    from tests.cli.conftest import HAVE_KUBE120, KUBE120_TOOLS, _free_ports
    from tests.kube.conftest import BASE_FLAGS, KUBECTL
    from tests.kube.differential import CORPUS, WEBHOOKS, Request, Tally, Target, compare, requests, sweep

    from pumice.client import KubeClient, load_config
    from pumice.controllers import ensure_default_queues
    from pumice.runtime import default_objects, load_admission
    from pumice.server import ServerThread, create_app, ensure_certificates
    from pumice.store import MemoryStore
    from pumice.webhooks import AdmissionServer

    kinds = tuple(k for k in args.kinds.split(",") if k) or None
    unknown = sorted(set(kinds or ()) - set(CORPUS))
    if unknown:
        parser.error(f"--kinds: no such kind in the corpus: {', '.join(unknown)} (known: {', '.join(CORPUS)})")
    if not HAVE_KUBE120:
        parser.error(f"kube-apiserver 1.20 is not built: run {KUBE120_TOOLS}/build.sh")
    state = Path(tempfile.mkdtemp(prefix="pumice-differential-"))
    port, etcd, _ = _free_ports(3)
    started = subprocess.run(["bash", str(KUBE120_TOOLS / "start.sh"), str(state), str(port), str(etcd)],
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "APISERVER_FLAGS": BASE_FLAGS})
    if started.returncode != 0:
        sys.exit(f"kube-apiserver did not start: {started.stderr[-2000:]}")
    kubeconfig = Path(started.stdout.strip().splitlines()[-1])
    server = admission = store = None
    try:
        crds = subprocess.run([sys.executable, "-m", "pumice.cli.main", "crds"], capture_output=True, text=True,
                              check=True).stdout
        subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-f", "-"], input=crds, text=True,
                       check=True, capture_output=True)
        time.sleep(3)  # the CRDs' kinds become served
        client = KubeClient(load_config(str(kubeconfig)))
        admission = AdmissionServer(client, host="127.0.0.1", port=0, enabled=WEBHOOKS).start()
        queues = yaml.safe_dump_all([{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                      "metadata": {"name": n}, "spec": s}
                                     for n, s in (("root", {"weight": 1, "reclaimable": False}),
                                                  ("default", {"weight": 1}))])
        subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-f", "-"], input=queues, text=True,
                       check=True, capture_output=True)
        hook = load_admission(cluster=True)
        store = MemoryStore(admission=hook)
        hook.attach(store)
        default_objects(store)
        ensure_default_queues(store)
        tls = ensure_certificates(state / "pumice-tls")
        server = ServerThread(create_app(store, token="differential", dashboard=False), tls=tls).start()
        config = yaml.safe_load(kubeconfig.read_text())
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        targets = [Target("pumice", server.url, "differential", ssl.create_default_context(cafile=str(tls.ca))),
                   Target("kube-1.20", config["clusters"][0]["cluster"]["server"],
                          config["users"][0]["user"]["token"], insecure)]
        tally = Tally()
        begin = time.monotonic()

        @settings(max_examples=args.requests, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(requests(kinds))
        def run(request: Request) -> None:
            compare(request, targets, tally)

        if args.sweep:
            for request in sweep(kinds):
                compare(request, targets, tally)
        else:
            run()
        elapsed = time.monotonic() - begin
    finally:
        if server is not None:
            server.stop()
        if admission is not None:
            admission.stop(unregister_webhooks=True)
        if store is not None:
            store.close()
        subprocess.run(["bash", str(KUBE120_TOOLS / "stop.sh"), str(state)], capture_output=True, timeout=60)

    table = Table(title=f"pumice vs kube-apiserver 1.20: {sum(tally.requests.values()):,} requests in "
                        f"{elapsed:.0f} s, answers compared by class (2xx or the same error code)")
    for column in ("kind", "requests", "agreed", "deviations", "disagreements"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, sent, agreed, deviations, bad in tally.rows():
        table.add_row(kind, f"{sent:,}", f"{agreed:,}", f"{deviations:,}", f"{bad:,}")
    console = Console(width=max(Console().width, 120))
    console.print(table)
    shown = tally.disagreements if args.verbose else tally.disagreements[:10]
    for disagreement in shown:
        console.print(str(disagreement), markup=False, highlight=False)
    if len(shown) < len(tally.disagreements):
        console.print(f"... and {len(tally.disagreements) - len(shown)} more (-v prints them all)")


if __name__ == "__main__":
    main()
