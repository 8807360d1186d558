"""Built-in policies.

Each module registers itself with :func:`scheduler.core.policy.register_policy`.
"""

# Baselines (DESIGN §4) and Henge's state machine (DESIGN §3: henge-paper and henge).
from scheduler.core.policies import (  # noqa: F401
    dhalion,
    ds2,
    dstream_ratio,
    henge,
    spark_dra,
    static,
)
