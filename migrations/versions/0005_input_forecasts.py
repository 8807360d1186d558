"""input forecasts: each job's latest forecast of its input, a row per job

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from scheduler.registry.types import UTCDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "input_forecasts",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("fitted_at", UTCDateTime(), nullable=False),
        sa.Column("start", UTCDateTime(), nullable=False),
        sa.Column("step_s", sa.Float(), nullable=False),
        sa.Column("mean", sa.LargeBinary(), nullable=False),
        sa.Column("upper", sa.LargeBinary(), nullable=False),
        sa.Column("naive", sa.LargeBinary(), nullable=False),
        sa.Column("error", sa.Float(), nullable=True),
        sa.Column("method", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_input_forecasts_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_input_forecasts")),
    )


def downgrade() -> None:
    op.drop_table("input_forecasts")
