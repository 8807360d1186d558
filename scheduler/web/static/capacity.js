// The capacity page: the cores each priority tier needs over the horizon (cumulative, highest
// tier first) against the cores planned with, the tiers that would miss, and the jobs that the
// plan could not size by their model. The what-if form reloads the plan.
import { getJSON } from './api.js';
import { drawChart, level } from './charts.js';
import { el, num, setText, utc } from './format.js';
import { startPage } from './page.js';

const TIER_COLORS = ['#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

function whatIf() {
  const form = document.getElementById('what-if');
  const cores = form.elements.cores.value;
  const without = Number(form.elements.without_nodes.value) || 0;
  return {
    horizon: form.elements.horizon.value,
    cores: cores === '' ? null : cores,
    without_nodes: cores === '' && without > 0 ? without : null,
  };
}

function showCards(plan) {
  setText('capacity-cores', `${num(plan.capacity_cores, 0)} cores`);
  const what = plan.capacity_cores === plan.cluster_cores ? 'the cluster\'s' : `what-if; the cluster has ${num(plan.cluster_cores, 0)}`;
  setText('capacity-source', `${what} · cluster view ${plan.source}`);
  setText('peak-cores', `${plan.peak_cores} cores`);
  setText('tightest-at', `at ${utc(Date.parse(plan.tightest_at))} UTC`);
  const dropped = plan.tiers.find((t) => t.priority === plan.first_dropped);
  setText('verdict', plan.fits ? 'every tier fits' : `priority ${num(plan.first_dropped, 0)} gives way first`);
  setText('verdict-sub', plan.fits
    ? `${plan.tiers.length} tiers over the next ${num(plan.horizon_s / 3600, 1)} h`
    : `short by ${dropped.short_cores} cores at ${utc(Date.parse(dropped.short_at))} UTC`);
}

function showChart(plan) {
  const start = Date.parse(plan.start);
  const xs = plan.total.map((_, k) => start + k * plan.step_s * 1000);
  const sums = plan.total.map(() => 0);
  const series = plan.tiers.map((tier, i) => {
    tier.cores.forEach((c, k) => { sums[k] += c; });
    return {
      label: i === 0 ? `priority ${num(tier.priority, 0)}` : `+ priority ${num(tier.priority, 0)}`,
      points: xs.map((x, k) => ({ x, y: sums[k] })),
      color: TIER_COLORS[i % TIER_COLORS.length],
      stepped: true,
      band: i > 0,
    };
  });
  const end = xs.length ? xs[xs.length - 1] + plan.step_s * 1000 : start;
  const capacity = level('cores planned with', plan.capacity_cores, start, end, '#d62728');
  drawChart('capacity-chart', {
    series: capacity ? [...series, capacity] : series,
    xMin: start,
    xMax: end,
    yMin: 0,
    yTitle: 'cores',
  });
}

function showTiers(plan, names) {
  const body = document.querySelector('#capacity-tiers tbody');
  body.replaceChildren(...plan.tiers.map((t) => el('tr', {},
    el('td', { class: 'num', text: num(t.priority, 0) }),
    el('td', { class: 'num', text: String(t.jobs.length) }),
    el('td', { class: 'num', text: String(t.peak_cores) }),
    el('td', { class: 'num', text: t.short_cores ? String(t.short_cores) : 'fits' }),
    el('td', { text: t.short_at ? utc(Date.parse(t.short_at)) : '–' }),
    el('td', { text: t.missing.map((id) => names[id] || id).join(', ') || '–' }))));
}

function showNotes(plan) {
  const noted = plan.jobs.filter((j) => j.note);
  document.getElementById('capacity-notes-none').hidden = noted.length > 0;
  document.getElementById('capacity-notes').hidden = noted.length === 0;
  const body = document.querySelector('#capacity-notes tbody');
  body.replaceChildren(...noted.map((j) => el('tr', {},
    el('td', {}, el('a', { href: `/ui/jobs/${j.job_id}`, text: j.name })),
    el('td', { class: 'num', text: num(j.priority, 0) }),
    el('td', { class: 'num', text: String(Math.max(...j.executors)) }),
    el('td', { text: j.note }))));
}

async function load() {
  const plan = await getJSON('/v1/capacity', whatIf());
  const names = Object.fromEntries(plan.jobs.map((j) => [j.job_id, j.name]));
  showCards(plan);
  showChart(plan);
  showTiers(plan, names);
  showNotes(plan);
}

const run = startPage(load, { range: false });
document.getElementById('what-if').addEventListener('change', () => run());
document.getElementById('what-if').addEventListener('submit', (event) => {
  event.preventDefault();
  run();
});
