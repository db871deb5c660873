"""What a PyTorchJob / Kubeflow Trainer pod's environment makes of `ddpdoctor probe`'s options."""

from __future__ import annotations

import pytest

from ddpdoctor.core.errors import UsageError
from ddpdoctor.probe.launch.kubernetes import describe, job_settings, pod_identity

POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "HOSTNAME": "bert-worker-2"}


def test_trainer_pet_variables_form_the_job_as_torchrun_reads_them():
    env = {**POD, "PET_NNODES": "4", "PET_NPROC_PER_NODE": "8", "PET_NODE_RANK": "3",
           "PET_MASTER_ADDR": "bert-node-0-0.bert", "PET_MASTER_PORT": "29400"}
    assert job_settings(env) == {"nnodes": 4, "node_rank": 3, "master_addr": "bert-node-0-0.bert",
                                 "master_port": 29400, "nproc_per_node": 8}


def test_the_operators_world_size_and_rank_count_pods_not_processes():
    env = {**POD, "MASTER_ADDR": "bert-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "2"}
    assert job_settings(env) == {"nnodes": 3, "node_rank": 2, "master_addr": "bert-master-0", "master_port": 23456}


def test_pet_variables_win_over_the_operators_node_level_ones():
    env = {**POD, "MASTER_ADDR": "bert-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "16", "RANK": "9",
           "PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_NPROC_PER_NODE": "auto"}
    assert job_settings(env) == {"nnodes": 2, "node_rank": 1, "master_addr": "bert-master-0", "master_port": 23456}


def test_a_rendezvous_endpoint_is_taken_when_no_master_is_named():
    env = {**POD, "PET_NNODES": "2", "PET_RDZV_ENDPOINT": "etcd:2379"}
    assert job_settings(env) == {"nnodes": 2, "rdzv_endpoint": "etcd:2379"}


def test_outside_a_job_pod_nothing_is_taken():
    assert job_settings({"WORLD_SIZE": "4", "RANK": "1", "MASTER_ADDR": "x"}) == {}  # not a pod
    assert job_settings(POD) == {}  # a pod, but no job variables
    assert pod_identity({"HOSTNAME": "laptop"}) == {}


@pytest.mark.parametrize("env, words", [
    ({"PET_NNODES": "1:4"}, "elastic range"),
    ({"PET_NNODES": "two"}, "$PET_NNODES is not a number"),
    ({"PET_NNODES": "2", "PET_NODE_RANK": "2"}, "not below its node count"),
])
def test_unusable_pod_variables_are_a_usage_error_naming_the_variable(env, words):
    with pytest.raises(UsageError, match=words.replace("$", r"\$")):
        job_settings({**POD, **env})


def test_the_report_names_the_pod_and_the_node_when_the_spec_passes_it_down():
    assert describe(pod_identity({**POD, "NODE_NAME": "gpu-a7"})) == "pod bert-worker-2 on node gpu-a7"
    assert "node unknown" in describe(pod_identity(POD))
