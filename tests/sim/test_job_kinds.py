"""Every job-kind example in ``examples/jobs`` runs to its end in the simulator (``pumice sim examples/jobs``)."""

from __future__ import annotations

from pathlib import Path

from pumice.sim import load_path, run_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jobs"


def test_every_example_runs_to_completion_in_the_simulator() -> None:
    result = run_scenario(load_path(EXAMPLES))
    assert result.errors == []
    store = result.cluster.store
    jobs = {j["metadata"]["name"]: j["status"]["state"]["phase"] for j in store.list("jobs.batch.volcano.sh")[0]}
    assert jobs == {name: "Completed" for name in (
        "batch-example", "lm-mpi-job", "pytorch-job", "tf-job", "ray-cluster-job", "hccl-job",
        "pipeline-prepare", "pipeline-train", "pipeline-evaluate")}
    (flow,) = store.list("jobflows.flow.volcano.sh")[0]
    assert flow["status"]["state"]["phase"] == "Succeed"
    # the MPI master's end completed the job: CompleteJob stopped the workers (sshd -D), the master is kept
    mpi = {p["metadata"]["name"]: p["status"]["phase"] for p in store.list("pods")[0]
           if p["metadata"]["name"].startswith("lm-mpi-job")}
    assert mpi == {"lm-mpi-job-mpimaster-0": "Succeeded"}
    reasons = [e["reason"] for e in store.list("events", "default")[0] if e["involvedObject"]["name"] == "lm-mpi-job"]
    assert reasons.count("ExecuteAction") == 1 and reasons[-1] == "Completed"

