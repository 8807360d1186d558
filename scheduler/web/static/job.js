// One job: utility, juice, latency and executors over time with its actions marked; its SLO
// and bounds.
import { NotFound, getJSON } from './api.js';
import { drawChart, level } from './charts.js';
import { el, num, setText, sloText, utc } from './format.js';
import { apiRange, bounds, currentRange, extent, showBounds } from './range.js';
import { startPage } from './page.js';

const jobId = document.getElementById('job').dataset.jobId;
const base = `/v1/jobs/${encodeURIComponent(jobId)}`;

function showJob(job) {
  setText('job-name', job.name);
  setText('job-status', job.status);
  setText('job-reason', job.status_reason);
  setText('job-utility', `${num(job.utility, 2)} / ${num(job.priority, 0)}`);
  setText('job-priority', job.utility === null ? 'no report yet' : job.utility >= job.priority * (1 - 1e-9) ? 'meets its SLO' : 'below its SLO');
  setText('job-slo', sloText(job.slo));
  setText('job-slo-sub', `actuator ${job.actuator}`);
  const e = job.executors;
  setText('job-executors', String(e.target));
  setText('job-bounds', `bounds ${e.min}–${e.max} · initial ${e.initial} · ${e.cores} cores, ${e.memory_mb} MiB each`);
  setText('job-juice-latency', `${num(job.juice, 3)} · ${num(job.latency_ms, 0)} ms`);
  setText('job-last-report', job.last_report_at ? `last report ${utc(Date.parse(job.last_report_at))} UTC` : 'no report yet');
}

function showActions(actions) {
  const body = document.querySelector('#job-actions tbody');
  body.replaceChildren(...actions.slice(0, 200).map((a) => el('tr', {},
    el('td', { class: 'num', text: String(a.round) }),
    el('td', { text: utc(Date.parse(a.at)) }),
    el('td', { text: a.kind }),
    el('td', { class: 'num', text: `${a.from_executors} → ${a.to_executors}` }),
    el('td', { text: a.reason }))));
}

function showForecast(forecast) {
  if (forecast === null) {
    setText('job-forecast', 'none yet');
    setText('job-forecast-sub', 'fitted once the job has an hour of input history');
    return;
  }
  const ratio = (value) => (value === null ? 'n/a' : num(value, 2));
  setText('job-forecast', forecast.trusted ? 'trusted' : 'not trusted');
  setText('job-forecast-sub', `${forecast.method} · error against seasonal-naive ${ratio(forecast.error)} fitted, ${ratio(forecast.recent_error)} since`);
}

// What each executor count would give (GET /v1/jobs/{id}/options): the model's predictions
// now and at the forecast's peak, the smallest counts meeting the SLO marked; only the reason
// while the model is not trusted.
function showOptions(options) {
  setText('job-options-model', options.trusted ? `model trusted (${options.reason})` : `no options: ${options.reason}`);
  const rate = options.input_rate === null ? '–' : `${num(options.input_rate, 0)} rows/s`;
  const peak = options.peak;
  const ahead = peak === null ? 'no forecast ahead' : `forecast peak ${num(peak.input_rate, 0)} rows/s at ${utc(Date.parse(peak.at))} UTC (${peak.trusted ? 'trusted' : 'not trusted'})`;
  setText('job-options-input', `input now ${rate} · ${ahead}`);
  const table = document.getElementById('job-options');
  table.hidden = options.options.length === 0;
  for (const cell of table.querySelectorAll('th.peak')) cell.hidden = peak === null;
  const marks = (n) => [['held', options.held], ['now', options.meets_now], ['peak', options.meets_peak]]
    .filter(([, count]) => count === n).map(([mark]) => mark).join(', ');
  const cells = (outcome) => (outcome === null ? [] : [
    el('td', { class: 'num', text: num(outcome.latency_ms, 0) }),
    el('td', { class: 'num', text: num(outcome.juice, 3) }),
    el('td', { class: 'num', text: num(outcome.utility, 2) }),
  ]);
  table.querySelector('tbody').replaceChildren(...options.options.map((o) => el('tr', { 'data-executors': String(o.executors) },
    el('td', { class: 'num', text: String(o.executors) }),
    ...cells(o.now),
    ...cells(o.peak),
    el('td', { class: 'num', text: num(o.core_hours_per_day, 0) }),
    el('td', { text: marks(o.executors) }))));
}

// Why the job runs as it does (GET /v1/jobs/{id}/diagnosis): the finding, what the scheduler
// does about it, and the latest window's executors (slowest first) and stages (most uneven).
function showDiagnosis(found) {
  // (each reason names its finding but the last: "slow executor 2 on …", "skew in stage …")
  const text = found.finding === null ? 'no finding'
    : found.finding === 'under_provisioned' ? `under-provisioned: ${found.reason}` : found.reason;
  setText('job-diagnosis-finding', text);
  setText('job-diagnosis-note', `${found.acted_on ? 'acted on' : 'not acted on'}: ${found.note}`);
  const executors = document.getElementById('job-diagnosis-executors');
  executors.hidden = found.executors.length === 0;
  executors.querySelector('tbody').replaceChildren(...found.executors.map((e) => el('tr', { 'data-executor': e.id },
    el('td', { text: e.id }),
    el('td', { text: e.host ?? '–' }),
    el('td', { class: 'num', text: num(e.tasks, 0) }),
    el('td', { class: 'num', text: e.mean_task_ms === null ? '–' : num(e.mean_task_ms, 0) }),
    el('td', { class: 'num', text: e.slowness === null ? '–' : num(e.slowness, 2) }))));
  const stages = document.getElementById('job-diagnosis-stages');
  stages.hidden = found.stages.length === 0;
  stages.querySelector('tbody').replaceChildren(...found.stages.map((s) => el('tr', { 'data-stage': s.name },
    el('td', { text: s.name }),
    el('td', { class: 'num', text: num(s.tasks, 0) }),
    el('td', { class: 'num', text: num(s.median_task_ms, 0) }),
    el('td', { class: 'num', text: num(s.max_task_ms, 0) }),
    el('td', { class: 'num', text: s.largest_partition_share === null ? '–' : num(s.largest_partition_share, 3) }),
    el('td', { class: 'num', text: num(s.unevenness, 1) }),
    el('td', { text: s.bounds_stage ? 'yes' : 'no' }))));
}

// The measured input per minute, then the forecast's mean and its upper quantile as a band.
function inputSeries(minutes, forecast) {
  const measured = { label: 'input', points: minutes.map((m) => ({ x: Date.parse(m.minute), y: m.arrived_rate })), color: '#00838f', width: 2 };
  if (forecast === null) return [measured];
  const start = Date.parse(forecast.start);
  const at = (values) => values.map((y, k) => ({ x: start + k * forecast.step_s * 1000, y }));
  return [
    measured,
    { label: 'forecast', points: at(forecast.mean), color: '#5d4037', dashed: true },
    { label: 'upper quantile', points: at(forecast.upper), color: '#8d6e63', width: 1, band: true },
  ];
}

async function forecastOf() {
  try {
    return await getJSON(`${base}/forecast`);
  } catch (error) {
    if (error instanceof NotFound) return null;
    throw error;
  }
}

async function load() {
  let job;
  try {
    job = await getJSON(base);
  } catch (error) {
    if (error instanceof NotFound) throw new Error('this job is gone (deregistered or not yours)');
    throw error;
  }
  const range = currentRange();
  const anchor = job.last_report_at ? Date.parse(job.last_report_at) : null;
  const params = apiRange(range, anchor);
  const [history, actions, input, forecast, options, diagnosis] = await Promise.all([
    getJSON(`${base}/history`, params),
    getJSON(`${base}/actions`, params),
    getJSON(`${base}/input`, params),
    forecastOf(),
    getJSON(`${base}/options`),
    getJSON(`${base}/diagnosis`),
  ]);
  const points = history.points.map((p) => ({ ...p, t: Date.parse(p.window_end) }));
  const markers = actions
    .map((a) => ({ round: a.round, t: Date.parse(a.at), kind: a.kind, jobs: [job.name], label: `${a.kind} ${a.from_executors}→${a.to_executors}` }))
    .reverse();
  const times = [...points.map((p) => p.t), ...markers.map((m) => m.t)].sort((a, b) => a - b);
  const [xMin, xMax] = extent(times, bounds(range, anchor));
  const series = (key) => points.filter((p) => p[key] !== null).map((p) => ({ x: p.t, y: p[key] }));
  const common = { markers, xMin, xMax };
  const compact = (list) => list.filter((s) => s !== null);
  drawChart('job-utility-chart', { ...common, yMin: 0, series: compact([
    { label: 'utility', points: series('utility'), color: '#1565c0', width: 2 },
    level('priority (SLO met)', job.priority, xMin, xMax, '#777'),
  ]) });
  drawChart('job-juice-chart', { ...common, yMin: 0, ySuggestedMax: 1, series: compact([
    { label: 'juice', points: series('juice'), color: '#2e7d32', width: 2 },
    level('juice objective', job.slo.juice, xMin, xMax, '#777'),
  ]) });
  drawChart('job-latency-chart', { ...common, yMin: 0, series: compact([
    { label: 'latency (ms)', points: series('latency_ms'), color: '#6a1b9a', width: 2 },
    level('latency objective', job.slo.latency_ms, xMin, xMax, '#777'),
  ]) });
  drawChart('job-executors-chart', { ...common, yMin: 0, series: compact([
    { label: 'executors', points: series('executors'), color: '#ef6c00', width: 2, stepped: true },
    level('min', job.executors.min, xMin, xMax, '#999'),
    level('max', job.executors.max, xMin, xMax, '#555'),
  ]) });
  const band = inputSeries(input.minutes, forecast);
  const last = Math.max(xMax, ...band.slice(1).map((b) => b.points[b.points.length - 1].x));
  drawChart('job-input-chart', { markers, xMin, xMax: last, yMin: 0, series: band });
  showBounds(range, anchor);
  showJob(job);
  showForecast(forecast);
  showOptions(options);
  showDiagnosis(diagnosis);
  showActions(actions);
}

startPage(load);
