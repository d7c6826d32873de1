"""The differential test (issue 18): the same requests to pumice and to a real kube-apiserver 1.20, every answer
of the same class (2xx, or the same error code), or a deviation listed in the README.

The real server is prepared as a Volcano cluster is: ``pumice crds`` installed, Volcano's webhooks served by
``pumice.webhooks``, the ``root`` and ``default`` queues created. pumice serves the same API over a store guarded
as ``pumice up``'s (``load_admission(cluster=True)``), without controllers, as the real one runs none. A bounded
run here; ``benchmarks/differential.py`` runs thousands and prints the table per kind.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings

from pumice.controllers import ensure_default_queues
from pumice.runtime import default_objects, load_admission
from pumice.server import ServerThread, create_app, ensure_certificates
from pumice.store import MemoryStore
from pumice.webhooks import AdmissionServer

from .conftest import Kube
from .differential import CORPUS, WEBHOOKS, Request, Tally, Target, compare, requests

#: Requests of the bounded run (about three calls each per server).
CI_REQUESTS = 300
TOKEN = "differential-token"


@pytest.fixture(scope="module")
def targets(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Target]]:
    admission = AdmissionServer(kube.client, host="127.0.0.1", port=0, enabled=WEBHOOKS).start()
    kube.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
        for name, spec in (("root", {"weight": 1, "reclaimable": False}), ("default", {"weight": 1}))]))
    hook = load_admission(cluster=True)
    store = MemoryStore(admission=hook)
    hook.attach(store)
    default_objects(store)
    ensure_default_queues(store)
    tls = ensure_certificates(tmp_path_factory.mktemp("pumice-tls"))
    server = ServerThread(create_app(store, token=TOKEN, dashboard=False), tls=tls).start()
    config = yaml.safe_load(kube.kubeconfig.read_text())
    kube_token = config["users"][0]["user"]["token"]
    kube_url = config["clusters"][0]["cluster"]["server"]
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE  # start.sh's self-signed serving cert
    try:
        yield [Target("pumice", server.url, TOKEN, ssl.create_default_context(cafile=str(tls.ca))),
               Target("kube-1.20", kube_url, kube_token, insecure)]
    finally:
        server.stop()
        store.close()
        admission.stop(unregister_webhooks=True)


def test_every_corpus_object_is_valid_on_both(targets: list[Target]) -> None:
    tally = Tally()
    for kind, (collection, objects) in CORPUS.items():
        for obj in objects:
            request = Request(kind, "valid", "POST", collection, obj)
            answers = {t.name: t.send(request) for t in targets}
            assert all(200 <= code < 300 for code, _ in answers.values()), (kind, answers)
            tally.add(request, answers, None)
    assert not tally.disagreements


def test_pumice_answers_every_request_as_kube_apiserver_does(targets: list[Target]) -> None:
    tally = Tally()
    seen: list[Any] = []

    @settings(max_examples=CI_REQUESTS, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(requests())
    def run(request: Request) -> None:
        seen.append(request.mutation)
        compare(request, targets, tally)

    run()
    table = "\n".join(f"{kind:>14} {n:>5} {ok:>5} {dev:>5} {bad:>5}" for kind, n, ok, dev, bad in tally.rows())
    print(f"\n{'kind':>14} {'sent':>5} {'agree':>5} {'dev':>5} {'diff':>5}\n{table}")
    assert len(seen) >= CI_REQUESTS // 2 and len(set(seen)) >= 6
    assert not tally.disagreements, "\n".join(str(d) for d in tally.disagreements[:20])
