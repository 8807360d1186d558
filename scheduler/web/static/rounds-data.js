// Rounds for a time range (oldest first) and what the pages derive from them.
import { getJSON } from './api.js';
import { jobLabel } from './format.js';
import { MAX_ROWS, apiRange } from './range.js';

// The newest round's time anchors "last …" ranges; then the rounds of the range.
export async function fetchRounds(range) {
  let anchor = null;
  if (range.preset !== 'custom' && range.preset !== 'all') {
    const newest = await getJSON('/v1/rounds', { limit: 1 });
    anchor = newest.length ? Date.parse(newest[0].started_at) : null;
  }
  const rounds = await getJSON('/v1/rounds', apiRange(range, anchor));
  rounds.reverse();
  for (const r of rounds) r.t = Date.parse(r.started_at);
  return { rounds, anchor, capped: rounds.length >= MAX_ROWS };
}

export function jobNames(jobs) {
  return new Map(jobs.map((j) => [j.id, j.name]));
}

// One marker per round that changed something, labelled by the jobs it touched.
export function actionMarkers(rounds, names) {
  const markers = [];
  for (const r of rounds) {
    if (!r.actions.length) continue;
    const jobs = [...new Set(r.actions.map((a) => jobLabel(names, a.job_id)))];
    markers.push({ round: r.number, t: r.t, kind: r.action, jobs, label: jobs.join(', ') });
  }
  return markers;
}

// Time-weighted mean of total / max utility, and the share of time at the maximum.
export function satisfaction(rounds) {
  let weighted = 0;
  let atMax = 0;
  let total = 0;
  for (let i = 0; i < rounds.length; i += 1) {
    const r = rounds[i];
    if (!(r.max_utility > 0)) continue;
    const next = rounds[i + 1];
    const previous = rounds[i - 1];
    let weight = next ? next.t - r.t : previous ? r.t - previous.t : 1;
    if (!(weight > 0)) weight = 1;
    const fraction = Math.min(1, r.total_utility / r.max_utility);
    weighted += weight * fraction;
    if (fraction >= 1 - 1e-9) atMax += weight;
    total += weight;
  }
  return total > 0 ? { mean: weighted / total, atMax: atMax / total } : null;
}
