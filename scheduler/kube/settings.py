"""What Henge's Kubernetes pieces (the kubernetes cluster view, the spark-operator realizer) are
configured with. Built from :class:`scheduler.config.Settings` where ``henge serve`` wires its
components (:func:`scheduler.service.kube_settings`); the fields and their ``HENGE_*`` variables
are documented there."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.config import DEFAULT_EXECUTOR_SELECTOR, DEFAULT_JOB_LABEL


@dataclass(frozen=True)
class KubeSettings:
    namespaces: tuple[str, ...] = ()
    executor_selector: str = DEFAULT_EXECUTOR_SELECTOR
    job_label: str = DEFAULT_JOB_LABEL
    kubeconfig: str | None = None
    context: str | None = None

    def scopes(self) -> tuple[str | None, ...]:
        """Namespaces to list in; ``(None,)`` means every namespace."""
        return self.namespaces or (None,)
