"""deploy/kuberay/ against KubeRay's published RayCluster CRD schema (fixtures/, upstream commit in its
header), the checks KubeRay's operator adds that a schema cannot express, and Twin's own rules: Ray
pinned to the release pyproject.toml's `cluster` extra names, and no port of Ray's where Twin serves.

The CRD's openAPIV3Schema is a Kubernetes structural schema. It is checked here as JSON Schema draft 7
with what the API server adds: an object with `properties` takes no other field (kubectl's default
field validation is Strict, so an unknown field is an error rather than dropped), a required field
with a default may be left out (defaulting comes before validation), `nullable` admits null, and the
`x-kubernetes-*` keys are annotations (list-map uniqueness and the two CEL rules, both about updates
of fields this manifest leaves out, are not checked).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

jsonschema = pytest.importorskip("jsonschema")

from twin.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KUBERAY = ROOT / "deploy" / "kuberay"
CRD_SCHEMA = Path(__file__).resolve().parent / "fixtures" / "ray.io_rayclusters.v1.openapi.yaml"

# Twin's listeners: the defaults of twin/settings.py, each camera's gateway and RTSP ports with port
# addressing (base + N) for the README's sizing of 1 000 cameras, and RTSP's standard port.
CAMERAS = 1000
RTSP_STANDARD = 554

# `ray start` flags that must be pinned on every node (the head also pins `port`, the GCS)
PINNED = (
    "node-manager-port",
    "object-manager-port",
    "min-worker-port",
    "max-worker-port",
    "metrics-export-port",
    "runtime-env-agent-port",
    "dashboard-agent-grpc-port",
    "dashboard-agent-listen-port",
)
# the head's listeners that only an environment variable moves (ray/autoscaler, ray/dashboard)
PORT_ENV = ("AUTOSCALER_METRIC_PORT", "DASHBOARD_METRIC_PORT")


def twin_ports() -> set[int]:
    s = Settings()
    ports = {s.port, s.control_port, s.mqtt_port, RTSP_STANDARD}
    for base in (s.gateway_http_port, s.gateway_https_port, s.rtsp_port):
        ports.update(range(base, base + CAMERAS + 1))
    return ports


def structural(schema: dict[str, Any]) -> dict[str, Any]:
    """A structural schema node as draft 7 (see the module's docstring)."""
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if "properties" in out:
        out["properties"] = {name: structural(sub) for name, sub in out["properties"].items()}
        if "additionalProperties" not in out and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = structural(out["additionalProperties"])
    if "items" in out:
        out["items"] = structural(out["items"])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in out:
            out[key] = [structural(sub) for sub in out[key]]
    if "required" in out:  # the API server fills in defaults before it validates
        defaulted = {name for name, sub in schema.get("properties", {}).items() if "default" in sub}
        out["required"] = [name for name in out["required"] if name not in defaulted]
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


@pytest.fixture(scope="module")
def crd_schema() -> dict[str, Any]:
    schema = yaml.safe_load(CRD_SCHEMA.read_text())["openAPIV3Schema"]
    return structural(schema)


@pytest.fixture(scope="module")
def cluster_validator(crd_schema: dict[str, Any]) -> Any:
    jsonschema.Draft7Validator.check_schema(crd_schema)
    return jsonschema.Draft7Validator(crd_schema)


@pytest.fixture(scope="module")
def service_validator(crd_schema: dict[str, Any]) -> Any:
    """core/v1 Service as the CRD publishes it (the head Service template, headGroupSpec.headService)."""
    head = crd_schema["properties"]["spec"]["properties"]["headGroupSpec"]["properties"]
    return jsonschema.Draft7Validator(head["headService"])


def documents(name: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((KUBERAY / name).read_text()) if d is not None]
    assert docs, f"{name} holds no document"
    return docs


def clusters() -> list[dict[str, Any]]:
    return documents("raycluster.yaml")


def the_cluster() -> dict[str, Any]:
    (cluster,) = clusters()
    return cluster


def errors(validator: Any, doc: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def groups(cluster: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "head", cluster["spec"]["headGroupSpec"]
    for group in cluster["spec"].get("workerGroupSpecs", []):
        yield group["groupName"], group


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def operator_errors(cluster: dict[str, Any]) -> list[str]:
    """What KubeRay's operator refuses although the schema admits it (ray-operator/controllers/ray/utils/
    validation.go at the fixture's commit): resources given twice, `labels` in rayStartParams, replica
    bounds, token auth on a Ray older than 2.52.0."""
    found = []
    spec = cluster["spec"]
    for name, group in groups(cluster):
        params = group.get("rayStartParams", {})
        if not group["template"]["spec"].get("containers"):
            found.append(f"{name}: no container")
        if group.get("resources") and any(
            params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")
        ):
            found.append(f"{name}: resources both in rayStartParams and in resources")
        if "labels" in params:
            found.append(f"{name}: rayStartParams['labels'] (use the group's labels)")
        if name != "head":  # the API server has filled in the schema's defaults by then
            low, high = group.get("minReplicas", 0), group.get("maxReplicas", 2**31 - 1)
            if low < 0 or high < 0 or low > high:
                found.append(f"{name}: minReplicas {low}, maxReplicas {high}")
    if spec.get("authOptions", {}).get("mode") == "token" and version_tuple(spec.get("rayVersion", "0")) < (
        2,
        52,
        0,
    ):
        found.append("authOptions.mode token needs rayVersion 2.52.0 or later")
    return found


# -- the manifests against the schema ------------------------------------------------------------------


def test_every_raycluster_document_is_valid(cluster_validator: Any) -> None:
    for doc in clusters():
        assert (doc["apiVersion"], doc["kind"]) == ("ray.io/v1", "RayCluster")
        assert errors(cluster_validator, doc) == []
        assert operator_errors(doc) == []


def test_the_service_is_valid(service_validator: Any) -> None:
    for doc in documents("service.yaml"):
        assert (doc["apiVersion"], doc["kind"]) == ("v1", "Service")
        assert errors(service_validator, doc) == []


def mutate(path: str, value: Any) -> dict[str, Any]:
    """The cluster with one field set (``a.b.0.c``; a missing key is created); ``value=...`` deletes it."""
    doc = copy.deepcopy(the_cluster())
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = doc
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return doc


BROKEN = {
    "replicas not an integer": ("spec.workerGroupSpecs.0.replicas", "two"),
    "unknown field in the spec": ("spec.headGroupSpec.rayStartParam", {"port": "6380"}),
    "unknown field in a container": (
        "spec.headGroupSpec.template.spec.containers.0.imagePullPolicyy",
        "Never",
    ),
    "unknown top-level field": ("specs", {}),
    "rayStartParams value not a string": ("spec.headGroupSpec.rayStartParams.port", 6380),
    "group resource not a string": ("spec.workerGroupSpecs.0.resources.camera_slots", 24),
    "auth mode outside its enum": ("spec.authOptions.mode", "tokens"),
    "worker group without its name": ("spec.workerGroupSpecs.0.groupName", ...),
    "head without its pod template": ("spec.headGroupSpec.template", ...),
    "container port not an integer": (
        "spec.headGroupSpec.template.spec.containers.0.ports.0.containerPort",
        "6380",
    ),
    "env not a list": ("spec.headGroupSpec.template.spec.containers.0.env", {"NEOMIND_PUBLIC_HOST": "twin"}),
}


@pytest.mark.parametrize("path, value", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_cluster_is_rejected(cluster_validator: Any, path: str, value: Any) -> None:
    doc = mutate(path, value)
    assert errors(cluster_validator, doc), f"{path} = {value!r} passed the schema"
    # refused for that field: at it, or at its object (an unknown or a missing field)
    where = {".".join(map(str, e.absolute_path)) for e in cluster_validator.iter_errors(doc)}
    assert where & {path, path.rpartition(".")[0]}, where


def test_open_maps_stay_open(cluster_validator: Any) -> None:
    """rayStartParams, resources and labels are string maps: any key passes, so the closed objects
    above are the schema's, not an artefact of the check."""
    doc = mutate("spec.headGroupSpec.rayStartParams.any-flag", "1")
    doc["spec"]["workerGroupSpecs"][0]["resources"]["any_resource"] = "3"
    doc["metadata"]["labels"]["any"] = "label"
    assert errors(cluster_validator, doc) == []


def test_a_broken_service_is_rejected(service_validator: Any) -> None:
    (service,) = documents("service.yaml")
    for path, value in (
        ("spec.ports.0.port", "9375"),
        ("spec.selectr", {}),
        ("spec.ports.0.targetPort", [1]),
    ):
        doc = copy.deepcopy(service)
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = doc
        for key in parents:
            node = node[key]
        node[last] = value
        assert errors(service_validator, doc), f"{path} = {value!r} passed the schema"


def test_the_operator_checks_bite() -> None:
    assert operator_errors(mutate("spec.headGroupSpec.rayStartParams.num-cpus", "2"))
    assert operator_errors(mutate("spec.workerGroupSpecs.0.rayStartParams.labels", "a=b"))
    assert operator_errors(mutate("spec.workerGroupSpecs.0.minReplicas", 65))
    assert operator_errors(mutate("spec.workerGroupSpecs.0.maxReplicas", -1))
    assert operator_errors(mutate("spec.rayVersion", "2.51.0"))


# -- Twin's rules ----------------------------------------------------------------------------------


def cluster_extra_ray_pin() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"]["cluster"]
    (pin,) = [spec for spec in extra if re.match(r"ray\b", spec)]
    match = re.fullmatch(r"ray==(\d+\.\d+\.\d+)", pin)
    assert match, f"the cluster extra should pin one Ray release, not {pin!r}"
    return match.group(1)


def containers(cluster: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for _, group in groups(cluster):
        yield from group["template"]["spec"]["containers"]


def test_ray_is_pinned_to_the_extras_release() -> None:
    ray = cluster_extra_ray_pin()
    assert ray == "2.60.0"
    dockerfile = (KUBERAY / "Dockerfile").read_text()
    assert re.search(rf"^FROM rayproject/ray:{re.escape(ray)}-py311$", dockerfile, re.M)
    assert re.search(r"^RUN pip install .*'\.\[cluster\]'", dockerfile, re.M)
    for cluster in clusters():
        assert cluster["spec"]["rayVersion"] == ray
        for container in containers(cluster):
            assert container["image"] == f"twin:{ray}-py311", container["name"]
    assert f"-t twin:{ray}-py311" in dockerfile


def ray_ports(group: dict[str, Any]) -> dict[str, int]:
    params = group.get("rayStartParams", {})
    ports = {key: int(value) for key, value in params.items() if key == "port" or key.endswith("-port")}
    container = group["template"]["spec"]["containers"][0]
    for env in container.get("env", []):
        if env["name"] in PORT_ENV:
            ports[env["name"]] = int(env["value"])
    for port in container.get("ports", []):
        ports[f"containerPort {port['name']}"] = port["containerPort"]
    return ports


def test_rays_ports_are_pinned_away_from_twins() -> None:
    reserved = twin_ports()
    for cluster in clusters():
        for name, group in groups(cluster):
            params = group["rayStartParams"]
            required = ("port", *PINNED) if name == "head" else PINNED
            assert [key for key in required if key not in params] == [], name
            ports = ray_ports(group)
            low, high = ports.pop("min-worker-port"), ports.pop("max-worker-port")
            assert 1024 < low <= high < 65536
            workers = set(range(low, high + 1))
            assert workers.isdisjoint(reserved), f"{name}: worker ports {low}-{high} meet Twin's"
            for key, port in ports.items():
                assert port not in reserved, f"{name}: {key} {port} is one of Twin's ports"
                assert port not in workers, f"{name}: {key} {port} is in the worker range"
            singles = [port for key, port in ports.items() if not key.startswith("containerPort")]
            assert len(singles) == len(set(singles)), f"{name}: a port named twice: {ports}"


def test_the_heads_container_ports_are_the_ones_ray_opens() -> None:
    """KubeRay's head Service publishes the head container's ports; they must be the pinned ones."""
    names = {"gcs-server": "port", "metrics": "metrics-export-port", "client": "ray-client-server-port"}
    for cluster in clusters():
        for _, group in groups(cluster):
            params = group["rayStartParams"]
            for port in group["template"]["spec"]["containers"][0].get("ports", []):
                assert port["containerPort"] == int(params[names[port["name"]]]), port


def test_the_dashboard_is_off_and_token_auth_on() -> None:
    for cluster in clusters():
        assert cluster["spec"]["headGroupSpec"]["rayStartParams"]["include-dashboard"] == "false"
        assert cluster["spec"]["authOptions"]["mode"] == "token"
        assert not cluster["spec"].get("enableInTreeAutoscaling")


def test_the_heads_resources_place_the_automation_shard() -> None:
    cluster = the_cluster()
    assert cluster["spec"]["headGroupSpec"]["resources"]["automation"] == "1"
    for group in cluster["spec"]["workerGroupSpecs"]:
        assert "automation" not in group["resources"]
        assert int(group["resources"]["camera_slots"]) > 0
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]


def test_a_defaulted_required_field_may_be_left_out(cluster_validator: Any) -> None:
    """minReplicas is required but has a default (0): the API server accepts a group without it."""
    assert errors(cluster_validator, mutate("spec.workerGroupSpecs.0.minReplicas", ...)) == []


def test_rayStartParams_are_ray_start_options() -> None:
    scripts = pytest.importorskip("ray.scripts.scripts")
    options = {param.name for param in scripts.start.params}
    for cluster in clusters():
        for name, group in groups(cluster):
            unknown = [key for key in group["rayStartParams"] if key.replace("-", "_") not in options]
            assert unknown == [], f"{name}: not options of `ray start`: {unknown}"


def test_the_service_reaches_twins_servers_on_the_head() -> None:
    cluster = the_cluster()
    (service,) = documents("service.yaml")
    assert service["spec"]["selector"] == {
        "ray.io/cluster": cluster["metadata"]["name"],
        "ray.io/node-type": "head",
    }
    s = Settings()
    assert {(p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        (s.port, s.port),
        (s.mqtt_port, s.mqtt_port),
        (s.control_port, s.control_port),
    }
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    public = {env["name"]: env.get("value") for env in head["env"]}["NEOMIND_PUBLIC_HOST"]
    assert public == service["metadata"]["name"], (
        "the control plane's Host check must accept the Service's name"
    )
