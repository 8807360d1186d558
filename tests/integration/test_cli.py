"""The ``henge`` CLI as a user runs it: the real executable against a real ``henge serve`` on a
loopback port and its own Postgres database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import create_database, drop_database
from tests.serving import ServerHandle, free_port, henge_command, run_server

pytestmark = pytest.mark.postgres

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

JOB_YAML = """\
# DESIGN §5.1's example job
name: {name}
priority: 35
slo:
  latency_ms: 60
  latency_stat: mean
  juice: 1.0
  utility:
    shape: knee
executors:
  initial: 2
  min: 1
  max: 40
  cores: 1
  memory_mb: 2048
actuator: agent
"""


# ---- running the CLI -------------------------------------------------------------------------


def henge(
    *args: str,
    url: str | None = None,
    token: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run the real ``henge`` executable. Only what is given here reaches it: no HENGE_*
    variables, ``.env`` or config file of the person running the tests."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("HENGE_")}
    child_env["HENGE_CONFIG"] = "/nonexistent/henge-cli.yaml"
    # A wide terminal, so tables do not fold 36-character ids over two lines.
    child_env["COLUMNS"] = "250"
    if url is not None:
        child_env["HENGE_URL"] = url
    if token is not None:
        child_env["HENGE_TOKEN"] = token
    child_env.update(env or {})
    return subprocess.run(
        [*henge_command(), *args],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def ok_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(result))


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit code 1, nothing on stdout, one line on stderr holding every fragment, no traceback."""
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert result.stdout == ""
    return lines[0]


def report(start: datetime, executors: int = 4, processed: int = 19000) -> dict[str, Any]:
    end = start + timedelta(seconds=10)
    return {
        "window_start": start.isoformat(),
        "window_end": end.isoformat(),
        "executors": executors,
        "cores_per_executor": 1,
        "busy_core_ms": 23000,
        "max_parallelism": 8,
        "sources": [
            {
                "name": "events",
                "arrived_rows": 20000,
                "processed_rows": processed,
                "backlog_rows": 3000,
            }
        ],
        "batches": [{"start": start.isoformat(), "end": end.isoformat(), "rows": processed}],
        "latency_ms": {"mean": 1200, "p95": 1800, "p99": 2100},
        "edges": [{"parent": "src", "child": "filter", "sent": 20000, "executed": processed}],
    }


# ---- one server for the module ---------------------------------------------------------------


# The CLI tests need no particular policy: a baseline keeps them independent of the Henge
# policy's start-up. Without rounds, registered jobs stay queued (target 0) for the assertions.
NO_ROUNDS = {"HENGE_POLICY": "static", "HENGE_SCHEDULER_ENABLED": "false"}


@pytest.fixture(scope="module")
def server(pg_server: str) -> Iterator[ServerHandle]:
    url = create_database(pg_server, prefix="henge_cli")
    try:
        with run_server(url, env=NO_ROUNDS) as handle:
            yield handle
    finally:
        drop_database(pg_server, url)


@pytest.fixture(scope="module")
def tenant(server: ServerHandle) -> dict[str, Any]:
    """A tenant for the job tests, created through the CLI."""
    return ok_json(
        henge("tenant", "create", "jobs-tenant", "--json", url=server.url, token=server.admin_token)
    )


def write_job(tmp_path: Path, name: str, **replace: str) -> Path:
    text = JOB_YAML.format(name=name)
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


# ---- help ------------------------------------------------------------------------------------


def test_help_says_what_henge_and_register_do():
    top = ok(henge("--help"))
    assert "SLO-driven scheduling of Spark Structured Streaming jobs" in top
    for command in ("serve", "migrate", "tenant", "job", "rounds"):
        assert re.search(rf"│ {command}\s", top), command
    register = ok(henge("job", "register", "--help"))
    assert "Register a streaming job with its SLO" in register
    assert "agent token" in register
    assert "--file" in register
    # Bracketed help text is not eaten as Rich markup.
    assert "HENGE_URL" in register and "HENGE_TOKEN" in register


# ---- tenants ---------------------------------------------------------------------------------


def test_tenant_create_list_table_and_json(server: ServerHandle):
    admin = {"url": server.url, "token": server.admin_token}
    table = ok(henge("tenant", "create", "ads", **admin))
    match = re.search(rf"tenant ads created, id ({UUID})", table)
    assert match, table
    ads_id = match.group(1)
    token_match = re.search(r"token \(shown once.*\): (hgt_\S+)", table)
    assert token_match, table

    created = ok_json(henge("tenant", "create", "billing", "--json", **admin))
    assert created["name"] == "billing"
    assert re.fullmatch(UUID, created["id"]) and created["token"].startswith("hgt_")

    listed = ok(henge("tenant", "list", **admin))
    for tenant_id, name in ((ads_id, "ads"), (created["id"], "billing")):
        row = next(line for line in listed.splitlines() if tenant_id in line)
        assert name in row
    listed_json = ok_json(henge("tenant", "list", "--json", **admin))
    by_id = {t["id"]: t for t in listed_json}
    assert by_id[ads_id]["name"] == "ads" and by_id[created["id"]]["name"] == "billing"
    assert all("token" not in t for t in listed_json)

    # The token printed in the table works: a new tenant has no jobs.
    assert ok_json(henge("job", "list", "--json", url=server.url, token=token_match.group(1))) == []


def test_duplicate_tenant_is_one_line_naming_the_field(server: ServerHandle):
    admin = {"url": server.url, "token": server.admin_token}
    ok(henge("tenant", "create", "dup", **admin))
    one_line_error(henge("tenant", "create", "dup", **admin), "HTTP 409", "name", "'dup'")


# ---- jobs ------------------------------------------------------------------------------------


def test_job_register_list_show_history_remove(
    server: ServerHandle, tenant: dict[str, Any], tmp_path: Path
):
    as_tenant = {"url": server.url, "token": tenant["token"]}
    registered = ok(
        henge("job", "register", "--file", str(write_job(tmp_path, "pageload")), **as_tenant)
    )
    match = re.search(rf"job pageload registered: id ({UUID}), status queued", registered)
    assert match, registered
    job_id = match.group(1)
    token_match = re.search(r"agent token \(shown once.*\): (hga_\S+)", registered)
    assert token_match, registered
    agent_token = token_match.group(1)

    # The agent posts three windows with the printed token.
    with httpx.Client(base_url=server.url, timeout=10) as http:
        for i, executors in enumerate((3, 4, 5)):
            answer = http.post(
                f"/v1/jobs/{job_id}/reports",
                json=report(T0 + timedelta(seconds=10 * i), executors=executors),
                headers={"Authorization": f"Bearer {agent_token}"},
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["target_executors"] == 0  # queued until admitted

    # list: table and JSON
    table = ok(henge("job", "list", **as_tenant))
    row = next(line for line in table.splitlines() if job_id in line)
    assert "pageload" in row and "35" in row and "queued" in row
    assert "juice>=1.0" in row and "mean latency<=60.0ms" in row
    jobs = ok_json(henge("job", "list", "--json", **as_tenant))
    assert [j["id"] for j in jobs] == [job_id]
    assert jobs[0]["slo"]["latency_ms"] == 60 and jobs[0]["executors"]["max"] == 40
    assert jobs[0]["last_report_at"] is not None

    # show: table and JSON
    shown = ok(henge("job", "show", job_id, **as_tenant))
    assert "job pageload" in shown and job_id in shown
    assert "target 0 (min 1, max 40, 1 core(s), 2048 MiB each)" in shown
    assert "knee" in shown and "agent" in shown
    assert "waiting for admission" in shown
    detail = ok_json(henge("job", "show", job_id, "--json", **as_tenant))
    assert detail["id"] == job_id and detail["priority"] == 35
    assert detail["executors"] == {
        "initial": 2,
        "min": 1,
        "max": 40,
        "cores": 1,
        "memory_mb": 2048,
        "target": 0,
    }

    # history: JSON has the three windows, oldest first; the table one row per window
    history = ok_json(henge("job", "history", job_id, "--json", **as_tenant))
    assert history["job_id"] == job_id
    assert [p["executors"] for p in history["points"]] == [3, 4, 5]
    ends = [datetime.fromisoformat(p["window_end"]) for p in history["points"]]
    assert ends == [T0 + timedelta(seconds=10 * i) for i in (1, 2, 3)]
    limited = ok_json(henge("job", "history", job_id, "--json", "--limit", "2", **as_tenant))
    assert [p["executors"] for p in limited["points"]] == [4, 5]
    since = ok_json(
        henge("job", "history", job_id, "--json", "--since", "2026-01-01T12:00:15", **as_tenant)
    )
    assert [p["executors"] for p in since["points"]] == [4, 5]
    history_table = ok(henge("job", "history", job_id, **as_tenant))
    assert f"history of {job_id}" in history_table
    rows = [line for line in history_table.splitlines() if "2026-01-01" in line]
    assert len(rows) == 3
    assert [re.findall(r"│\s*(\d+)\s*│", line)[0] for line in rows] == ["3", "4", "5"]

    # The admin sees every tenant's jobs.
    admin_jobs = ok_json(henge("job", "list", "--json", url=server.url, token=server.admin_token))
    assert job_id in {j["id"] for j in admin_jobs}

    # remove
    assert ok(henge("job", "remove", job_id, **as_tenant)).strip() == f"job {job_id} removed"
    assert ok_json(henge("job", "list", "--json", **as_tenant)) == []
    one_line_error(henge("job", "show", job_id, **as_tenant), "HTTP 404", "no such job")


def test_job_register_json_and_other_tenant_cannot_see_it(
    server: ServerHandle, tenant: dict[str, Any], tmp_path: Path
):
    created = ok_json(
        henge(
            "job",
            "register",
            "--file",
            str(write_job(tmp_path, "clicks")),
            "--json",
            url=server.url,
            token=tenant["token"],
        )
    )
    assert created["name"] == "clicks" and created["status"] == "queued"
    assert created["agent_token"].startswith("hga_")
    other = ok_json(
        henge("tenant", "create", "snoop", "--json", url=server.url, token=server.admin_token)
    )
    as_other = {"url": server.url, "token": other["token"]}
    assert ok_json(henge("job", "list", "--json", **as_other)) == []
    one_line_error(henge("job", "show", created["id"], **as_other), "HTTP 404", "no such job")
    # An agent token reads nothing.
    one_line_error(
        henge("job", "list", url=server.url, token=created["agent_token"]),
        "HTTP 403",
        "agent tokens can only post reports",
    )


def test_job_file_may_be_json(server: ServerHandle, tenant: dict[str, Any], tmp_path: Path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"name": "json-job", "priority": 2, "slo": {"juice": 0.9}}))
    created = ok_json(
        henge("job", "register", "-f", str(path), "--json", url=server.url, token=tenant["token"])
    )
    assert created["name"] == "json-job" and created["slo"]["juice"] == 0.9
    assert created["executors"]["max"] == 40  # defaults filled in


# ---- rounds ----------------------------------------------------------------------------------


def test_rounds_json_and_table(fresh_pg_url: str, tmp_path: Path):
    """A server that runs a round every 0.3 s admits a registered job; `henge rounds` shows it."""
    env = {"HENGE_POLICY": "static", "HENGE_ROUND_INTERVAL_S": "0.3"}
    with run_server(fresh_pg_url, env=env) as rounds_server:
        admin = {"url": rounds_server.url, "token": rounds_server.admin_token}
        tenant = ok_json(henge("tenant", "create", "r", "--json", **admin))
        job = ok_json(
            henge(
                "job",
                "register",
                "-f",
                str(write_job(tmp_path, "pageload")),
                "--json",
                url=rounds_server.url,
                token=tenant["token"],
            )
        )
        deadline = time.monotonic() + 20
        while True:
            data = ok_json(henge("rounds", "--json", "--limit", "50", **admin))
            admits = [r for r in data if r["action"] == "admit"]
            if (admits and len(data) >= 2) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert admits, data
        assert f"admitted {job['name']}" in admits[0]["reason"]
        assert admits[0]["policy"] == "static"
        assert [a["job_id"] for a in admits[0]["actions"]] == [job["id"]]
        numbers = [r["number"] for r in data]
        assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
        for entry in data:
            assert entry["max_utility"] >= entry["total_utility"] >= 0
        limited = ok_json(henge("rounds", "--json", "--limit", "1", **admin))
        assert len(limited) == 1 and limited[0]["number"] >= numbers[0]

        shown = ok_json(henge("job", "show", job["id"], "--json", **admin))
        assert shown["status"] == "admitted" and shown["executors"]["target"] == 2

        # Every round since the start: under load, the calls above may take longer than 50
        # rounds of 0.3 s, and the admission would have left the newest 50.
        table = ok(henge("rounds", "--limit", "10000", **admin))
        row = next(line for line in table.splitlines() if "admit" in line)
        assert f"│ {admits[0]['number']} " in row and f"admitted {job['name']}" in row
        assert admits[0]["state"] in row


# ---- errors: one line on stderr, exit code 1 -------------------------------------------------


def test_missing_job_file(server: ServerHandle, tenant: dict[str, Any], tmp_path: Path):
    missing = tmp_path / "nope.yaml"
    one_line_error(
        henge("job", "register", "--file", str(missing), url=server.url, token=tenant["token"]),
        f"cannot read {missing}",
        "No such file or directory",
    )


def test_invalid_yaml_job_file(server: ServerHandle, tenant: dict[str, Any], tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: pageload\nslo: {juice: [1.0\n")
    one_line_error(
        henge("job", "register", "--file", str(bad), url=server.url, token=tenant["token"]),
        f"{bad} is not valid YAML",
    )


def test_yaml_that_is_not_a_mapping(server: ServerHandle, tenant: dict[str, Any], tmp_path: Path):
    listed = tmp_path / "list.yaml"
    listed.write_text("- name: pageload\n- priority: 3\n")
    one_line_error(
        henge("job", "register", "--file", str(listed), url=server.url, token=tenant["token"]),
        f"{listed} must hold a job",
        "mapping",
    )


def test_unreachable_server():
    closed = f"http://127.0.0.1:{free_port()}"
    one_line_error(
        henge("tenant", "list", url=closed, token="whatever"),
        f"cannot reach the Henge API at {closed}",
        "henge serve",
    )


def test_wrong_token_is_401(server: ServerHandle):
    one_line_error(
        henge("tenant", "list", url=server.url, token="hgt_not-a-real-token"),
        "HTTP 401",
        "unknown token",
        "check the token",
    )
    one_line_error(henge("job", "list", url=server.url), "HTTP 401", "missing bearer token")


def test_validation_error_names_the_field(
    server: ServerHandle, tenant: dict[str, Any], tmp_path: Path
):
    as_tenant = {"url": server.url, "token": tenant["token"]}
    juice = write_job(tmp_path, "too-juicy", **{"juice: 1.0": "juice: 1.5"})
    line = one_line_error(
        henge("job", "register", "-f", str(juice), **as_tenant), "HTTP 422", "slo.juice"
    )
    assert "1" in line.split("slo.juice", 1)[1]
    # Bracketed text in messages is shown as written, not eaten as markup.
    bounds = write_job(tmp_path, "bounds", **{"initial: 2": "initial: 50"})
    one_line_error(
        henge("job", "register", "-f", str(bounds), **as_tenant),
        "HTTP 422",
        "executors.initial",
        "[min, max] = [1, 40]",
    )
    unknown = write_job(tmp_path, "typo", **{"priority: 35": "priorty: 35"})
    one_line_error(
        henge("job", "register", "-f", str(unknown), **as_tenant), "HTTP 422", "priority"
    )
    # Nothing was stored.
    names = {j["name"] for j in ok_json(henge("job", "list", "--json", **as_tenant))}
    assert not names & {"too-juicy", "bounds", "typo"}


def test_tenant_token_on_admin_command_is_403(server: ServerHandle, tenant: dict[str, Any]):
    as_tenant = {"url": server.url, "token": tenant["token"]}
    one_line_error(henge("tenant", "list", **as_tenant), "HTTP 403", "admin token required")
    one_line_error(henge("tenant", "create", "sneaky", **as_tenant), "HTTP 403")
    one_line_error(henge("rounds", **as_tenant), "HTTP 403", "admin token required")


def test_admin_cannot_register_jobs(server: ServerHandle, tmp_path: Path):
    one_line_error(
        henge(
            "job",
            "register",
            "-f",
            str(write_job(tmp_path, "x")),
            url=server.url,
            token=server.admin_token,
        ),
        "HTTP 403",
        "tenant token required",
    )


# ---- henge serve -----------------------------------------------------------------------------


def serve(database_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return henge(
        "serve",
        env={
            "HENGE_DATABASE_URL": database_url,
            "HENGE_PORT": str(free_port()),
            "HENGE_LOG_FORMAT": "json",
            **env,
        },
        timeout=60,
    )


def last_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Refused to start: non-zero exit, no traceback, the last stderr line is the reason."""
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in last, f"{fragment!r} not in {last!r}"
    return last


def test_serve_refuses_an_unmigrated_database(fresh_pg_url: str):
    result = serve(fresh_pg_url, HENGE_ADMIN_TOKEN="t" * 32)
    last_line_error(result, "empty database", "run `henge migrate`")


def test_serve_needs_an_admin_token(fresh_pg_url: str):
    result = serve(fresh_pg_url)
    last_line_error(result, "HENGE_ADMIN_TOKEN")


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"HENGE_POLICY_PARAMS": '{"peak_by_rises": "false"}'}, "peak_by_rises of ProductSettings"),
        ({"HENGE_POLICY_PARAMS": '{"no_such_knob": 1}'}, "unknown setting(s) no_such_knob"),
        ({"HENGE_POLICY": "no-such-policy"}, "unknown policy 'no-such-policy'"),
    ],
)
def test_serve_refuses_bad_policy_settings_in_one_line(
    fresh_pg_url: str, env: dict[str, str], fragment: str
):
    ok(henge("migrate", env={"HENGE_DATABASE_URL": fresh_pg_url}))
    result = serve(fresh_pg_url, HENGE_ADMIN_TOKEN="t" * 32, **env)
    last_line_error(result, "HENGE_POLICY_PARAMS", fragment)


def test_serve_with_an_unreachable_database():
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nowhere"
    result = serve(url, HENGE_ADMIN_TOKEN="t" * 32)
    last_line_error(result, "cannot reach the registry database")


# ---- henge bench ingest ----------------------------------------------------------------------


def test_bench_ingest_against_a_running_server(server: ServerHandle, tmp_path: Path):
    out_file = tmp_path / "ingest.json"
    # --url is a flag only: without it (HENGE_URL is not read) the bench starts its own server.
    result = henge(
        "bench", "ingest", "--url", server.url, "--token", server.admin_token,
        "--agents", "2", "--seconds", "1", "--warmup", "0.2", "--json", str(out_file),
    )  # fmt: skip
    text = ok(result)
    assert "reports/s" in text and "p99" in text and "goal" in text
    figures = json.loads(out_file.read_text())
    assert figures["agents"] == 2 and figures["errors"] == 0
    assert figures["server"] == {"url": server.url, "started_by_bench": False}
    assert figures["reports"] > 0 and figures["reports_per_s"] > 0
    assert 0 < figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert figures["goal"]["reports_per_s"] == 1000 and figures["goal"]["p99_ms"] == 100
    assert figures["batch"] == 10 and figures["offered_per_s"] is None
    # The windows were stored for the bench's own jobs.
    jobs = ok_json(henge("job", "list", "--json", url=server.url, token=server.admin_token))
    bench_jobs = [j for j in jobs if j["name"].startswith("ingest-")]
    assert len(bench_jobs) == 2 and all(j["last_report_at"] for j in bench_jobs)


def test_bench_ingest_at_a_set_rate_one_window_per_request(server: ServerHandle, tmp_path: Path):
    out_file = tmp_path / "ingest.json"
    ok(henge(
        "bench", "ingest", "--url", server.url, "--token", server.admin_token, "--agents", "2",
        "--seconds", "2", "--warmup", "0.2", "--batch", "1", "--rate", "20",
        "--json", str(out_file),
    ))  # fmt: skip
    figures = json.loads(out_file.read_text())
    assert figures["batch"] == 1 and figures["offered_per_s"] == 20 and figures["errors"] == 0
    # Paced, not as fast as answered: about 20 a second (a loaded machine may fall behind).
    assert 0 < figures["reports_per_s"] <= 25


def test_bench_soak_samples_memory_and_registry_while_retention_keeps_it_level(tmp_path: Path):
    out_file = tmp_path / "soak.json"
    text = ok(henge(
        "bench", "soak", "--agents", "6", "--seconds", "16", "--sub-window-s", "1",
        "--round-interval-s", "2", "--retention-s", "4", "--purge-interval-s", "2",
        "--sample-s", "2", "--json", str(out_file),
    ))  # fmt: skip
    assert "second half: memory" in text and "goal" in text
    figures = json.loads(out_file.read_text())
    samples = figures["samples"]
    assert figures["errors"] == 0 and figures["reports"] > 40
    assert len(samples) >= 5 and all(x["rss_mb"] > 20 for x in samples)
    assert samples[-1]["rounds"] > 0
    # Retention on: the registry holds only the last seconds of windows, far fewer than posted.
    assert 0 < samples[-1]["windows"] < figures["reports"] / 2
    assert figures["rss_growth_second_half"] is not None


def test_bench_history_measures_a_full_history_and_a_roll_up(tmp_path: Path, pg_server: str):
    out_file = tmp_path / "history.json"
    text = ok(henge("bench", "history", "--jobs", "2", "--days", "1", "--pg-server", pg_server,
                    "--json", str(out_file)))  # fmt: skip
    assert "MiB a job" in text and "windows/s" in text
    figures = json.loads(out_file.read_text())
    assert figures["minutes_per_job"] == 1440
    assert 720 * 24 < figures["bytes_per_job"] < 10 * 2**20  # the packed hours, key and index
    assert figures["read_all_ms"] > 0 and figures["read_hour_ms"] > 0
    assert figures["rollup_windows"] == 2 * 360  # an hour of 10-s windows for each job


def test_bench_ingest_needs_the_admin_token(server: ServerHandle, tenant: dict[str, Any]):
    one_line_error(
        henge("bench", "ingest", "--url", server.url, "--seconds", "1", token=tenant["token"]),
        "creating the bench tenant",
        "HTTP 403",
    )


def test_many_concurrent_agents_do_not_starve_the_connection_pool(
    server: ServerHandle, tmp_path: Path
):
    # More agents than the API's threadpool: each request must finish with the one connection it
    # took, never wait for a second one while holding the first (that deadlocked at 96 agents).
    out_file = tmp_path / "ingest.json"
    ok(henge(
        "bench", "ingest", "--url", server.url, "--token", server.admin_token,
        "--agents", "64", "--seconds", "3", "--warmup", "0.5", "--json", str(out_file),
    ))  # fmt: skip
    figures = json.loads(out_file.read_text())
    # Deadlocked, the server stored nothing and every agent timed out; how many get through in
    # three seconds depends on the machine's load, so only "no errors, progress" is asserted.
    assert figures["errors"] == 0
    assert figures["reports"] > 0


def test_bench_reference_plays_one_reactive_reference_per_stretch(tmp_path: Path):
    out_file = tmp_path / "reference.json"
    ok(henge(
        "bench", "reference", "--scenarios", "demo", "--seeds", "1", "--lookbacks", "20",
        "--means", "40", "--foresight", "30", "--quiesce", "30", "--json", str(out_file),
        timeout=300,
    ))  # fmt: skip
    figures = json.loads(out_file.read_text())["demo"]
    assert list(figures) == [
        "oracle-played-quiesce-30s", "true-models-last-20s-quiesce-30s",
        "true-models-mean-last-40s-quiesce-30s", "clairvoyant-next-10s-quiesce-30s",
        "clairvoyant-mean-next-30s-quiesce-30s",
    ]  # fmt: skip
    for row in figures.values():
        assert row["seeds"] == [1] and 0 < row["oracle_fraction"]["mean"] <= 1.0 + 1e-9
        assert row["changes_per_job_day"] > 0  # the first decision moves the admission sizes


@pytest.mark.parametrize("option", ["--lookbacks", "--means", "--foresight"])
@pytest.mark.parametrize("stretches", ["30,abc", "0", "inf"])
def test_bench_reference_refuses_stretches_that_are_not_positive_seconds(
    option: str, stretches: str
):
    one_line_error(henge("bench", "reference", option, stretches), option)


@pytest.mark.parametrize("quiesce", ["nan", "inf", "-10"])
def test_bench_reference_refuses_a_quiesce_that_is_not_finite_seconds(quiesce: str):
    one_line_error(henge("bench", "reference", "--quiesce", quiesce), "--quiesce")


@pytest.mark.parametrize(
    ("params", "fragments"),
    [
        ('{"backlog_debt": 0}', ("'backlog_debt'", "not a policy of this bench", '{"henge": {')),
        ('{"henge": 3}', ("settings of 'henge' must be a JSON object",)),
        ('["henge"]', ("--params must be a JSON object",)),
        ('{"henge": {"backlog_debt": -1}}', ("--params of 'henge'", "backlog_debt must be >= 0")),
        ('{"henge": {"nope": 1}}', ("--params of 'henge'", "nope")),
        ('{"utilitarian": {}}', ("'utilitarian'", "not a policy of this bench (henge)")),
    ],
)
def test_bench_refuses_params_that_are_not_settings_by_policy(params: str, fragments: tuple):
    # Checked before any run: a bench of many scenarios must not fail at its first run.
    result = henge("bench", "--scenarios", "demo", "--policies", "henge", "--params", params)
    one_line_error(result, *fragments)


@pytest.mark.parametrize(
    ("policies", "params", "fragments"),
    [
        ("henge@a b", None, ("'henge@a b' is no variant name", "henge@wide")),
        ("henge@", None, ("'henge@' is no variant name",)),
        ("nope@fast", None, ("unknown policy 'nope'",)),
        ("henge,static,henge", None, ("--policies names 'henge' twice",)),
        ("henge@fast", '{"henge@fast": {"nope": 1}}', ("--params of 'henge@fast'", "nope")),
        ("henge@fast", '{"henge": {}}', ("'henge'", "not a policy of this bench (henge@fast)")),
    ],
)
def test_bench_refuses_a_variant_it_cannot_run(policies: str, params: str | None, fragments: tuple):
    given = ["--params", params] if params else []
    result = henge("bench", "--scenarios", "demo", "--policies", policies, *given)
    one_line_error(result, *fragments)


def test_bench_params_reach_the_runs_of_the_policy_they_name(tmp_path: Path):
    out = tmp_path / "bench"
    ok(henge(
        "bench", "--scenarios", "demo", "--policies", "henge,static", "--seed", "1",
        "--params", '{"henge": {"quiesce_s": 20, "peak_by_rises": true}}', "--out", str(out),
        timeout=300,
    ))  # fmt: skip
    runs = {p: json.loads((out / "runs" / f"demo--{p}--seed1.json").read_text())
            for p in ("henge", "static")}  # fmt: skip
    assert runs["henge"]["policy_params"] == {"quiesce_s": 20, "peak_by_rises": True}
    assert runs["static"]["policy_params"] == {}
    title = (out / "results.md").read_text().splitlines()[0]
    assert title == '# henge bench (seeds 1; henge with {"quiesce_s": 20, "peak_by_rises": true})'
