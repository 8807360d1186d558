"""The Helm chart in deploy/helm/henge: lint, render with default and non-default values,
validate every object against the Kubernetes schemas offline, and check the fields that matter
(probes, security, RBAC, the migrations hook, the Secret, labels, the values schema)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from functools import cache
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.helm.conftest import CHART, Helm

pytestmark = pytest.mark.helm

NAMESPACE = "henge-system"
DB_URL = "postgresql+psycopg://henge:s3cret@postgres.db.svc:5432/henge"
# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBE_VERSIONS = ("1.25.0", kubernetes_validate.utils.latest_version() + ".0")
# Kinds from CRDs: no schema in the Kubernetes set, so they are not validated.
CRD_API_GROUPS = {"monitoring.coreos.com"}

MINIMAL: dict[str, Any] = {"database": {"url": DB_URL}}
FULL: dict[str, Any] = {
    "replicaCount": 3,
    "existingSecret": "henge-credentials",
    "existingSecretKeys": {"databaseUrl": "db-url", "adminToken": "admin-token"},
    "image": {"repository": "registry.example/henge", "tag": "1.2.3"},
    "managedNamespaces": ["spark-a", "spark-b"],
    "config": {
        "policy": "henge-paper",
        "policyParams": {"quiesce_s": 30},
        "realizer": "spark-operator",
        "clusterView": "kubernetes",
        "roundIntervalS": 15,
        "logLevel": "debug",
    },
    "extraConfig": {"HENGE_MAX_REPORT_BYTES": "524288", "HENGE_POLICY": "ds2"},
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}, "interval": "15s"},
    "networkPolicy": {
        "enabled": True,
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "spark-a"}}},
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
        ],
    },
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "henge"}],
    "podAnnotations": {"example.com/team": "data"},
}


# ---- helpers ---------------------------------------------------------------------------------


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str, name_suffix: str = "") -> dict[str, Any]:
    found = [o for o in by_kind(objects, kind) if o["metadata"]["name"].endswith(name_suffix)]
    assert len(found) == 1, f"expected one {kind} *{name_suffix}, got {len(found)}"
    return found[0]


def container(pod_owner: dict[str, Any]) -> dict[str, Any]:
    containers = pod_owner["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def hook_annotations(obj: dict[str, Any]) -> dict[str, str]:
    return {
        k: v for k, v in obj["metadata"].get("annotations", {}).items() if k.startswith("helm.sh")
    }


def workload_objects(objects: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield from by_kind(objects, "Deployment")
    yield from by_kind(objects, "Job")


@cache
def _rendered(helm: Helm, values_json: str) -> list[dict[str, Any]]:
    return helm.render(json.loads(values_json), namespace=NAMESPACE)


def render(helm: Helm, values: dict[str, Any]) -> list[dict[str, Any]]:
    """Rendered once per distinct values (each helm call costs a few hundred ms)."""
    return _rendered(helm, json.dumps(values, sort_keys=True))


@pytest.fixture(scope="module")
def minimal(helm: Helm) -> list[dict[str, Any]]:
    return render(helm, MINIMAL)


@pytest.fixture(scope="module")
def full(helm: Helm) -> list[dict[str, Any]]:
    return render(helm, FULL)


# ---- lint and render -------------------------------------------------------------------------


def test_helm_is_v4(helm: Helm) -> None:
    assert helm.version().startswith("v4."), helm.version()


@pytest.mark.parametrize("values", [{}, MINIMAL, FULL], ids=["defaults", "minimal", "full"])
def test_lint_strict(helm: Helm, values: dict[str, Any], tmp_path: Any) -> None:
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values))
    done = helm.run("lint", "--strict", CHART, "-f", file)
    assert "0 chart(s) failed" in done.stdout


def test_defaults_alone_refuse_to_render_without_a_database(helm: Helm) -> None:
    done = helm.template({}, check=False)
    assert done.returncode != 0
    assert "set database.url" in done.stderr and "existingSecret" in done.stderr


def test_default_values_render_every_kind(minimal: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in minimal)
    assert kinds == sorted(
        [
            "ServiceAccount",
            "Secret",  # the release's: database URL + admin token
            "Secret",  # the migrations hook's copy of the database URL
            "ConfigMap",
            "ClusterRole",
            "ClusterRoleBinding",
            "Service",
            "Deployment",
            "Job",
        ]
    )


def test_non_default_values_render_every_kind(full: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in full)
    assert kinds == sorted(
        [
            "ServiceAccount",
            "ConfigMap",
            "ClusterRole",
            "ClusterRoleBinding",
            *["Role", "RoleBinding"] * 2,
            "Service",
            "Deployment",
            "Job",
            "PodDisruptionBudget",
            "NetworkPolicy",
            "ServiceMonitor",
        ]
    )


@pytest.mark.parametrize("which", ["minimal", "full"])
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_objects_valid_against_kubernetes_schemas(
    request: pytest.FixtureRequest, which: str, kube_version: str
) -> None:
    objects = request.getfixturevalue(which)
    checked = 0
    for obj in objects:
        if obj["apiVersion"].split("/")[0] in CRD_API_GROUPS:
            continue  # ServiceMonitor: a CRD, not in the Kubernetes schemas
        try:
            kubernetes_validate.validate(obj, kube_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {exc.message} at {exc.path}")
        checked += 1
    assert checked == len(objects) - (1 if which == "full" else 0)


# ---- the workload --------------------------------------------------------------------------


def test_probes_and_port(minimal: list[dict[str, Any]]) -> None:
    main = container(one(minimal, "Deployment"))
    assert main["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert main["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080"]
    assert "command" not in main  # the image's ENTRYPOINT is `henge`
    service = one(minimal, "Service")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]


@pytest.mark.parametrize("which", ["minimal", "full"])
def test_security_context(request: pytest.FixtureRequest, which: str) -> None:
    for workload in workload_objects(request.getfixturevalue(which)):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 10001
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        ctx = container(workload)["securityContext"]
        assert ctx["runAsNonRoot"] is True
        assert ctx["runAsUser"] == 10001
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"] == {"drop": ["ALL"]}
        assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
        # The root file system is read-only: /tmp is an emptyDir.
        assert {"name": "tmp", "mountPath": "/tmp"} in container(workload)["volumeMounts"]
        assert {v["name"]: v for v in pod["volumes"]}["tmp"]["emptyDir"] is not None


def test_resources_and_replicas(minimal: list[dict[str, Any]], full: list[dict[str, Any]]) -> None:
    assert one(minimal, "Deployment")["spec"]["replicas"] == 1
    assert one(full, "Deployment")["spec"]["replicas"] == 3
    resources = container(one(minimal, "Deployment"))["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"]
    assert resources["limits"]["memory"]


def test_env_from_configmap_and_secret(minimal: list[dict[str, Any]]) -> None:
    deployment = one(minimal, "Deployment")
    main = container(deployment)
    config_name = one(minimal, "ConfigMap")["metadata"]["name"]
    assert main["envFrom"] == [{"configMapRef": {"name": config_name}}]
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in main["env"]}
    secret = one(minimal, "Secret", "henge")
    assert env["HENGE_DATABASE_URL"] == {
        "name": secret["metadata"]["name"],
        "key": "HENGE_DATABASE_URL",
    }
    assert env["HENGE_ADMIN_TOKEN"] == {
        "name": secret["metadata"]["name"],
        "key": "HENGE_ADMIN_TOKEN",
    }
    assert base64.b64decode(secret["data"]["HENGE_DATABASE_URL"]).decode() == DB_URL
    token = base64.b64decode(secret["data"]["HENGE_ADMIN_TOKEN"]).decode()
    assert len(token) >= 32  # generated when adminToken is empty
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert {"checksum/config", "checksum/secret"} <= annotations.keys()


def test_given_admin_token_is_used(helm: Helm) -> None:
    objects = render(helm, {**MINIMAL, "adminToken": "a-fixed-token"})
    secret = one(objects, "Secret", "henge")
    assert base64.b64decode(secret["data"]["HENGE_ADMIN_TOKEN"]).decode() == "a-fixed-token"


def test_configmap_settings(minimal: list[dict[str, Any]], full: list[dict[str, Any]]) -> None:
    data = one(minimal, "ConfigMap")["data"]
    assert data["HENGE_POLICY"] == "henge"
    assert data["HENGE_REALIZER"] == "agent"
    assert data["HENGE_CLUSTER_VIEW"] == "static"
    assert data["HENGE_ROUND_INTERVAL_S"] == "10"
    assert data["HENGE_LOG_FORMAT"] == "json"
    assert data["HENGE_POLICY_PARAMS"] == "{}"
    assert all(isinstance(v, str) for v in data.values())
    assert all(k.startswith("HENGE_") for k in data)
    assert "HENGE_DATABASE_URL" not in data and "HENGE_ADMIN_TOKEN" not in data

    data = one(full, "ConfigMap")["data"]
    assert data["HENGE_POLICY"] == "ds2"  # extraConfig wins over config
    assert json.loads(data["HENGE_POLICY_PARAMS"]) == {"quiesce_s": 30}
    assert data["HENGE_REALIZER"] == "spark-operator"
    assert data["HENGE_CLUSTER_VIEW"] == "kubernetes"
    assert data["HENGE_ROUND_INTERVAL_S"] == "15"
    assert data["HENGE_LOG_LEVEL"] == "debug"
    assert data["HENGE_MAX_REPORT_BYTES"] == "524288"
    assert json.loads(data["HENGE_MANAGED_NAMESPACES"]) == ["spark-a", "spark-b"]


def test_image(minimal: list[dict[str, Any]], full: list[dict[str, Any]]) -> None:
    assert container(one(minimal, "Deployment"))["image"] == "henge:0.1.0"
    for workload in workload_objects(full):
        assert container(workload)["image"] == "registry.example/henge:1.2.3"


# ---- existingSecret --------------------------------------------------------------------------


def test_existing_secret_renders_no_secret(full: list[dict[str, Any]]) -> None:
    assert by_kind(full, "Secret") == []
    env = {
        e["name"]: e["valueFrom"]["secretKeyRef"] for e in container(one(full, "Deployment"))["env"]
    }
    assert env["HENGE_DATABASE_URL"] == {"name": "henge-credentials", "key": "db-url"}
    assert env["HENGE_ADMIN_TOKEN"] == {"name": "henge-credentials", "key": "admin-token"}
    annotations = one(full, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert "checksum/secret" not in annotations
    assert annotations["example.com/team"] == "data"


def test_existing_secret_needs_no_database_url(helm: Helm) -> None:
    objects = render(helm, {"existingSecret": "creds"})
    assert by_kind(objects, "Secret") == []


# ---- the migrations hook ---------------------------------------------------------------------


@pytest.mark.parametrize("which", ["minimal", "full"])
def test_migrations_job_is_a_hook(request: pytest.FixtureRequest, which: str) -> None:
    objects = request.getfixturevalue(which)
    job = one(objects, "Job")
    assert hook_annotations(job) == {
        "helm.sh/hook": "pre-install,pre-upgrade",
        "helm.sh/hook-weight": "0",
        "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
    }
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod  # the chart's account does not exist yet at install
    main = container(job)
    assert main["args"] == ["migrate"]
    url = {e["name"]: e for e in main["env"]}["HENGE_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    if which == "full":  # the same Secret as the Deployment
        assert url == {"name": "henge-credentials", "key": "db-url"}
    else:  # a hook Secret of its own, created before the Job
        secret = one(objects, "Secret", "-migrate")
        assert url == {"name": secret["metadata"]["name"], "key": "HENGE_DATABASE_URL"}
        hooks = hook_annotations(secret)
        assert hooks["helm.sh/hook"] == "pre-install,pre-upgrade"
        assert int(hooks["helm.sh/hook-weight"]) < int(hook_annotations(job)["helm.sh/hook-weight"])
        assert "before-hook-creation" in hooks["helm.sh/hook-delete-policy"]
        assert base64.b64decode(secret["data"]["HENGE_DATABASE_URL"]).decode() == DB_URL


def test_migrations_can_be_turned_off(helm: Helm) -> None:
    objects = render(helm, {**MINIMAL, "migrations": {"enabled": False}})
    assert by_kind(objects, "Job") == []
    assert [s["metadata"]["name"] for s in by_kind(objects, "Secret")] == ["henge"]


# ---- RBAC --------------------------------------------------------------------------------------


def rules(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    table: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                table.setdefault((group, resource), set()).update(rule["verbs"])
    return table


def test_cluster_role(minimal: list[dict[str, Any]]) -> None:
    role = one(minimal, "ClusterRole")
    assert rules(role) == {
        ("", "nodes"): {"get", "list", "watch"},
        ("", "pods"): {"list", "watch"},
        ("metrics.k8s.io", "nodes"): {"get", "list"},
    }
    binding = one(minimal, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    account = one(minimal, "ServiceAccount")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    ]
    assert one(minimal, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account
    assert by_kind(minimal, "Role") == []  # no managed namespaces, no Roles


def test_role_per_managed_namespace(full: list[dict[str, Any]]) -> None:
    roles = {r["metadata"]["namespace"]: r for r in by_kind(full, "Role")}
    bindings = {b["metadata"]["namespace"]: b for b in by_kind(full, "RoleBinding")}
    assert roles.keys() == bindings.keys() == {"spark-a", "spark-b"}
    account = one(full, "ServiceAccount")["metadata"]["name"]
    for namespace, role in roles.items():
        assert rules(role) == {
            ("sparkoperator.k8s.io", "sparkapplications"): {"get", "list", "patch"},
            ("", "pods"): {"list"},
        }
        binding = bindings[namespace]
        assert binding["roleRef"]["kind"] == "Role"
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
        ]


def test_rbac_can_be_turned_off(helm: Helm) -> None:
    objects = render(helm, {**FULL, "rbac": {"create": False}})
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        assert by_kind(objects, kind) == []


# ---- PDB, NetworkPolicy, ServiceMonitor -------------------------------------------------------


def server_selector(objects: list[dict[str, Any]]) -> dict[str, str]:
    return one(objects, "Deployment")["spec"]["selector"]["matchLabels"]


def test_pod_disruption_budget(helm: Helm, full: list[dict[str, Any]]) -> None:
    pdb = one(full, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == server_selector(full)
    forced = render(
        helm, {**MINIMAL, "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1}}
    )
    assert one(forced, "PodDisruptionBudget")["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": server_selector(forced)},
    }


def test_network_policy(helm: Helm, full: list[dict[str, Any]]) -> None:
    policy = one(full, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == server_selector(full)
    assert policy["policyTypes"] == ["Ingress"]
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert rule["from"] == FULL["networkPolicy"]["from"]
    # Without sources: port 8080 from anywhere, nothing else.
    open_policy = render(helm, {**MINIMAL, "networkPolicy": {"enabled": True}})
    assert one(open_policy, "NetworkPolicy")["spec"]["ingress"] == [
        {"ports": [{"port": 8080, "protocol": "TCP"}]}
    ]


def test_service_monitor(full: list[dict[str, Any]], minimal: list[dict[str, Any]]) -> None:
    assert by_kind(minimal, "ServiceMonitor") == []  # off by default
    monitor = one(full, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["endpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"}
    ]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    service_labels = one(full, "Service")["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service_labels.items()


# ---- labels ------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["minimal", "full"])
def test_labels(request: pytest.FixtureRequest, which: str) -> None:
    objects = request.getfixturevalue(which)
    for obj in objects:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "henge"
        assert labels["app.kubernetes.io/instance"] == "henge"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["helm.sh/chart"] == "henge-0.1.0"
        assert labels["app.kubernetes.io/version"] == ("1.2.3" if which == "full" else "0.1.0")
    selector = server_selector(objects)
    assert selector == {
        "app.kubernetes.io/name": "henge",
        "app.kubernetes.io/instance": "henge",
        "app.kubernetes.io/component": "server",
    }
    template_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= template_labels.items()
    assert one(objects, "Service")["spec"]["selector"] == selector
    # The migrations Job's pods are not servers: the Service must not select them.
    job_labels = one(objects, "Job")["spec"]["template"]["metadata"]["labels"]
    assert not selector.items() <= job_labels.items()


def test_names_follow_release_and_overrides(helm: Helm) -> None:
    objects = render(helm, {**MINIMAL, "fullnameOverride": "sched"})
    assert one(objects, "Deployment")["metadata"]["name"] == "sched"
    objects = helm.render(MINIMAL, release="prod", namespace=NAMESPACE)
    assert one(objects, "Deployment")["metadata"]["name"] == "prod-henge"
    assert one(objects, "Job")["metadata"]["name"] == "prod-henge-migrate"
    # Cluster-scoped names carry the namespace: two releases named alike do not collide.
    assert one(objects, "ClusterRole")["metadata"]["name"] == f"{NAMESPACE}-prod-henge"
    assert all(o["metadata"].get("namespace", NAMESPACE) == NAMESPACE for o in objects)


# ---- values.schema.json ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"replicaCount": "three"}, "replicaCount"),
        ({"replicaCount": -1}, "replicaCount"),
        ({"database": {"url": "postgresql://henge@db/henge"}}, "url"),
        ({"config": {"logFormat": "xml"}}, "logFormat"),
        ({"config": {"roundIntervalS": 0}}, "roundIntervalS"),
        ({"service": {"port": 70000}}, "port"),
        ({"managedNamespaces": ["Not_A_Namespace"]}, "managedNamespaces"),
        ({"extraConfig": {"POLICY": "x"}}, "POLICY"),
        ({"replicas": 2}, "replicas"),  # a misspelt key
        ({"serviceMonitor": {"interval": "often"}}, "interval"),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else None,
)
def test_values_schema_rejects_bad_values(
    helm: Helm, values: dict[str, Any], complaint: str, tmp_path: Any
) -> None:
    merged = {**MINIMAL, **values}
    done = helm.template(merged, check=False)
    assert done.returncode != 0, f"{values} rendered"
    assert "schema" in done.stderr and complaint in done.stderr, done.stderr
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(merged))
    linted = helm.run("lint", "--strict", CHART, "-f", file, check=False)
    assert linted.returncode != 0, linted.stdout


def test_values_schema_is_valid_json_schema() -> None:
    import jsonschema

    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    jsonschema.Draft7Validator(schema).validate(defaults)
    jsonschema.Draft7Validator(schema).validate(FULL)


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "henge"
    assert chart["type"] == "application"
    for name in ("NOTES.txt", "_helpers.tpl"):
        assert (CHART / "templates" / name).is_file()


def test_notes(helm: Helm, tmp_path: Any) -> None:
    """NOTES.txt renders (an offline client-side dry run) and says how to reach the API."""
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(FULL))
    done = helm.run(
        "install", "prod", CHART, "--namespace", NAMESPACE, "--dry-run=client", "-f", file
    )
    notes = done.stdout.split("NOTES:", 1)[1]
    assert f"kubectl -n {NAMESPACE} port-forward service/prod-henge 8080:8080" in notes
    assert "get secret henge-credentials" in notes and "admin-token" in notes
    assert "only the leader" in notes
