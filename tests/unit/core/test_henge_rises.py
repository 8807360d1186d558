"""How often a job's input rises faster than executors can follow (``henge``'s rises), and the
lending it allows a job that keeps executors for its recent peak."""

from __future__ import annotations

import json

import pytest

from scheduler.core.model import ActionKind, Plan
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.policies.henge.rises import (
    Rises,
    chance_within,
    observe_rise,
    rises_from_json,
    time_between,
)

from .henge_builders import at
from .test_henge_product import decide, fitted, streaming, targets

SPAN_S, HEADROOM, ALPHA = 60.0, 0.2, 0.3


def played(rates: list[tuple[float, float]]) -> Rises:
    """The record after rounds at the given (seconds, input rate)."""
    rises = None
    for t, rate in rates:
        rises = observe_rise(rises, t, rate, SPAN_S, HEADROOM, ALPHA)
    assert rises is not None
    return rises


def steady_with_bursts(starts: list[float], end: float) -> list[tuple[float, float]]:
    """Rounds every 10 s at 1000 rows/s, three times that for a minute from each start."""
    return [
        (float(t), 3000.0 if any(s <= t < s + 60 for s in starts) else 1000.0)
        for t in range(0, int(end) + 1, 10)
    ]


def test_a_rise_begins_once_however_long_it_lasts_and_its_interval_is_averaged() -> None:
    rises = played(steady_with_bursts([300, 1500], 1600))
    # Two bursts, each one rise from its first round to its end.
    assert rises.last_start_s == 1500 and rises.interval_s == 1200
    rises = played(steady_with_bursts([300, 1500, 1800], 1900))
    assert rises.interval_s == pytest.approx(1200 + ALPHA * (300 - 1200))


def test_input_that_moves_within_headroom_shows_no_rise() -> None:
    rates = [(float(t), 1000.0 * (1.15 if (t // 10) % 2 else 1.0)) for t in range(0, 3600, 10)]
    rises = played(rates)
    assert rises.last_start_s is None and chance_within(rises, 3600, SPAN_S) == 1.0


def test_a_slow_climb_is_a_rise_only_when_it_beats_headroom_within_the_span() -> None:
    # +2 % a round: 1.02^6 = 1.13 over a minute, within headroom.
    slow = played([(10.0 * k, 1000.0 * 1.02**k) for k in range(100)])
    assert slow.last_start_s is None
    # +4 % a round: 1.04^6 = 1.27 over a minute, one long rise.
    fast = played([(10.0 * k, 1000.0 * 1.04**k) for k in range(100)])
    assert fast.last_start_s == 50.0 and fast.rising and fast.interval_s is None


def test_the_chance_of_a_rise_within_the_span() -> None:
    assert chance_within(None, 0.0, SPAN_S) == 1.0
    one = played(steady_with_bursts([300], 1000))
    # One rise only: the time since it stands for the time between rises.
    assert one.last_start_s == 300 and one.interval_s is None
    assert chance_within(one, 1000, SPAN_S) == pytest.approx(60 / 700)
    assert chance_within(one, 330, SPAN_S) == 1.0  # (just begun)
    two = played(steady_with_bursts([300, 1500], 1600))
    assert chance_within(two, 1600, SPAN_S) == pytest.approx(60 / 1200)
    # Longer since the last rise than between rises: the longer time is the better guess.
    assert chance_within(two, 1500 + 2400, SPAN_S) == pytest.approx(60 / 2400)
    often = played(steady_with_bursts(list(range(0, 1200, 90)), 1200))
    assert often.interval_s == 90 and chance_within(often, 1200, SPAN_S) == pytest.approx(60 / 90)


def test_the_time_between_rises_counts_the_calm_before_the_first() -> None:
    assert time_between(played(steady_with_bursts([], 1000)), 1000) is None
    # One rise, at 3000 s after the input was first seen at 0: 3000 s without one, then 200 s
    # since; later the time since it is the longer.
    one = played(steady_with_bursts([3000], 3200))
    assert one.first_s == 0.0 and one.interval_s is None
    assert time_between(one, 3200) == 3000.0
    assert time_between(one, 9000) == 6000.0
    # A record stored before the first sight was kept: the time since the rise, as before.
    assert time_between(one._replace(first_s=None), 3200) == 200.0
    # Two rises: their average interval, or the time since the last when longer.
    two = played(steady_with_bursts([300, 1500], 1600))
    assert time_between(two, 1600) == 1200.0 and time_between(two, 4000) == 2500.0


def test_the_record_survives_json() -> None:
    rises = {"a": played(steady_with_bursts([300, 1500], 1530)), "b": played([(0.0, 5.0)])}
    stored = json.loads(json.dumps({k: list(v) for k, v in rises.items()}))
    assert rises_from_json(stored) == rises
    # A record stored without the first sight (four fields) is read with none.
    older = {k: v[:4] for k, v in stored.items()}
    assert rises_from_json(older) == {k: v._replace(first_s=None) for k, v in rises.items()}
    state = ProductState(rises=rises)
    policy = HengeProductPolicy()
    assert policy.load_state(json.loads(json.dumps(policy.dump_state(state)))) == state


def lending_plan(
    rises: Rises | None, *, rate: float = 3000.0, low_priority: float = 50.0, **settings: object
) -> Plan:
    """`peer` (priority 90) meets its SLO on the 20 executors its recent peak of 6000 rows/s
    needs, at ``rate`` now (3000 rows/s: 12 with `headroom`); `low` misses on 4 and needs 8;
    no core is free."""
    policy = HengeProductPolicy.from_params({"lend_between_rises": True, **settings})
    peer = streaming("peer", 20, rate, priority=90.0)
    low = streaming("low", 4, 2500.0, priority=low_priority)
    state = ProductState(
        models=fitted([peer, low]),
        peaks={"peer": (6000.0, at(0).timestamp())},
        rises={} if rises is None else {"peer": rises},
    )
    plan, _ = decide(policy, [peer, low], state, 0, free=0.0)
    return plan


def rises_every(interval_s: float, since_s: float = 300.0) -> Rises:
    """Rises every ``interval_s``, the last ``since_s`` ago."""
    now = at(0).timestamp()
    return Rises(((now - 10, 3000.0),), False, now - since_s, interval_s)


def rises_once(since_s: float) -> Rises:
    """One rise, ``since_s`` ago."""
    now = at(0).timestamp()
    return Rises(((now - 10, 3000.0),), False, now - since_s, None)


def test_a_job_whose_only_rise_has_long_passed_lends_its_peak_executors() -> None:
    """`high-min`: after a spike of an hour, two top jobs kept the executors their peak needed
    while the third, cut during the spike, earned nothing for half an hour. A job
    that rose once an hour ago has gone at least that long without another: the chance of one
    within the two quiesces lent executors take to come back is 120 / 3600, so it lends to a
    job missing its SLO (here of a lower priority)."""
    plan = lending_plan(rises_once(since_s=3600.0))
    assert plan.action is ActionKind.RECONFIGURE, plan.reason
    assert targets(plan) == {"peer": 12, "low": 10}, plan.reason


def test_a_job_whose_rises_are_rare_lends_its_peak_executors_to_a_lower_priority() -> None:
    """`bursts-realtime`: bursts of a minute about three times an hour kept the top tier at
    its burst size for the whole hour its peak was remembered, and the lower tier starved.
    With a rise every 20 minutes, the chance of one within the two quiesces lent executors take
    to come back is 0.1: the 8 executors above what 3000 rows/s need are worth 9 to `peer` and
    50 to `low`, which takes what its own input needs with `headroom`."""
    plan = lending_plan(rises_every(1200.0))
    assert plan.action is ActionKind.RECONFIGURE, plan.reason
    assert targets(plan) == {"peer": 12, "low": 10}, plan.reason


@pytest.mark.parametrize(
    ("rises", "settings"),
    [
        (None, {}),  # never seen rising: nothing known of its rhythm
        (rises_once(since_s=60.0), {}),  # its only rise began a minute ago
        (rises_every(50.0, 10.0), {}),  # a rise every 50 s: one is due before they come back
        (rises_every(1200.0), {"lend_between_rises": False}),
        # A rise every 4 minutes: a chance of 0.5 within the two quiesces, so the 8 executors
        # are worth 45 to `peer`, more than the 40 `low` would gain with them.
        (rises_every(240.0, 10.0), {"low_priority": 40.0}),
    ],
)
def test_a_job_keeps_its_peak_executors_unless_its_rises_are_known_and_rare(
    rises: Rises | None, settings: dict[str, object]
) -> None:
    plan = lending_plan(rises, **settings)
    assert plan.action is ActionKind.NONE and not plan.changes, plan.reason
    assert "missing their SLO: low" in plan.reason


def test_the_same_rare_rises_lend_to_that_lower_priority_job() -> None:
    plan = lending_plan(rises_every(1200.0), low_priority=40.0)
    assert targets(plan) == {"peer": 12, "low": 10}, plan.reason


def test_lending_between_rises_stops_at_what_the_input_of_the_moment_needs() -> None:
    """At 4000 rows/s (16 executors with `headroom`) only 4 may go, however rare the rises:
    `low` gets the 8 it needs, not the 10 it would take with `headroom`. At 5000 rows/s (all
    20) nothing may go."""
    plan = lending_plan(rises_every(3600.0), rate=4000.0)
    assert targets(plan) == {"peer": 16, "low": 8}, plan.reason
    plan = lending_plan(rises_every(3600.0), rate=5000.0)
    assert plan.action is ActionKind.NONE and not plan.changes, plan.reason


def test_a_dip_of_one_round_lends_no_more_than_the_input_of_the_last_quiesce_needs() -> None:
    """At 3000 rows/s now but 4000 rows/s 30 s ago (within `quiesce_s`), `peer` lends down to
    the 16 executors 4000 rows/s needs with `headroom`, not to the 12 of the dip."""
    now = at(0).timestamp()
    dipped = Rises(((now - 30, 4000.0), (now - 10, 3000.0)), False, now - 300, 1200.0)
    plan = lending_plan(dipped)
    assert targets(plan) == {"peer": 16, "low": 8}, plan.reason


def test_a_round_records_the_rises_of_every_job_it_sees() -> None:
    """Rounds of `decide` on a job whose input bursts for a minute at 300 s and 1500 s: the
    policy's own state ends with the rhythm of its rises."""
    policy = HengeProductPolicy.from_params({"lend_between_rises": True})
    state = ProductState()
    for t, rate in steady_with_bursts([300, 1500], 1600):
        peer = streaming("peer", 20, rate, priority=90.0)
        _, state = decide(policy, [peer], state, t)
    rises = state.rises["peer"]
    assert rises.interval_s == 1200 and rises.last_start_s == at(1500).timestamp()
    # Off, nothing is recorded.
    off = HengeProductPolicy.from_params({"lend_between_rises": False})
    _, state = decide(off, [streaming("peer", 20, 3000.0)], ProductState(), 0)
    assert state.rises == {}
    # On by default.
    _, state = decide(HengeProductPolicy(), [streaming("peer", 20, 3000.0)], ProductState(), 0)
    assert set(state.rises) == {"peer"}


# -- `peak_by_rises`: the peak weighed by the chance of a rise (off by default) -------------------


def test_weighed_by_rare_rises_the_peak_of_a_passed_burst_is_lent() -> None:
    """A rise every 20 minutes: a chance of 0.1 within the two quiesces, so `peer` must be ready
    for 3000 + 0.1 × 3000 = 3300 rows/s (11 executors) instead of its peak's 20, and `low`
    takes what its own input needs with `headroom`."""
    plan = lending_plan(rises_every(1200.0), peak_by_rises=True)
    assert plan.action is ActionKind.RECONFIGURE, plan.reason
    assert targets(plan) == {"peer": 11, "low": 10}, plan.reason


def test_weighed_by_frequent_rises_most_of_the_peak_is_kept() -> None:
    """A rise every 4 minutes: a chance of 0.5, so `peer` must be ready for 4500 rows/s (15
    executors, worth its whole priority). Below that, the count its input of the last quiesce
    needs with `headroom` (12) is worth 45 to it, more than `low` (40) would gain: `low` gets
    the 4 it needs from the 5 above 15, and no `headroom`. (Unweighed, nothing moves: see
    `test_a_job_keeps_its_peak_executors_unless_its_rises_are_known_and_rare`.)"""
    plan = lending_plan(rises_every(240.0, 10.0), low_priority=40.0, peak_by_rises=True)
    assert plan.action is ActionKind.RECONFIGURE, plan.reason
    assert targets(plan) == {"peer": 15, "low": 8}, plan.reason
    unweighed = lending_plan(rises_every(240.0, 10.0), low_priority=40.0)
    assert unweighed.action is ActionKind.NONE and not unweighed.changes, unweighed.reason


def test_weighed_by_rises_the_peak_is_never_below_the_input_now() -> None:
    """Rises once an hour, the last 300 s ago, and this round's input (4000 or 5000 rows/s
    against 3000 a round ago) begins another: the time between rises averages to
    3600 + 0.3 × (300 − 3600) = 2610 s, a chance of 120 / 2610 = 0.046. At 4000 rows/s `peer`
    keeps what 4000 + 0.046 × 2000 = 4092 rows/s need (14) and `low` takes the rest with
    `headroom`; at 5000 rows/s, 17 for 5046 rows/s, and `low` gets the 3 left (it needs 4 more:
    closer). Never below what the input now needs (13 and 16)."""
    plan = lending_plan(rises_every(3600.0), rate=4000.0, peak_by_rises=True)
    assert targets(plan) == {"peer": 14, "low": 10}, plan.reason
    plan = lending_plan(rises_every(3600.0), rate=5000.0, peak_by_rises=True)
    assert targets(plan) == {"peer": 17, "low": 7}, plan.reason


@pytest.mark.parametrize(
    ("rises", "settings"),
    [
        (None, {}),  # never seen rising: the whole peak
        (rises_every(50.0, 10.0), {}),  # a rise due before executors could come back
        (rises_every(1200.0), {"lend_between_rises": False}),  # rises not counted
    ],
)
def test_weighed_by_rises_a_job_whose_rises_are_unknown_or_due_keeps_its_whole_peak(
    rises: Rises | None, settings: dict[str, object]
) -> None:
    plan = lending_plan(rises, peak_by_rises=True, **settings)
    assert plan.action is ActionKind.NONE and not plan.changes, plan.reason
    assert "missing their SLO: low" in plan.reason
