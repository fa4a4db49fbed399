/* OpenClawBrain window: the History page: the timeline, the learning curves, the
 * outcomes by source, the brain as of a seq (time travel) and the diff of two seqs. */
(function () {
  'use strict';

  const Ocb = window.Ocb;
  const G = window.OcbGraph;
  const { main, h, setStatus, markReady, num, signed, when, note, ApiError, api, errorBox, swap, loader,
    table, autoCols, legend, getInfo, pageHead, countsTable, tierCompare, transitions, tiersBlock } = Ocb;

  const KIND_COLORS = { sync: '#1f5fbf', query: '#1b7f3b', outcome: '#8a4f00', correction: '#b3261e', memory: '#6b3fa0', maintenance: '#4d4d4d', other: '#00707a' };

  function pageHistory() {
    const timeline = h('div', { class: 'region' }, h('p', { class: 'loading' }, 'Loading…'));
    const curves = h('div', { class: 'region' });
    const outcomes = h('div', { class: 'region' });
    const range = h('input', { type: 'range', id: 'seq', name: 'seq', min: 1, max: 1, step: 1, value: 1 });
    const shown = h('output', { for: 'seq', id: 'seq-out' }, '—');
    const asof = h('div', { class: 'region', id: 'asof' });
    const from = h('input', { type: 'number', id: 'from', name: 'from', min: 0, step: 1, inputmode: 'numeric' });
    const to = h('input', { type: 'number', id: 'to', name: 'to', min: 0, step: 1, inputmode: 'numeric' });
    const diff = h('div', { class: 'region' });
    const loadAsof = loader(asof), loadDiff = loader(diff);
    const setQuery = (changes) => {
      const p = new URLSearchParams(location.search);
      for (const [k, v] of Object.entries(changes)) { if (v === '' || v === null) p.delete(k); else p.set(k, v); }
      const qs = p.toString();
      history.replaceState(null, '', '/history' + (qs ? '?' + qs : ''));
      Ocb.state.lastRouted = location.pathname + location.search;
    };
    range.addEventListener('input', () => { shown.textContent = range.value; });
    range.addEventListener('change', () => { shown.textContent = range.value; setQuery({ seq: range.value }); showAsof(range.value); });
    function showAsof(seq) {
      loadAsof(() => api('/api/asof?seq=' + encodeURIComponent(seq)),
        (d) => [h('p', {}, `As of seq ${num(d.seq)}: ${num(d.health.edges)} edges.`), tiersBlock(d.health, `as of seq ${d.seq}`)], `Loading the brain as of seq ${seq}…`);
    }
    const diffForm = h('form', { class: 'bar', onsubmit: (e) => {
      e.preventDefault();
      if (from.value === '') { diff.replaceChildren(errorBox(new ApiError('no From seq given', 'type the seq to compare from (0: the empty brain)'))); return; }
      setQuery({ from: from.value, to: to.value });
      showDiff(from.value, to.value);
    } }, h('label', { for: 'from' }, 'From seq'), from, h('label', { for: 'to' }, 'To seq'), to, h('button', { type: 'submit' }, 'Compare'));
    function showDiff(a, b) {
      loadDiff(() => api(`/api/diff?from=${encodeURIComponent(a)}` + (b !== '' && b !== null ? `&to=${encodeURIComponent(b)}` : '')),
        renderDiff, 'Comparing…');
    }
    main.append(...pageHead('History', 'What the brain recorded, how its answers got cheaper, and the brain at any point of its history.'),
      h('h2', {}, 'Timeline'), timeline, h('h2', {}, 'Learning curves'), curves, h('h2', {}, 'Outcomes by source'), outcomes,
      h('h2', {}, 'Time travel'), h('div', { class: 'bar range-row' }, h('label', { for: 'seq' }, 'Brain as of seq'), range, shown), asof,
      h('h2', {}, 'Diff'), note('Compare the graph at two seqs (From 0: the empty brain; To left empty: now).'), diffForm, diff);

    getInfo().then((d) => {
      if (!range.isConnected || Number(range.max) >= d.last_seq) return;
      range.max = String(d.last_seq);
      if (!new URLSearchParams(location.search).get('seq')) { range.value = range.max; shown.textContent = range.max; }
    }, () => {});
    let ticket = 0;
    async function loadHistory(quiet) {
      const mine = ++ticket;
      if (!quiet) setStatus('Loading the history…');
      try {
        const d = await api('/api/history');
        if (mine !== ticket || !timeline.isConnected) return;
        const last = Math.max(1, d.last_seq || 1);
        range.max = String(last);
        if (!new URLSearchParams(location.search).get('seq') && !quiet) { range.value = String(last); shown.textContent = String(last); }
        swap(timeline, renderTimeline(d));
        swap(curves, renderCurves(d));
        swap(outcomes, renderOutcomes(d));
        if (!quiet) setStatus('');
      } catch (err) {
        if (mine !== ticket || !timeline.isConnected) return;
        timeline.replaceChildren(errorBox(err));
        setStatus('Error: ' + err.message);
      }
    }
    function update(p) {
      const seq = p.get('seq');
      if (!seq && !asof.firstChild) asof.replaceChildren(note('Move the slider (or use the arrow keys) to see the brain as it was at that seq.'));
      if (seq) {
        if (Number(range.max) < Number(seq)) range.max = seq;
        range.value = seq;
        shown.textContent = seq;
        showAsof(seq);
      }
      if (p.get('from') !== null) {
        from.value = p.get('from');
        to.value = p.get('to') || '';
        showDiff(from.value, to.value);
      }
      loadHistory(false).then(markReady);
    }
    return { update, refresh: () => loadHistory(true).then(markReady) };
  }

  function renderTimeline(d) {
    const days = [...new Set(d.days.map((r) => r.day))].sort();
    if (!days.length) return [note('Nothing recorded yet.')];
    const kinds = [...(d.kinds || []), 'other'].filter((k) => d.days.some((r) => r.kind === k));
    const per = Math.max(1, Math.ceil(days.length / 40));
    const buckets = [];
    for (let i = 0; i < days.length; i += per) buckets.push(days.slice(i, i + per));
    const index = new Map();
    buckets.forEach((b, i) => b.forEach((day) => index.set(day, i)));
    const byDay = new Map(days.map((day) => [day, {}]));
    for (const r of d.days) byDay.get(r.day)[r.kind] = (byDay.get(r.day)[r.kind] || 0) + r.n;
    const series = kinds.map((k) => ({ name: k, color: KIND_COLORS[k] || '#4d4d4d', values: buckets.map(() => 0) }));
    for (const r of d.days) { const sr = series[kinds.indexOf(r.kind)]; if (sr) sr.values[index.get(r.day)] += r.n; }
    const total = d.days.reduce((acc, r) => acc + r.n, 0);
    const cats = buckets.map((b) => (b.length > 1 ? `${b[0]} to ${b[b.length - 1]}` : b[0]));
    const label = `Events per ${per > 1 ? per + ' days' : 'day'} by kind, stacked: ${num(total)} events over ${days.length} ${days.length === 1 ? 'day' : 'days'}, ` +
      kinds.map((k) => `${k} ${num(series[kinds.indexOf(k)].values.reduce((x, y) => x + y, 0))}`).join(', ');
    return [G.bars({ label, title: label, categories: cats, tickLabels: buckets.map((b) => b[0]), series, yLabel: 'events' }),
      legend(kinds.map((k) => ['box', KIND_COLORS[k] || '#4d4d4d', k])),
      h('details', {}, h('summary', {}, 'Timeline as a table'), table([
        { label: 'Day', get: (day) => day },
        ...kinds.map((k) => ({ label: k, num: true, get: (day) => num(byDay.get(day)[k] || 0) })),
        { label: 'Total', num: true, get: (day) => num(kinds.reduce((acc, k) => acc + (byDay.get(day)[k] || 0), 0)) },
      ], days, null, { last: true }))];
  }

  function renderCurves(d) {
    const c = d.curve || [];
    if (!c.length) return [note('No questions recorded yet.')];
    const lastOf = (key) => c[c.length - 1][key];
    const firstOf = (key) => c[0][key];
    const span = `${c.length} points over seqs ${c[0].seq}–${c[c.length - 1].last_seq}`;
    const ctxLabel = `Context characters per query: ${span}; first ${num(firstOf('context_chars'), 0)}, last ${num(lastOf('context_chars'), 0)}`;
    const firedLabel = `Fired chunks per query: ${span}; first ${num(firstOf('fired'), 1)}, last ${num(lastOf('fired'), 1)}`;
    const out = [h('h3', {}, 'Context characters per query'),
      G.lines({ label: ctxLabel, series: [{ name: 'context characters', color: '#1f5fbf', points: c.map((r) => [r.seq, r.context_chars]) }], xLabel: 'seq', yLabel: 'characters' }),
      h('h3', {}, 'Fired chunks per query'),
      G.lines({ label: firedLabel, series: [{ name: 'fired chunks', color: '#1b7f3b', points: c.map((r) => [r.seq, r.fired]) }], xLabel: 'seq', yLabel: 'chunks' }),
      h('h3', {}, 'Repeated queries')];
    const groups = new Map();
    for (const r of d.repeated || []) { if (!groups.has(r.query)) groups.set(r.query, []); groups.get(r.query).push(r); }
    if (!groups.size) { out.push(note('No question was asked twice yet.')); return out; }
    const series = [...groups.entries()].map(([q, rows], i) => ({ name: q, color: G.PALETTE[i % G.PALETTE.length], dash: i % 2 ? '6 3' : null,
      points: rows.map((r) => [r.n, r.context_chars]) }));
    const label = `Context characters by repetition for the ${series.length} most repeated queries: ` +
      series.map((sr) => `“${sr.name}” first ${num(sr.points[0][1], 0)}, last ${num(sr.points[sr.points.length - 1][1], 0)}, ${sr.points.length} times`).join('; ');
    out.push(G.lines({ label, series, xLabel: 'repetition', yLabel: 'characters' }),
      legend(series.map((sr) => [sr.dash ? 'dash' : 'line', sr.color, sr.name])));
    return out;
  }

  function renderOutcomes(d) {
    if (!(d.outcomes || []).length) return [note('No outcome recorded yet.')];
    return table([
      { label: 'Source', get: (r) => r.source }, { label: 'Outcomes', num: true, get: (r) => num(r.n) },
      { label: 'Mean reward', num: true, get: (r) => signed(r.mean_reward) },
      { label: 'Positive', num: true, get: (r) => num(r.positive) }, { label: 'Negative', num: true, get: (r) => num(r.negative) },
    ], d.outcomes);
  }

  function renderDiff(d) {
    const out = [h('p', {}, `From seq ${num(d.from && d.from.seq)} (${when(d.from && d.from.time)}) to seq ${num(d.to && d.to.seq)} (${when(d.to && d.to.time)}): `,
      `${num(d.records)} records, weight threshold ${num(d.threshold)}.`)];
    out.push(countsTable([['Nodes', d.nodes], ['Edges', d.edges]], 'Counts'));
    if (d.tiers) out.push(tierCompare(d.tiers.from, d.tiers.to, `Seq ${d.from && d.from.seq}`, `Seq ${d.to && d.to.seq}`, 'Edges per tier'), transitions(d.tiers.transitions));
    for (const [name, sec] of [['Nodes', d.nodes], ['Edges', d.edges]]) {
      const top = (sec && sec.top) || [];
      out.push(top.length ? table(autoCols(top), top, `Largest changes: ${name.toLowerCase()} (${top.length})`) : note(`No ${name.toLowerCase()} changed.`));
    }
    return out;
  }

  Ocb.pages.history = { title: 'History', build: pageHistory };
})();
