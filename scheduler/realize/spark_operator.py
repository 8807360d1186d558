"""The ``spark-operator`` realizer: patch ``spec.executor.instances`` of the job's SparkApplication.

The job's SparkApplication (``sparkoperator.k8s.io/v1beta2``) carries the label
``henge.io/job-id: <job id>`` in one of the managed namespaces. A change is a JSON merge patch
``{"spec": {"executor": {"instances": N}}}``. The Kubeflow Spark operator treats a change of the
spec as a new submission: it **restarts the application** (driver and executors; the streaming
query resumes from its checkpoint). That is why the round's policy sees such jobs with
``restart_on_resize`` (it does not give back their executors on its own initiative), and why
operators should keep ``quiesce_s`` above the application's restart time.

A change took effect when the patch was accepted; one whose patch fails keeps its old
allocation in the registry and is tried again by a later round. A job with no labelled
SparkApplication is left to its agent, as with the ``agent`` realizer (the stored target is the
action), so operator-run and agent-run jobs can share one scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from scheduler.core.model import Change
from scheduler.kube.client import KubeApi, KubeError
from scheduler.kube.settings import KubeSettings

log = structlog.get_logger("henge.realize.spark_operator")


def instances_patch(executors: int) -> dict[str, object]:
    return {"spec": {"executor": {"instances": int(executors)}}}


@dataclass
class SparkOperatorRealizer:
    api: KubeApi
    settings: KubeSettings
    name: str = "spark-operator"

    def find(self, job_id: str) -> list[tuple[str, str, dict[str, object]]]:
        """(namespace, name, object) of the SparkApplications labelled with ``job_id``."""
        selector = f"{self.settings.job_label}={job_id}"
        found = []
        for scope in self.settings.scopes():
            for app in self.api.spark_applications(scope, selector):
                meta = app.get("metadata") or {}
                found.append((str(meta.get("namespace")), str(meta.get("name")), app))
        return found

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        done: list[Change] = []
        for change in changes:
            try:
                apps = self.find(change.job_id)
                if not apps:
                    # Not run by the operator: the job's agent applies the stored target.
                    log.info(
                        "spark_operator.left_to_agent",
                        job=change.job_id,
                        label=f"{self.settings.job_label}={change.job_id}",
                        namespaces=list(self.settings.namespaces) or "all",
                    )
                    done.append(change)
                    continue
                if len(apps) > 1:
                    log.warning(
                        "spark_operator.several_applications",
                        job=change.job_id,
                        applications=[f"{ns}/{name}" for ns, name, _ in apps],
                    )
                for namespace, name, _ in apps:
                    self.api.patch_spark_application(
                        namespace, name, instances_patch(change.to_executors)
                    )
                    log.info(
                        "spark_operator.patched",
                        job=change.job_id,
                        application=f"{namespace}/{name}",
                        from_executors=change.from_executors,
                        to_executors=change.to_executors,
                        note="the operator restarts the application",
                    )
            except KubeError as exc:
                log.warning("spark_operator.patch_failed", job=change.job_id, error=str(exc))
                continue
            done.append(change)
        return done
