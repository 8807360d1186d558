"""A small HTTP client for the /v1 API that turns every failure into one readable line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import yaml

from scheduler.config import DEFAULT_CLIENT_URL, ClientSettings


class ClientError(Exception):
    """An error meant for a person: one line, no traceback."""


@dataclass(frozen=True)
class ClientConfig:
    url: str
    token: str | None


def resolve_config(
    url: str | None, token: str | None, settings: ClientSettings | None = None
) -> ClientConfig:
    """Flags win over HENGE_URL / HENGE_TOKEN, which win over the config file."""
    settings = settings or ClientSettings()
    stored: dict[str, Any] = {}
    path = settings.config_file()
    if path.exists():
        try:
            stored = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ClientError(f"cannot read the config file {path}: {exc}") from exc
        if not isinstance(stored, dict):
            raise ClientError(f"the config file {path} must hold a mapping with url and token")
    return ClientConfig(
        url=(url or settings.url or stored.get("url") or DEFAULT_CLIENT_URL).rstrip("/"),
        token=token or settings.token_value() or stored.get("token"),
    )


def describe_error(response: httpx.Response) -> str:
    """``HTTP 422: slo.juice: Input should be less than or equal to 1`` and the like."""
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = response.text.strip()[:200] or response.reason_phrase
    if isinstance(detail, list):
        parts = []
        for item in detail:
            loc = [str(p) for p in item.get("loc", []) if p != "body"]
            parts.append(f"{'.'.join(loc)}: {item.get('msg', '')}" if loc else str(item.get("msg")))
        detail = "; ".join(parts)
    hint = {
        401: " (check the token: --token, HENGE_TOKEN or the config file)",
        403: " (this token's role may not do that)",
    }.get(response.status_code, "")
    return f"HTTP {response.status_code}: {detail}{hint}"


class HengeClient:
    def __init__(self, config: ClientConfig, timeout: float = 10.0) -> None:
        self.config = config
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
        self._http = httpx.Client(base_url=config.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, missing_ok: bool = False, **kwargs: Any) -> Any:
        """The answer's JSON; with ``missing_ok``, ``None`` for a 404 (nothing there yet)."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.ConnectError as exc:
            raise ClientError(
                f"cannot reach the Henge API at {self.config.url} ({exc}); "
                "is `henge serve` running?"
            ) from exc
        except httpx.TimeoutException as exc:
            raise ClientError(f"the Henge API at {self.config.url} did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise ClientError(f"request to {self.config.url} failed: {exc}") from exc
        if missing_ok and response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise ClientError(describe_error(response))
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def get(self, path: str, **params: Any) -> Any:
        clean = {k: v for k, v in params.items() if v is not None}
        return self.request("GET", path, params=clean)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, json=body)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, json=body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)
