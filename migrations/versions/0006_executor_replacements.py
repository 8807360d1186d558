"""executor replacements: the executors a round asked a job's agent to replace, and when

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from scheduler.registry.types import JSONDoc, UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("replace_executors", JSONDoc, nullable=True))
        batch.add_column(sa.Column("replace_requested_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("replace_requested_at")
        batch.drop_column("replace_executors")
