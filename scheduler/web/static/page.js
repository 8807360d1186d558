// What every page does: load its data, show errors, refresh itself while open and visible.
import { bindRange } from './range.js';
import { setText, utc } from './format.js';

function showError(error) {
  const node = document.getElementById('error');
  if (!node) return;
  node.hidden = error === null;
  node.textContent = error === null ? '' : `Could not load the data: ${error.message}`;
}

export function startPage(load, { range = true } = {}) {
  const refreshS = Number(document.body.dataset.refreshS) || 10;
  let queue = Promise.resolve();
  let loads = 0;
  const run = () => {
    queue = queue.then(async () => {
      try {
        await load();
        showError(null);
        setText('updated', `updated ${utc(Date.now()).slice(11)} UTC`);
      } catch (error) {
        showError(error);
      }
      loads += 1;
      document.body.dataset.loads = String(loads);
      if (loads === 1) {
        performance.mark('henge:ready');
        document.body.dataset.ready = '1';
      }
    });
    return queue;
  };
  if (range) bindRange(run);
  run();
  let timer = null;
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!document.hidden) await run();
      schedule();
    }, refreshS * 1000);
  };
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) run().then(schedule);
  });
  schedule();
  return run;
}
