// Line charts over time (Chart.js, vendored) with the scheduler's actions drawn as labelled
// vertical lines, as in the paper's figures. What each chart was drawn with is kept in
// window.__hengeCharts[canvasId] (and counted on the canvas's data- attributes) for tests.
import { ACTION_COLORS, tick } from './format.js';

const registry = (window.__hengeCharts = window.__hengeCharts || {});
const charts = new Map();
const LABEL_GAP_PX = 13;

const markerPlugin = {
  id: 'hengeMarkers',
  afterDatasetsDraw(chart, _args, options) {
    const markers = options.markers || [];
    const { ctx, chartArea, scales } = chart;
    const entry = registry[chart.canvas.id];
    let lines = 0;
    let labels = 0;
    let lastLabel = -Infinity;
    ctx.save();
    ctx.font = '11px system-ui, sans-serif';
    ctx.setLineDash([4, 3]);
    for (const marker of markers) {
      const x = scales.x.getPixelForValue(marker.t);
      if (x < chartArea.left - 0.5 || x > chartArea.right + 0.5) continue;
      const color = ACTION_COLORS[marker.kind] || '#555';
      ctx.strokeStyle = color;
      ctx.globalAlpha = 0.55;
      ctx.beginPath();
      ctx.moveTo(x, chartArea.top);
      ctx.lineTo(x, chartArea.bottom);
      ctx.stroke();
      lines += 1;
      if (x - lastLabel >= LABEL_GAP_PX) {
        ctx.save();
        ctx.globalAlpha = 1;
        ctx.fillStyle = color;
        ctx.translate(x + 3, chartArea.top + 4);
        ctx.rotate(Math.PI / 2);
        ctx.fillText(marker.label, 0, 0);
        ctx.restore();
        lastLabel = x;
        labels += 1;
      }
    }
    ctx.restore();
    if (entry) Object.assign(entry, { markerLines: lines, markerLabels: labels });
  },
  afterRender(chart) {
    const entry = registry[chart.canvas.id];
    if (!entry) return;
    entry.draws += 1;
    if (entry.drawnAt === null) {
      entry.drawnAt = performance.now();
      performance.mark(`henge:chart:${chart.canvas.id}`);
    }
  },
};

function datasets(series) {
  return series.map((s) => ({
    label: s.label,
    data: s.points,
    borderColor: s.color,
    // (a band: the area between this series and the one before it, lightly filled)
    backgroundColor: s.band ? `${s.color}33` : s.color,
    fill: s.band ? '-1' : false,
    borderWidth: s.width || 1.5,
    borderDash: s.dashed ? [6, 4] : [],
    stepped: s.stepped ? 'before' : false,
    pointRadius: s.points.length <= 60 ? 2 : 0,
    pointHitRadius: 4,
    spanGaps: false,
    tension: 0,
  }));
}

// Tick every whole second, minute, hour or day (UTC), about six ticks across the span.
const STEPS_S = [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

function tickStep(spanMs) {
  const step = STEPS_S.find((s) => spanMs / (s * 1000) <= 7);
  return (step ?? Math.ceil(spanMs / 7 / 86400e3) * 86400) * 1000;
}

function timeTicks(min, max) {
  const step = tickStep(max - min);
  const ticks = [];
  for (let t = Math.ceil(min / step) * step; t <= max; t += step) ticks.push({ value: t });
  return ticks;
}

function options(spec) {
  const span = Math.max(1, (spec.xMax ?? 0) - (spec.xMin ?? 0));
  return {
    animation: false,
    parsing: false,
    normalized: true,
    responsive: true,
    maintainAspectRatio: false,
    interaction: { mode: 'nearest', axis: 'x', intersect: false },
    scales: {
      x: {
        type: 'linear',
        min: spec.xMin ?? undefined,
        max: spec.xMax ?? undefined,
        afterBuildTicks: (axis) => {
          axis.ticks = timeTicks(axis.min, axis.max);
        },
        ticks: { callback: (value) => tick(value, span) },
      },
      y: {
        min: spec.yMin ?? undefined,
        suggestedMax: spec.ySuggestedMax ?? undefined,
        title: { display: Boolean(spec.yTitle), text: spec.yTitle || '' },
      },
    },
    plugins: {
      legend: { position: 'bottom', labels: { boxWidth: 12 } },
      tooltip: { callbacks: { title: (items) => (items.length ? tick(items[0].parsed.x, 0) : '') } },
      hengeMarkers: { markers: spec.markers || [] },
    },
  };
}

// Draw (or redraw) the chart on canvas `id`. spec: {series: [{label, points: [{x, y}], color,
// dashed, stepped, band}], markers: [{t, kind, label, jobs, round}], xMin, xMax, yMin, yTitle}.
// A series with `band` is filled down to the series before it.
// The first series is the chart's data; the others are thresholds and bounds.
export function drawChart(id, spec) {
  const canvas = document.getElementById(id);
  const entry = registry[id] || (registry[id] = { drawnAt: null, draws: 0 });
  Object.assign(entry, {
    points: spec.series.length ? spec.series[0].points.length : 0,
    series: Object.fromEntries(spec.series.map((s) => [s.label, s.points.length])),
    data: spec.series.map((s) => ({ label: s.label, points: s.points })),
    markers: (spec.markers || []).map((m) => ({ ...m })),
    xMin: spec.xMin ?? null,
    xMax: spec.xMax ?? null,
  });
  canvas.dataset.points = String(entry.points);
  canvas.dataset.markers = String(entry.markers.length);
  const existing = charts.get(id);
  if (existing) {
    existing.data.datasets = datasets(spec.series);
    existing.options = options(spec);
    existing.update('none');
    return existing;
  }
  const chart = new window.Chart(canvas, {
    type: 'line',
    data: { datasets: datasets(spec.series) },
    options: options(spec),
    plugins: [markerPlugin],
  });
  charts.set(id, chart);
  return chart;
}

// A horizontal line from xMin to xMax (a threshold or a bound), or null when value is unset.
export function level(label, value, xMin, xMax, color) {
  if (value === null || value === undefined || xMin === null || xMax === null) return null;
  return {
    label,
    points: [
      { x: xMin, y: value },
      { x: xMax, y: value },
    ],
    color,
    dashed: true,
    width: 1,
  };
}
