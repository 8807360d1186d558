"""input history: each job's arrived and processed rows per minute, an hour a row, and the
roll-up's mark

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from scheduler.registry.types import UTCDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "input_hours",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("hour", UTCDateTime(), nullable=False),
        sa.Column("minutes", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_input_hours_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "hour", name=op.f("pk_input_hours")),
    )
    op.create_table(
        "registry_marks",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_registry_marks")),
    )


def downgrade() -> None:
    op.drop_table("registry_marks")
    op.drop_table("input_hours")
