"""Where the agent finds its settings (the Spark conf, the environment, a token file) and what it
says when one is missing or wrong; ``attach()`` over a stand-in session, and answers the agent
cannot use. No Spark: runs in the ordinary suite."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import henge_agent
from henge_agent import AgentConfigError, AgentRefused
from henge_agent.settings import AgentSettings, settings_from
from scheduler.testing.fake_api import FakeScheduler
from tests.agent_doubles import FakeSpark, make_agent

URL = "http://henge.henge-system:8080"
CONF = {"spark.henge.url": URL, "spark.henge.jobId": "job-7"}
TOKEN_ENV = {"HENGE_AGENT_TOKEN": "hga_secret"}


def refusal(conf: dict[str, str], environ: dict[str, str], **arguments: object) -> str:
    with pytest.raises(AgentConfigError) as refused:
        settings_from(conf, environ, arguments)
    return str(refused.value)


# ---- where settings come from -----------------------------------------------------------------


def test_url_and_job_id_from_the_spark_conf_and_the_token_from_the_environment() -> None:
    conf = {
        **CONF,
        "spark.henge.subWindowSeconds": "3",
        "spark.henge.minExecutors": "1",
        "spark.henge.maxExecutors": "8",
        "spark.henge.initialExecutors": "2",
        "spark.henge.resize": "False",
        "spark.henge.timeoutSeconds": "2.5",
        "spark.henge.maxBackoffSeconds": "30",
    }
    settings = settings_from(conf, TOKEN_ENV)
    assert settings == AgentSettings(
        url=URL,
        job_id="job-7",
        token="hga_secret",
        sub_window_s=3.0,
        min_executors=1,
        max_executors=8,
        initial_executors=2,
        resize=False,
        timeout_s=2.5,
        max_backoff_s=30.0,
    )
    assert "hga_secret" not in repr(settings)


def test_defaults_and_environment_fallbacks() -> None:
    environ = {"HENGE_URL": " http://127.0.0.1:8080 ", "HENGE_JOB_ID": "job-1", **TOKEN_ENV}
    settings = settings_from({}, environ)
    assert (settings.url, settings.job_id) == ("http://127.0.0.1:8080", "job-1")
    assert (settings.sub_window_s, settings.timeout_s, settings.max_backoff_s) == (10, 5, 60)
    assert (settings.min_executors, settings.max_executors, settings.initial_executors) == (
        None,
        None,
        None,
    )
    assert settings.resize is True


def test_arguments_win_over_the_conf_and_the_conf_over_the_environment() -> None:
    environ = {"HENGE_URL": "http://from-env:1", "HENGE_JOB_ID": "env-job", **TOKEN_ENV}
    from_conf = settings_from(CONF, environ)
    assert (from_conf.url, from_conf.job_id) == (URL, "job-7")
    given = settings_from(
        CONF, environ, {"url": "http://given:2", "job_id": "given-job", "token": "hga_given",
                        "max_executors": 3, "resize": False},
    )  # fmt: skip
    assert (given.url, given.job_id, given.token) == ("http://given:2", "given-job", "hga_given")
    assert (given.max_executors, given.resize) == (3, False)


def test_the_token_from_a_mounted_file(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("hga_from_file\n")
    settings = settings_from(CONF, {"HENGE_AGENT_TOKEN_FILE": str(secret)})
    assert settings.token == "hga_from_file"


# ---- what is missing or wrong, said clearly -----------------------------------------------------


def test_a_missing_url_or_job_id_names_the_conf_key_and_the_variable() -> None:
    message = refusal({"spark.henge.jobId": "job-7"}, TOKEN_ENV)
    assert message.startswith("Henge agent refused to start: the Henge API's URL is not set.")
    assert "spark.henge.url" in message and "HENGE_URL" in message
    message = refusal({"spark.henge.url": URL}, TOKEN_ENV)
    assert "the job's id is not set" in message
    assert "--conf spark.henge.jobId=" in message and "HENGE_JOB_ID" in message


def test_a_missing_token_names_both_variables_and_never_the_conf() -> None:
    message = refusal(CONF, {})
    assert "the job's agent token is not set" in message
    assert "HENGE_AGENT_TOKEN " in message and "HENGE_AGENT_TOKEN_FILE" in message
    assert "never read from the Spark conf" in message


def test_token_file_problems_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    message = refusal(CONF, {"HENGE_AGENT_TOKEN_FILE": str(missing)})
    assert f"HENGE_AGENT_TOKEN_FILE={missing} cannot be read (No such file or directory)" in message
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert "is empty" in refusal(CONF, {"HENGE_AGENT_TOKEN_FILE": str(empty)})
    both = {"HENGE_AGENT_TOKEN_FILE": str(empty), **TOKEN_ENV}
    assert "both HENGE_AGENT_TOKEN and HENGE_AGENT_TOKEN_FILE are set" in refusal(CONF, both)
    assert "spaces or control characters" in refusal(CONF, {"HENGE_AGENT_TOKEN": "hga_a hga_b"})


@pytest.mark.parametrize(
    "key",
    ["spark.henge.token", "spark.henge.agentToken", "spark.kubernetes.driverEnv.HENGE_AGENT_TOKEN"],
)
def test_a_token_in_the_spark_conf_is_refused_without_repeating_it(key: str) -> None:
    message = refusal({**CONF, key: "hga_leaked"}, TOKEN_ENV)
    assert f"the Spark conf holds {key}. Remove it" in message
    assert "hga_leaked" not in message


def test_references_to_a_kubernetes_secret_in_the_conf_are_fine() -> None:
    conf = {
        **CONF,
        "spark.kubernetes.driver.secretKeyRef.HENGE_AGENT_TOKEN": "job-agent:token",
        "spark.kubernetes.driver.secrets.job-agent": "/etc/henge",
        "spark.kubernetes.driverEnv.HENGE_AGENT_TOKEN_FILE": "/etc/henge/token",
    }
    assert settings_from(conf, TOKEN_ENV).token == "hga_secret"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"spark.henge.url": "henge:8080"}, "Spark conf spark.henge.url is 'henge:8080', not the"),
        ({"spark.henge.maxExecutors": "many"}, "spark.henge.maxExecutors is 'many'; it must be a"),
        ({"spark.henge.maxExecutors": "0"}, "spark.henge.maxExecutors is '0'; it must be a whole"),
        ({"spark.henge.subWindowSeconds": "0"}, "spark.henge.subWindowSeconds is '0'; it must be"),
        ({"spark.henge.timeoutSeconds": "nan"}, "spark.henge.timeoutSeconds is 'nan'; it must"),
        ({"spark.henge.resize": "maybe"}, "spark.henge.resize is 'maybe'; use true or false"),
        (
            {"spark.henge.minExecutors": "5", "spark.henge.maxExecutors": "2"},
            "the minimum executors (5, spark.henge.minExecutors) is above the maximum (2,",
        ),
        (
            {"spark.henge.maxExecutors": "2", "spark.henge.initialExecutors": "3"},
            "the initial executors (3, spark.henge.initialExecutors) is outside the job's "
            "bounds [0, 2]",
        ),
    ],
)
def test_invalid_values_name_the_key_and_the_value(extra: dict[str, str], expected: str) -> None:
    message = refusal({**CONF, **extra}, TOKEN_ENV)
    assert message.startswith("Henge agent refused to start: ")
    assert expected in message


def test_a_config_error_is_an_agent_refusal() -> None:
    # Callers that already catch AgentRefused (the examples do) catch config errors too.
    assert issubclass(AgentConfigError, AgentRefused)


# ---- attach() over a stand-in session --------------------------------------------------------


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def getAll(self) -> list[tuple[str, str]]:
        return list(self.values.items())

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _NoStore:
    def statusStore(self) -> Any:
        raise RuntimeError("no status store in this stand-in")


class _JavaContext:
    def sc(self) -> _NoStore:
        return _NoStore()


@dataclass
class _Context:
    conf: dict[str, str]
    master: str = "spark://127.0.0.1:7077"
    uiWebUrl: str | None = None
    _jsc: _JavaContext = field(default_factory=_JavaContext)
    _jvm: object = None

    def getConf(self) -> _Conf:
        return _Conf(self.conf)


@dataclass
class _Streams:
    listeners: list[Any] = field(default_factory=list)
    active: list[Any] = field(default_factory=list)

    def addListener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def removeListener(self, listener: Any) -> None:
        self.listeners.remove(listener)


@dataclass
class _Session:
    sparkContext: _Context
    streams: _Streams = field(default_factory=_Streams)


def test_attach_reads_the_conf_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HENGE_AGENT_TOKEN", "hga_env")
    session = _Session(_Context({**CONF, "spark.henge.maxExecutors": "4"}))
    agent = henge_agent.attach(session, start=False)
    assert agent.client.endpoint == f"{URL}/v1/jobs/job-7/reports"
    assert agent.client._headers["Authorization"] == "Bearer hga_env"
    assert (agent.min_executors, agent.max_executors) == (0, 4)
    assert len(session.streams.listeners) == 1
    agent.stop()
    assert session.streams.listeners == []


def test_attach_refuses_before_touching_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HENGE_AGENT_TOKEN", raising=False)
    monkeypatch.delenv("HENGE_AGENT_TOKEN_FILE", raising=False)
    session = _Session(_Context(dict(CONF)))
    with pytest.raises(AgentConfigError, match="the job's agent token is not set"):
        henge_agent.attach(session)
    assert session.streams.listeners == []
    dynamic = _Session(_Context({**CONF, "spark.dynamicAllocation.enabled": "true"}))
    with pytest.raises(AgentRefused, match=r"spark\.dynamicAllocation\.enabled=true"):
        henge_agent.attach(dynamic, token="hga_x")
    assert dynamic.streams.listeners == []


# ---- answers the agent cannot use ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [b"<html>bad gateway</html>", b"[]", b"null", b'{"round": 3}', b'{"target_executors": "x"}'],
)
def test_an_unusable_answer_is_retried_and_changes_nothing(
    body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    spark = FakeSpark()
    spark.add("1")
    fake = FakeScheduler(target=1).start()
    try:
        agent, _ = make_agent(spark, fake.url, clock=lambda: 90.0)
        fake.body = body
        with caplog.at_level(logging.WARNING, logger="henge.agent"):
            agent.tick(100.0)  # raises nothing
        assert (agent.stats.reports_failed, len(agent._pending)) == (1, 1)
        assert spark.requested == [] and agent.applied is None
        assert "report not delivered" in caplog.text
        fake.body = None
        agent.flush(200.0)
        assert agent.stats.reports_sent == 1 and agent.applied == 1
    finally:
        fake.stop()


def test_an_answer_cut_short_is_retried() -> None:
    fake = FakeScheduler(target=1).start()
    try:
        agent, _ = make_agent(FakeSpark(), fake.url, clock=lambda: 90.0)
        fake.cut_short = True
        agent.tick(100.0)
        assert agent.stats.reports_failed == 1 and len(agent._pending) == 1
    finally:
        fake.stop()
