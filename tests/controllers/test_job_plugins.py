"""Job plugins as Volcano defines them: what each writes into a pod and which objects it creates.

The pods are built the way the job controller builds them (``build_pod``), from whole Jobs; the objects
go to a real ``MemoryStore``.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from cryptography.hazmat.primitives import serialization
from hypothesis import given
from hypothesis import strategies as st

from pumice.controllers.job_build import build_pod
from pumice.controllers.job_plugins import (
    HcclrankPlugin,
    MpiPlugin,
    PluginError,
    RayPlugin,
    SshPlugin,
    SvcPlugin,
    parse_flags,
    plugins_of,
)
from pumice.controllers.job_plugins.flags import Flag
from pumice.store import MemoryStore

Obj = dict[str, Any]


def make_job(name: str, tasks: dict[str, int], plugins: dict[str, list[str]], **template: Any) -> Obj:
    spec = {"containers": [{"name": "main", "image": "busybox"}], **template}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
        "spec": {"plugins": plugins, "tasks": [{"name": t, "replicas": n, "template": {"spec": copy.deepcopy(spec)}}
                                               for t, n in tasks.items()]},
    }


def pod_of(job: Obj, task: str, index: int) -> Obj:
    spec = next(t for t in job["spec"]["tasks"] if t["name"] == task)
    return build_pod(job, spec, index, version=0, retry_count=0)


def env_of(container: Obj) -> dict[str, Any]:
    """name -> value (or the valueFrom), later duplicates winning as in a container."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


# --- Go flag parsing --------------------------------------------------------------------------------------------

FLAGS = (Flag("name", "string", "x"), Flag("port", "int", 22), Flag("on", "bool", False))


def test_flags_parse_like_go() -> None:
    assert parse_flags(FLAGS, ["--name=a", "-port", "5000", "--on"]) == ({"name": "a", "port": 5000, "on": True},
                                                                          None)
    assert parse_flags(FLAGS, ["--port=0x10", "--on=false"])[0]["port"] == 16
    assert parse_flags(FLAGS, ["--port=010"])[0]["port"] == 8  # Go reads a leading 0 as octal
    values, err = parse_flags(FLAGS, ["--port=1", "--bogus=2", "--name=late"])
    assert values == {"name": "x", "port": 1, "on": False} and err == "flag provided but not defined: -bogus"
    values, err = parse_flags(FLAGS, ["--port=abc"])
    assert values["port"] == 22 and err == 'invalid value "abc" for flag -port: parse error'
    assert parse_flags(FLAGS, ["positional", "--port=1"]) == ({"name": "x", "port": 22, "on": False}, None)
    assert parse_flags(FLAGS, ["--", "--port=1"])[0]["port"] == 22
    assert parse_flags(FLAGS, ["--name"])[1] == "flag needs an argument: -name"


def test_a_bad_flag_never_echoes_its_value() -> None:
    _, err = parse_flags(FLAGS, ["---ssh-private-key=SECRET"])
    assert err is not None and "SECRET" not in err


@given(st.lists(st.text(max_size=12), max_size=6))
def test_flag_parsing_never_raises_and_keeps_types(args: list[str]) -> None:
    values, err = parse_flags(FLAGS, args)
    assert isinstance(values["name"], str) and isinstance(values["port"], int) and isinstance(values["on"], bool)
    assert err is None or isinstance(err, str)


# --- mpi ---------------------------------------------------------------------------------------------------------


def test_mpi_master_gets_worker_hosts_and_everyone_the_port() -> None:
    job = make_job("mpi", {"master": 1, "worker": 3}, {"mpi": [], "svc": [], "ssh": []})
    master = pod_of(job, "master", 0)
    env = env_of(master["spec"]["containers"][0])
    assert env["MPI_HOST"] == "mpi-worker-0.mpi,mpi-worker-1.mpi,mpi-worker-2.mpi"
    assert {"name": "mpijob-port", "containerPort": 22} in master["spec"]["containers"][0]["ports"]
    worker = pod_of(job, "worker", 1)
    assert "MPI_HOST" not in env_of(worker["spec"]["containers"][0])
    assert [p["containerPort"] for p in worker["spec"]["containers"][0]["ports"]] == [22]


def test_mpi_custom_names_port_and_an_existing_port() -> None:
    job = make_job("m", {"launcher": 1, "rank": 2}, {"mpi": ["--master=launcher", "--worker=rank", "--port=2222"]},
                   hostname="")
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 2222, "name": "ssh"}]
    launcher = pod_of(job, "launcher", 0)
    assert launcher["spec"]["containers"][0]["ports"] == [{"containerPort": 2222, "name": "ssh"}]
    assert env_of(launcher["spec"]["containers"][0])["MPI_HOST"] == "m-rank-0.m,m-rank-1.m"


def test_mpi_master_without_worker_task_is_left_alone() -> None:
    job = make_job("solo", {"master": 1}, {"mpi": []})
    pod = pod_of(job, "master", 0)
    assert "ports" not in pod["spec"]["containers"][0] and "env" not in pod["spec"]["containers"][0]


def test_mpi_fixed_hostname_gives_one_host() -> None:
    job = make_job("h", {"master": 1, "worker": 3}, {"mpi": []}, hostname="w", subdomain="sub")
    assert env_of(pod_of(job, "master", 0)["spec"]["containers"][0])["MPI_HOST"] == "w.sub"
    assert MpiPlugin(["--worker=w"]).worker == "w"


# --- pytorch -----------------------------------------------------------------------------------------------------


def test_pytorch_env_ranks_world_size_and_ports() -> None:
    job = make_job("pt", {"master": 1, "worker": 3, "ps": 2}, {"pytorch": ["--port=5000"]})
    expect = {("master", 0): "0", ("worker", 0): "1", ("worker", 2): "3"}
    for (task, index), rank in expect.items():
        env = env_of(pod_of(job, task, index)["spec"]["containers"][0])
        assert env["MASTER_ADDR"] == "pt-master-0.pt" and env["MASTER_PORT"] == "5000"
        assert env["WORLD_SIZE"] == "4" and env["RANK"] == rank
    other = pod_of(job, "ps", 1)["spec"]["containers"][0]
    assert "RANK" not in env_of(other) and env_of(other)["WORLD_SIZE"] == "4"
    assert {"name": "pytorchjob-port", "containerPort": 5000} in other["ports"]


def test_pytorch_wait_for_master_only_on_workers_when_enabled() -> None:
    job = make_job("pt", {"master": 1, "worker": 1}, {"pytorch": ["--wait-master-enabled", "--wait-master-timeout=60",
                                                                   "--wait-master-image=alpine:3"]})
    (init,) = pod_of(job, "worker", 0)["spec"]["initContainers"]
    assert init["name"] == "wait-for-master" and init["image"] == "alpine:3"
    assert "nc -z pt-master-0.pt 23456" in init["command"][2] and "TIMEOUT=60" in init["command"][2]
    assert "initContainers" not in pod_of(job, "master", 0)["spec"]
    plain = make_job("pt", {"master": 1, "worker": 1}, {"pytorch": []})
    assert "initContainers" not in pod_of(plain, "worker", 0)["spec"]


def test_pytorch_without_master_task_adds_nothing() -> None:
    job = make_job("pt", {"worker": 2}, {"pytorch": []})
    assert "env" not in pod_of(job, "worker", 0)["spec"]["containers"][0]


# --- tensorflow --------------------------------------------------------------------------------------------------


def test_tensorflow_config_per_task() -> None:
    job = make_job("tf", {"ps": 1, "worker": 2, "evaluator": 1}, {"tensorflow": []})
    raw = env_of(pod_of(job, "worker", 1)["spec"]["containers"][0])["TF_CONFIG"]
    assert raw == ('{"cluster":{"ps":["tf-ps-0.tf:2222"],"worker":["tf-worker-0.tf:2222","tf-worker-1.tf:2222"],'
                   '"evaluator":["tf-evaluator-0.tf:2222"]},"task":{"type":"worker","index":1}}')
    assert json.loads(env_of(pod_of(job, "ps", 0)["spec"]["containers"][0])["TF_CONFIG"])["task"] == {
        "type": "ps", "index": 0}


def test_tensorflow_renamed_roles_and_standalone() -> None:
    job = make_job("tf", {"server": 1, "trainer": 1}, {"tensorflow": ["--ps=server", "--worker=trainer", "--port=1"]})
    config = json.loads(env_of(pod_of(job, "trainer", 0)["spec"]["containers"][0])["TF_CONFIG"])
    assert config == {"cluster": {"ps": ["tf-server-0.tf:1"], "worker": ["tf-trainer-0.tf:1"]},
                      "task": {"type": "worker", "index": 0}}
    alone = make_job("one", {"worker": 1}, {"tensorflow": []})
    assert "env" not in pod_of(alone, "worker", 0)["spec"]["containers"][0]


# --- ray ---------------------------------------------------------------------------------------------------------


def test_ray_commands_ports_and_head_service() -> None:
    job = make_job("rc", {"head": 1, "worker": 2}, {"ray": ["--port=1234"]})
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["name"] = "head"
    job["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["name"] = "worker"
    head = pod_of(job, "head", 0)["spec"]["containers"][0]
    assert head["command"][2].startswith("ray start --head --block --dashboard-host=0.0.0.0 --port=1234 ")
    assert [(p["name"], p["containerPort"]) for p in head["ports"]] == [
        ("gcs", 1234), ("dashboard", 8265), ("client-server", 10001)]
    worker = pod_of(job, "worker", 1)["spec"]["containers"][0]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=rc-head-0.rc:1234"]
    store = MemoryStore()
    assert RayPlugin(["--port=1234"]).on_job_add(store, job)
    svc = store.get("services", "ns", "rc-head-svc")
    assert [p["port"] for p in svc["spec"]["ports"]] == [1234, 8265, 10001]
    assert svc["spec"]["selector"]["volcano.sh/task-spec"] == "head"


def test_ray_without_head_task_refuses_the_pod() -> None:
    job = make_job("rc", {"worker": 1}, {"ray": []})
    try:
        pod_of(job, "worker", 0)
    except PluginError as err:
        assert "doesn't have head task head" in str(err)
    else:
        raise AssertionError("a Ray job without a head task must not get pods")


# --- hcclrank ----------------------------------------------------------------------------------------------------


def test_hcclrank_annotations() -> None:
    job = make_job("hc", {"master": 2, "worker": 3, "other": 1}, {"hcclrank": []})
    ranks = {(t, i): pod_of(job, t, i)["metadata"]["annotations"].get("hccl/rankIndex")
             for t, i in [("master", 0), ("master", 1), ("worker", 0), ("worker", 2), ("other", 0)]}
    assert ranks == {("master", 0): "0", ("master", 1): "1", ("worker", 0): "2", ("worker", 2): "4",
                     ("other", 0): None}


def test_hcclrank_takes_rank_env_or_keeps_an_annotation() -> None:
    job = make_job("hc", {"master": 1, "worker": 2}, {"hcclrank": [], "pytorch": []})
    assert pod_of(job, "worker", 1)["metadata"]["annotations"]["hccl/rankIndex"] == "2"  # pytorch's RANK
    given_ = make_job("hc", {"master": 1}, {"hcclrank": []})
    given_["spec"]["tasks"][0]["template"]["metadata"] = {"annotations": {"hccl/rankIndex": "7"}}
    assert pod_of(given_, "master", 0)["metadata"]["annotations"]["hccl/rankIndex"] == "7"
    assert HcclrankPlugin(["--master=m"]).master == "m"


# --- svc ---------------------------------------------------------------------------------------------------------


def test_svc_objects_and_flags() -> None:
    job = make_job("sj", {"ps-node": 2}, {"svc": []})
    store = MemoryStore()
    assert SvcPlugin([]).on_job_add(store, job)
    cm = store.get("configmaps", "ns", "sj-svc")["data"]
    assert cm == {"ps_node.host": "sj-ps-node-0.sj\nsj-ps-node-1.sj",
                  "VC_PS_NODE_HOSTS": "sj-ps-node-0.sj,sj-ps-node-1.sj", "VC_PS_NODE_NUM": "2"}
    svc = store.get("services", "ns", "sj")["spec"]
    assert svc["clusterIP"] == "None" and svc["publishNotReadyAddresses"] is False
    policy = store.get("networkpolicies.networking.k8s.io", "ns", "sj")["spec"]
    assert policy["podSelector"]["matchLabels"] == {"volcano.sh/job-name": "sj", "volcano.sh/job-namespace": "ns"}
    assert policy["policyTypes"] == ["Ingress"]
    other = MemoryStore()
    SvcPlugin(["--disable-network-policy", "--publish-not-ready-addresses=true"]).on_job_add(other, job)
    assert other.list("networkpolicies.networking.k8s.io", "ns")[0] == []
    assert other.get("services", "ns", "sj")["spec"]["publishNotReadyAddresses"] is True
    job["spec"]["plugins"]["svc"] = ["--inject-hosts-env=false"]
    pod = pod_of(job, "ps-node", 0)
    assert "env" not in pod["spec"]["containers"][0]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [{"name": "sj-svc", "mountPath": "/etc/volcano"}]


# --- ssh ---------------------------------------------------------------------------------------------------------


def _secret(store: MemoryStore, name: str) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in store.get("secrets", "ns", name)["data"].items()}


def test_ssh_generates_a_real_key_pair_per_job() -> None:
    job = make_job("s", {"w": 2}, {"ssh": []})
    store = MemoryStore()
    assert SshPlugin([]).on_job_add(store, job)
    data = _secret(store, "s-ssh")
    key = serialization.load_pem_private_key(data["id_rsa"].encode(), password=None)
    assert data["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----") and key.key_size == 2048  # type: ignore[union-attr]
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert data["id_rsa.pub"] == data["authorized_keys"] == public.decode() + "\n"
    assert data["config"] == ("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
                              "Host s-w-0\n  HostName s-w-0.s\n  Port 22\nHost s-w-1\n  HostName s-w-1.s\n  Port 22\n")
    other = MemoryStore()
    SshPlugin([]).on_job_add(other, make_job("t", {"w": 1}, {"ssh": []}))
    assert _secret(other, "t-ssh")["id_rsa"] != data["id_rsa"]


def test_ssh_user_keys_path_and_port() -> None:
    args = ["--ssh-private-key=PRIVATE\\nTEXT", "--ssh-public-key=ssh-rsa AAAA me", "--ssh-key-file-path=/home/u/.ssh",
            "--ssh-port=2222"]
    job = make_job("s", {"w": 1}, {"ssh": args})
    store = MemoryStore()
    SshPlugin(args).on_job_add(store, job)
    data = _secret(store, "s-ssh")
    assert data["id_rsa"] == "PRIVATE\\nTEXT" and data["id_rsa.pub"] == data["authorized_keys"] == "ssh-rsa AAAA me"
    assert data["config"].endswith("Host s-w-0\n  HostName s-w-0.s\n  Port 2222\n")
    pod = pod_of(job, "w", 0)
    (volume,) = pod["spec"]["volumes"]
    assert volume["secret"]["defaultMode"] == 0o644 and [i["path"] for i in volume["secret"]["items"]] == [
        ".ssh/id_rsa", ".ssh/id_rsa.pub", ".ssh/authorized_keys", ".ssh/config"]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "s-ssh", "mountPath": "/home/u/.ssh", "subPath": ".ssh"}]


def test_ssh_bad_port_falls_back_with_a_warning() -> None:
    plugin = SshPlugin(["--ssh-port=-10"])
    assert plugin.port == 22 and plugin.warnings() == ["invalid ssh port -10, falling back to default port 22"]


def test_plugins_run_in_volcanos_registration_order() -> None:
    job = make_job("o", {"master": 1}, {"ray": [], "hcclrank": [], "pytorch": [], "mpi": [], "tensorflow": [],
                                        "svc": [], "env": [], "ssh": [], "unknown": []})
    assert [p.name for p in plugins_of(job)] == ["ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank",
                                                  "ray"]
