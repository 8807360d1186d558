"""Where Henge's Kubernetes pieces read their settings from (environment variables, so that they
work with ``henge serve`` as it is configured today).

- ``HENGE_KUBE_NAMESPACES``: comma-separated namespaces Henge manages (empty: all namespaces).
- ``HENGE_KUBE_EXECUTOR_SELECTOR``: label selector of executor pods (``spark-role=executor``).
- ``HENGE_KUBE_JOB_LABEL``: the SparkApplication label holding the Henge job id
  (``henge.io/job-id``).
- ``HENGE_KUBECONFIG`` / ``HENGE_KUBE_CONTEXT``: a kubeconfig and context (default: in-cluster
  credentials in a pod, else ``$KUBECONFIG`` or ``~/.kube/config``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_EXECUTOR_SELECTOR = "spark-role=executor"
DEFAULT_JOB_LABEL = "henge.io/job-id"


@dataclass(frozen=True)
class KubeSettings:
    namespaces: tuple[str, ...] = ()
    executor_selector: str = DEFAULT_EXECUTOR_SELECTOR
    job_label: str = DEFAULT_JOB_LABEL
    kubeconfig: str | None = None
    context: str | None = None

    @classmethod
    def from_env(cls) -> KubeSettings:
        env = os.environ.get
        namespaces = tuple(
            n.strip() for n in (env("HENGE_KUBE_NAMESPACES") or "").split(",") if n.strip()
        )
        return cls(
            namespaces=namespaces,
            executor_selector=env("HENGE_KUBE_EXECUTOR_SELECTOR") or DEFAULT_EXECUTOR_SELECTOR,
            job_label=env("HENGE_KUBE_JOB_LABEL") or DEFAULT_JOB_LABEL,
            kubeconfig=env("HENGE_KUBECONFIG") or None,
            context=env("HENGE_KUBE_CONTEXT") or None,
        )

    def scopes(self) -> tuple[str | None, ...]:
        """Namespaces to list in; ``(None,)`` means every namespace."""
        return self.namespaces or (None,)
