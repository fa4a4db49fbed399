/* OpenClawBrain window: the helpers every page shares (elements, numbers and times,
 * the API, tables, the header line), on one namespace, window.Ocb, with the pages'
 * registry (Ocb.pages) and the state the files share (Ocb.state). Vanilla JS, no
 * library: every text from the brain is put in the DOM as a text node (h() below),
 * never as markup. */
(function () {
  'use strict';

  const G = window.OcbGraph;
  const meta = (name) => {
    const m = document.querySelector(`meta[name="${name}"]`);
    return m ? m.getAttribute('content') || '' : '';
  };
  const TOKEN = meta('ocb-token');
  const WRITES = meta('ocb-writes') === 'true';
  const MAX_ROWS = 500;
  const main = document.getElementById('main');
  const statusEl = document.getElementById('status');

  /** What the files share and change: the page shown, the last path routed, whether
   * the render comes from the back or forward button, the brain's info. */
  const state = {
    current: { name: null, update: null, refresh: null },
    lastRouted: null, // the path and query last rendered (a change of #hash alone renders nothing)
    fromHistory: false, // the render comes from the back or forward button
    info: null,
  };

  // ------------------------------------------------------------------ helpers

  /** An element: attributes as attributes (functions under on* as listeners), strings
   * and numbers appended as text nodes, arrays flattened, null/false skipped. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    append(el, children);
    return el;
  }
  function append(el, children) {
    for (const c of [children].flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function setStatus(text) { if (statusEl) statusEl.textContent = text || ''; }

  /** The page has drawn its data: main[data-ready] names it, data-renders counts the
   * renders and data-ready-at says when (ms since the navigation started). */
  function markReady() {
    main.dataset.ready = state.current.name || '';
    main.dataset.renders = String(Number(main.dataset.renders || 0) + 1);
    main.dataset.readyAt = String(Math.round(performance.now()));
  }

  function num(n, d = 3) {
    if (n === null || n === undefined || n === '') return '—';
    if (typeof n !== 'number') return String(n);
    if (!isFinite(n)) return String(n);
    if (Number.isInteger(n)) return n.toLocaleString('en-US');
    return String(Number(n.toFixed(d)));
  }
  const signed = (n, d = 3) => (typeof n === 'number' && n > 0 ? '+' : '') + num(n, d);
  const pct = (x) => (typeof x === 'number' ? (x * 100).toFixed(1) + '%' : '—');
  function when(ts) {
    if (ts === null || ts === undefined || ts === '') return '—';
    if (typeof ts === 'number') {
      const ms = ts > 1e15 ? ts / 1e6 : ts > 1e12 ? ts : ts * 1000;
      const d = new Date(ms);
      return isNaN(d.getTime()) ? String(ts) : d.toISOString().slice(0, 19).replace('T', ' ');
    }
    const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)/.exec(String(ts));
    return m ? `${m[1]} ${m[2]}` : String(ts);
  }
  function duration(s) {
    if (typeof s !== 'number') return '—';
    const d = Math.floor(s / 86400), hr = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    const sec = Math.floor(s % 60);
    return (d ? `${d} d ` : '') + (d || hr ? `${hr} h ` : '') + (d || hr || m ? `${m} min ` : '') + `${sec} s`;
  }
  const qs = (obj) => new URLSearchParams(obj).toString(); // as a native GET form sends it
  const whyHref = (id) => '/why?' + qs({ node: id });
  const edgeHref = (a, b) => '/why?' + qs({ source: a, target: b });
  const askHref = (q) => '/ask?' + qs({ q });
  const nodeLink = (id) => (id === '<STOP>' || !id ? h('code', {}, id || '—') : h('a', { href: whyHref(id), class: 'mono' }, id));
  const kv = (pairs) => h('dl', { class: 'kv' },
    pairs.filter((p) => p && p[1] !== undefined).map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
  const note = (...t) => h('p', { class: 'note' }, ...t);

  class ApiError extends Error {
    constructor(message, hint, status) { super(message); this.hint = hint || ''; this.status = status || 0; }
  }

  /** GET (or POST ``body``) an API path with the token; its JSON, or ApiError. */
  async function api(path, body) {
    const opts = { headers: { 'X-OCB-Token': TOKEN, Accept: 'application/json' }, credentials: 'same-origin' };
    if (body !== undefined) {
      opts.method = 'POST';
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let res;
    try { res = await fetch(path, opts); } catch (e) {
      throw new ApiError('cannot reach the window', 'is ocb ui still running? start it again and reload');
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok || !data || (typeof data === 'object' && !Array.isArray(data) && data.error)) {
      throw new ApiError((data && data.error) || `the window answered ${res.status}`, (data && data.hint) || '', res.status);
    }
    return data;
  }

  function errorBox(err) {
    const e = err instanceof ApiError ? err : new ApiError(String((err && err.message) || err), 'reload the page');
    return h('p', { class: 'error', role: 'alert' }, h('strong', {}, 'Error: '), e.message,
      e.hint ? [h('br'), h('span', { class: 'hint' }, 'Hint: ', e.hint)] : null);
  }

  /** Replace a region's content, keeping open the <details> that were open. */
  function swap(region, nodes) {
    const open = new Set([...region.querySelectorAll('details[open] > summary')].map((el) => el.textContent));
    region.replaceChildren(...[nodes].flat(Infinity).filter(Boolean));
    for (const sm of region.querySelectorAll('details > summary')) if (open.has(sm.textContent)) sm.parentElement.open = true;
  }

  /** A region that loads: the newest load wins; errors are shown in the region. */
  function loader(region) {
    let ticket = 0;
    return async function load(fetcher, render, busy, quiet) {
      const mine = ++ticket;
      region.setAttribute('aria-busy', 'true');
      if (!quiet) region.replaceChildren(h('p', { class: 'loading' }, busy || 'Loading…'));
      if (busy && !quiet) setStatus(busy);
      try {
        const data = await fetcher();
        if (mine !== ticket || !region.isConnected) return;
        swap(region, render(data));
        if (!quiet && statusEl.textContent === busy) setStatus('');
      } catch (err) {
        if (mine !== ticket || !region.isConnected) return;
        region.replaceChildren(errorBox(err));
        setStatus('Error: ' + ((err && err.message) || err));
      } finally {
        if (mine === ticket) region.removeAttribute('aria-busy');
      }
    };
  }

  /** A table: cols [{label, get(row) -> node|text, num}], at most MAX_ROWS rows. */
  function table(cols, rows, caption, opts) {
    const all = rows || [];
    const shown = opts && opts.last ? all.slice(-MAX_ROWS) : all.slice(0, MAX_ROWS);
    const t = h('table', { class: 'data' + (opts && opts.cls ? ' ' + opts.cls : '') },
      caption ? h('caption', {}, caption) : null,
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)))),
      h('tbody', {}, shown.map((r) => h('tr', {}, cols.map((c) => h('td', { class: c.num ? 'num' : null }, c.get(r)))))));
    const out = [h('div', { class: 'table-wrap' }, t)];
    if (all.length > shown.length) out.push(note(`Showing ${shown.length} of ${all.length} rows.`));
    return out;
  }

  /** Columns for rows of unknown shape: every key, ids as links, numbers aligned. */
  function autoCols(rows) {
    const keys = [];
    for (const r of rows.slice(0, 50)) for (const k of Object.keys(r || {})) if (!keys.includes(k)) keys.push(k);
    return keys.map((k) => ({
      label: k.replace(/_/g, ' '),
      num: rows.some((r) => typeof (r || {})[k] === 'number'),
      get: (r) => cell(k, r[k], r),
    }));
  }
  function cell(k, v, row) {
    if (v === null || v === undefined) return '—';
    if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') : '—';
    if (typeof v === 'object') return Object.entries(v).map(([a, b]) => `${a}: ${typeof b === 'number' ? num(b) : JSON.stringify(b)}`).join(', ');
    if ((k === 'id' || k === 'node' || k === 'node_id') && typeof v === 'string') return nodeLink(v);
    if (k === 'target' && row && typeof row.source === 'string' && row.target !== '<STOP>') return h('a', { href: edgeHref(row.source, v), class: 'mono' }, v);
    if (k === 'source' && row && typeof row.target === 'string') return nodeLink(v);
    if (k === 'ts' || k === 'time') return when(v);
    if (typeof v === 'number') return k === 'delta' ? signed(v) : num(v);
    return String(v);
  }

  function tierTag(tier) {
    return tier ? h('span', { class: 'tier tier-' + tier }, tier) : h('span', { class: 'muted' }, 'none');
  }
  function legend(items) {
    return h('ul', { class: 'legend' }, items.map(([kind, color, text]) => h('li', {}, G.swatch(kind, color), text)));
  }
  const tierLegend = () => G.TIER_NAMES.map((t) => ['line', G.TIERS[t], t]);

  // ------------------------------------------------------------------ shared by pages

  /** A <details> whose content is made when it is first opened. */
  function lazyDetails(summary, make) {
    const d = h('details', {}, h('summary', {}, summary));
    d.addEventListener('toggle', () => { if (d.open && d.children.length === 1) append(d, make()); });
    return d;
  }

  function countsTable(sections, caption) {
    const keys = [];
    for (const [, obj] of sections) for (const [k, v] of Object.entries(obj || {})) if (typeof v === 'number' && !keys.includes(k)) keys.push(k);
    return table([{ label: 'What', get: (r) => r[0] }, ...keys.map((k) => ({ label: k, num: true, get: (r) => num((r[1] || {})[k]) }))], sections, caption);
  }
  function tierCompare(a, b, la, lb, caption) {
    return table([{ label: 'Tier', get: (t) => tierTag(t) }, { label: la, num: true, get: (t) => num((a || {})[t] || 0) },
      { label: lb, num: true, get: (t) => num((b || {})[t] || 0) }, { label: 'Change', num: true, get: (t) => signed(((b || {})[t] || 0) - ((a || {})[t] || 0)) }],
    G.TIER_NAMES, caption);
  }
  const transitions = (tr) => (Object.keys(tr || {}).length
    ? h('p', {}, 'Tier transitions: ', Object.entries(tr).map(([k, v], i) => [i ? ', ' : '', `${k.replace('->', ' → ')} ${num(v)}`]))
    : note('No edge changed tier.'));

  function tiersBlock(hl, when_) {
    const tiers = hl.tiers || {};
    const parts = G.TIER_NAMES.map((t) => ({ name: t, value: tiers[t] || 0, color: G.TIERS[t] }));
    const label = `Tier shares of ${num(hl.edges)} edges${when_ ? ' ' + when_ : ''}: ` + parts.map((p) => `${p.name} ${pct(p.value)}`).join(', ');
    return [G.shares({ label, parts, className: 'shares' }),
      table([{ label: 'Tier', get: (p) => tierTag(p.name) }, { label: 'Share', num: true, get: (p) => pct(p.value) },
        { label: 'Edges (about)', num: true, get: (p) => num(Math.round(p.value * (hl.edges || 0))) }], parts),
      kv([['Edges', num(hl.edges)], ['Dormant share', pct(hl.dormant_share)], ['Recent questions looked at', num(hl.window)],
        ['Average fired chunks', num(hl.avg_fired, 1)], ['Average seeds', num(hl.avg_seeds, 1)], ['Average context characters', num(hl.avg_context_chars, 0)]])];
  }

  // ------------------------------------------------------------------ header info

  let infoPromise = null;
  function getInfo() {
    if (!infoPromise) {
      infoPromise = api('/api/info').then((d) => { state.info = d; return d; }, (e) => { infoPromise = null; throw e; });
    }
    return infoPromise;
  }
  function infoLine() {
    const p = h('div', { class: 'info' }, 'Loading brain…');
    getInfo().then((d) => {
      p.replaceChildren('Brain ', h('code', {}, d.brain), ` · ${d.mode === 'daemon' ? 'served by its daemon' : 'opened in this process'} · `,
        h('span', { class: d.writes ? 'writes-on' : 'writes-off' }, d.writes ? 'writes on' : 'read-only'),
        ` · last seq ${num(d.last_seq)} · context budget ${num(d.budget)} characters`);
    }, (e) => { p.replaceChildren(errorBox(e)); });
    return p;
  }
  const pageHead = (title, intro) => [h('h1', {}, title), infoLine(), intro ? h('p', { class: 'intro' }, intro) : null];

  window.Ocb = {
    TOKEN, WRITES, MAX_ROWS, main, statusEl, state, pages: {},
    h, append, setStatus, markReady, num, signed, pct, when, duration, qs, whyHref, edgeHref, askHref,
    nodeLink, kv, note, ApiError, api, errorBox, swap, loader, table, autoCols, cell, tierTag, legend,
    tierLegend, lazyDetails, countsTable, tierCompare, transitions, tiersBlock, getInfo, infoLine, pageHead,
    navigate: null, // set by app.js
  };
})();
