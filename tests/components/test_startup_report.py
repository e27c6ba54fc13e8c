"""The start-up report: a serving pod's conditions, events and vLLM log lines become one
STARTUP_PHASES line of seconds since the pod was created."""

from __future__ import annotations

from typing import Any

from components import startup_report

CREATED = "2026-11-25T08:00:00Z"
POD: dict[str, Any] = {
    "metadata": {"name": "qwen-serving-abc", "creationTimestamp": CREATED},
    "spec": {"nodeName": "gk3-a4-1"},
    "status": {
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-25T08:05:30Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-25T08:15:00Z"},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-25T08:15:00Z"},
        ],
        "containerStatuses": [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.19.0",
                "restartCount": 0,
                "state": {"running": {"startedAt": "2026-11-25T08:09:00Z"}},
            }
        ],
    },
}
EVENTS = [
    {"reason": "Pulling", "involvedObject": {"fieldPath": "spec.containers{vllm}"}, "lastTimestamp": CREATED},
    {
        "reason": "Pulled",
        "involvedObject": {"fieldPath": "spec.containers{vllm}"},
        "message": 'Successfully pulled image "vllm/vllm-openai:v0.19.0" in 3m20s',
        "lastTimestamp": "2026-11-25T08:08:50Z",
    },
]
# Lines as vLLM 0.19.0 writes them (one per data-parallel engine), behind the kubelet's timestamps.
LOG = "\n".join(
    [
        "2026-11-25T08:10:00.100000000Z (EngineCore_DP0 pid=1) INFO 11-25 08:10:00 [gpu_model_runner.py:4821] "
        "Model loading took 28.1 GiB memory and 50.2 seconds",
        "2026-11-25T08:10:30.999999999Z (EngineCore_DP7 pid=8) INFO 11-25 08:10:30 [gpu_model_runner.py:4821] "
        "Model loading took 28.1 GiB memory and 80.0 seconds",
        "2026-11-25T08:12:00Z (EngineCore_DP7 pid=8) INFO 11-25 08:12:00 [monitor.py:48] "
        "torch.compile took 75.31 s in total",
        "2026-11-25T08:14:00Z (EngineCore_DP7 pid=8) INFO 11-25 08:14:00 [gpu_model_runner.py:6047] "
        "Graph capturing finished in 60 secs, took 1.10 GiB",
        "2026-11-25T08:14:30Z (EngineCore_DP7 pid=8) INFO 11-25 08:14:30 [core.py:284] "
        "init engine (profile, create kv cache, warmup model) took 240.00 seconds",
        '2026-11-25T08:20:00Z INFO:     10.0.0.1 - "POST /v1/completions HTTP/1.1" 200 OK',
    ]
)


def test_one_pod_becomes_one_line_of_phases() -> None:
    record = startup_report.phases(POD, EVENTS, LOG, "vllm")
    assert record["phases"] == {
        "scheduledSeconds": 330.0,
        "imagePulledSeconds": 530.0,
        "containerStartedSeconds": 540.0,
        "weightsLoadedSeconds": 631.0,  # the last engine's line, not the first
        "compiledSeconds": 720.0,
        "graphsCapturedSeconds": 840.0,
        "engineReadySeconds": 870.0,
        "readySeconds": 900.0,
    }
    assert (record["pod"], record["node"], record["restarts"], record["imageWasCached"]) == (
        "qwen-serving-abc",
        "gk3-a4-1",
        0,
        False,
    )
    line = startup_report.line(record)
    assert line.startswith("STARTUP_PHASES {") and "\n" not in line
    assert startup_report.parse_lines(f"noise\n{line}\nmore") == [record]


def test_a_phase_not_seen_is_null_never_guessed() -> None:
    pending = {
        "metadata": {"name": "p", "creationTimestamp": CREATED},
        "status": {"conditions": [{"type": "PodScheduled", "status": "False", "lastTransitionTime": CREATED}]},
    }
    record = startup_report.phases(pending, [], "", "vllm")
    assert set(record["phases"]) == set(startup_report.PHASES)
    assert all(value is None for value in record["phases"].values())


def test_an_image_already_on_the_node_is_said_so() -> None:
    cached = [
        {
            "reason": "Pulled",
            "involvedObject": {"fieldPath": "spec.containers{vllm}"},
            "message": 'Container image "vllm/vllm-openai:v0.19.0" already present on machine',
            "lastTimestamp": "2026-11-25T08:05:31Z",
        }
    ]
    record = startup_report.phases(POD, cached, LOG, "vllm")
    assert record["imageWasCached"] is True and record["phases"]["imagePulledSeconds"] == 331.0


def test_a_pod_that_pulled_the_image_then_restarted_started_cold() -> None:
    """A platform review: a restarted container gets a Pulled "already present" event at each start, and the latest
    had made the pod's first start a cached one, so the slowest cold starts (a probe or an OOM restarting them) left
    the medians. The first Pulled event of each container tells how the pod started."""
    pulled: dict[str, Any] = {**EVENTS[1], "firstTimestamp": "2026-11-25T08:08:50Z"}
    restarted: dict[str, Any] = {
        "reason": "Pulled",
        "involvedObject": {"fieldPath": "spec.containers{vllm}"},
        "message": 'Container image "vllm/vllm-openai:v0.19.0" already present on machine',
        "firstTimestamp": "2026-11-25T08:38:00Z",
        "lastTimestamp": "2026-11-25T09:08:00Z",  # counted: the second restart
        "count": 2,
    }
    for events in ([pulled, restarted], [restarted, pulled]):
        record = startup_report.phases(POD, events, LOG, "vllm")
        assert record["imageWasCached"] is False and record["phases"]["imagePulledSeconds"] == 530.0
    # a pod that found the image at its first start is a cached one, whatever came after
    assert startup_report.phases(POD, [restarted], LOG, "vllm")["imageWasCached"] is True


def test_a_pod_on_a_node_made_for_it_is_told_from_one_on_a_node_that_was_up() -> None:
    """A diff review: a rolled pod (maxSurge 0) gets FailedScheduling while its predecessor still holds the GPUs,
    then binds to the node it frees, so the events cannot tell; the node's creation time can. Not readable: null."""
    failed = {"reason": "FailedScheduling", "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
    made_for_it = startup_report.phases(POD, [failed, *EVENTS], LOG, "vllm", node_created="2026-11-25T08:04:00Z")
    assert made_for_it["nodeCreatedAfterPod"] is True
    freed = startup_report.phases(POD, [failed, *EVENTS], LOG, "vllm", node_created="2026-11-24T21:00:00Z")
    assert freed["nodeCreatedAfterPod"] is False
    assert startup_report.phases(POD, EVENTS, LOG, "vllm")["nodeCreatedAfterPod"] is None


def test_a_pod_with_a_container_per_rank_is_timed_by_its_last_engine() -> None:
    """The Gateway's per-rank pod runs `vllm-0`, `vllm-1`, ...: each phase is the last engine's over all
    of them, whatever order their logs come in."""
    ranks = ("vllm-0", "vllm-1")
    pod = {
        **POD,
        "spec": {"nodeName": "gk3-a4-1", "containers": [{"name": name} for name in ranks]},
        "status": {
            **POD["status"],
            "containerStatuses": [
                {
                    "name": name,
                    "image": "vllm/vllm-openai:v0.19.0",
                    "restartCount": 0,
                    "state": {"running": {"startedAt": started}},
                }
                for name, started in zip(ranks, ("2026-11-25T08:09:10Z", "2026-11-25T08:09:00Z"), strict=True)
            ],
        },
    }
    events = [
        {**EVENTS[1], "involvedObject": {"fieldPath": f"spec.containers{{{name}}}"}, "lastTimestamp": pulled}
        for name, pulled in zip(ranks, ("2026-11-25T08:08:40Z", "2026-11-25T08:08:50Z"), strict=True)
    ]
    later_rank = LOG.replace("08:10:30.999999999Z", "08:11:00Z")
    first_rank = LOG.replace("08:14:30Z", "08:14:00Z")
    record = startup_report.phases(pod, events, f"{later_rank}\n{first_rank}", "vllm")
    assert startup_report.engine_containers(pod, "vllm") == list(ranks)
    assert record["image"] == "vllm/vllm-openai:v0.19.0"
    phases = record["phases"]
    assert (phases["imagePulledSeconds"], phases["containerStartedSeconds"]) == (530.0, 550.0)
    assert (phases["weightsLoadedSeconds"], phases["engineReadySeconds"]) == (660.0, 870.0)
    # the image pulled for vllm-0 and found by vllm-1 is no cached start
    found = [{**events[1], "message": 'Container image "vllm/vllm-openai:v0.19.0" already present on machine'}]
    assert startup_report.phases(pod, [events[0], *found], "", "vllm")["imageWasCached"] is False
    # a Pulled event of another container of the pod is not the engine's
    other = [{**EVENTS[1], "involvedObject": {"fieldPath": "spec.containers{vllm-bench}"}}]
    assert startup_report.phases(pod, other, "", "vllm")["phases"]["imagePulledSeconds"] is None


def test_a_pod_whose_readiness_failed_since_has_no_ready_time() -> None:
    """A platform review: the Ready condition's lastTransitionTime is its latest change, and the report runs after the
    benchmark's load: a pod that went unready under it and came back reported that return as its start. Its readiness
    probe runs only after the startup probe passed, so a failure of it before that time says the time is a later one."""
    unready: dict[str, Any] = {
        "reason": "Unhealthy",
        "involvedObject": {"fieldPath": "spec.containers{vllm}"},
        "message": 'Readiness probe failed: Get "http://10.0.0.5:8000/health": context deadline exceeded',
        "firstTimestamp": "2026-11-25T08:10:00Z",  # before the Ready time the condition holds (08:15): a return
    }
    assert startup_report.phases(POD, [*EVENTS, unready], LOG, "vllm")["phases"]["readySeconds"] is None
    later = {**unready, "firstTimestamp": "2026-11-25T08:30:00Z"}  # after it, and Ready since 08:15: its start stands
    assert startup_report.phases(POD, [*EVENTS, later], LOG, "vllm")["phases"]["readySeconds"] == 900.0
    assert startup_report.phases(POD, EVENTS, LOG, "vllm")["phases"]["readySeconds"] == 900.0
