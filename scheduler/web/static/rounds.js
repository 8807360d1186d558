// The rounds log: every round of the range, filtered by state, action and job.
import { getJSON } from './api.js';
import { el, jobLabel, num, setText, utc } from './format.js';
import { fetchRounds, jobNames } from './rounds-data.js';
import { currentRange, showBounds } from './range.js';
import { startPage } from './page.js';

const PAGE_ROWS = 200;
const form = document.getElementById('filters');
const more = document.getElementById('more');
let rounds = [];
let names = new Map();
let shown = PAGE_ROWS;

function filters() {
  const query = new URLSearchParams(window.location.search);
  return { state: query.get('state') || '', action: query.get('action') || '', job: query.get('job') || '' };
}

function matches(r, f) {
  if (f.state && r.state !== f.state) return false;
  if (f.action === 'acted' && r.action === 'none') return false;
  if (f.action && f.action !== 'acted' && r.action !== f.action) return false;
  if (f.job && r.job_id !== f.job && !r.actions.some((a) => a.job_id === f.job)) return false;
  return true;
}

function fillSelect(select, values, label, selected) {
  const keep = [...select.options].filter((o) => o.value === '' || o.value === 'acted');
  const options = [...values].sort((a, b) => label(a).localeCompare(label(b)))
    .map((v) => el('option', { value: v, text: label(v) }));
  select.replaceChildren(...keep, ...options);
  if (selected && ![...select.options].some((o) => o.value === selected)) {
    select.append(el('option', { value: selected, text: label(selected) }));
  }
  select.value = selected;
}

function changes(r) {
  return r.actions.map((a) => `${a.kind} ${jobLabel(names, a.job_id)} ${a.from_executors}→${a.to_executors}`).join('; ');
}

function render() {
  const f = filters();
  const chosen = rounds.filter((r) => matches(r, f)).reverse(); // newest first
  const body = document.querySelector('#rounds tbody');
  body.replaceChildren(...chosen.slice(0, shown).map((r) => el('tr', { 'data-round': String(r.number) },
    el('td', { class: 'num', text: String(r.number) }),
    el('td', { text: utc(r.t) }),
    el('td', { text: r.state }),
    el('td', { text: r.action }),
    el('td', { text: r.job_id ? jobLabel(names, r.job_id) : '–' }),
    el('td', { class: 'num', text: `${num(r.total_utility, 1)} / ${num(r.max_utility, 1)}` }),
    el('td', { text: changes(r) }),
    el('td', { text: r.reason }))));
  more.hidden = chosen.length <= shown;
  setText('rounds-count', `${chosen.length} of ${rounds.length} rounds in the range match; showing ${Math.min(shown, chosen.length)}`);
  document.getElementById('rounds').dataset.matching = String(chosen.length);
}

function setFilter(name, value) {
  const query = new URLSearchParams(window.location.search);
  if (value) query.set(name, value);
  else query.delete(name);
  window.history.replaceState(null, '', `${window.location.pathname}?${query}`);
  shown = PAGE_ROWS;
  render();
}

for (const select of form.querySelectorAll('select')) {
  select.addEventListener('change', () => setFilter(select.name, select.value));
}
more.addEventListener('click', () => {
  shown += PAGE_ROWS;
  render();
});

async function load() {
  const range = currentRange();
  const [jobs, fetched] = await Promise.all([getJSON('/v1/jobs'), fetchRounds(range)]);
  rounds = fetched.rounds;
  names = jobNames(jobs);
  const f = filters();
  const states = new Set(rounds.map((r) => r.state));
  const actions = new Set(rounds.map((r) => r.action));
  const jobIds = new Set(jobs.map((j) => j.id));
  for (const r of rounds) {
    if (r.job_id) jobIds.add(r.job_id);
    for (const a of r.actions) jobIds.add(a.job_id);
  }
  fillSelect(form.elements.state, states, (v) => v.replace('_', ' '), f.state);
  fillSelect(form.elements.action, actions, (v) => v, f.action);
  fillSelect(form.elements.job, jobIds, (v) => jobLabel(names, v), f.job);
  showBounds(range, fetched.anchor);
  render();
}

startPage(load);
