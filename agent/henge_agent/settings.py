"""Every setting of the agent and where it comes from (standard library only).

Each setting is looked up in order: an argument of :func:`henge_agent.attach`, the Spark conf,
then the driver's environment where one is listed:

| setting | Spark conf | environment | default |
| --- | --- | --- | --- |
| the Henge API | ``spark.henge.url`` | ``HENGE_URL`` | required |
| the job's id | ``spark.henge.jobId`` | ``HENGE_JOB_ID`` | required |
| the job's agent token | never | ``HENGE_AGENT_TOKEN``, or ``HENGE_AGENT_TOKEN_FILE`` | required |
| report interval (s) | ``spark.henge.subWindowSeconds`` | | 10 |
| the job's bounds | ``spark.henge.minExecutors``, ``spark.henge.maxExecutors`` | | none |
| size at start | ``spark.henge.initialExecutors`` | | unchanged |
| resize or only report | ``spark.henge.resize`` | | true |
| per-executor and per-stage task figures | ``spark.henge.taskFigures`` | | true |
| HTTP timeout (s) | ``spark.henge.timeoutSeconds`` | | 5 |
| longest retry wait (s) | ``spark.henge.maxBackoffSeconds`` | | 60 |

The token is never taken from the Spark conf: conf values are no secret (Spark copies them to
every executor, and they sit in the submit command and in a SparkApplication's spec). A token
found there makes the agent refuse to start, so that it gets moved.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from henge_agent.errors import AgentConfigError

CONF_URL = "spark.henge.url"
CONF_JOB_ID = "spark.henge.jobId"
CONF_SUB_WINDOW = "spark.henge.subWindowSeconds"
CONF_MIN_EXECUTORS = "spark.henge.minExecutors"
CONF_MAX_EXECUTORS = "spark.henge.maxExecutors"
CONF_INITIAL_EXECUTORS = "spark.henge.initialExecutors"
CONF_RESIZE = "spark.henge.resize"
CONF_TASK_FIGURES = "spark.henge.taskFigures"
CONF_TIMEOUT = "spark.henge.timeoutSeconds"
CONF_MAX_BACKOFF = "spark.henge.maxBackoffSeconds"
CONF_PREFIX = "spark.henge."

ENV_URL = "HENGE_URL"
ENV_JOB_ID = "HENGE_JOB_ID"
ENV_TOKEN = "HENGE_AGENT_TOKEN"
ENV_TOKEN_FILE = "HENGE_AGENT_TOKEN_FILE"

DEFAULT_SUB_WINDOW_S = 10.0
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_BACKOFF_S = 60.0

REFUSED = "Henge agent refused to start"


@dataclass(frozen=True)
class AgentSettings:
    url: str
    job_id: str
    token: str = field(repr=False)
    sub_window_s: float = DEFAULT_SUB_WINDOW_S
    min_executors: int | None = None
    max_executors: int | None = None
    initial_executors: int | None = None
    resize: bool = True
    task_figures: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S


@dataclass(frozen=True)
class Source:
    """Where one setting may be given: an argument of ``attach()``, a Spark conf key and,
    for some, an environment variable."""

    argument: str
    key: str
    variable: str | None = None


URL = Source("url", CONF_URL, ENV_URL)
JOB_ID = Source("job_id", CONF_JOB_ID, ENV_JOB_ID)
SUB_WINDOW = Source("sub_window_s", CONF_SUB_WINDOW)
MIN_EXECUTORS = Source("min_executors", CONF_MIN_EXECUTORS)
MAX_EXECUTORS = Source("max_executors", CONF_MAX_EXECUTORS)
INITIAL_EXECUTORS = Source("initial_executors", CONF_INITIAL_EXECUTORS)
RESIZE = Source("resize", CONF_RESIZE)
TASK_FIGURES = Source("task_figures", CONF_TASK_FIGURES)
TIMEOUT = Source("timeout_s", CONF_TIMEOUT)
MAX_BACKOFF = Source("max_backoff_s", CONF_MAX_BACKOFF)


@dataclass(frozen=True)
class Found:
    """A setting's raw value and where it was found (named in error messages)."""

    value: object
    where: str


class Lookup:
    """Finds settings in the arguments, the Spark conf, then the environment, in that order;
    blank values count as absent."""

    def __init__(
        self,
        conf: Mapping[str, str],
        environ: Mapping[str, str],
        arguments: Mapping[str, object] | None = None,
    ) -> None:
        self.conf = conf
        self.environ = environ
        self.arguments = dict(arguments or {})

    def find(self, source: Source) -> Found | None:
        argument = self.arguments.get(source.argument)
        if argument is not None:
            return Found(argument, f"attach({source.argument}=...)")
        value = self.conf.get(source.key, "").strip()
        if value:
            return Found(value, f"Spark conf {source.key}")
        if source.variable is not None:
            value = self.environ.get(source.variable, "").strip()
            if value:
                return Found(value, f"environment variable {source.variable}")
        return None

    def require(self, source: Source, what: str) -> Found:
        found = self.find(source)
        if found is None:
            raise AgentConfigError(
                f"{REFUSED}: {what} is not set. Set the Spark conf {source.key} (spark-submit "
                f"--conf {source.key}=..., or spec.sparkConf of a SparkApplication) or the "
                f"environment variable {source.variable} in the driver, or pass "
                f"{source.argument}= to henge_agent.attach()."
            )
        return found


def settings_from(
    conf: Mapping[str, str],
    environ: Mapping[str, str],
    arguments: Mapping[str, object] | None = None,
) -> AgentSettings:
    """The agent's settings, or :class:`AgentConfigError` naming what is missing or wrong.

    ``conf``: the application's Spark conf as a mapping; ``environ``: the driver's environment;
    ``arguments``: :func:`henge_agent.attach`'s keyword arguments (None: not given).
    """
    refuse_token_in_conf(conf)
    found = Lookup(conf, environ, arguments)
    low = whole(found.find(MIN_EXECUTORS), minimum=0)
    high = whole(found.find(MAX_EXECUTORS), minimum=1)
    initial = whole(found.find(INITIAL_EXECUTORS), minimum=0)
    check_bounds(low, high, initial)
    return AgentSettings(
        url=url(found.require(URL, "the Henge API's URL")),
        job_id=str(found.require(JOB_ID, "the job's id").value).strip(),
        token=token(found.arguments.get("token"), environ),
        sub_window_s=positive(found.find(SUB_WINDOW), DEFAULT_SUB_WINDOW_S),
        min_executors=low,
        max_executors=high,
        initial_executors=initial,
        resize=boolean(found.find(RESIZE), default=True),
        task_figures=boolean(found.find(TASK_FIGURES), default=True),
        timeout_s=positive(found.find(TIMEOUT), DEFAULT_TIMEOUT_S),
        max_backoff_s=positive(found.find(MAX_BACKOFF), DEFAULT_MAX_BACKOFF_S),
    )


# ---- required values ---------------------------------------------------------------------------


def url(found: Found) -> str:
    text = str(found.value).strip()
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AgentConfigError(
            f"{REFUSED}: {found.where} is {text!r}, not the http:// or https:// URL of the "
            "Henge API (e.g. http://henge.henge-system:8080)."
        )
    return text


def token(argument: object, environ: Mapping[str, str]) -> str:
    """The agent token: the argument, else ``HENGE_AGENT_TOKEN``, else the file named by
    ``HENGE_AGENT_TOKEN_FILE`` (read once, here)."""
    if argument is not None:
        return checked_token(str(argument), "attach(token=...)")
    inline = environ.get(ENV_TOKEN, "").strip()
    path = environ.get(ENV_TOKEN_FILE, "").strip()
    if inline and path:
        raise AgentConfigError(
            f"{REFUSED}: both {ENV_TOKEN} and {ENV_TOKEN_FILE} are set in the driver's "
            "environment; keep one of them."
        )
    if inline:
        return checked_token(inline, f"environment variable {ENV_TOKEN}")
    if path:
        return checked_token(read_token_file(path), f"the file {path} ({ENV_TOKEN_FILE})")
    raise AgentConfigError(
        f"{REFUSED}: the job's agent token is not set. Set the environment variable {ENV_TOKEN} "
        f"in the driver, or {ENV_TOKEN_FILE} to the path of a file holding it (a mounted "
        "Kubernetes Secret, say). It is never read from the Spark conf."
    )


def read_token_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise AgentConfigError(
            f"{REFUSED}: {ENV_TOKEN_FILE}={path} cannot be read ({reason})."
        ) from None


def checked_token(text: str, where: str) -> str:
    value = text.strip()
    if not value:
        raise AgentConfigError(f"{REFUSED}: {where} is empty; it must hold the job's agent token.")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise AgentConfigError(
            f"{REFUSED}: {where} holds spaces or control characters; it must hold the job's "
            "agent token alone (as `henge job register` printed it)."
        )
    return value


def refuse_token_in_conf(conf: Mapping[str, str]) -> None:
    """A token in the Spark conf is refused so that it moves out of there (its value is never
    read nor repeated)."""
    leaked = sorted(
        key
        for key in conf
        if (key.startswith(CONF_PREFIX) and "token" in key.lower())
        or key.endswith(f"Env.{ENV_TOKEN}")  # spark.kubernetes.driverEnv.*, spark.executorEnv.*
    )
    if leaked:
        raise AgentConfigError(
            f"{REFUSED}: the Spark conf holds {', '.join(leaked)}. Remove it: Spark conf values "
            "are no secret (they go to every executor, into the submit command and a "
            f"SparkApplication's spec). Give the token in the environment variable {ENV_TOKEN} "
            f"(from a Kubernetes Secret: secretKeyRef) or in a file named by {ENV_TOKEN_FILE}."
        )


# ---- optional values ---------------------------------------------------------------------------


def whole(found: Found | None, *, minimum: int) -> int | None:
    if found is None:
        return None
    value = found.value
    try:
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        number = int(str(value).strip()) if number is None else number
    except ValueError:
        number = None
    if number is None or number < minimum:
        raise AgentConfigError(
            f"{REFUSED}: {found.where} is {value!r}; it must be a whole number >= {minimum}."
        )
    return number


def positive(found: Found | None, default: float) -> float:
    if found is None:
        return default
    try:
        number = float(str(found.value).strip())
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise AgentConfigError(
            f"{REFUSED}: {found.where} is {found.value!r}; it must be a number of seconds > 0."
        )
    return number


def boolean(found: Found | None, *, default: bool) -> bool:
    if found is None:
        return default
    if isinstance(found.value, bool):
        return found.value
    text = str(found.value).strip().lower()
    if text not in ("true", "false"):
        raise AgentConfigError(f"{REFUSED}: {found.where} is {found.value!r}; use true or false.")
    return text == "true"


def check_bounds(low: int | None, high: int | None, initial: int | None) -> None:
    if low is not None and high is not None and low > high:
        raise AgentConfigError(
            f"{REFUSED}: the minimum executors ({low}, {CONF_MIN_EXECUTORS}) is above the "
            f"maximum ({high}, {CONF_MAX_EXECUTORS})."
        )
    if initial is None:
        return
    if (low is not None and initial < low) or (high is not None and initial > high):
        raise AgentConfigError(
            f"{REFUSED}: the initial executors ({initial}, {CONF_INITIAL_EXECUTORS}) is outside "
            f"the job's bounds [{low if low is not None else 0}, "
            f"{high if high is not None else 'inf'}]."
        )
