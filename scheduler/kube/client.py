"""The project's thin wrapper over the official ``kubernetes`` client: the few calls Henge makes,
returning the API server's JSON as plain dicts.

Everything goes through one ``kubernetes.client.ApiClient``; responses are read raw
(``_preload_content=False``) so callers see the objects exactly as the API server sends them.
Tests replay recorded API objects by giving the ``ApiClient`` a transport that answers from
files (``tests/unit/kube``), so the official client's request building runs for real.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

SPARK_GROUP = "sparkoperator.k8s.io"
SPARK_VERSION = "v1beta2"
SPARK_PLURAL = "sparkapplications"
METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
MERGE_PATCH = "application/merge-patch+json"


class KubeError(RuntimeError):
    """A Kubernetes API call failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def in_cluster() -> bool:
    """Whether this process runs in a Kubernetes pod, by the official client's own convention:
    the kubelet sets ``KUBERNETES_SERVICE_HOST`` in every container, and the client's in-cluster
    loader (``load_incluster_config``) reads the API server's address from it and the service
    account's credentials from the pod's files. This is the environment of the pod, not a Henge
    setting (those are in :mod:`scheduler.config`)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> k8s.ApiClient:
    """In-cluster credentials when running in a pod (:func:`in_cluster`) and no ``kubeconfig``
    is given, else ``kubeconfig`` / ``$KUBECONFIG`` / ``~/.kube/config``."""
    if kubeconfig is None and in_cluster():
        k8s_config.load_incluster_config()
        return k8s.ApiClient()
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(
        config_file=kubeconfig, context=context, client_configuration=configuration
    )
    return k8s.ApiClient(configuration)


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (``"250m"``, ``"2"``, ``"1536Mi"``, ``"1.5Gi"``, ``"12345n"``,
    ``"1e3"``) as a number of base units (cores, bytes)."""
    from kubernetes.utils import parse_quantity as _parse

    try:
        return Decimal(_parse(value))
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from exc


@dataclass
class KubeApi:
    """The calls Henge makes. ``api_client``: a configured ``kubernetes.client.ApiClient``."""

    api_client: k8s.ApiClient
    timeout_s: float = 10.0

    @classmethod
    def from_config(cls, kubeconfig: str | None = None, context: str | None = None) -> KubeApi:
        return cls(load_api_client(kubeconfig, context))

    def _json(self, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            response = call(
                *args, _preload_content=False, _request_timeout=self.timeout_s, **kwargs
            )
        except ApiException as exc:
            raise KubeError(_message(exc), exc.status or 0) from None
        except OSError as exc:  # connection refused, DNS, TLS
            raise KubeError(f"Kubernetes API unreachable: {exc}") from None
        data = response.data if hasattr(response, "data") else response.read()
        return json.loads(data)

    # ---- core/v1 ------------------------------------------------------------------------------

    def nodes(self) -> list[dict[str, Any]]:
        return self._json(k8s.CoreV1Api(self.api_client).list_node)["items"]

    def pods(self, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        """Pods matching ``label_selector`` in ``namespace`` (all namespaces when None)."""
        core = k8s.CoreV1Api(self.api_client)
        if namespace is None:
            return self._json(core.list_pod_for_all_namespaces, label_selector=label_selector)[
                "items"
            ]
        return self._json(core.list_namespaced_pod, namespace, label_selector=label_selector)[
            "items"
        ]

    # ---- metrics.k8s.io -----------------------------------------------------------------------

    def node_metrics(self) -> list[dict[str, Any]] | None:
        """``NodeMetrics`` of every node; None when the cluster has no metrics API."""
        custom = k8s.CustomObjectsApi(self.api_client)
        try:
            return self._json(
                custom.list_cluster_custom_object, METRICS_GROUP, METRICS_VERSION, "nodes"
            )["items"]
        except KubeError as exc:
            if exc.status in (404, 503):  # not installed / its APIService not available
                return None
            raise

    # ---- sparkoperator.k8s.io -----------------------------------------------------------------

    def spark_applications(
        self, namespace: str | None, label_selector: str
    ) -> list[dict[str, Any]]:
        custom = k8s.CustomObjectsApi(self.api_client)
        if namespace is None:
            return self._json(
                custom.list_cluster_custom_object,
                SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL,
                label_selector=label_selector,
            )["items"]  # fmt: skip
        return self._json(
            custom.list_namespaced_custom_object,
            SPARK_GROUP, SPARK_VERSION, namespace, SPARK_PLURAL,
            label_selector=label_selector,
        )["items"]  # fmt: skip

    def patch_spark_application(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386) of one SparkApplication; returns the patched object."""
        custom = k8s.CustomObjectsApi(self.api_client)
        return self._json(
            custom.patch_namespaced_custom_object,
            SPARK_GROUP, SPARK_VERSION, namespace, SPARK_PLURAL, name, patch,
            _content_type=MERGE_PATCH,
        )  # fmt: skip


def _message(exc: ApiException) -> str:
    reason = exc.reason or ""
    try:
        body = json.loads(exc.body or "{}")
        detail = body.get("message") or reason
    except (ValueError, AttributeError):
        detail = reason
    return f"Kubernetes API {exc.status}: {detail}"
