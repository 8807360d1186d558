"""metric windows found by when they arrived

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 08:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("metric_windows", schema=None) as batch_op:
        batch_op.create_index(
            "ix_metric_windows_job_received", ["job_id", "received_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("metric_windows", schema=None) as batch_op:
        batch_op.drop_index("ix_metric_windows_job_received")
