"""The serving pods' start-up phases as data: one `STARTUP_PHASES {json}` line per serving pod.

Standard library only: the benchmark Job runs this very file (`python3 -c <source>`) inside the vLLM
image, after its clients, with a service account that may read the namespace's pods, their logs and
events, and get nodes; `bench-compare` imports it to parse what the Job printed.

Each line holds, for one pod, seconds since the pod was created (`metadata.creationTimestamp`):

| key | when | from |
|---|---|---|
| scheduledSeconds | bound to a node (a scale-from-zero waits here for the node) | condition PodScheduled |
| imagePulledSeconds | the engine image on the node at the first start (pulled, or found there) | event Pulled |
| containerStartedSeconds | the (last) engine container started | containerStatuses[].state.running.startedAt |
| weightsLoadedSeconds | the last engine loaded its weights | vLLM log "Model loading took" |
| compiledSeconds | the last engine finished torch.compile | vLLM log "torch.compile took" |
| graphsCapturedSeconds | the last engine captured its CUDA graphs | vLLM log "Graph capturing finished" |
| engineReadySeconds | the last engine finished its start-up | vLLM log "init engine (profile, ...) took" |
| readySeconds | the pod passed its readiness probe (null when it failed it since) | condition Ready |

Beside the phases, `imageWasCached` (every engine container found the image on the node) and
`nodeCreatedAfterPod`: whether the pod's node was created after the pod (its metadata.creationTimestamp), i.e.
made for it, so that its scheduledSeconds is a new node's provisioning; False on a node that was up (one the pod
it replaced freed, as the serving Deployment rolls with maxSurge 0, or a held node); null when the node cannot be
read (gone, or no permission). Not the scheduler's FailedScheduling nor the autoscaler's TriggeredScaleUp event:
a rolled pod gets both while its predecessor still holds the GPUs, then binds to the node it frees. Only a pod on
a node made for it that pulled the image started cold: bench-compare takes the node, image and pod phases from
those alone.

A pod runs its engines in one container (`vllm`) or in one container per data-parallel rank (`vllm-0`,
`vllm-1`, ...: the Gateway's layout); each phase is the last engine's, over all of them.

A phase not seen is null (a pod that restarted has lost its first container's log; Kubernetes keeps
events about an hour). The vLLM lines were read in the code of vllm==0.19.0 (its PyPI wheel):
vllm/v1/worker/gpu_model_runner.py "Model loading took %s GiB memory and %.6f seconds" (Model Runner
V2, vllm/v1/worker/gpu/model_runner.py: "Model loading took %s GiB and %.6f seconds") and "Graph
capturing finished in %.0f secs, took %.2f GiB", vllm/compilation/monitor.py "torch.compile took %.2f s
in total" (older revisions: "torch.compile takes"), vllm/v1/engine/core.py "init engine (profile,
create kv cache, warmup model) took %.2f seconds". The pinned 0.33.0 was not read here (the package
index reachable here stops at 0.19.1): a line it renamed leaves its phase null, never wrong. Lines
are matched by these fragments and timed by the kubelet's timestamps (`timestamps=true`), not by
vLLM's own clock.
"""

import datetime
import itertools
import json
import os
import ssl
import sys
import urllib.parse
import urllib.request
from typing import Any

PREFIX = "STARTUP_PHASES "
# Each phase's line: every fragment in it.
LOG_LINES = {
    "weightsLoadedSeconds": ("Model loading took ",),
    "compiledSeconds": ("torch.compile t", " s in total"),
    "graphsCapturedSeconds": ("Graph capturing finished in ",),
    "engineReadySeconds": ("init engine (profile, create kv cache, warmup model) took ",),
}
PHASES = (
    "scheduledSeconds",
    "imagePulledSeconds",
    "containerStartedSeconds",
    *LOG_LINES,
    "readySeconds",
)
# The start-up lines come first; the request log after them can be large.
LOG_LIMIT_BYTES = 16 * 1024 * 1024
ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def parse_time(text: str) -> datetime.datetime:
    """An RFC 3339 time as the API server writes it (nanoseconds cut to microseconds)."""
    text = text.strip().replace("Z", "+00:00")
    if "." in text:
        head, rest = text.split(".", 1)
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        zone = rest[len(digits) :]
        text = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    return datetime.datetime.fromisoformat(text)


def condition_time(pod: dict[str, Any], kind: str) -> str | None:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            when = condition.get("lastTransitionTime")
            return str(when) if when else None
    return None


def readiness_flapped(events: list[dict[str, Any]], ready: str | None) -> bool:
    """Whether the pod's readiness probe failed before the time its Ready condition holds: that condition's
    lastTransitionTime is then a later return to Ready (under the benchmark's load, which runs before this report),
    not the start. The engine's readiness probe runs only once its startup probe passed (Kubernetes "Liveness,
    Readiness, and Startup Probes": a startup probe "disables liveness and readiness checks until it succeeds"), so a
    failure of it is no part of a start."""
    if ready is None:
        return False
    return any(
        event.get("reason") == "Unhealthy"
        and str(event.get("message", "")).startswith(("Readiness probe failed", "Readiness probe errored"))
        and (when := event.get("firstTimestamp") or event.get("eventTime") or event.get("lastTimestamp"))
        and parse_time(str(when)) <= parse_time(ready)
        for event in events
    )


def engine_containers(pod: dict[str, Any], container: str) -> list[str]:
    """The pod's engine containers: `container` (every data-parallel engine in one container), or one
    per rank, `container-0`, `container-1`, ... (the Gateway's per-rank layout, components/vllm.py)."""
    names = [str(item.get("name", "")) for item in pod.get("spec", {}).get("containers") or []]
    ranks = [name for name in names if name.startswith(f"{container}-") and name[len(container) + 1 :].isdigit()]
    return ranks or [container]


def pulled_time(events: list[dict[str, Any]], containers: list[str]) -> tuple[str | None, bool]:
    """When the engine containers had their image at their first start (each one's first Pulled event; the last of
    them) and whether it was already on the node for every one (a rank that finds the image another rank pulled
    is no cached start). A container that restarts gets a Pulled "already present" event at each start (the kubelet
    counts them into one event, its firstTimestamp the first): a pod that pulled the image, then restarted, still
    started cold."""
    first: dict[str, tuple[str, bool]] = {}
    for event in events:
        # spec.containers{NAME}; an event without a field path is the pod's own
        field_path = event.get("involvedObject", {}).get("fieldPath", "")
        name = field_path.rpartition("{")[2].rstrip("}") if field_path else containers[0]
        when = event.get("firstTimestamp") or event.get("eventTime") or event.get("lastTimestamp")
        if event.get("reason") != "Pulled" or name not in containers or not when:
            continue
        if name not in first or parse_time(when) < parse_time(first[name][0]):
            first[name] = (str(when), "already present" in event.get("message", ""))
    if not first:
        return None, False
    return max((when for when, _ in first.values()), key=parse_time), all(cached for _, cached in first.values())


def log_times(log: str) -> dict[str, str]:
    """The kubelet timestamp of the latest line of each start-up kind (the last data-parallel engine),
    in one container's log or in the logs of one container per rank, one after the other."""
    times: dict[str, str] = {}
    for line in log.splitlines():
        stamp, _, text = line.partition(" ")
        for key, fragments in LOG_LINES.items():
            if all(fragment in text for fragment in fragments) and (
                key not in times or parse_time(stamp) >= parse_time(times[key])
            ):
                times[key] = stamp
    return times


def phases(
    pod: dict[str, Any], events: list[dict[str, Any]], log: str, container: str, node_created: str | None = None
) -> dict[str, Any]:
    """One pod's start-up record (the STARTUP_PHASES line's object): `log` is the engine containers'
    logs (`engine_containers`), one after the other; the last engine container to start times the start."""
    created = parse_time(pod["metadata"]["creationTimestamp"])

    def since(when: str | None) -> float | None:
        return None if when is None else round((parse_time(when) - created).total_seconds(), 1)

    containers = engine_containers(pod, container)
    statuses = [item for item in pod.get("status", {}).get("containerStatuses") or [] if item["name"] in containers]
    started = [str(when) for item in statuses if (when := item.get("state", {}).get("running", {}).get("startedAt"))]
    pulled, cached = pulled_time(events, containers)
    found = log_times(log)
    ready = condition_time(pod, "Ready")
    record = {
        "scheduledSeconds": since(condition_time(pod, "PodScheduled")),
        "imagePulledSeconds": since(pulled),
        "containerStartedSeconds": since(max(started, key=parse_time)) if started else None,
        **{key: since(found.get(key)) for key in LOG_LINES},
        "readySeconds": None if readiness_flapped(events, ready) else since(ready),
    }
    return {
        "pod": pod["metadata"]["name"],
        "node": pod.get("spec", {}).get("nodeName"),
        "image": statuses[0].get("image") if statuses else None,
        "imageWasCached": cached,
        "nodeCreatedAfterPod": None if node_created is None else parse_time(node_created) > created,
        "restarts": sum(item.get("restartCount", 0) for item in statuses),
        "phases": record,
    }


def line(report: dict[str, Any]) -> str:
    return PREFIX + json.dumps(report, sort_keys=True, separators=(",", ":"))


def parse_lines(text: str) -> list[dict[str, Any]]:
    """Every STARTUP_PHASES record in a log, in order."""
    return [json.loads(item[len(PREFIX) :]) for item in text.splitlines() if item.startswith(PREFIX)]


def _get(path: str, query: dict[str, str]) -> bytes:
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    with open(f"{ACCOUNT}/token") as handle:
        token = handle.read().strip()
    context = ssl.create_default_context(cafile=f"{ACCOUNT}/ca.crt")
    url = f"https://{host}:{port}{path}?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, context=context, timeout=60) as response:
        data: bytes = response.read()
        return data


def main(argv: list[str]) -> int:
    namespace, selector, container = argv[1], argv[2], argv[3]
    pods = json.loads(_get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": selector}))["items"]
    for pod in pods:
        name = pod["metadata"]["name"]
        events = json.loads(
            _get(
                f"/api/v1/namespaces/{namespace}/events",
                {"fieldSelector": f"involvedObject.kind=Pod,involvedObject.name={name}"},
            )
        )["items"]
        node_created = None
        if pod.get("spec", {}).get("nodeName"):
            try:
                node = json.loads(_get(f"/api/v1/nodes/{pod['spec']['nodeName']}", {}))
                node_created = node["metadata"]["creationTimestamp"]
            except (OSError, KeyError, ValueError):
                pass
        logs = []
        for engine in engine_containers(pod, container):
            try:
                logs.append(
                    _get(
                        f"/api/v1/namespaces/{namespace}/pods/{name}/log",
                        {"container": engine, "timestamps": "true", "limitBytes": str(LOG_LIMIT_BYTES)},
                    ).decode("utf-8", "replace")
                )
            except OSError:
                continue
        print(line(phases(pod, events, "\n".join(logs), container, node_created)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
