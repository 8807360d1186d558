// The jobs table: priority, SLO, status, utility, juice, latency and executors; sortable.
import { getJSON } from './api.js';
import { el, num, pct, setText, sloText } from './format.js';
import { startPage } from './page.js';

const isAdmin = document.body.dataset.role === 'admin';
const table = document.getElementById('jobs');
let rows = [];

function sortState() {
  const query = new URLSearchParams(window.location.search);
  return { key: query.get('sort') || 'name', dir: query.get('dir') === 'desc' ? 'desc' : 'asc' };
}

function compare(key, dir) {
  const sign = dir === 'desc' ? -1 : 1;
  return (a, b) => {
    const x = a[key];
    const y = b[key];
    if (x === y) return a.name.localeCompare(b.name);
    if (x === null || x === undefined) return 1; // unknown values last either way
    if (y === null || y === undefined) return -1;
    return sign * (typeof x === 'number' ? x - y : String(x).localeCompare(String(y)));
  };
}

function render() {
  const { key, dir } = sortState();
  for (const th of table.tHead.rows[0].cells) {
    th.setAttribute('aria-sort', th.dataset.key === key ? (dir === 'asc' ? 'ascending' : 'descending') : 'none');
  }
  const sorted = [...rows].sort(compare(key, dir));
  table.tBodies[0].replaceChildren(...sorted.map((r) => el('tr', { 'data-job-id': r.id },
    el('td', {}, el('a', { href: `/ui/jobs/${r.id}`, text: r.name })),
    isAdmin ? el('td', { text: r.tenant }) : null,
    el('td', { text: r.status, title: r.reason }),
    el('td', { class: 'num', text: num(r.priority, 0) }),
    el('td', { text: r.slo }),
    el('td', { class: 'num', text: num(r.utility, 2) }),
    el('td', { class: 'num', text: pct(r.fraction) }),
    el('td', { class: 'num', text: num(r.juice, 3) }),
    el('td', { class: 'num', text: num(r.latency, 0) }),
    el('td', { class: 'num', text: `${r.executors} (${r.bounds})` }))));
  setText('jobs-count', `${rows.length} jobs`);
}

for (const th of table.tHead.rows[0].cells) {
  th.querySelector('button').addEventListener('click', () => {
    const current = sortState();
    const dir = current.key === th.dataset.key && current.dir === 'asc' ? 'desc' : 'asc';
    const query = new URLSearchParams(window.location.search);
    query.set('sort', th.dataset.key);
    query.set('dir', dir);
    window.history.replaceState(null, '', `${window.location.pathname}?${query}`);
    render();
  });
}

async function load() {
  const [jobs, tenants] = await Promise.all([
    getJSON('/v1/jobs'),
    isAdmin ? getJSON('/v1/tenants') : Promise.resolve([]),
  ]);
  const tenantNames = new Map(tenants.map((t) => [t.id, t.name]));
  rows = jobs.map((j) => ({
    id: j.id,
    name: j.name,
    tenant: tenantNames.get(j.tenant_id) || j.tenant_id.slice(0, 8),
    status: j.status,
    reason: j.status_reason,
    priority: j.priority,
    slo: sloText(j.slo),
    utility: j.utility,
    fraction: j.utility === null ? null : j.utility / j.priority,
    juice: j.juice,
    latency: j.latency_ms,
    executors: j.executors.target,
    bounds: `${j.executors.min}–${j.executors.max}`,
  }));
  render();
}

startPage(load, { range: false });
