"""initial registry schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 11:00:39.734592
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from scheduler.registry.types import UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rounds",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("number", sa.BigInteger(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=False),
        sa.Column("policy", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("total_utility", sa.Float(), nullable=False),
        sa.Column("max_utility", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rounds")),
        sa.UniqueConstraint("number", name=op.f("uq_rounds_number")),
    )
    with op.batch_alter_table("rounds", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rounds_started_at"), ["started_at"], unique=False)

    op.create_table(
        "scheduler_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "state",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("last_round", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduler_state")),
    )
    op.create_table(
        "tenants",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("name", name=op.f("uq_tenants_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_tenants_token_hash")),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("priority", sa.Float(), nullable=False),
        sa.Column(
            "slo",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("executors_initial", sa.Integer(), nullable=False),
        sa.Column("executors_min", sa.Integer(), nullable=False),
        sa.Column("executors_max", sa.Integer(), nullable=False),
        sa.Column("executor_cores", sa.Integer(), nullable=False),
        sa.Column("executor_memory_mb", sa.Integer(), nullable=False),
        sa.Column("actuator", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=False),
        sa.Column("agent_token_hash", sa.String(length=64), nullable=False),
        sa.Column("target_executors", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("removed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_jobs_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint("agent_token_hash", name=op.f("uq_jobs_agent_token_hash")),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_status", ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_jobs_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(
            "uq_jobs_tenant_name_active",
            ["tenant_id", "name"],
            unique=True,
            postgresql_where=sa.text("status <> 'removed'"),
            sqlite_where=sa.text("status <> 'removed'"),
        )

    op.create_table(
        "actions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("round_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("from_executors", sa.Integer(), nullable=False),
        sa.Column("to_executors", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_actions_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_actions_round_id_rounds"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actions")),
    )
    with op.batch_alter_table("actions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_actions_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_actions_round_id"), ["round_id"], unique=False)

    op.create_table(
        "allocations",
        sa.Column("round_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("executors", sa.Integer(), nullable=False),
        sa.Column("utility", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_allocations_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["rounds.id"],
            name=op.f("fk_allocations_round_id_rounds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("round_id", "job_id", name=op.f("pk_allocations")),
    )
    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_allocations_job_id"), ["job_id"], unique=False)

    op.create_table(
        "metric_windows",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("window_start", UTCDateTime(), nullable=False),
        sa.Column("window_end", UTCDateTime(), nullable=False),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.Column("executors", sa.Integer(), nullable=False),
        sa.Column(
            "report",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("utility", sa.Float(), nullable=True),
        sa.Column("juice", sa.Float(), nullable=True),
        sa.Column("juice_raw", sa.Float(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("capacity", sa.Float(), nullable=True),
        sa.Column("input_rate", sa.Float(), nullable=True),
        sa.Column("processed_rate", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_metric_windows_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metric_windows")),
        sa.UniqueConstraint(
            "job_id",
            "window_start",
            "window_end",
            name=op.f("uq_metric_windows_job_id_window_start_window_end"),
        ),
    )
    with op.batch_alter_table("metric_windows", schema=None) as batch_op:
        batch_op.create_index("ix_metric_windows_job_end", ["job_id", "window_end"], unique=False)
        batch_op.create_index("ix_metric_windows_window_end", ["window_end"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("metric_windows", schema=None) as batch_op:
        batch_op.drop_index("ix_metric_windows_window_end")
        batch_op.drop_index("ix_metric_windows_job_end")

    op.drop_table("metric_windows")
    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_allocations_job_id"))

    op.drop_table("allocations")
    with op.batch_alter_table("actions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_actions_round_id"))
        batch_op.drop_index(batch_op.f("ix_actions_job_id"))

    op.drop_table("actions")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_jobs_tenant_name_active",
            postgresql_where=sa.text("status <> 'removed'"),
            sqlite_where=sa.text("status <> 'removed'"),
        )
        batch_op.drop_index(batch_op.f("ix_jobs_tenant_id"))
        batch_op.drop_index("ix_jobs_status")

    op.drop_table("jobs")
    op.drop_table("tenants")
    op.drop_table("scheduler_state")
    with op.batch_alter_table("rounds", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rounds_started_at"))

    op.drop_table("rounds")
