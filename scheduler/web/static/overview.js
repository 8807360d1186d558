// The cluster overview: utility over time with every action marked, state and capacity now,
// SLO satisfaction now and over the range, allocation and the latest actions.
import { getJSON } from './api.js';
import { drawChart } from './charts.js';
import { el, jobLabel, num, pct, setText, utc } from './format.js';
import { actionMarkers, fetchRounds, jobNames, satisfaction } from './rounds-data.js';
import { bounds, currentRange, extent, showBounds } from './range.js';
import { startPage } from './page.js';

const MAX_ALLOCATION_ROWS = 15;
const RECENT_ACTIONS = 10;

function showNow(cluster, jobs) {
  setText('state', cluster.state.replace('_', ' '));
  setText('policy', `policy ${cluster.policy} · cluster view ${cluster.source}`);
  setText('utility-now', `${num(cluster.total_utility, 1)} / ${num(cluster.max_utility, 1)}`);
  setText('last-round', cluster.last_round === null ? 'no round yet' : `after round ${cluster.last_round}`);
  setText('slo-now', cluster.max_utility > 0 ? pct(cluster.total_utility / cluster.max_utility) : '–');
  const admitted = jobs.filter((j) => j.status === 'admitted');
  const meeting = admitted.filter((j) => j.utility !== null && j.utility >= j.priority * (1 - 1e-9));
  setText('slo-jobs', `${meeting.length} of ${admitted.length} admitted jobs meet their SLO`);
  setText('capacity', `${num(cluster.allocated_cores, 0)} / ${num(cluster.total_cores, 0)} cores`);
  const queued = cluster.jobs.queued || 0;
  setText('capacity-sub', `${cluster.nodes} nodes · ${num(cluster.free_cores, 0)} free · ${queued} queued`);
}

function showAllocation(cluster, jobs) {
  const rows = jobs
    .filter((j) => j.status === 'admitted')
    .map((j) => ({ job: j, cores: j.executors.target * j.executors.cores }))
    .sort((a, b) => b.cores - a.cores || a.job.name.localeCompare(b.job.name));
  const shown = rows.slice(0, MAX_ALLOCATION_ROWS);
  const rest = rows.slice(MAX_ALLOCATION_ROWS);
  const body = document.querySelector('#allocation tbody');
  const line = (label, href, executors, cores) => {
    const bar = el('span', { class: 'bar' });
    bar.style.width = `${cluster.total_cores > 0 ? (100 * cores) / cluster.total_cores : 0}%`;
    return el('tr', {},
      el('td', {}, href ? el('a', { href, text: label }) : label),
      el('td', { class: 'num', text: String(executors) }),
      el('td', { class: 'num', text: num(cores, 0) }),
      el('td', { class: 'bar-col' }, bar));
  };
  const lines = shown.map((r) => line(r.job.name, `/ui/jobs/${r.job.id}`, r.job.executors.target, r.cores));
  if (rest.length) {
    const cores = rest.reduce((sum, r) => sum + r.cores, 0);
    const executors = rest.reduce((sum, r) => sum + r.job.executors.target, 0);
    lines.push(line(`${rest.length} more jobs`, null, executors, cores));
  }
  body.replaceChildren(...lines);
}

function showRecent(rounds, names) {
  const acted = rounds.filter((r) => r.actions.length).slice(-RECENT_ACTIONS).reverse();
  const body = document.querySelector('#recent-actions tbody');
  body.replaceChildren(...acted.map((r) => el('tr', {},
    el('td', { class: 'num', text: String(r.number) }),
    el('td', { text: utc(r.t) }),
    el('td', { text: r.action }),
    el('td', { text: [...new Set(r.actions.map((a) => jobLabel(names, a.job_id)))].join(', ') }))));
}

async function load() {
  const range = currentRange();
  const [cluster, jobs, fetched] = await Promise.all([
    getJSON('/v1/cluster'),
    getJSON('/v1/jobs'),
    fetchRounds(range),
  ]);
  const { rounds, anchor, capped } = fetched;
  const names = jobNames(jobs);
  const markers = actionMarkers(rounds, names);
  const [xMin, xMax] = extent(rounds.map((r) => r.t), bounds(range, anchor));
  drawChart('utility-chart', {
    series: [
      { label: 'total utility', points: rounds.map((r) => ({ x: r.t, y: r.total_utility })), color: '#1565c0', width: 2 },
      { label: 'maximum utility', points: rounds.map((r) => ({ x: r.t, y: r.max_utility })), color: '#777', dashed: true },
    ],
    markers,
    xMin,
    xMax,
    yMin: 0,
    yTitle: 'utility',
  });
  showBounds(range, anchor);
  showNow(cluster, jobs);
  const sat = satisfaction(rounds);
  setText('slo-range', sat ? pct(sat.mean) : '–');
  setText('slo-range-sub', sat ? `mean total / max utility; at the maximum ${pct(sat.atMax)} of the time` : 'no rounds in the range');
  setText('chart-note', rounds.length
    ? `${rounds.length} rounds from ${utc(rounds[0].t)} to ${utc(rounds[rounds.length - 1].t)} UTC, ${markers.length} with actions${capped ? ' (the newest 10,000 of the range)' : ''}`
    : 'No rounds in this range.');
  showAllocation(cluster, jobs);
  showRecent(rounds, names);
}

startPage(load);
