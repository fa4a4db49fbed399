/* OpenClawBrain window: SVG drawing helpers (the walk graph, bar and line charts).
 * No library; every text is a text node. Exported as window.OcbGraph. */
(function () {
  'use strict';

  const NS = 'http://www.w3.org/2000/svg';

  const TIERS = {
    reflex: '#1b7f3b',
    habitual: '#1f5fbf',
    dormant: '#6b6b6b',
    inhibitory: '#b3261e',
  };
  const TIER_NAMES = ['reflex', 'habitual', 'dormant', 'inhibitory'];
  const PALETTE = ['#1f5fbf', '#1b7f3b', '#8a4f00', '#b3261e', '#6b3fa0', '#4d4d4d', '#00707a', '#a3216f'];

  /** An SVG element: attributes set as attributes, strings appended as text nodes. */
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function tierColor(tier) {
    return TIERS[tier] || '#6b6b6b';
  }

  function fmt(n, d = 2) {
    if (typeof n !== 'number' || !isFinite(n)) return String(n);
    return Number.isInteger(n) ? String(n) : n.toFixed(d);
  }

  /** "runbooks/deploy.md::3" -> "deploy.md::3" (the file's basename and chunk number;
   * with ``dirs``, that many parent folders too). */
  function shortId(id, dirs = 0) {
    const str = String(id);
    const at = str.lastIndexOf('::');
    const path = at >= 0 ? str.slice(0, at) : str;
    const tail = at >= 0 ? str.slice(at) : '';
    const base = path.split('/').slice(-1 - dirs).join('/');
    const label = base + tail;
    return label.length > 26 ? '…' + label.slice(label.length - 25) : label;
  }

  // ------------------------------------------------------------------ the walk

  /** The walk as objects, whether the trace sent arrays (its storage form) or objects. */
  function normWalk(w) {
    if (!w || typeof w !== 'object') return null;
    const arr = (x) => (Array.isArray(x) ? x : []);
    const seeds = arr(w.seeds).map((x) => (Array.isArray(x)
      ? { node_id: x[0], score: x[1] || 0, lexical: x[2] || 0, vector: x[3] || 0 }
      : { node_id: x.node_id, score: x.score || 0, lexical: x.lexical || 0, vector: x.vector || 0 }));
    const cand = (c) => (Array.isArray(c)
      ? { target: c[0], weight: c[1], logit: c[2], tier: c[3], uses: c[4] || 0 }
      : { target: c.target, weight: c.weight, logit: c.logit, tier: c.tier, uses: c.uses || 0 });
    const steps = arr(w.steps).map((x) => (Array.isArray(x)
      ? { hop: x[0], node: x[1], candidates: arr(x[2]).map(cand), stop_logit: x[3], chosen: x[4], followed: arr(x[5]) }
      : { hop: x.hop, node: x.node, candidates: arr(x.candidates).map(cand), stop_logit: x.stop_logit,
        chosen: x.chosen, followed: arr(x.followed) }));
    return { seeds, steps, vetoed: arr(w.vetoed), fired: arr(w.fired), params: w.params || null };
  }

  const MAX_NODES = 80;
  const CANDIDATES_SHOWN = 3;

  /** The walk as a graph: seeds in column 0 (by score), then a column per hop. Every
   * node is a link to /why?node=ID; followed edges are solid (wider with weight),
   * the other candidates faint and dashed; colours are the edges' tiers. */
  function walk(raw, opts) {
    const w = normWalk(raw) || { seeds: [], steps: [], vetoed: [], fired: [] };
    const href = (opts && opts.href) || ((id) => '/why?node=' + encodeURIComponent(id));
    const fired = new Set(w.fired);
    const vetoed = new Set(w.vetoed);
    const nodes = new Map();
    const order = [];
    const add = (id, col, parent, weight, candidate) => {
      if (nodes.has(id) || id === '<STOP>' || nodes.size >= MAX_NODES) return nodes.get(id);
      const n = { id, col, parent, weight: weight || 0, candidate: !!candidate, seed: null, i: order.length };
      nodes.set(id, n);
      order.push(n);
      return n;
    };
    [...w.seeds].sort((a, b) => b.score - a.score).forEach((sd) => {
      const n = add(sd.node_id, 0);
      if (n) n.seed = sd;
    });
    const steps = [...w.steps].sort((a, b) => a.hop - b.hop);
    const edges = [];
    const seen = new Set();
    for (const st of steps) {
      const from = add(st.node, Math.max(0, st.hop - 1));
      const next = from ? from.col + 1 : st.hop;
      const byTarget = new Map(st.candidates.map((c) => [c.target, c]));
      for (const t of st.followed) {
        const c = byTarget.get(t) || { target: t, weight: 0, logit: 0, tier: '', uses: 0 };
        add(t, next, st.node, c.weight);
        const key = st.node + '\u0000' + t;
        if (!seen.has(key)) { seen.add(key); edges.push({ from: st.node, to: t, c, hop: st.hop, followed: true }); }
      }
    }
    for (const st of steps) {
      const follow = new Set(st.followed);
      const from = nodes.get(st.node);
      const rest = st.candidates.filter((c) => !follow.has(c.target))
        .sort((a, b) => Math.abs(b.weight) - Math.abs(a.weight)).slice(0, CANDIDATES_SHOWN);
      for (const c of rest) {
        add(c.target, from ? from.col + 1 : st.hop, st.node, c.weight, true);
        const key = st.node + '\u0000' + c.target;
        if (!seen.has(key)) { seen.add(key); edges.push({ from: st.node, to: c.target, c, hop: st.hop, followed: false }); }
      }
    }
    // rows: column 0 keeps the seeds' order, the others follow their parents' rows
    const cols = [];
    for (const n of order) (cols[n.col] = cols[n.col] || []).push(n);
    const ncols = Math.max(1, cols.length);
    for (let c = 0; c < ncols; c++) {
      const list = cols[c] || [];
      if (c > 0) {
        list.sort((a, b) => {
          const pa = nodes.get(a.parent), pb = nodes.get(b.parent);
          const ra = pa && pa.row !== undefined ? pa.row : 1e9, rb = pb && pb.row !== undefined ? pb.row : 1e9;
          return (a.candidate - b.candidate) || (ra - rb) || (a.i - b.i);
        });
      }
      list.forEach((n, r) => { n.row = r; });
      cols[c] = list;
    }
    const rows = Math.max(1, ...cols.map((l) => (l ? l.length : 0)));
    const COLW = 230, ROWH = 30, PADL = 64, PADT = 44;
    const width = PADL + ncols * COLW + 10;
    const height = PADT + rows * ROWH + 12;
    const pos = (n) => ({ x: PADL + n.col * COLW, y: PADT + n.row * ROWH });
    // labels: basename::n, with the parent folder where two shown chunks share one
    const counts = new Map();
    for (const n of order) counts.set(shortId(n.id), (counts.get(shortId(n.id)) || 0) + 1);
    for (const n of order) n.label = counts.get(shortId(n.id)) > 1 ? shortId(n.id, 1) : shortId(n.id);
    const labelEnd = (n) => pos(n).x + 14 + n.label.length * 7.3;
    const hops = Math.max(0, ...steps.map((st) => st.hop));
    const label = (opts && opts.label) || `Walk from ${w.seeds.length} seeds through ${hops} hops`;

    const svg = s('svg', {
      class: 'walk', role: 'graphics-document', 'aria-label': label,
      width, height, viewBox: `0 0 ${width} ${height}`,
    }, s('title', {}, label));
    svg.appendChild(s('defs', {}, TIER_NAMES.map((t) => s('marker', {
      id: `walk-arrow-${t}`, viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7,
      markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse',
    }, s('path', { d: 'M0,0 L8,4 L0,8 z', fill: TIERS[t] })))));
    const heads = s('g', { class: 'heads', 'aria-hidden': 'true' });
    for (let c = 0; c < ncols; c++) {
      heads.appendChild(s('text', { x: PADL + c * COLW - 8, y: 20, class: 'col-head' }, c === 0 ? 'Seeds' : `Hop ${c}`));
    }
    svg.appendChild(heads);

    const eg = s('g', { class: 'edges' });
    for (const e of edges) {
      const a = nodes.get(e.from), b = nodes.get(e.to);
      if (!a || !b) continue;
      const pa = pos(a), pb = pos(b);
      let d;
      if (b.col > a.col) {
        const x1 = Math.min(labelEnd(a) + 4, pa.x + COLW - 30), x2 = pb.x - 11;
        const mid = (x1 + x2) / 2;
        d = `M${x1},${pa.y} C${mid},${pa.y} ${mid},${pb.y} ${x2},${pb.y}`;
      } else if (b.col < a.col) { // backwards: from the source's left to the end of the target's label
        const x1 = pa.x - 9, x2 = Math.min(labelEnd(b) + 10, pb.x + COLW - 24);
        const mid = (x1 + x2) / 2;
        d = `M${x1},${pa.y} C${mid},${pa.y} ${mid},${pb.y} ${x2},${pb.y}`;
      } else { // within a column: an arc in the gap on its left
        const x1 = pa.x - 9, x2 = pb.x - 11, bend = pa.x - 22 - Math.min(26, Math.abs(pa.y - pb.y) / 8);
        d = `M${x1},${pa.y} C${bend},${pa.y} ${bend},${pb.y} ${x2},${pb.y}`;
      }
      const wgt = Number(e.c.weight) || 0;
      const attrs = {
        d, fill: 'none', stroke: tierColor(e.c.tier), 'marker-end': `url(#walk-arrow-${TIERS[e.c.tier] ? e.c.tier : 'dormant'})`,
        'stroke-width': e.followed ? (1.2 + Math.min(3.5, Math.abs(wgt) * 3.5)).toFixed(2) : 1,
        class: e.followed ? 'edge followed' : 'edge faint',
      };
      if (!e.followed) { attrs['stroke-dasharray'] = '4 3'; attrs['stroke-opacity'] = '0.55'; }
      eg.appendChild(s('path', attrs, s('title', {},
        `${e.from} → ${e.to}: weight ${fmt(wgt, 3)}, tier ${e.c.tier || 'none'}, logit ${fmt(Number(e.c.logit) || 0, 3)}, ` +
        `uses ${e.c.uses || 0} (hop ${e.hop}, ${e.followed ? 'followed' : 'not followed'})`)));
    }
    svg.appendChild(eg);

    const ng = s('g', { class: 'nodes' });
    for (const n of order) {
      const p = pos(n);
      const isFired = fired.has(n.id), isVetoed = vetoed.has(n.id);
      const what = [n.seed ? `seed, score ${fmt(n.seed.score, 3)}` : (n.candidate ? 'candidate' : `hop ${n.col}`),
        isFired ? 'fired' : 'not fired'];
      if (isVetoed) what.push('vetoed');
      const cls = ['node', isFired ? 'fired' : 'unfired', isVetoed ? 'vetoed' : '', n.seed ? 'seed' : ''].join(' ').trim();
      const shape = n.seed
        ? s('rect', { x: p.x - 7, y: p.y - 7, width: 14, height: 14, rx: 2, class: 'glyph' })
        : s('circle', { cx: p.x, cy: p.y, r: 7, class: 'glyph' });
      const a = s('a', { href: href(n.id), class: cls },
        s('title', {}, `${n.id} (${what.join(', ')})`),
        shape,
        s('text', { x: p.x + 13, y: p.y + 4, class: 'label' }, n.label));
      if (isVetoed) {
        a.appendChild(s('path', { d: `M${p.x - 6},${p.y - 6} L${p.x + 6},${p.y + 6} M${p.x + 6},${p.y - 6} L${p.x - 6},${p.y + 6}`,
          stroke: '#b3261e', 'stroke-width': 2.5, class: 'veto' }));
      }
      ng.appendChild(a);
    }
    svg.appendChild(ng);
    return svg;
  }

  // ------------------------------------------------------------------ axes

  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) { hi = lo + 1; }
    const span = hi - lo;
    const step0 = span / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const err = step0 / mag;
    const step = (err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1) * mag;
    const ticks = [];
    const end = Math.ceil(hi / step - 1e-9) * step;
    for (let v = Math.floor(lo / step + 1e-9) * step; v <= end + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
    return ticks;
  }

  function short(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
    if (Number.isInteger(v)) return String(v);
    return v.toFixed(a < 1 ? 2 : 1);
  }

  function frame(opts, w, h) {
    const label = opts.label || opts.title || 'Chart';
    return s('svg', {
      class: 'chart ' + (opts.className || ''), role: 'img', 'aria-label': label,
      width: w, height: h, viewBox: `0 0 ${w} ${h}`,
    }, s('title', {}, opts.title || label));
  }

  function yAxis(svg, ticks, y, x0, x1) {
    const g = s('g', { class: 'axis' });
    for (const t of ticks) {
      const yy = y(t).toFixed(1);
      g.appendChild(s('line', { x1: x0, x2: x1, y1: yy, y2: yy, class: t === 0 ? 'zero' : 'grid' }));
      g.appendChild(s('text', { x: x0 - 6, y: Number(yy) + 4, 'text-anchor': 'end' }, short(t)));
    }
    svg.appendChild(g);
  }

  // ------------------------------------------------------------------ bars

  /** Stacked bars: {label, title, categories: [name], series: [{name, color, values}],
   * yLabel}. One <g> per category with its numbers as a tooltip. */
  function bars(opts) {
    const cats = opts.categories || [];
    const series = opts.series || [];
    const W = opts.width || 1000, H = opts.height || 260, L = 52, R = 12, T = 14, B = 40;
    const svg = frame(opts, W, H);
    const totals = cats.map((_, i) => series.reduce((acc, sr) => acc + (Number(sr.values[i]) || 0), 0));
    const max = Math.max(1, ...totals);
    const ticks = niceTicks(0, max, 4);
    const top = ticks[ticks.length - 1] || max;
    const y = (v) => T + (H - T - B) * (1 - v / top);
    yAxis(svg, ticks, y, L, W - R);
    const bw = (W - L - R) / Math.max(1, cats.length);
    const g = s('g', { class: 'bars' });
    cats.forEach((cat, i) => {
      let acc = 0;
      const parts = [];
      const cg = s('g', {});
      series.forEach((sr, j) => {
        const v = Number(sr.values[i]) || 0;
        if (v <= 0) return;
        const y0 = y(acc), y1 = y(acc + v);
        const rw = Math.max(1, Math.min(72, bw * 0.76));
        cg.appendChild(s('rect', {
          x: (L + i * bw + (bw - rw) / 2).toFixed(1), width: rw.toFixed(1),
          y: y1.toFixed(1), height: Math.max(0.5, y0 - y1).toFixed(1), fill: sr.color || PALETTE[j % PALETTE.length],
        }));
        parts.push(`${sr.name} ${v}`);
        acc += v;
      });
      cg.insertBefore(s('title', {}, `${cat}: ${parts.join(', ') || 'nothing'}`), cg.firstChild);
      g.appendChild(cg);
    });
    svg.appendChild(g);
    const names = opts.tickLabels || cats;
    const every = Math.max(1, Math.ceil(cats.length / 7));
    const xl = s('g', { class: 'axis' });
    cats.forEach((cat, i) => {
      if (i % every !== 0) return;
      const xx = Math.max(L + 34, Math.min(W - R - 34, L + i * bw + bw / 2));
      xl.appendChild(s('text', { x: xx.toFixed(1), y: H - B + 16, 'text-anchor': 'middle' }, String(names[i])));
    });
    if (opts.yLabel) xl.appendChild(s('text', { x: L, y: H - 6, class: 'axis-label' }, opts.yLabel));
    svg.appendChild(xl);
    return svg;
  }

  // ------------------------------------------------------------------ lines

  /** Line chart: {label, title, series: [{name, color, points: [[x, y]]}], xLabel,
   * yLabel}. One polyline per series (dots when there are few points). */
  function lines(opts) {
    const series = (opts.series || []).filter((sr) => sr.points && sr.points.length);
    const W = opts.width || 1000, H = opts.height || 240, L = 56, R = 16, T = 14, B = 42;
    const svg = frame(opts, W, H);
    const xs = series.flatMap((sr) => sr.points.map((p) => Number(p[0])));
    const ys = series.flatMap((sr) => sr.points.map((p) => Number(p[1])));
    if (!xs.length) {
      svg.appendChild(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'empty' }, 'no data yet'));
      return svg;
    }
    let x0 = Math.min(...xs), x1 = Math.max(...xs);
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    const yt = niceTicks(Math.min(0, ...ys), Math.max(...ys, 0) || 1, 4);
    const ylo = yt[0], yhi = yt[yt.length - 1];
    const x = (v) => L + (W - L - R) * (v - x0) / (x1 - x0);
    const y = (v) => T + (H - T - B) * (1 - (v - ylo) / ((yhi - ylo) || 1));
    yAxis(svg, yt, y, L, W - R);
    const xg = s('g', { class: 'axis' });
    for (const t of niceTicks(x0, x1, 6)) {
      if (t < x0 || t > x1) continue;
      xg.appendChild(s('text', { x: x(t).toFixed(1), y: H - B + 16, 'text-anchor': 'middle' }, short(t)));
    }
    if (opts.xLabel) xg.appendChild(s('text', { x: W - R, y: H - 6, 'text-anchor': 'end', class: 'axis-label' }, opts.xLabel));
    if (opts.yLabel) xg.appendChild(s('text', { x: L, y: H - 6, class: 'axis-label' }, opts.yLabel));
    svg.appendChild(xg);
    const total = series.reduce((acc, sr) => acc + sr.points.length, 0);
    series.forEach((sr, j) => {
      const color = sr.color || PALETTE[j % PALETTE.length];
      const pts = sr.points.map((p) => `${x(Number(p[0])).toFixed(1)},${y(Number(p[1])).toFixed(1)}`).join(' ');
      const g = s('g', { class: 'series' }, s('title', {}, sr.name || `series ${j + 1}`));
      g.appendChild(s('polyline', { points: pts, fill: 'none', stroke: color, 'stroke-width': 2,
        'stroke-linejoin': 'round', 'stroke-dasharray': sr.dash || null }));
      if (sr.points.length === 1 || total <= 80) {
        for (const p of sr.points) {
          g.appendChild(s('circle', { cx: x(Number(p[0])).toFixed(1), cy: y(Number(p[1])).toFixed(1), r: 3, fill: color }));
        }
      }
      svg.appendChild(g);
    });
    return svg;
  }

  // ------------------------------------------------------------------ shares

  /** One horizontal bar split in shares: {label, parts: [{name, value (0..1), color}]}. */
  function shares(opts) {
    const W = opts.width || 1000, H = 44;
    const svg = frame(opts, W, H);
    let x = 0;
    for (const p of opts.parts || []) {
      const wv = Math.max(0, Number(p.value) || 0) * W;
      if (wv <= 0) continue;
      const g = s('g', {}, s('title', {}, `${p.name} ${(p.value * 100).toFixed(1)}%`),
        s('rect', { x: x.toFixed(1), y: 4, width: wv.toFixed(1), height: 36, fill: p.color || tierColor(p.name) }));
      const text = `${p.name} ${(p.value * 100).toFixed(1)}%`;
      if (wv > text.length * 7.4 + 16) g.appendChild(s('text', { x: (x + 8).toFixed(1), y: 27, class: 'on-dark' }, text));
      svg.appendChild(g);
      x += wv;
    }
    if (x === 0) svg.appendChild(s('text', { x: 8, y: 27, class: 'empty' }, 'no edges'));
    return svg;
  }

  /** A small swatch for a legend (hidden from assistive technology: the legend's text
   * says it). kind: 'line' | 'dash' | 'fill' | 'hollow' | 'square' | 'cross'. */
  function swatch(kind, color) {
    const svg = s('svg', { width: 22, height: 14, viewBox: '0 0 22 14', 'aria-hidden': 'true', focusable: 'false', class: 'swatch' });
    const c = color || '#1a1a1a';
    if (kind === 'line') svg.appendChild(s('line', { x1: 1, x2: 21, y1: 7, y2: 7, stroke: c, 'stroke-width': 3 }));
    else if (kind === 'dash') svg.appendChild(s('line', { x1: 1, x2: 21, y1: 7, y2: 7, stroke: c, 'stroke-width': 1.5, 'stroke-dasharray': '4 3' }));
    else if (kind === 'fill') svg.appendChild(s('circle', { cx: 11, cy: 7, r: 6, fill: c }));
    else if (kind === 'hollow') svg.appendChild(s('circle', { cx: 11, cy: 7, r: 5.5, fill: '#fff', stroke: c, 'stroke-width': 1.5 }));
    else if (kind === 'square') svg.appendChild(s('rect', { x: 5, y: 1, width: 12, height: 12, rx: 2, fill: '#fff', stroke: c, 'stroke-width': 1.5 }));
    else if (kind === 'cross') svg.appendChild(s('path', { d: 'M5,1 L17,13 M17,1 L5,13', stroke: c, 'stroke-width': 2.5 }));
    else svg.appendChild(s('rect', { x: 2, y: 1, width: 18, height: 12, rx: 2, fill: c }));
    return svg;
  }

  /** A small bar of a value in [0, 1] (hidden from assistive technology: the text
   * beside it says the number). */
  function meter(value, color) {
    const v = Math.max(0, Math.min(1, Number(value) || 0));
    return s('svg', { width: 60, height: 10, viewBox: '0 0 60 10', 'aria-hidden': 'true', focusable: 'false', class: 'swatch' },
      s('rect', { x: 0, y: 1, width: 60, height: 8, rx: 2, fill: '#e3e6ea' }),
      s('rect', { x: 0, y: 1, width: (v * 60).toFixed(1), height: 8, rx: 2, fill: color || '#6b3fa0' }));
  }

  window.OcbGraph = { walk, bars, lines, shares, swatch, meter, normWalk, shortId, TIERS, TIER_NAMES, PALETTE };
})();
