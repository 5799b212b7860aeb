// agentcompass viewer front end (issue 16). Vanilla JS, no build step, no external URL.
//
// Safety rule: every string from the API (task ids, questions, observations, logs...) reaches
// the DOM only as a text node (h() turns string children into text nodes) or as the value of a
// fixed attribute name via setAttribute. No innerHTML, no eval, no string-built handlers.
'use strict';

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** Creates `tag` with `attrs` and `children`. Strings and numbers become text nodes; arrays are
 *  flattened; null/undefined/false are skipped. Attribute keys starting with "on" must be
 *  functions (added as listeners); other attributes are set with setAttribute. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) {
      if (typeof value === 'function') el.addEventListener(key.slice(2), value);
      continue;
    }
    if (key === 'checked' || key === 'selected' || key === 'disabled' || key === 'open') {
      el[key] = Boolean(value);
      if (key !== 'checked' && key !== 'selected') el.setAttribute(key, '');
      continue;
    }
    if (key === 'value') { el.value = String(value); continue; }
    el.setAttribute(key, value === true ? '' : String(value));
  }
  appendChildren(el, children);
  return el;
}

function appendChildren(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) appendChildren(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

function replace(el, ...children) {
  clear(el);
  appendChildren(el, children);
  return el;
}

const $ = (sel, root) => (root || document).querySelector(sel);

// ---------------------------------------------------------------------------------------------
// Formatting

function isNum(v) { return typeof v === 'number' && Number.isFinite(v); }

function fmtValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (isNum(v)) return Number.isInteger(v) ? String(v) : String(Number(v.toFixed(4)));
  return String(v);
}

/** `v` with `digits` decimals as Rust's `format!("{:.N}")` writes it (the CLI's numbers): like
 *  toFixed, except that an exact tie rounds half to even (0.125 → "0.12") and a negative zero
 *  keeps its sign. */
function rustFixed(v, digits) {
  const abs = Math.abs(v);
  let out = abs.toFixed(digits);
  if (abs < 1e21) {
    // A tie has a short exact expansion: digit `digits + 1` is 5 and nothing follows.
    const long = abs.toFixed(Math.min(100, digits + 30));
    const cut = long.indexOf('.') + 1 + digits;
    if (long[cut] === '5' && /^0*$/.test(long.slice(cut + 1))) {
      const kept = long.slice(0, digits ? cut : cut - 1);
      if (Number(kept.slice(-1)) % 2 === 0) out = kept;
    }
  }
  return (v < 0 || Object.is(v, -0) ? '-' : '') + out;
}

/** A metric value as the CLI shows it (`summary.md`, `compare`): a binary metric as a
 *  percentage with two decimals, a scalar with four, `n/a` when absent; a metric of unknown
 *  kind (another tool's report) as a plain number. */
function fmtMetric(v, kind) {
  if (!isNum(v)) return 'n/a';
  if (kind === 'binary_success') return rustFixed(v * 100, 2) + '%';
  if (kind === 'scalar') return rustFixed(v, 4);
  return fmtValue(v);
}

/** A difference B − A as the CLI's `compare` shows it: `+3.33 pp` (binary), `+0.0123`. */
function fmtDelta(v, kind) {
  if (!isNum(v)) return 'n/a';
  const sign = v < 0 || Object.is(v, -0) ? '' : '+';
  return kind === 'binary_success' ? sign + rustFixed(v * 100, 2) + ' pp' : sign + rustFixed(v, 4);
}

/** The value a series shows: its value, else its reference value (evaluation failed). */
function seriesValue(s) {
  return s && isNum(s.value) ? s.value : (s && isNum(s.reference_value) ? s.reference_value : null);
}

/** A duration for people: `850 ms`, `1.2 s`, `3 min 04 s`, `2 h 05 min`, `3 d 04 h`. */
function fmtDuration(s) {
  if (!isNum(s)) return '—';
  if (s < 0) return '−' + fmtDuration(-s);
  if (s < 1) return Math.round(s * 1000) + ' ms';
  if (s < 59.95) return s.toFixed(1) + ' s';
  const total = Math.round(s);
  const pad = (n) => String(n).padStart(2, '0');
  const m = Math.floor(total / 60), sec = total % 60;
  if (m < 60) return m + ' min ' + pad(sec) + ' s';
  const hours = Math.floor(m / 60);
  if (hours < 24) return hours + ' h ' + pad(m % 60) + ' min';
  return Math.floor(hours / 24) + ' d ' + pad(hours % 24) + ' h';
}

function fmtMs(ms) { return isNum(ms) ? fmtDuration(ms / 1000) : '—'; }

/** A time: an RFC 3339 string, or Unix seconds (progress records). */
function parseTime(t) {
  if (isNum(t)) return new Date(t * 1000);
  if (typeof t === 'string' && t) { const d = new Date(t); return isNaN(d) ? null : d; }
  return null;
}

/** A time for people, in UTC: `2026-03-04 12:34:56 UTC` (never an epoch number). */
function fmtTime(t) {
  const d = parseTime(t);
  return d ? d.toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—';
}

/** How long ago `t` was: `12 s ago`, `3 min 04 s ago`. */
function fmtAgo(t) {
  const d = parseTime(t);
  return d ? fmtDuration(Math.max(0, (Date.now() - d.getTime()) / 1000)) + ' ago' : '—';
}

/** A token count: `1,234` or `12.3k`, `4.5M`. */
function fmtCount(n) {
  if (!isNum(n)) return '—';
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(1) + 'M';
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + 'k';
  return Math.round(n).toLocaleString('en-US');
}

/** A value whose name says what it is: `*_at` and `timestamp` are times, `*_ms`
 *  milliseconds, `*_seconds` and `duration` seconds; anything else as is. */
function fmtNamed(key, v) {
  if (!isNum(v)) return typeof v === 'object' && v !== null ? JSON.stringify(v) : fmtValue(v);
  if (/(_at|timestamp)$/.test(key)) return fmtTime(v);
  if (/_ms$/.test(key)) return fmtMs(v);
  if (/(_seconds|duration)$/.test(key)) return fmtDuration(v);
  return fmtValue(v);
}

function fmtBytes(n) {
  if (!isNum(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
}

function prettyJson(v) {
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch (_) { return v; }
  }
  return JSON.stringify(v, null, 2);
}

// ---------------------------------------------------------------------------------------------
// Routes and API

const enc = encodeURIComponent;
const route = {
  runs: () => '#/',
  run: (run) => '#/run/' + enc(run),
  task: (run, ref) => '#/task/' + enc(run) + '/' + enc(ref),
  compare: (a, b) => '#/compare/' + enc(a) + '/' + enc(b),
};

function apiUrl(path, params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== null && v !== undefined && v !== '') qs.set(k, String(v));
  }
  const s = qs.toString();
  return '/api/' + path + (s ? '?' + s : '');
}

// Report mode (`agentcompass-host report`): the page embeds its data (#report-data) and the
// API below answers from it; nothing is fetched (the report's CSP forbids it anyway).
const REPORT = (() => {
  const el = document.getElementById('report-data');
  if (!el) return null;
  try { return JSON.parse(el.textContent); } catch (e) { return { error: String(e) }; }
})();

const ROW_FIELDS = ['task_id', 'ref', 'status', 'category', 'correct', 'reward', 'issues', 'attempts', 'duration_seconds'];
let reportRowCache = null;

/** The report's task rows as the objects /api/tasks returns (expanded once). */
function reportRows() {
  if (!reportRowCache) {
    reportRowCache = (REPORT.rows || []).map((r) => {
      const row = Object.fromEntries(ROW_FIELDS.map((f, i) => [f, r[i]]));
      row.state = String(row.ref).split('/')[0];
      return row;
    });
  }
  return reportRowCache;
}

/** /api/tasks over the report's rows: the server's filters, search and paging. */
function reportTasks(p) {
  const byFilter = {
    all: () => true, running: (r) => r.state === 'running', completed: (r) => r.state === 'normal',
    failed: (r) => r.state === 'fatal', error: (r) => r.state === 'error',
    correct: (r) => r.correct === true, wrong: (r) => r.correct === false,
  };
  const keep = byFilter[p.filter || 'all'] || byFilter.all;
  const q = p.q ? String(p.q).toLowerCase() : '';
  const rows = reportRows().filter((r) => keep(r) && (!p.category || r.category === p.category) &&
    (!p.issue || (r.issues || []).includes(p.issue)) && (!q || String(r.task_id).toLowerCase().includes(q)));
  const page = Number(p.page) || 0, size = Number(p.size) || 50;
  return { total: rows.length, page, size, categories: REPORT.categories || [], issue_codes: REPORT.issue_codes || [],
    index_ready: true, tasks: rows.slice(page * size, (page + 1) * size) };
}

function reportApi(path, p) {
  if (REPORT.error) throw new Error('cannot read the report data: ' + REPORT.error);
  const sameRun = (run) => { if (run !== REPORT.run_path) throw new Error('run ' + run + ' is not in this report'); };
  switch (path) {
    case 'runs': return { root: '', runs: [REPORT.run.run] };
    case 'run': sameRun(p.run); return Object.assign({}, REPORT.run, { issues: REPORT.issues || [], charts: REPORT.charts || null });
    case 'tasks': sameRun(p.run); return reportTasks(p);
    case 'task': {
      sameRun(p.run);
      const detail = (REPORT.details || {})[p.task];
      if (detail) return detail;
      const row = reportRows().find((r) => r.ref === p.task);
      if (!row) throw new Error('no task ' + p.task + ' in this report');
      return { task: { task_id: row.task_id, category: row.category }, attempts: [], omitted: true, row };
    }
    default: throw new Error('not available in a report: ' + path);
  }
}

function reportBanner() {
  const box = $('#report-banner');
  if (!box || !REPORT || REPORT.error) return;
  const n = (REPORT.rows || []).length, d = Object.keys(REPORT.details || {}).length;
  replace(box, 'Report of ', h('b', { class: 'mono' }, REPORT.run_path), ' · generated ', fmtTime(REPORT.generated_at),
    ' by ', REPORT.generator, ' · ', n + (n === 1 ? ' task' : ' tasks'), ' · attempts and trajectories of ',
    d === n ? 'every task' : d + ' (not-correct tasks first, at most ' + fmtValue(REPORT.limits && REPORT.limits.max_trajectories) + ')');
}

/** The crumb of the runs page (a report has one run: none). */
function homeCrumb() { return REPORT ? null : { text: 'runs', href: route.runs() }; }

// The controls' secret (`view` prints it in its URL, `?token=`): kept for this tab only and
// taken out of the address bar, so it is not bookmarked or shared with the page's URL.
const CONTROL_TOKEN = (() => {
  if (REPORT) return null;
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl) {
    sessionStorage.setItem('agentcompass-control-token', fromUrl);
    url.searchParams.delete('token');
    history.replaceState(null, '', url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem('agentcompass-control-token');
})();

/** A control action on a live run (`POST /api/control`), with the secret. */
async function control(runPath, params) {
  const res = await fetch(apiUrl('control', Object.assign({ run: runPath }, params)), {
    method: 'POST',
    headers: { accept: 'application/json', 'x-agentcompass-token': CONTROL_TOKEN || '' },
  });
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) throw new Error((body && body.error) || ('HTTP ' + res.status));
  return body;
}

async function api(path, params) {
  if (REPORT) return reportApi(path, params || {});
  const res = await fetch(apiUrl(path, params), { headers: { accept: 'application/json' } });
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) throw new Error((body && body.error) || ('HTTP ' + res.status));
  return body;
}

// One generation per page view: polls and late responses of an older view are ignored.
const view = { gen: 0, timers: [] };

function newView() {
  view.gen++;
  for (const t of view.timers) { clearTimeout(t); clearInterval(t); }
  view.timers = [];
  setLive(false);
  return view.gen;
}

function alive(gen) { return gen === view.gen; }

function every(gen, ms, fn) {
  const tick = async () => {
    if (!alive(gen)) return;
    try { await fn(); } catch (e) { console.warn(e); }
    if (alive(gen)) view.timers.push(setTimeout(tick, ms));
  };
  view.timers.push(setTimeout(tick, ms));
}

function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

function setLive(on) { const el = $('#live'); if (el) el.hidden = !on; }

function setCrumbs(...items) {
  items = items.filter((it) => it);
  const parts = [];
  items.forEach((it, i) => {
    if (i) parts.push(h('span', { class: 'sep' }, '/'));
    parts.push(it.href ? h('a', { href: it.href }, it.text) : h('span', {}, it.text));
  });
  replace($('#crumbs'), parts);
}

function errorBox(e) { return h('div', { class: 'error', role: 'alert' }, 'Error: ', String(e && e.message || e)); }

// ---------------------------------------------------------------------------------------------
// Small shared widgets

function badge(text, kind) { return h('span', { class: 'badge ' + (kind || String(text)) }, String(text)); }

function statusBadge(status) { return badge(status || 'unknown', 'st-' + String(status || 'unknown').replace(/[^a-z_]/gi, '')); }

function correctMark(v) {
  if (v === true) return h('span', { class: 'ok', title: 'correct' }, '✓');
  if (v === false) return h('span', { class: 'bad', title: 'wrong' }, '✗');
  return h('span', { class: 'muted' }, '—');
}

function section(title, ...body) { return h('section', { class: 'card' }, h('h2', {}, title), body); }

function folded(title, open, ...body) { return h('details', { open }, h('summary', {}, title), body); }

function pre(text, cls) { return h('pre', { class: cls || '' }, text === null || text === undefined ? '' : String(text)); }

function jsonBlock(value) { return pre(prettyJson(value), 'json'); }

function table(headers, rows, attrs) {
  return h('div', { class: 'scroll' }, h('table', Object.assign({ class: 'grid' }, attrs || {}),
    h('thead', {}, headerRow(headers)),
    h('tbody', {}, rows)));
}

/** A header row; a header is a string or [text, class] (class "num" right-aligns it). */
function headerRow(headers) {
  return h('tr', {}, headers.map((c) => (Array.isArray(c) ? h('th', { class: c[1] }, c[0]) : h('th', {}, c))));
}

function kvList(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter((p) => p).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v instanceof Node ? v : fmtValue(v))]));
}

function buttonGroup(values, current, attrName, onPick, label) {
  return h('div', { class: 'btn-group', role: 'group' }, values.map((v) =>
    h('button', { type: 'button', [attrName]: v, class: v === current ? 'active' : '', 'aria-pressed': String(v === current), onclick: () => onPick(v) }, label ? label(v) : v)));
}

function select(options, current, onChange, allLabel, attrs) {
  return h('select', Object.assign({ onchange: (e) => onChange(e.target.value) }, attrs || {}),
    h('option', { value: '', selected: !current }, allLabel),
    options.map((o) => h('option', { value: o, selected: o === current }, o)));
}

function pager(page, size, total, onPage) {
  const pages = Math.max(1, Math.ceil(total / size));
  return h('div', { class: 'pager' },
    h('button', { type: 'button', disabled: page <= 0, 'data-page': 'prev', onclick: () => onPage(page - 1) }, '‹ prev'),
    h('span', {}, 'page ' + (page + 1) + ' of ' + pages),
    h('button', { type: 'button', disabled: page + 1 >= pages, 'data-page': 'next', onclick: () => onPage(page + 1) }, 'next ›'));
}

// ---------------------------------------------------------------------------------------------
// Charts: inline SVG drawn here (no library, no request). Like h(), svg() makes strings text
// nodes; every chart carries data-chart, every bar data-bar and every histogram bin data-bin.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates the SVG element `tag` with `attrs` (set with setAttribute) and `children`. */
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined && value !== false) el.setAttribute(key, String(value));
  }
  appendChildren(el, children);
  return el;
}

/** A number rounded for an SVG attribute. */
function px(v) { return String(Math.round(v * 10) / 10); }

/** A label at most `max` characters long (the full text is the element's tooltip). */
function shortLabel(text, max) { text = String(text); return text.length > max ? text.slice(0, max - 1) + '…' : text; }

/** The frame of a chart: a titled card holding the SVG (or a note when there is nothing). */
function chartCard(name, title, body, note) {
  return h('div', { class: 'chart-card', 'data-chart-card': name }, h('h3', {}, title), body || h('p', { class: 'muted' }, note || 'No data.'));
}

/** Horizontal bars, one per item ({label, value, text, cls}), from 0 to `max` (or, with
 *  `diverging`, from 0 left or right to ±max). */
function barChart(name, items, opts) {
  opts = opts || {};
  const row = 22, labelW = 150, valueW = 96, width = 560, top = 4;
  const plotW = width - labelW - valueW;
  const max = Math.max(opts.max || 0, ...items.map((it) => Math.abs(it.value) || 0)) || 1;
  const zero = opts.diverging ? labelW + plotW / 2 : labelW;
  const scale = opts.diverging ? plotW / 2 / max : plotW / max;
  const height = top * 2 + items.length * row;
  return svg('svg', { class: 'chart bars', 'data-chart': name, viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img', 'aria-label': opts.label || name },
    opts.diverging ? svg('line', { class: 'axis', x1: px(zero), x2: px(zero), y1: 0, y2: height }) : null,
    items.map((it, i) => {
      const y = top + i * row, w = Math.abs(it.value || 0) * scale;
      const x = it.value < 0 ? zero - w : zero;
      return svg('g', { class: 'bar-row' },
        svg('text', { class: 'label', x: labelW - 6, y: y + row / 2 + 4, 'text-anchor': 'end' }, shortLabel(it.label, 22)),
        svg('rect', { class: 'bar ' + (it.cls || ''), 'data-bar': it.label, x: px(x), y: y + 3, width: px(Math.max(w, 1)), height: row - 6 },
          svg('title', {}, it.label + ': ' + it.text)),
        svg('text', { class: 'value', x: width - valueW + 6, y: y + row / 2 + 4 }, it.text));
    }));
}

/** A histogram ({count, bins: [{lo, hi, n}]}) as vertical bars; `fmt` labels the bounds. */
function histogramChart(name, hist, fmt, opts) {
  opts = opts || {};
  const bins = (hist && hist.bins) || [];
  if (!bins.length) return null;
  const width = 560, height = 170, left = 40, bottom = 34, top = 10, right = 8;
  const plotW = width - left - right, plotH = height - top - bottom;
  const most = Math.max(1, ...bins.map((b) => b.n));
  const barW = plotW / bins.length;
  const binLabel = (b) => (opts.binary ? (b.lo >= 0.5 ? opts.binary[1] : opts.binary[0]) : (b.lo === b.hi ? fmt(b.lo) : fmt(b.lo) + ' – ' + fmt(b.hi)));
  return svg('svg', { class: 'chart histogram', 'data-chart': name, viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img', 'aria-label': opts.label || name },
    svg('line', { class: 'axis', x1: left, x2: width - right, y1: top + plotH, y2: top + plotH }),
    svg('text', { class: 'label', x: left - 6, y: top + 8, 'text-anchor': 'end' }, String(most)),
    svg('text', { class: 'label', x: left - 6, y: top + plotH, 'text-anchor': 'end' }, '0'),
    bins.map((b, i) => {
      const hgt = b.n / most * plotH;
      return svg('rect', { class: 'bin', 'data-bin': String(i), 'data-n': String(b.n), x: px(left + i * barW + 1), y: px(top + plotH - hgt), width: px(Math.max(barW - 2, 1)), height: px(Math.max(hgt, b.n ? 1 : 0)) },
        svg('title', {}, binLabel(b) + ': ' + b.n + (b.n === 1 ? ' task' : ' tasks')));
    }),
    opts.binary
      ? bins.map((b, i) => svg('text', { class: 'label', x: px(left + (i + 0.5) * barW), y: height - bottom + 16, 'text-anchor': 'middle' }, binLabel(b)))
      : [svg('text', { class: 'label', x: left, y: height - bottom + 16 }, fmt(bins[0].lo)),
        svg('text', { class: 'label', x: width - right, y: height - bottom + 16, 'text-anchor': 'end' }, fmt(bins[bins.length - 1].hi))],
    svg('text', { class: 'label', x: px(left + plotW / 2), y: height - 4, 'text-anchor': 'middle' }, (hist.count || 0) + ' tasks'));
}

/** Tasks finished (left axis) and the score so far (right axis) over time, from the run's
 *  timeline ({start, points: [[seconds, done, score]]}). */
function timelineChart(timeline, total, kind) {
  const points = (timeline && timeline.points) || [];
  if (!points.length) return null;
  const width = 560, height = 190, left = 44, right = 64, top = 10, bottom = 30;
  const plotW = width - left - right, plotH = height - top - bottom;
  const end = Math.max(points[points.length - 1][0], 1e-9);
  const most = Math.max(total || 0, points[points.length - 1][1], 1);
  const scores = points.filter((p) => isNum(p[2])).map((p) => p[2]);
  const hi = kind === 'binary_success' ? 1 : Math.max(1e-9, ...scores);
  const lo = kind === 'binary_success' ? 0 : Math.min(0, ...scores);
  const x = (t) => px(left + t / end * plotW);
  const yDone = (n) => px(top + plotH - n / most * plotH);
  const yScore = (v) => px(top + plotH - (v - lo) / ((hi - lo) || 1) * plotH);
  const done = [[0, 0]].concat(points.map((p) => [p[0], p[1]])).map((p) => x(p[0]) + ',' + yDone(p[1])).join(' ');
  const scored = points.filter((p) => isNum(p[2])).map((p) => x(p[0]) + ',' + yScore(p[2])).join(' ');
  return svg('svg', { class: 'chart timeline', 'data-chart': 'timeline', 'data-points': String(points.length), viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img', 'aria-label': 'tasks finished and score over time' },
    svg('line', { class: 'axis', x1: left, x2: left + plotW, y1: top + plotH, y2: top + plotH }),
    svg('polyline', { class: 'line-done', 'data-series': 'done', points: done }),
    scored ? svg('polyline', { class: 'line-score', 'data-series': 'score', points: scored }) : null,
    svg('text', { class: 'label done', x: left - 6, y: top + 8, 'text-anchor': 'end' }, String(most)),
    svg('text', { class: 'label', x: left - 6, y: top + plotH, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'label score', x: left + plotW + 6, y: top + 8 }, fmtMetric(hi, kind)),
    svg('text', { class: 'label score', x: left + plotW + 6, y: top + plotH }, fmtMetric(lo, kind)),
    svg('text', { class: 'label', x: left, y: height - 8 }, fmtTime(timeline.start)),
    svg('text', { class: 'label', x: left + plotW, y: height - 8, 'text-anchor': 'end' }, '+' + fmtDuration(end)));
}

/** The headline metric per category: from metrics.json, else (a live run) the score so far. */
function categoryItems(data) {
  const m = data.metrics, charts = data.charts || {};
  const hl = m && Array.isArray(m.series) ? (m.series.find((s) => s.role === 'headline') || m.series[0]) : null;
  if (hl && hl.categories && Object.keys(hl.categories).length) {
    return { kind: hl.kind, title: 'Headline per category — ' + hl.metric_id, items: Object.keys(hl.categories).sort().map((c) => {
      const v = categoryValue(hl.categories[c]);
      return { label: c, value: isNum(v) ? v : 0, text: fmtMetric(v, hl.kind) };
    }) };
  }
  const cats = charts.categories || [];
  return { kind: charts.kind, title: 'Score so far per category' + (charts.metric_id ? ' — ' + charts.metric_id : ''), items: cats.filter((c) => isNum(c.value)).map((c) => (
    { label: c.category || '(none)', value: c.value, text: fmtMetric(c.value, charts.kind) })) };
}

/** The run page's charts: the headline per category, the distribution of the primary metric,
 *  durations and tokens per task, and tasks finished and the score over time. */
function renderRunCharts(box, data) {
  const charts = data.charts;
  if (!charts) { clear(box); return; }
  const cats = categoryItems(data);
  const binary = charts.kind === 'binary_success';
  const r = data.run || {};
  replace(box, h('section', { class: 'card', id: 'charts' }, h('h2', {}, 'Charts'),
    h('div', { class: 'chart-grid' },
      chartCard('categories', cats.title, cats.items.length ? barChart('categories', cats.items, { max: cats.kind === 'binary_success' ? 1 : 0, label: cats.title }) : null, 'No categories.'),
      chartCard('rewards', 'Distribution of ' + (charts.metric_id || 'the primary metric') + ' per task',
        histogramChart('rewards', charts.rewards, (v) => fmtMetric(v, 'scalar'), binary ? { binary: ['wrong (0)', 'correct (1)'] } : {}), 'No task has a value yet.'),
      chartCard('durations', 'Task durations', histogramChart('durations', charts.durations, fmtDuration), 'No durations recorded.'),
      chartCard('tokens', 'Tokens per task', histogramChart('tokens', charts.tokens, fmtCount), 'No token counts recorded.'),
      chartCard('timeline', 'Tasks finished and ' + (charts.metric_id || 'score') + ' over time',
        timelineChart(charts.timeline, r.total_tasks, charts.kind), 'No task_finished events in progress.jsonl (or it is larger than 64 MiB).'))));
}

// ---------------------------------------------------------------------------------------------
// Runs page (#/)

// The runs picked on the runs page: one for side A, one for side B (kept across re-renders).
const compareSel = { a: null, b: null };

async function pageRuns(gen, root) {
  setCrumbs({ text: 'runs' });
  const data = await api('runs');
  if (!alive(gen)) return;
  const box = h('div', { id: 'runs' });
  replace(root,
    h('div', { class: 'toolbar' },
      h('h1', {}, 'Runs'), h('span', { class: 'muted mono' }, data.root || ''),
      h('span', { class: 'spacer' }),
      h('span', { id: 'compare-hint', class: 'muted' }),
      h('button', { type: 'button', id: 'compare-go', onclick: goCompare }, 'Compare selected')),
    box);
  renderRuns(box, data.runs || []);
  updateCompareButton();
  if ((data.runs || []).some((r) => r.status === 'running')) {
    setLive(true);
    every(gen, 2000, async () => {
      const fresh = await api('runs');
      if (alive(gen)) renderRuns(box, fresh.runs || []);
    });
  }
}

function compareReady() { return Boolean(compareSel.a && compareSel.b && compareSel.a !== compareSel.b); }

function goCompare() {
  if (compareReady()) location.hash = route.compare(compareSel.a, compareSel.b);
}

function toggleCompare(side, path, on) {
  compareSel[side] = on ? path : (compareSel[side] === path ? null : compareSel[side]);
  document.querySelectorAll('input[data-compare]').forEach((cb) => {
    cb.checked = compareSel[cb.getAttribute('data-side')] === cb.getAttribute('data-compare');
  });
  updateCompareButton();
}

function updateCompareButton() {
  const btn = $('#compare-go'), hint = $('#compare-hint');
  if (btn) btn.disabled = !compareReady();
  if (hint) hint.textContent = compareReady() ? 'A = ' + compareSel.a + ' · B = ' + compareSel.b : 'tick a run in column A and another in column B to compare';
}

function compareBox(side, path) {
  return h('input', { type: 'checkbox', 'data-compare': path, 'data-side': side, checked: compareSel[side] === path,
    title: 'compare: use as ' + side.toUpperCase(), 'aria-label': 'compare as ' + side.toUpperCase(),
    onchange: (e) => toggleCompare(side, path, e.target.checked) });
}

function groupByNamespace(runs) {
  const groups = new Map();
  for (const r of runs) {
    const ns = r.namespace || '(root)';
    if (!groups.has(ns)) groups.set(ns, []);
    groups.get(ns).push(r);
  }
  const key = (r) => { const d = parseTime(r.started_at); return d ? d.getTime() : 0; };
  for (const list of groups.values()) list.sort((a, b) => key(b) - key(a) || String(b.run_id).localeCompare(String(a.run_id)));
  return [...groups.entries()].sort((a, b) => a[0].localeCompare(b[0]));
}

function renderRuns(box, runs) {
  if (!runs.length) { replace(box, h('p', { class: 'muted' }, 'No runs under this directory.')); return; }
  const headers = ['A', 'B', 'run', 'status', 'model', 'harness', 'benchmark', ['headline', 'num'], 'tasks', 'started', ['duration', 'num']];
  replace(box, h('section', { class: 'card' }, h('div', { class: 'scroll' }, h('table', { class: 'grid runs', id: 'runs-table' },
    h('thead', {}, headerRow(headers)),
    groupByNamespace(runs).map(([ns, list]) => h('tbody', { 'data-namespace': ns },
      h('tr', { class: 'group' }, h('th', { colspan: String(headers.length), class: 'mono' }, ns, h('span', { class: 'muted' }, ' · ' + list.length + (list.length === 1 ? ' run' : ' runs')))),
      list.map(runRow)))))));
}

function runRow(r) {
  const hl = r.headline;
  return h('tr', { 'data-run': r.path, class: r.status === 'running' ? 'running' : '' },
    h('td', { class: 'cmp' }, compareBox('a', r.path)),
    h('td', { class: 'cmp' }, compareBox('b', r.path)),
    h('td', { class: 'mono' }, h('a', { href: route.run(r.path) }, r.run_id || r.path)),
    h('td', {}, statusBadge(r.status)),
    h('td', {}, r.model || ''), h('td', {}, r.harness || ''), h('td', {}, r.benchmark || ''),
    h('td', { class: 'num', title: hl ? hl.series_id : '' }, headlineCell(hl, r.so_far)),
    h('td', {}, taskCounts(r)),
    h('td', { class: 'mono', title: fmtAgo(r.started_at) }, fmtTime(r.started_at)),
    h('td', { class: 'num' }, r.status === 'running' && !isNum(r.duration_seconds) ? elapsedSince(r.started_at) : fmtDuration(r.duration_seconds)));
}

function elapsedSince(t) {
  const d = parseTime(t);
  return d ? fmtDuration((Date.now() - d.getTime()) / 1000) + '…' : '…';
}

/** The headline of a run list row: the run's headline metric, else (a live run) its score so
 *  far over the published tasks, marked "so far". */
function headlineCell(hl, soFar) {
  if (hl) return [h('b', {}, fmtMetric(seriesValue(hl), hl.kind)), ' ', h('span', { class: 'muted' }, hl.metric_id)];
  if (soFar && isNum(soFar.value)) {
    return h('span', { class: 'so-far', 'data-so-far': String(soFar.value), title: soFar.scored + ' of ' + soFar.published + ' published tasks scored' },
      h('b', {}, fmtMetric(soFar.value, soFar.kind)), ' ', h('span', { class: 'muted' }, (soFar.metric_id || '') + ' so far'));
  }
  return '—';
}

/** A run's task counts in words (✓ and ✗ mean correct and wrong, nowhere anything else). */
function taskCounts(r) {
  const part = (n, word, cls) => (n ? h('span', { class: cls, 'data-count': word }, ' · ' + n + ' ' + word) : null);
  return h('span', { class: 'counts' },
    h('span', { title: 'finished / total' }, fmtValue(r.finished_tasks) + '/' + fmtValue(r.total_tasks)),
    part(r.completed_tasks, 'completed', 'ok'), part(r.failed_tasks, 'failed', 'warn'),
    part(r.error_tasks, 'error', 'bad'), part(r.running_tasks, 'running', 'run'));
}

// ---------------------------------------------------------------------------------------------
// Run page (#/run/PATH)

const FILTERS = ['all', 'running', 'completed', 'failed', 'error', 'correct', 'wrong'];

async function pageRun(gen, root, runPath, query) {
  setCrumbs(homeCrumb(), { text: runPath });
  const data = await api('run', { run: runPath });
  if (!alive(gen)) return;
  const head = h('div', { id: 'run-head' });
  const live = h('div', { id: 'run-live' });
  const charts = h('div', { id: 'run-charts' });
  const tasksBox = h('section', { class: 'card', id: 'tasks' });
  const controls = h('div', { id: 'run-control' });
  replace(root, head, controls, live, charts, h('div', { id: 'run-body' }, runBody(data)), tasksBox);
  renderRunHead(head, data);
  renderControls(controls, runPath, data);
  renderProgress(live, data);
  renderRunCharts(charts, data);
  const tl = taskListState(runPath, query);
  renderTaskListShell(gen, tasksBox, tl);
  await loadTasks(gen, tl);
  if (!REPORT && data.run && data.run.status === 'running') {
    setLive(true);
    every(gen, 2000, async () => {
      const fresh = await api('run', { run: runPath });
      if (!alive(gen)) return;
      renderRunHead(head, fresh);
      updateControls(controls, fresh);
      renderProgress(live, fresh);
      renderRunCharts(charts, fresh);
      await loadTasks(gen, tl);
      if (fresh.run && fresh.run.status !== 'running') { setLive(false); view.gen === gen && rerender(); }
    });
  }
}

/** The controls of a live run (pause/resume, task concurrency, cancel), when this viewer
 * offers them (not `--read-only`), the page has the secret and the run listens. */
function renderControls(box, runPath, data) {
  const live = data.progress && data.progress.control;
  if (!data.controls || !CONTROL_TOKEN || !live || REPORT) { clear(box); return; }
  const message = h('span', { class: 'muted', id: 'control-message' }, '');
  const act = async (params, done) => {
    try {
      const answer = await control(runPath, params);
      message.textContent = done(answer || {});
    } catch (e) { message.textContent = 'Error: ' + e.message; }
  };
  const pause = h('button', { id: 'control-pause', type: 'button' }, live.paused ? 'Resume' : 'Pause');
  pause.addEventListener('click', () => {
    const resume = pause.textContent === 'Resume';
    act({ op: resume ? 'resume' : 'pause' }, () => {
      pause.textContent = resume ? 'Pause' : 'Resume';
      return resume ? 'resumed' : 'paused: no new task or model call starts';
    });
  });
  const concurrency = h('input', { id: 'control-concurrency', type: 'number', min: '1', value: String(live.task_concurrency || 1), 'aria-label': 'task concurrency' });
  const setConcurrency = h('button', { type: 'button' }, 'Set concurrency');
  setConcurrency.addEventListener('click', () => act({ op: 'concurrency', n: concurrency.value },
    (a) => 'task concurrency ' + a.task_concurrency + ' (was ' + a.was + ')'));
  const tasks = h('input', { id: 'control-cancel-tasks', type: 'text', placeholder: 'task ids, comma-separated', 'aria-label': 'tasks to cancel' });
  const cancel = h('button', { type: 'button' }, 'Cancel tasks');
  cancel.addEventListener('click', () => act({ op: 'cancel', tasks: tasks.value },
    (a) => 'cancelled: ' + [].concat(a.cancelled || [], a.skipped_when_reached || []).join(', ')));
  replace(box, section('Controls', h('div', { class: 'toolbar' }, pause, concurrency, setConcurrency, tasks, cancel, message)));
}

/** Keeps the controls in step with the run (paused elsewhere, by `ctl`), or removes them
 * once it stopped listening. */
function updateControls(box, data) {
  const live = data.progress && data.progress.control;
  const pause = $('#control-pause', box);
  if (!live) { clear(box); return; }
  if (pause) pause.textContent = live.paused ? 'Resume' : 'Pause';
}

/** `progress.json`'s model endpoints: the adaptive limit, calls in flight and waiting, the
 * rate-limit answers and the time waited. */
function modelLimits(endpoints) {
  if (!endpoints || typeof endpoints !== 'object' || !Object.keys(endpoints).length) return null;
  return h('div', {}, h('h3', {}, 'Model endpoint'),
    table(['endpoint', 'limit', 'in flight', 'waiting', 'rate-limit answers', 'waited'], Object.entries(endpoints).map(([url, l]) =>
      h('tr', { 'data-endpoint': url }, h('td', { class: 'mono' }, url), h('td', { class: 'num' }, fmtValue(l.limit) + ' / ' + fmtValue(l.max)),
        h('td', { class: 'num' }, fmtValue(l.in_flight)), h('td', { class: 'num' }, fmtValue(l.waiting)),
        h('td', { class: 'num' }, fmtValue(l.rate_limited)), h('td', { class: 'num' }, fmtDuration(l.waited_seconds))))));
}

/** Whether a run is still going (its score is "so far"). */
function isLive(r) { return Boolean(r) && ['created', 'running', 'summarizing'].includes(r.status); }

function renderRunHead(box, data) {
  const r = data.run || {};
  const hl = r.headline;
  const soFar = !hl && isLive(r) ? (r.so_far || (data.charts && data.charts.so_far)) : null;
  let label = 'headline', value = '—', title = 'no headline metric';
  if (hl) { label = hl.metric_id; value = fmtMetric(seriesValue(hl), hl.kind); title = hl.series_id; }
  else if (soFar && isNum(soFar.value)) {
    label = (soFar.metric_id || 'score') + ' so far';
    value = fmtMetric(soFar.value, soFar.kind);
    title = soFar.scored + ' of ' + soFar.published + ' published tasks scored';
  }
  replace(box, h('div', { class: 'toolbar' },
    h('h1', { class: 'mono' }, r.run_id || r.path), statusBadge(r.status),
    h('span', { class: 'muted mono' }, r.namespace || ''),
    h('span', { class: 'spacer' }),
    h('div', { class: 'headline-box' + (soFar ? ' so-far' : ''), title },
      h('span', { class: 'muted', id: 'headline-label' }, label),
      h('span', { id: 'headline' }, value))));
}

function renderProgress(box, data) {
  const p = data.progress;
  const r = data.run || {};
  if (!p || r.status !== 'running') { clear(box); return; }
  const total = p.total_tasks || r.total_tasks || 0, done = p.finished_tasks || 0;
  replace(box, section('Progress',
    h('div', { class: 'progress-line' },
      h('progress', { id: 'progress', max: String(total || 1), value: String(done) }),
      h('span', {}, done + ' / ' + total + ' finished'),
      h('span', { class: 'muted', id: 'progress-times' }, 'started ' + fmtTime(p.started_at) + ' · elapsed ' + fmtDuration(p.elapsed_seconds) +
        ' · updated ' + fmtTime(p.updated_at) + ' (' + fmtAgo(p.updated_at) + ')')),
    kvList([['running', p.running_tasks], ['pending', p.pending_tasks], ['completed', p.completed_tasks], ['failed', p.failed_tasks], ['error', p.error_tasks],
      ['attempts', fmtValue(p.attempts_finished) + ' / ' + fmtValue(p.attempts_started)]]),
    p.control && p.control.paused ? h('p', { id: 'paused' }, badge('paused', 'st-paused'), ' no new task or model call starts until it is resumed') : null,
    modelLimits(p.model_endpoints),
    objectTable('Phases', p.current_phase_counts),
    activeTasks(p.active_tasks)));
}

function objectTable(title, obj) {
  if (!obj || typeof obj !== 'object' || !Object.keys(obj).length) return null;
  return h('div', {}, h('h3', {}, title), table(['key', 'value'], Object.entries(obj).map(([k, v]) =>
    h('tr', {}, h('td', { class: 'mono' }, k), h('td', { class: 'mono' }, typeof v === 'object' ? JSON.stringify(v) : fmtValue(v))))));
}

/** `progress.json`'s active tasks: category, phase, attempt and when each last changed. */
function activeTasks(active) {
  if (!active || typeof active !== 'object') return null;
  const entries = Array.isArray(active) ? active.map((v, i) => [String(i), v]) : Object.entries(active);
  if (!entries.length) return null;
  const known = ['category', 'phase', 'attempt', 'updated_at', 'started_at'];
  return h('div', {}, h('h3', {}, 'Active tasks (' + entries.length + ')'),
    table(['task', 'category', 'phase', 'attempt', 'updated', 'more'], entries.map(([k, v]) => {
      const o = v && typeof v === 'object' ? v : {};
      const rest = Object.keys(o).filter((key) => !known.includes(key)).map((key) => key + ' ' + fmtNamed(key, o[key]));
      return h('tr', { 'data-active-task': k }, h('td', { class: 'mono' }, k), h('td', {}, o.category || ''), h('td', { class: 'mono' }, o.phase || ''),
        h('td', { class: 'num' }, fmtValue(o.attempt)), h('td', { title: fmtTime(o.updated_at) }, fmtAgo(o.updated_at)), h('td', { class: 'mono' }, rest.join(' · ')));
    })));
}

function runBody(data) {
  return h('div', { class: 'cols' },
    h('div', {}, metricsSection(data.metrics), issuesSection(data.issues)),
    h('div', {}, provenanceSection(data), paramsSection(data.params), summarySection(data.summary_md), logSection(data.log_tail)));
}

// A category's value: upstream's breakdown object ({value, reference_value, counts, ...}) or,
// in runs of earlier hosts, a bare number.
function categoryValue(v) {
  if (v && typeof v === 'object') return v.value !== null && v.value !== undefined ? v.value : v.reference_value;
  return v;
}

function metricsSection(m) {
  if (!m || !Array.isArray(m.series)) return section('Metrics', h('p', { class: 'muted' }, 'No metrics.json yet.'));
  const series = m.series;
  const cats = [...new Set(series.flatMap((s) => Object.keys(s.categories || {})))].sort();
  const counts = (s) => s.counts || {};
  return section('Metrics',
    h('p', { class: 'muted' }, 'aggregation ' + fmtValue(m.aggregation) + ' · k=' + fmtValue(m.k) + ' · ' + fmtValue(m.strategy) + (m.evaluation_failed ? ' · evaluation failed' : '')),
    table(['series', 'role', 'kind', ['value', 'num'], ['eval./total', 'num'], ['error', 'num'], ['unav.', 'num']], series.map((s) =>
      h('tr', { 'data-series': s.series_id, class: s.role === 'headline' ? 'headline-row' : '' },
        h('td', { class: 'mono' }, s.series_id), h('td', {}, s.role || ''), h('td', {}, s.kind || ''),
        h('td', { class: 'num metric-value' }, h('b', {}, fmtMetric(seriesValue(s), s.kind))),
        h('td', { class: 'num' }, fmtValue(counts(s).evaluated) + ' / ' + fmtValue(counts(s).total)),
        h('td', { class: 'num' }, fmtValue(counts(s).error)), h('td', { class: 'num' }, fmtValue(counts(s).unavailable))))),
    cats.length ? [h('h3', {}, 'Categories'),
      table(['category'].concat(series.map((s) => [s.series_id, 'num'])), cats.map((c) =>
        h('tr', { 'data-category': c }, h('td', {}, c), series.map((s) => h('td', { class: 'num' }, fmtMetric(categoryValue((s.categories || {})[c]), s.kind))))))] : null,
    m.extra && m.extra.model_usage ? kvList(usagePairs(m.extra)) : null,
    m.extra && (m.extra.not_scored || m.extra.skipped) ? kvList(notScoredPairs(m.extra)) : null,
    harborMetrics(m.extra || {}));
}

// The run's model usage, its cost and which prices gave it (`extra.pricing`: the pinned
// LiteLLM table or `model.params.pricing`); a model no price list knows shows "no price".
function usagePairs(extra) {
  const usage = extra.model_usage;
  const pairs = Object.entries(usage).map(([k, v]) => ['usage ' + k, k === 'cost_usd' && isNum(v) ? '$' + rustFixed(v, 4) : v]);
  if (extra.pricing) {
    const p = extra.pricing;
    pairs.push(['priced by', p.source + (p.entry ? ' (' + p.entry + ')' : '')]);
  } else if (!isNum(usage.cost_usd)) {
    pairs.push(['usage cost_usd', 'no price']);
  }
  return pairs;
}

// Harbor's own metrics (`extra.dataset_metrics`: a multi-key reward per key, never a mean of
// its keys; a uv-script's by its file) and pass@k (`extra.pass_at_k`).
function harborMetrics(extra) {
  const rows = (extra.dataset_metrics || []).flatMap((row) =>
    Object.entries(row.value || {}).map(([key, v]) =>
      h('tr', { 'data-dataset-metric': key }, h('td', {}, row.dataset || ''),
        h('td', { class: 'mono' }, row.script ? 'uv-script ' + row.script : (row.type || '')),
        h('td', { class: 'mono' }, key), h('td', { class: 'num' }, isNum(v) ? rustFixed(v, 4) : fmtValue(v)))));
  const pass = Object.entries(extra.pass_at_k || {}).sort((a, b) => Number(a[0]) - Number(b[0]));
  if (!rows.length && !pass.length) return null;
  return [h('h3', {}, 'Harbor metrics'),
    rows.length ? table(['dataset', 'metric', 'key', ['value', 'num']], rows) : null,
    pass.length ? kvList(pass.map(([k, v]) => ['pass@' + k, isNum(v) ? rustFixed(v, 4) : v])) : null];
}

// Tasks not scored, by failure class, and tasks skipped (a budget, the error rate).
function notScoredPairs(extra) {
  const pairs = [];
  const classes = (extra.not_scored || {}).classes || {};
  for (const [cls, entry] of Object.entries(classes)) {
    const reasons = Object.entries(entry.reasons || {}).map(([r, n]) => r + ' ' + n).join(', ');
    pairs.push(['not scored: ' + cls, String(entry.tasks) + (reasons ? ' (' + reasons + ')' : '')]);
  }
  for (const [reason, n] of Object.entries((extra.skipped || {}).reasons || {})) pairs.push(['skipped: ' + reason, n]);
  return pairs;
}

function issuesSection(issues) {
  if (!issues || !issues.length) return section('Issues', h('p', { class: 'muted' }, 'No issues on final attempts.'));
  return section('Issues', table(['code', 'severity', ['count', 'num']], issues.map((i) =>
    h('tr', { 'data-issue': i.code }, h('td', { class: 'mono' }, i.code), h('td', {}, badge(i.severity, 'sev-' + String(i.severity).replace(/[^a-z]/gi, ''))), h('td', { class: 'num' }, fmtValue(i.count))))));
}

function provenanceSection(data) {
  const r = data.run || {}, info = data.run_info || {}, req = info.request || {};
  const orch = info.orchestration || {};
  return section('Provenance', kvList([
    ['benchmark', r.benchmark], ['harness', r.harness], ['model', r.model], ['environment', r.environment],
    ['run id', r.run_id], ['path', r.path],
    req.model && req.model.api_protocol ? ['api protocol', req.model.api_protocol] : null,
    orch.id ? ['orchestration', orch.id] : null,
    ['started', fmtTime(r.started_at)], ['finished', fmtTime(r.finished_at)], ['duration', fmtDuration(r.duration_seconds)],
    ['tasks', taskCounts(r)],
    info.stopped && info.stopped.message ? ['stopped', info.stopped.message] : null,
  ].concat(provenancePairs(info.provenance))));
}

// What ran (`run_info.json` `provenance`): host, plugins, model endpoint, datasets, machine.
function provenancePairs(p) {
  if (!p || typeof p !== 'object') return [];
  const host = p.host || {}, model = p.model || {}, machine = p.machine || {};
  const short = (sha) => String(sha || '').slice(0, 12);
  const tools = Object.entries(p.environment_tools || {}).filter(([, v]) => v).map(([k, v]) => k + ' ' + v);
  return [
    host.version ? ['host', 'agentcompass-host ' + host.version + (host.commit ? ' (' + short(host.commit) + ')' : '')] : null,
    (p.plugins || []).length ? ['plugins', (p.plugins || []).map((x) => x.name + ' ' + x.version + ' sha256:' + short(x.sha256)).join(', ')] : null,
    model.endpoint_host ? ['model endpoint', (model.protocol || '') + ' ' + model.endpoint_host] : null,
    (p.datasets || []).length ? ['datasets', (p.datasets || []).map((d) => (d.path || '') + ' sha256:' + short(d.sha256)).join(', ')] : null,
    Object.keys(p.seeds || {}).length ? ['seeds', Object.entries(p.seeds).map(([k, v]) => k + '=' + JSON.stringify(v)).join(', ')] : null,
    (p.skills || []).length ? ['skills', (p.skills || []).map((s) => s.name + ' ' + String(s.digest || '').slice(0, 19) + (s.git_commit ? ' @' + short(s.git_commit) : '')).join(', ')] : null,
    machine.os ? ['machine', machine.os + ', kernel ' + (machine.kernel || '?') + ', ' + (machine.cpus || '?') + ' CPUs'] : null,
    tools.length ? ['environment tools', tools.join(', ')] : null,
  ];
}

function paramsSection(params) {
  return section('Parameters', params ? folded('params.json', false, jsonBlock(params)) : h('p', { class: 'muted' }, 'No params.json.'));
}

function summarySection(md) {
  return md ? section('Summary', folded('summary.md', false, pre(md, 'mono'))) : null;
}

function logSection(log) {
  return section('run.log', log ? folded('last 200 lines', false, pre(log, 'log')) : h('p', { class: 'muted' }, 'No run.log.'));
}

// --- the task list

function taskListState(runPath, query) {
  const filter = FILTERS.includes(query.get('filter')) ? query.get('filter') : 'all';
  return { run: runPath, page: Math.max(0, parseInt(query.get('page') || '0', 10) || 0), size: 50, filter,
    category: query.get('category') || '', issue: query.get('issue') || '', q: query.get('q') || '', els: {} };
}

/** Rewrites the hash's query for the page at `base` (a route.*() value) without a history entry,
 *  unless the user has meanwhile navigated elsewhere (a pending hashchange must not be undone). */
function replaceQuery(base, qs) {
  const key = (hash) => parseHash(hash).parts.join('/');
  if (key(location.hash) !== key(base)) return;
  const s = qs.toString();
  history.replaceState(null, '', base + (s ? '?' + s : ''));
}

function saveTaskListState(tl) {
  const qs = new URLSearchParams();
  if (tl.filter !== 'all') qs.set('filter', tl.filter);
  if (tl.page) qs.set('page', String(tl.page));
  for (const k of ['category', 'issue', 'q']) if (tl[k]) qs.set(k, tl[k]);
  replaceQuery(route.run(tl.run), qs);
}

function renderTaskListShell(gen, box, tl) {
  const reload = () => { saveTaskListState(tl); loadTasks(gen, tl); };
  const onSearch = debounce((v) => { tl.q = v; tl.page = 0; reload(); }, 250);
  tl.els = {
    filters: h('span', {}), category: h('span', {}), issue: h('span', {}),
    count: h('span', { id: 'task-count' }, '…'), pager: h('div', {}), body: h('tbody', {}), error: h('div', {}),
  };
  tl.reload = reload;
  replace(box,
    h('h2', {}, 'Tasks ', tl.els.count),
    h('div', { class: 'toolbar filters' }, tl.els.filters, tl.els.category, tl.els.issue,
      h('input', { type: 'search', id: 'task-search', placeholder: 'search task id…', value: tl.q, oninput: (e) => onSearch(e.target.value) })),
    tl.els.error,
    h('table', { class: 'grid tasks', id: 'task-list' },
      h('thead', {}, headerRow(['', 'task', 'status', 'category', ['correct', 'num'], ['reward', 'num'], 'issues', ['att.', 'num'], ['duration', 'num']])),
      tl.els.body),
    tl.els.pager);
}

async function loadTasks(gen, tl) {
  const seq = (tl.seq = (tl.seq || 0) + 1);
  let data;
  try {
    data = await api('tasks', { run: tl.run, page: tl.page, size: tl.size, filter: tl.filter, category: tl.category, issue: tl.issue, q: tl.q });
  } catch (e) {
    if (alive(gen)) replace(tl.els.error, errorBox(e));
    return;
  }
  if (!alive(gen) || seq !== tl.seq) return;
  clear(tl.els.error);
  const set = (k, v) => { tl[k] = v; tl.page = 0; tl.reload(); };
  replace(tl.els.filters, buttonGroup(FILTERS, tl.filter, 'data-filter', (v) => set('filter', v)));
  // Re-created only when the options change, so a 2 s poll does not close an open drop-down.
  const sig = JSON.stringify([data.categories, data.issue_codes, tl.category, tl.issue]);
  if (sig !== tl.selectSig) {
    tl.selectSig = sig;
    replace(tl.els.category, select(data.categories || [], tl.category, (v) => set('category', v), 'all categories', { id: 'category-select' }));
    replace(tl.els.issue, select(data.issue_codes || [], tl.issue, (v) => set('issue', v), 'any issue', { id: 'issue-select' }));
  }
  tl.els.count.textContent = data.total + (data.total === 1 ? ' task' : ' tasks');
  const rows = (data.tasks || []).map((t) => taskRow(tl.run, t));
  replace(tl.els.body, rows.length ? rows : h('tr', {}, h('td', { colspan: '9', class: 'muted' }, 'No matching tasks.')));
  replace(tl.els.pager, pager(tl.page, tl.size, data.total || 0, (p) => { tl.page = p; tl.reload(); }));
  // The server answers before its per-run index is built (categories and issue codes empty
  // until then): ask again shortly to fill the drop-downs.
  if (data.index_ready === false && (tl.indexRetries = (tl.indexRetries || 0) + 1) <= 20) {
    setTimeout(() => { if (alive(gen) && seq === tl.seq) loadTasks(gen, tl); }, 500);
  }
}

function taskRow(runPath, t) {
  const href = route.task(runPath, t.ref);
  return h('tr', { 'data-task-id': t.task_id, 'data-state': t.state, class: 'state-' + String(t.state).replace(/[^a-z]/gi, '') },
    h('td', {}, t.state === 'running' ? h('span', { class: 'spinner', title: 'running' }) : null),
    h('td', { class: 'mono' }, h('a', { href }, t.task_id)),
    h('td', {}, statusBadge(t.status)),
    h('td', {}, t.category || ''),
    h('td', { class: 'num' }, correctMark(t.correct)),
    h('td', { class: 'num' }, isNum(t.reward) ? fmtMetric(t.reward, 'scalar') : '—'),
    h('td', {}, (t.issues || []).map((c) => badge(c, 'issue'))),
    h('td', { class: 'num' }, fmtValue(t.attempts)),
    h('td', { class: 'num duration', title: isNum(t.duration_seconds) ? t.duration_seconds + ' s' : 'not recorded' }, fmtDuration(t.duration_seconds)));
}

// ---------------------------------------------------------------------------------------------
// Task page (#/task/PATH/REF)

async function pageTask(gen, root, runPath, ref, query) {
  setCrumbs(homeCrumb(), { text: runPath, href: route.run(runPath) }, { text: ref });
  const data = await api('task', { run: runPath, task: ref });
  if (!alive(gen)) return;
  const task = data.task || {};
  if (data.omitted) { renderOmittedTask(root, ref, task, data.row || {}); return; }
  const attempts = data.attempts || [];
  const panel = h('div', { id: 'attempt' });
  const tabs = h('div', { class: 'tabs', role: 'tablist', id: 'attempt-tabs' });
  const show = (i) => {
    replace(tabs, attempts.map((a, j) => h('button', { type: 'button', role: 'tab', 'data-attempt': a.name, class: i === j ? 'active' : '', 'aria-selected': String(i === j), onclick: () => show(j) },
      a.name, ' ', a.result ? statusBadge(a.result.status) : null, (a.retries || []).length ? h('span', { class: 'muted' }, ' +' + a.retries.length + ' retr.') : null)));
    replace(panel, attempts[i] ? attemptPanel(runPath, ref, attempts[i], task) : h('p', { class: 'muted' }, 'No attempts recorded yet.'));
  };
  replace(root,
    h('div', { class: 'toolbar' }, h('h1', { class: 'mono', id: 'task-title' }, task.task_id || ref),
      task.category ? badge(task.category, 'cat') : null),
    section('Task', kvList([['task id', task.task_id], ['ref', ref], ['category', task.category],
      task.attempt_plan ? ['attempt plan', 'k=' + fmtValue(task.attempt_plan.k) + ' ' + fmtValue(task.attempt_plan.strategy)] : null,
      ['retries', task.retry_count], ['schema', task.schema_version]])),
    tabs, panel);
  const want = query.get('attempt');
  const idx = Math.max(0, attempts.findIndex((a) => a.name === want));
  show(want ? idx : Math.max(0, attempts.length - 1));
  if (!REPORT && String(ref).startsWith('running/')) followRunningTask(gen, runPath, ref, task.task_id, data, attempts, show);
}

/** A running task's page follows it: new attempts and results appear every 2 s, and once the
 *  task is published (its directory moves out of running/) the page moves to it. */
function followRunningTask(gen, runPath, ref, taskId, data, attempts, show) {
  setLive(true);
  let last = JSON.stringify(data);
  every(gen, 2000, async () => {
    let fresh;
    try {
      fresh = await api('task', { run: runPath, task: ref });
    } catch (_) {
      const found = await api('tasks', { run: runPath, q: taskId, size: 50 });
      const row = (found.tasks || []).find((t) => t.task_id === taskId && t.state !== 'running');
      if (row && alive(gen)) location.replace(route.task(runPath, row.ref));
      return;
    }
    const text = JSON.stringify(fresh);
    if (!alive(gen) || text === last) return;
    last = text;
    attempts.splice(0, attempts.length, ...(fresh.attempts || []));
    show(Math.max(0, attempts.length - 1));
  });
}

/** A report's task whose detail the report leaves out: its row, and why. */
function renderOmittedTask(root, ref, task, row) {
  replace(root,
    h('div', { class: 'toolbar' }, h('h1', { class: 'mono', id: 'task-title' }, task.task_id || ref), task.category ? badge(task.category, 'cat') : null),
    section('Task', kvList([['task id', row.task_id], ['ref', ref], ['status', statusBadge(row.status)], ['correct', correctMark(row.correct)],
      ['reward', isNum(row.reward) ? fmtMetric(row.reward, 'scalar') : '—'], ['issues', (row.issues || []).join(', ') || '—'], ['attempts', row.attempts], ['duration', fmtDuration(row.duration_seconds)]])),
    h('section', { class: 'card', id: 'omitted' }, h('h2', {}, 'Not in this report'),
      h('p', { class: 'muted' }, 'This report holds the attempts and trajectories of ' + Object.keys(REPORT.details || {}).length + ' of ' + (REPORT.rows || []).length +
        ' tasks (tasks that were not correct first). Open the run with agentcompass-host view to see this one.')));
}

// The ground truth: the task's (task.json, as upstream keeps it), else the attempt's (runs
// of earlier hosts).
function groundTruth(r, task) {
  const gt = task && task.ground_truth !== undefined && task.ground_truth !== null ? task.ground_truth : r.ground_truth;
  return gt === null || gt === undefined ? '—' : pre(prettyJson(gt), 'answer');
}

function attemptPanel(runPath, ref, a, task) {
  if (!a.result) {
    return h('div', { id: 'no-result' },
      section('Outcome', h('p', { class: 'muted' }, String(ref).startsWith('running/') ? 'Still running: no result.json yet.' : 'No result.json for this attempt.')),
      retriesSection(a.retries), artifactsSection(runPath, ref, a));
  }
  const r = a.result;
  return h('div', {},
    h('div', { class: 'cols' },
      h('div', {},
        section('Outcome', kvList([['status', statusBadge(r.status)], ['final answer', r.final_answer === null || r.final_answer === undefined ? '—' : pre(r.final_answer, 'answer')],
          ['ground truth', groundTruth(r, task)], ['retry count', r.retry_count]])),
        metricsKv(r.metrics), issuesList(r.issues)),
      h('div', {}, timingsSection(r), retriesSection(a.retries), metaSection(r))),
    verifierSection(r),
    artifactsSection(runPath, ref, a),
    trajectorySection(r.trajectory));
}

function metricsKv(metrics) {
  const entries = Object.entries(metrics || {});
  return section('Metrics', entries.length ? h('div', { id: 'task-metrics' }, kvList(entries.map(([k, v]) => [k, v]))) : h('p', { class: 'muted' }, 'No metrics.'));
}

function issuesList(issues) {
  if (!issues || !issues.length) return section('Issues', h('p', { class: 'muted' }, 'None.'));
  return section('Issues', table(['severity', 'phase', 'code', 'message'], issues.map((i) =>
    h('tr', { 'data-issue': i.code }, h('td', {}, badge(i.severity, 'sev-' + String(i.severity).replace(/[^a-z]/gi, ''))), h('td', {}, i.phase || ''),
      h('td', { class: 'mono' }, i.code), h('td', { class: 'wrap' }, i.message || '')))));
}

function telemetryOf(r) {
  const harness = r.meta && r.meta.harness && r.meta.harness.telemetry;
  return harness || r.telemetry || {};
}

function timingsSection(r) {
  const t = r.trajectory || {};
  const tel = telemetryOf(r);
  const start = parseTime(t.started_at), end = parseTime(t.finished_at);
  const steps = (t.steps || []);
  const sum = (f) => steps.reduce((acc, s) => acc + (s.metric && isNum(s.metric[f]) ? s.metric[f] : 0), 0);
  const pairs = [
    ['trajectory start', fmtTime(t.started_at)], ['trajectory end', fmtTime(t.finished_at)],
    start && end ? ['trajectory span', fmtDuration((end - start) / 1000)] : null,
    ['steps', steps.length],
    ['prompt tokens (steps)', sum('prompt_tokens_len')], ['completion tokens (steps)', sum('completion_tokens_len')],
    sum('llm_infer_ms') ? ['llm time (steps)', fmtMs(sum('llm_infer_ms'))] : null,
    sum('env_action_ms') ? ['env time (steps)', fmtMs(sum('env_action_ms'))] : null,
  ];
  for (const [k, v] of Object.entries(tel)) {
    if (/(_ms|_seconds|duration|_at)$/.test(k) && isNum(v)) pairs.push([k, fmtNamed(k, v)]);
  }
  if (r.timings && typeof r.timings === 'object') for (const [k, v] of Object.entries(r.timings)) pairs.push([k, fmtNamed(k, v)]);
  return section('Timings', kvList(pairs));
}

/** The verifier's record of each benchmark that keeps one in `meta.benchmark.<name>` (Harbor:
 *  `test_exit_code`, `test_timed_out`, `test_stdout_tail`, `test_stderr_tail`, `rewards`). */
function verifierRecords(r) {
  const bench = r.meta && r.meta.benchmark;
  if (!bench || typeof bench !== 'object') return [];
  const isVerifier = (o) => o && typeof o === 'object' && ['test_stdout_tail', 'test_stderr_tail', 'test_exit_code', 'stdout', 'verifier'].some((k) => k in o);
  return Object.entries(bench).filter(([, v]) => isVerifier(v)).map(([name, v]) => [name, v.verifier && typeof v.verifier === 'object' ? v.verifier : v]);
}

/** A stream of text, "(no output)" when it is empty. */
function outputBlock(text, cls) {
  if (text === null || text === undefined || text === '') return h('pre', { class: 'out empty ' + (cls || '') }, '(no output)');
  return pre(typeof text === 'string' ? text : prettyJson(text), 'out ' + (cls || ''));
}

function verifierSection(r) {
  const records = verifierRecords(r);
  if (!records.length) return null;
  return h('section', { class: 'card', id: 'verifier' }, h('h2', {}, 'Verifier'), records.map(([name, v]) => {
    const exit = isNum(v.test_exit_code) ? v.test_exit_code : v.exit_code;
    const stdout = v.test_stdout_tail !== undefined ? v.test_stdout_tail : v.stdout;
    const stderr = v.test_stderr_tail !== undefined ? v.test_stderr_tail : v.stderr;
    return h('div', { class: 'verifier', 'data-benchmark': name },
      kvList([['benchmark', name],
        isNum(exit) ? ['exit code', h('span', { class: 'exit ' + (exit === 0 ? 'ok' : 'bad'), 'data-exit-code': String(exit) }, String(exit))] : null,
        v.test_timed_out !== undefined ? ['timed out', v.test_timed_out ? 'yes' : 'no'] : null,
        v.rewards && typeof v.rewards === 'object' ? ['rewards', Object.entries(v.rewards).map(([k, x]) => k + ' ' + (isNum(x) ? rustFixed(x, 4) : fmtValue(x))).join(', ')] : null,
        v.reward_file ? ['reward file', v.reward_file] : null]),
      h('div', { class: 'stream' }, h('span', { class: 'label' }, 'stdout'), outputBlock(stdout, 'verifier-stdout')),
      stderr ? h('div', { class: 'stream' }, h('span', { class: 'label' }, 'stderr'), outputBlock(stderr, 'err')) : null);
  }));
}

function metaSection(r) {
  const tel = telemetryOf(r);
  const parts = [];
  if (Object.keys(tel).length) parts.push(folded('telemetry', false, jsonBlock(tel)));
  if (r.meta && Object.keys(r.meta).length) parts.push(folded('meta', false, jsonBlock(r.meta)));
  if (r.analysis_result && Object.keys(r.analysis_result).length) parts.push(folded('analysis', false, jsonBlock(r.analysis_result)));
  return parts.length ? section('Details', parts) : null;
}

function retriesSection(retries) {
  if (!retries || !retries.length) return null;
  return section('Discarded retries (' + retries.length + ')', retries.map((rt) =>
    h('div', { class: 'retry' },
      kvList([['retry', fmtValue(rt.retry) + ' / ' + fmtValue(rt.max_retries)], ['stage', rt.stage], ['matched', rt.matched_pattern], ['archived to', rt.archived_to], ['delay', fmtDuration(rt.retry_delay_seconds)]]),
      rt.issues && rt.issues.length ? issuesTable(rt.issues) : null,
      folded('record', false, jsonBlock(rt)))));
}

function issuesTable(issues) {
  return table(['severity', 'code', 'message'], issues.map((i) => h('tr', {}, h('td', {}, i.severity || ''), h('td', { class: 'mono' }, i.code || ''), h('td', { class: 'wrap' }, i.message || ''))));
}

function artifactHref(runPath, ref, attempt, path) {
  return apiUrl('artifact', { run: runPath, task: ref, attempt, path });
}

function downloadLink(runPath, ref, attempt, path) {
  if (REPORT) return h('span', { class: 'muted' }, 'not in report');
  return h('a', { href: artifactHref(runPath, ref, attempt, path), download: path.split('/').pop() || 'artifact', class: 'dl' }, 'download');
}

function artifactsSection(runPath, ref, a) {
  const m = a.manifest;
  if (!m || !Array.isArray(m.entries)) return null;
  const rows = [];
  for (const e of m.entries) {
    const collected = e.status === 'collected' || e.status === 'partial';
    rows.push(h('tr', { 'data-artifact': e.destination },
      h('td', { class: 'mono' }, e.destination), h('td', { class: 'mono muted' }, e.source), h('td', {}, e.kind || '—'),
      h('td', {}, badge(e.status, 'art-' + String(e.status).replace(/[^a-z]/gi, ''))), h('td', { class: 'num' }, fmtBytes(e.bytes)),
      h('td', { class: 'mono hash', title: e.sha256 || '' }, e.sha256 ? e.sha256.slice(0, 16) + '…' : '—'),
      h('td', {}, collected && e.kind === 'file' ? downloadLink(runPath, ref, a.name, e.destination) : (e.error ? h('span', { class: 'bad' }, e.error) : ''))));
    for (const f of e.files || []) {
      const p = e.destination.replace(/\/$/, '') + '/' + f.path;
      rows.push(h('tr', { class: 'sub', 'data-artifact': p }, h('td', { class: 'mono' }, '└ ' + f.path), h('td', {}), h('td', {}, 'file'), h('td', {}),
        h('td', { class: 'num' }, fmtBytes(f.bytes)), h('td', { class: 'mono hash', title: f.sha256 || '' }, f.sha256 ? f.sha256.slice(0, 16) + '…' : '—'),
        h('td', {}, downloadLink(runPath, ref, a.name, p))));
    }
  }
  return section('Artifacts', h('p', { class: 'muted' }, (m.complete ? 'complete' : 'incomplete') + ' · ' + fmtBytes(m.total_bytes)),
    table(['destination', 'source', 'kind', 'status', ['size', 'num'], 'sha256', ''], rows, { class: 'grid', id: 'artifacts' }));
}

// --- trajectory

function trajectorySection(t) {
  if (!t || !Array.isArray(t.steps) || !t.steps.length) return section('Trajectory', h('div', { id: 'trajectory' }, h('p', { class: 'muted' }, 'No trajectory recorded.')));
  return section('Trajectory (' + t.steps.length + ' steps, ' + fmtValue(t.schema_version) + ')',
    h('div', { id: 'trajectory' }, t.steps.map(stepView)));
}

/** One trajectory step, numbered from 1 by its place (a harness may record ids from 0; the
 *  recorded id is the number's tooltip). */
function stepView(s, i) {
  const ac = s.assistant_content || {};
  const calls = Array.isArray(ac.tool_calls) ? ac.tool_calls : (ac.tool_calls ? [ac.tool_calls] : []);
  const obs = Array.isArray(s.observation) ? s.observation : [];
  const recorded = s.step_id !== undefined && s.step_id !== null ? 'recorded step_id ' + s.step_id : null;
  return h('div', { class: 'step', 'data-step': String(i + 1) },
    h('div', { class: 'step-head' }, h('b', { title: recorded }, 'Step ' + (i + 1)), stepMetrics(s.metric, s)),
    s.system_prompt ? h('details', { class: 'system' }, h('summary', {}, 'system prompt'), pre(s.system_prompt)) : null,
    hasValue(s.tools) ? h('details', { class: 'tools' }, h('summary', {}, 'tools' + (Array.isArray(s.tools) ? ' (' + s.tools.length + ')' : '')), jsonBlock(s.tools)) : null,
    hasValue(s.user_content) ? inputView(s.user_content) : null,
    ac.reasoning_content ? h('details', { class: 'msg reasoning', open: true }, h('summary', {}, 'reasoning'), pre(ac.reasoning_content)) : null,
    hasValue(ac.content) ? h('div', { class: 'msg assistant' }, h('div', { class: 'role' }, 'assistant'), contentView(ac.content)) : null,
    calls.map((c) => toolCallView(c, obs)),
    obs.filter((o) => !calls.some((c) => c && o && c.id && c.id === o.tool_call_id)).map(observationView));
}

/** A step's user content: chat messages (each with its role) when it is a list of them, else
 *  one user message. */
function inputView(c) {
  const messages = chatMessages(c);
  if (messages) return h('div', { class: 'msg input' }, h('div', { class: 'role' }, 'input · ' + messages.length + (messages.length === 1 ? ' message' : ' messages')), chatView(messages));
  return h('div', { class: 'msg user' }, h('div', { class: 'role' }, 'user'), contentView(c));
}

function hasValue(v) {
  if (v === null || v === undefined || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  return true;
}

function stepMetrics(m, s) {
  m = m || {};
  const chip = (label, v) => (v === null || v === undefined ? null : h('span', { class: 'chip' }, label + ' ' + v));
  return h('span', { class: 'chips' },
    chip('in', isNum(m.prompt_tokens_len) ? m.prompt_tokens_len + ' tok' : null),
    chip('out', isNum(m.completion_tokens_len) ? m.completion_tokens_len + ' tok' : null),
    chip('llm', isNum(m.llm_infer_ms) ? fmtMs(m.llm_infer_ms) : null),
    chip('env', isNum(m.env_action_ms) ? fmtMs(m.env_action_ms) : null),
    chip('stop', m.stop_reason || null),
    s.started_at ? chip('at', fmtTime(s.started_at)) : null);
}

/** A list of chat messages ({role, content}), possibly sent as JSON text (`openai_chat`
 *  records the messages it sent that way); `null` when `c` is not one. */
function chatMessages(c) {
  if (typeof c === 'string') {
    const t = c.trim();
    if (!t.startsWith('[')) return null;
    try { c = JSON.parse(t); } catch (_) { return null; }
  }
  const ok = Array.isArray(c) && c.length > 0 && c.every((m) => m && typeof m === 'object' && typeof m.role === 'string' && 'content' in m);
  return ok ? c : null;
}

/** Chat messages, each with its role. */
function chatView(messages) {
  return h('div', { class: 'chat' }, messages.map((m) => h('div', { class: 'chat-msg role-' + m.role.replace(/[^a-z_]/gi, ''), 'data-role': m.role },
    h('div', { class: 'role' }, m.role), m.content === null || m.content === '' ? h('p', { class: 'muted' }, '(empty)') : contentView(m.content),
    Array.isArray(m.tool_calls) && m.tool_calls.length ? folded('tool calls', false, jsonBlock(m.tool_calls)) : null)));
}

/** user/assistant content: a string, chat messages, a list of parts ({type:"text",text}), or
 *  any JSON. */
function contentView(c) {
  const messages = chatMessages(c);
  if (messages) return chatView(messages);
  if (typeof c === 'string') return pre(c, 'text');
  if (Array.isArray(c) && c.every((p) => p && typeof p === 'object' && typeof p.text === 'string')) return c.map((p) => pre(p.text, 'text'));
  return jsonBlock(c);
}

function toolArgs(c) {
  let args = c.arguments !== undefined ? c.arguments : (c.function && c.function.arguments);
  if (typeof args === 'string') { try { args = JSON.parse(args); } catch (_) { /* keep the string */ } }
  return args;
}

/** Arguments besides the command and its description (then the JSON is shown unfolded). */
function hasOtherArgs(args) {
  return Boolean(args && typeof args === 'object' && Object.keys(args).some((k) => k !== 'command' && k !== 'description'));
}

function toolCallView(c, obs) {
  if (!c || typeof c !== 'object') return h('div', { class: 'tool-call' }, jsonBlock(c));
  const args = toolArgs(c);
  const name = c.name || (c.function && c.function.name) || 'tool';
  const command = args && typeof args === 'object' && typeof args.command === 'string' ? args.command
    : (args && typeof args === 'object' && Array.isArray(args.command) ? args.command.join(' ') : null);
  const matched = obs.filter((o) => o && c.id && o.tool_call_id === c.id);
  return h('div', { class: 'tool-call', 'data-tool': name },
    h('div', { class: 'call-head' }, h('span', { class: 'tool-name' }, name), c.id ? h('span', { class: 'muted mono' }, ' ' + c.id) : null,
      args && typeof args === 'object' && typeof args.description === 'string' ? h('span', { class: 'muted' }, ' — ' + args.description) : null),
    command !== null ? pre(command, 'command') : null,
    typeof args === 'string' ? pre(args, 'command') : folded('arguments', command === null || hasOtherArgs(args), jsonBlock(args === undefined ? null : args)),
    matched.map(observationView));
}

function observationView(o) {
  if (!o || typeof o !== 'object') return h('div', { class: 'observation' }, outputBlock(o === null || o === undefined ? '' : o));
  const err = o.is_error === true || (isNum(o.exit_code) && o.exit_code !== 0);
  const streams = [];
  const hasErr = o.stderr !== undefined && o.stderr !== null && o.stderr !== '';
  if (o.stdout !== undefined && o.stdout !== null && (o.stdout !== '' || !hasErr)) streams.push(h('div', { class: 'stream' }, h('span', { class: 'label' }, 'stdout'), outputBlock(o.stdout)));
  if (hasErr) streams.push(h('div', { class: 'stream' }, h('span', { class: 'label' }, 'stderr'), outputBlock(o.stderr, 'err')));
  if (!streams.length && o.output !== undefined) streams.push(outputBlock(o.output));
  if (!streams.length && o.content !== undefined) streams.push(hasValue(o.content) ? contentView(o.content) : outputBlock(''));
  if (!streams.length) streams.push(outputBlock(''));
  const known = ['tool_call_id', 'output', 'stdout', 'stderr', 'exit_code', 'is_error', 'content'];
  const rest = Object.keys(o).filter((k) => !known.includes(k));
  return h('div', { class: 'observation' + (err ? ' is-error' : '') },
    h('div', { class: 'obs-head' }, h('span', { class: 'role' }, 'observation'),
      o.tool_call_id ? h('span', { class: 'muted mono' }, ' ' + o.tool_call_id) : null,
      o.exit_code !== undefined && o.exit_code !== null ? h('span', { class: 'exit ' + (o.exit_code === 0 ? 'ok' : 'bad'), 'data-exit-code': String(o.exit_code) }, ' exit ' + o.exit_code) : null,
      o.is_error === true ? h('span', { class: 'bad' }, ' error') : null),
    streams,
    rest.length ? folded('more', false, jsonBlock(Object.fromEntries(rest.map((k) => [k, o[k]])))) : null);
}

// ---------------------------------------------------------------------------------------------
// Compare page (#/compare/A/B)

const CHANGES = ['fixed', 'broken', 'both_right', 'both_wrong', 'only_a', 'only_b'];
const CHANGE_LABEL = { fixed: 'fixed', broken: 'broken', both_right: 'both right', both_wrong: 'both wrong', only_a: 'only in A', only_b: 'only in B' };

async function fetchAllCompare(gen, a, b) {
  const size = 100;
  const first = await api('compare', { a, b, page: 0, size });
  const tasks = (first.tasks || []).slice();
  const pages = Math.min(200, Math.ceil((first.total || 0) / size));
  for (let p = 1; p < pages && alive(gen); p++) {
    const next = await api('compare', { a, b, page: p, size });
    if (!next.tasks || !next.tasks.length) break;
    tasks.push(...next.tasks);
  }
  first.tasks = tasks;
  return first;
}

async function pageCompare(gen, root, a, b, query) {
  setCrumbs(homeCrumb(), { text: 'compare' });
  const data = await fetchAllCompare(gen, a, b);
  if (!alive(gen)) return;
  const st = { change: CHANGES.includes(query.get('change')) ? query.get('change') : '', page: 0, size: 100 };
  const list = h('div', {});
  const counts = h('div', { id: 'compare-counts', class: 'counts-grid' });
  const rerenderList = () => {
    replaceQuery(route.compare(a, b), new URLSearchParams(st.change ? { change: st.change } : {}));
    renderCompareCounts(counts, data.counts || {}, st, rerenderList);
    renderCompareTasks(list, a, b, data.tasks, st, rerenderList);
  };
  replace(root,
    h('div', { class: 'toolbar' }, h('h1', {}, 'Compare')),
    h('div', { class: 'cols' }, runCard('A', data.a), runCard('B', data.b)),
    pairedSection(data.paired),
    section('Changes (A → B)', counts),
    compareCharts(data.paired, data.counts || {}),
    categoriesDelta(data.paired, data.categories),
    section('Tasks', list));
  rerenderList();
}

function runCard(label, r) {
  r = r || {};
  const hl = r.headline;
  return section(label + ': ' + (r.run_id || r.path || '?'), kvList([
    ['path', h('a', { href: route.run(r.path || ''), class: 'mono' }, r.path || '')],
    ['model', r.model], ['harness', r.harness], ['benchmark', r.benchmark], ['status', statusBadge(r.status)],
    ['headline', hl ? fmtMetric(seriesValue(hl), hl.kind) + ' ' + hl.metric_id : '—'], ['started', fmtTime(r.started_at)]]));
}

function renderCompareCounts(box, counts, st, rerender) {
  replace(box, CHANGES.map((c) => h('button', { type: 'button', class: 'count ch-' + c + (st.change === c ? ' active' : ''), 'data-change': c,
    onclick: () => { st.change = st.change === c ? '' : c; st.page = 0; rerender(); } },
  h('span', { class: 'n' }, fmtValue(counts[c] || 0)), h('span', { class: 'l' }, CHANGE_LABEL[c]))));
}

/** The paired statistics as `agentcompass-host compare A B` prints them. */
function pairedLines(p) {
  const k = p.kind;
  const lines = [['metric', 'metric ' + (p.metric || '—') + ' (' + k + ')'],
    ['shared', 'shared tasks scored in both: ' + p.shared + ' (only in A: ' + p.only_a + ', only in B: ' + p.only_b + ', not scored in one: ' + p.unscored + ')']];
  if (isNum(p.mean_a) && isNum(p.mean_b) && isNum(p.difference)) {
    let text = 'A ' + fmtMetric(p.mean_a, k) + '  B ' + fmtMetric(p.mean_b, k) + '  B−A ' + fmtDelta(p.difference, k);
    const i = p.interval;
    if (i) text += '  ' + rustFixed(i.confidence * 100, 0) + '% CI [' + fmtDelta(i.low, k) + ', ' + fmtDelta(i.high, k) + '] (paired bootstrap, ' + i.resamples + ' resamples, seed ' + i.seed + ')';
    lines.push(['difference', text]);
  } else {
    lines.push(['difference', 'no shared task is scored in both runs']);
  }
  if (p.mcnemar) lines.push(['mcnemar', 'McNemar exact: fixed ' + p.mcnemar.fixed + ', broken ' + p.mcnemar.broken + ', p = ' + rustFixed(p.mcnemar.p_value, 4)]);
  return lines;
}

function pairedSection(p) {
  if (!p) return null;
  return h('section', { class: 'card', id: 'paired' }, h('h2', {}, 'Paired statistics (B against A)'),
    pairedLines(p).map(([name, text]) => h('div', { class: 'mono stat', 'data-stat': name }, text)),
    h('p', { class: 'muted' }, 'As agentcompass-host compare A B prints them, over the tasks both runs published and scored (each task\'s final attempt).'));
}

/** The compare page's charts: B − A per category, and the tasks fixed and broken. */
function compareCharts(p, counts) {
  const cats = (p && p.categories) || [];
  const kind = p ? p.kind : 'binary_success';
  const fixed = p && p.mcnemar ? p.mcnemar.fixed : (counts.fixed || 0);
  const broken = p && p.mcnemar ? p.mcnemar.broken : (counts.broken || 0);
  return h('section', { class: 'card', id: 'compare-charts' }, h('h2', {}, 'Charts'), h('div', { class: 'chart-grid' },
    chartCard('category-deltas', 'B − A per category',
      cats.length ? barChart('category-deltas', cats.map((c) => ({ label: c.category, value: c.difference, text: fmtDelta(c.difference, kind), cls: c.difference > 0 ? 'up' : c.difference < 0 ? 'down' : '' })), { diverging: true, label: 'B − A per category' }) : null,
      'No category scored in both runs.'),
    chartCard('fixed-broken', 'Tasks fixed and broken',
      barChart('fixed-broken', [{ label: 'fixed', value: fixed, text: String(fixed), cls: 'up' }, { label: 'broken', value: broken, text: String(broken), cls: 'down' }], { label: 'tasks fixed and broken' }))));
}

/** Per-category paired means as the CLI's table (category, tasks, A, B, B−A); without paired
 *  statistics, each run's accuracy per category. */
function categoriesDelta(p, cats) {
  if (p && p.categories && p.categories.length) {
    const k = p.kind;
    return section('Categories', table(['category', ['tasks', 'num'], ['A', 'num'], ['B', 'num'], ['B−A', 'num']], p.categories.map((c) => h('tr', { 'data-category': c.category },
      h('td', {}, c.category), h('td', { class: 'num' }, String(c.tasks)), h('td', { class: 'num' }, fmtMetric(c.mean_a, k)), h('td', { class: 'num' }, fmtMetric(c.mean_b, k)),
      h('td', { class: 'num ' + (c.difference > 0 ? 'ok' : c.difference < 0 ? 'bad' : '') }, fmtDelta(c.difference, k))))));
  }
  if (!cats || !cats.length) return null;
  const k = 'binary_success';
  return section('Categories', table(['category', ['A', 'num'], ['B', 'num'], ['B−A', 'num']], cats.map((c) => h('tr', { 'data-category': c.category },
    h('td', {}, c.category), h('td', { class: 'num' }, fmtMetric(c.a, k)), h('td', { class: 'num' }, fmtMetric(c.b, k)),
    h('td', { class: 'num ' + (isNum(c.delta) ? (c.delta > 0 ? 'ok' : c.delta < 0 ? 'bad' : '') : '') }, fmtDelta(c.delta, k))))));
}

function renderCompareTasks(box, a, b, tasks, st, rerender) {
  const rows = st.change ? tasks.filter((t) => t.change === st.change) : tasks;
  const page = rows.slice(st.page * st.size, (st.page + 1) * st.size);
  replace(box,
    h('div', { class: 'toolbar' }, buttonGroup([''].concat(CHANGES), st.change, 'data-change-filter', (v) => { st.change = v; st.page = 0; rerender(); }, (v) => (v ? CHANGE_LABEL[v] : 'all')),
      h('span', { id: 'compare-task-count' }, rows.length + (rows.length === 1 ? ' task' : ' tasks'))),
    table(['task', ['A', 'num'], ['B', 'num'], 'change'], page.map((t) => h('tr', { 'data-task-id': t.task_id, 'data-change': t.change },
      h('td', { class: 'mono' }, h('a', { href: route.run(b) + '?q=' + enc(t.task_id), title: 'find in B' }, t.task_id)), h('td', { class: 'num' }, correctMark(t.a)), h('td', { class: 'num' }, correctMark(t.b)),
      h('td', {}, badge(CHANGE_LABEL[t.change] || t.change, 'ch-' + String(t.change).replace(/[^a-z_]/gi, ''))))), { class: 'grid', id: 'compare-tasks' }),
    pager(st.page, st.size, rows.length, (p) => { st.page = p; rerender(); }));
}

// ---------------------------------------------------------------------------------------------
// Router

function parseHash(hash) {
  const raw = (hash === undefined ? location.hash : hash).replace(/^#/, '') || '/';
  const qi = raw.indexOf('?');
  const path = qi >= 0 ? raw.slice(0, qi) : raw;
  const query = new URLSearchParams(qi >= 0 ? raw.slice(qi + 1) : '');
  const parts = path.split('/').filter((p) => p !== '').map((p) => { try { return decodeURIComponent(p); } catch (_) { return p; } });
  return { parts, query };
}

async function rerender() {
  const gen = newView();
  const root = $('#app');
  const { parts, query } = parseHash();
  try {
    if (parts.length === 0 && REPORT) await pageRun(gen, root, REPORT.run_path || '', query);
    else if (parts.length === 0) await pageRuns(gen, root);
    else if (parts[0] === 'run' && parts.length >= 2) await pageRun(gen, root, parts.slice(1).join('/'), query);
    else if (parts[0] === 'task' && parts.length === 3) await pageTask(gen, root, parts[1], parts[2], query);
    else if (parts[0] === 'task' && parts.length > 3) await pageTask(gen, root, parts.slice(1, -2).join('/'), parts.slice(-2).join('/'), query);
    else if (parts[0] === 'compare' && parts.length === 3) await pageCompare(gen, root, parts[1], parts[2], query);
    else replace(root, h('p', {}, 'Unknown page. '), h('a', { href: '#/' }, 'Back to runs'));
  } catch (e) {
    if (alive(gen)) replace(root, errorBox(e), h('p', {}, h('a', { href: '#/' }, 'Back to runs')));
  }
  if (alive(gen)) window.scrollTo(0, 0);
}

window.addEventListener('hashchange', rerender);
window.addEventListener('DOMContentLoaded', () => { reportBanner(); rerender(); });
