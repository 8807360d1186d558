"""A digest of the plans ``decide()`` makes, run by ``test_compiled`` twice: in the test's own
process (the compiled core) and as a script over a copy of the plain sources.

    python plan_fingerprint.py   # prints the digest, then the file of scheduler.core.decide
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

SCENARIOS = (("demo", "henge"), ("flash-crowd", "utilitarian"), ("priority-greedy", "henge-paper"))
"""Short whole simulated runs: the product policy, the utilitarian one and the paper's."""


def fingerprint() -> str:
    from scheduler.bench.overhead import _moved, _warm_state, synthetic_snapshot
    from scheduler.core.decide import CoreSettings, decide
    from scheduler.sim.run import load, run_scenario

    digest = hashlib.sha256()
    settings = CoreSettings(policy="henge")
    snapshot, state = _warm_state(synthetic_snapshot(200, 1), settings)
    for k in range(6):
        at = snapshot.taken_at + timedelta(seconds=10 * k)
        plan, state = decide(_moved(snapshot, at, 8 + k), state, settings, at)
        digest.update(repr(plan).encode())
    for scenario, policy in SCENARIOS:
        result = run_scenario(load(scenario), policy, 1, oracle=False)
        digest.update(repr((result.actions, result.samples)).encode())
    return digest.hexdigest()


if __name__ == "__main__":
    from scheduler.bench.policies import quiet_worker
    from scheduler.core import decide as decide_module

    quiet_worker()
    print(fingerprint())
    print(decide_module.__file__)
