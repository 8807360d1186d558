"""Thin wrappers over the official ``kubernetes`` client (the one place tests may fake)."""

from scheduler.kube.client import KubeApi, KubeError, load_api_client, parse_quantity

__all__ = ["KubeApi", "KubeError", "load_api_client", "parse_quantity"]
