/* OpenClawBrain window: the Why page: a chunk's or an edge's history, each change
 * with its cause, and the what-if replay of the learning under another rule. */
(function () {
  'use strict';

  const Ocb = window.Ocb;
  const G = window.OcbGraph;
  const { main, h, markReady, num, signed, when, whyHref, edgeHref, askHref, nodeLink, kv, note, ApiError,
    api, errorBox, loader, table, autoCols, tierTag, pageHead, lazyDetails, countsTable, tierCompare,
    transitions } = Ocb;

  function pageWhy() {
    const node = h('input', { type: 'text', id: 'node', name: 'node', autocomplete: 'off', spellcheck: 'false', class: 'mono' });
    const src = h('input', { type: 'text', id: 'source', name: 'source', autocomplete: 'off', spellcheck: 'false', class: 'mono' });
    const tgt = h('input', { type: 'text', id: 'target', name: 'target', autocomplete: 'off', spellcheck: 'false', class: 'mono' });
    const region = h('div', { class: 'region' });
    const load = loader(region);
    const rule = h('select', { id: 'rule', name: 'rule' }, h('option', { value: 'pg' }, 'pg'), h('option', { value: 'heuristic' }, 'heuristic'));
    const whatif = h('div', { class: 'region' });
    const replay = h('button', { type: 'submit' }, 'Replay learning');
    const loadWhatif = loader(whatif);
    main.append(...pageHead('Why', 'Why a chunk or an edge is the way it is: every change, each with its cause.'),
      h('form', { class: 'bar', onsubmit: (e) => { e.preventDefault(); const v = node.value.trim(); if (v) Ocb.navigate(whyHref(v)); } },
        h('label', { for: 'node' }, 'Chunk id'), node, h('button', { type: 'submit' }, 'Explain')),
      h('form', { class: 'bar', onsubmit: (e) => {
        e.preventDefault();
        const a = src.value.trim(), b = tgt.value.trim();
        if (a && b) Ocb.navigate(edgeHref(a, b));
        else region.replaceChildren(errorBox(new ApiError('name both chunks of the edge', 'type a source and a target chunk id')));
      } }, h('label', { for: 'source' }, 'Source chunk'), src, h('label', { for: 'target' }, 'Target chunk'), tgt,
      h('button', { type: 'submit' }, 'Explain edge')),
      region,
      h('h2', {}, 'What if'),
      h('p', { class: 'intro' }, 'Replay the learning under another rule in a scratch brain (takes a few seconds; nothing is written to this brain).'),
      h('form', { class: 'bar', onsubmit: (e) => {
        e.preventDefault();
        replay.disabled = true;
        loadWhatif(() => api('/api/whatif?rule=' + encodeURIComponent(rule.value)), renderWhatif, `Replaying the learning under ${rule.value}…`)
          .finally(() => { replay.disabled = false; });
      } }, h('label', { for: 'rule' }, 'Rule'), rule, replay),
      whatif);
    function update(p) {
      const n = p.get('node'), a = p.get('source'), b = p.get('target');
      node.value = n || '';
      src.value = a || '';
      tgt.value = b || '';
      if (n) {
        document.title = `Why ${n} · OpenClawBrain`;
        load(() => api('/api/why?node=' + encodeURIComponent(n)), (d) => renderNode(d.node), 'Reading the chunk\u2019s history…').then(markReady);
      } else if (a && b) {
        document.title = `Why ${a} → ${b} · OpenClawBrain`;
        load(() => api(`/api/why?source=${encodeURIComponent(a)}&target=${encodeURIComponent(b)}`), (d) => renderEdge(d.edge), 'Reading the edge\u2019s history…').then(markReady);
      } else {
        region.replaceChildren(note('Type a chunk id (the citations on the Ask page link here) or the two chunks of an edge.'));
        markReady();
      }
    }
    return { update };
  }

  function renderNode(n) {
    const lines = n.start_line ? `${n.start_line}–${n.end_line}` : '—';
    const out = [h('h2', {}, 'Chunk ', h('code', {}, n.id)),
      n.exists === false ? h('p', { class: 'warn' }, `This chunk no longer exists as of seq ${n.as_of_seq}.`) : null,
      kv([['Path', n.path ? h('code', {}, n.path) : '—'], ['Lines', lines], ['Kind', n.kind || '—'], ['Authority', n.authority || '—'],
        ['Created at seq', num(n.created_seq)], ['Alias of', n.alias_of ? nodeLink(n.alias_of) : '—'], ['STOP weight', num(n.stop)],
        ['Accesses', num(n.accesses)], ['First access', when(n.first_access)], ['Last access', when(n.last_access)],
        ['Weight changes out / in', `${num(n.changes_out)} / ${num(n.changes_in)}`], ['As of seq', num(n.as_of_seq)]])];
    out.push(h('h2', {}, 'Life'), (n.life || []).length ? table([
      { label: 'Seq', num: true, get: (r) => num(r.seq) }, { label: 'Time (UTC)', get: (r) => when(r.ts) }, { label: 'Action', get: (r) => r.action },
      { label: 'Path', get: (r) => r.path || '—' }, { label: 'Lines', get: (r) => (r.start_line ? `${r.start_line}–${r.end_line}` : '—') },
      { label: 'Content hash', get: (r) => h('code', {}, (r.content_hash || '').slice(0, 12) || '—') },
      { label: 'Other', get: (r) => (r.other ? nodeLink(r.other) : '—') }, { label: 'Detail', get: (r) => r.detail || '—' },
    ], n.life) : note('No life events.'));
    out.push(h('h2', {}, 'Recent queries'), (n.recent || []).length ? table([
      { label: 'Seq', num: true, get: (r) => num(r.seq) }, { label: 'Time (UTC)', get: (r) => when(r.ts) },
      { label: 'Trace', get: (r) => h('code', {}, r.trace_id) }, { label: 'Question', get: (r) => h('a', { href: askHref(r.query) }, r.query) },
      { label: 'Rank', num: true, get: (r) => num(r.rank) }, { label: 'Route', get: (r) => r.route || '—' }, { label: 'Mode', get: (r) => r.route_mode || '—' },
    ], n.recent) : note('No question returned this chunk yet.'));
    out.push(h('h2', {}, 'Routes'), (n.routes || []).length ? table(autoCols(n.routes), n.routes) : note('No route credited this chunk.'));
    if ((n.injections || []).length) out.push(h('h2', {}, 'Injections'), table(autoCols(n.injections), n.injections));
    if (n.path) {
      const slot = h('div', {});
      const show = h('button', { type: 'button', onclick: async () => {
        show.disabled = true;
        try {
          const f = await api(`/api/file?path=${encodeURIComponent(n.path)}` + (n.as_of_seq ? `&seq=${n.as_of_seq}` : ''));
          const all = String(f.text || '').split('\n');
          const a = Math.max(0, (n.start_line || 1) - 1), b = n.end_line || a;
          slot.replaceChildren(note(`${f.path} as recorded at seq ${f.seq}${f.exact === false ? ' (not byte-exact)' : ''}; lines ${lines} marked.`),
            h('pre', { class: 'file', tabindex: 0 }, all.slice(0, a).join('\n') + (a ? '\n' : ''), h('mark', {}, all.slice(a, b).join('\n')),
              b < all.length ? '\n' + all.slice(b, 20000).join('\n') : ''));
        } catch (err) { slot.replaceChildren(errorBox(err)); } finally { show.disabled = false; }
      } }, 'Show file');
      out.push(h('h2', {}, 'File'), h('p', {}, show), slot);
    }
    return out;
  }

  function causeNode(c) {
    if (!c) return '—';
    const k = c.kind;
    if (k === 'outcome') {
      return [h('a', { href: askHref(c.query || '') }, h('q', {}, c.query || '?')), ' → outcome ', h('strong', {}, signed(c.reward, 2)),
        ` (${c.reward_source || '?'}), trace ${c.trace_id || '?'}, seq ${c.seq}`,
        (c.path || []).length ? lazyDetails(`walk path (${c.path.length})`,
          () => h('ul', { class: 'path' }, c.path.slice(0, 60).map((p) => h('li', { class: 'mono' }, p)))) : null];
    }
    if (k === 'injection') return [`${c.node_type || 'injection'} `, nodeLink(c.node_id), c.content ? [': ', h('q', {}, c.content)] : null, ` (seq ${c.seq})`];
    if (k === 'maintenance') return `maintenance ${c.op || ''}${c.summary ? ': ' + c.summary : ''} (seq ${c.seq})`;
    if (k === 'teacher') return [`teacher ${c.teacher || ''} on `, h('q', {}, c.query || ''), `, trace ${c.trace_id}, hop ${c.hop} (seq ${c.seq})`];
    if (k === 'sync') return `sync: ${c.file_action || ''} ${c.file || ''} (seq ${c.seq})`;
    if (k === 'record') return `${c.type || 'record'} by ${c.actor || '?'} (seq ${c.seq})`;
    const rest = Object.entries(c).filter(([key, v]) => !['kind', 'seq', 'ts'].includes(key) && v !== '' && v !== null && typeof v !== 'object');
    return `${k || c.type || 'cause'} (seq ${c.seq})` + (rest.length ? ': ' + rest.map(([key, v]) => `${key} ${v}`).join(', ') : '');
  }

  function renderEdge(e) {
    const changes = e.changes || [];
    const out = [h('h2', {}, 'Edge'),
      kv([['Source', nodeLink(e.source)], ['Target', nodeLink(e.target)], ['Exists', e.exists === false ? 'no (removed)' : 'yes'],
        ['Weight', num(e.weight)], ['Kind', e.kind || '—'], ['Tier', tierTag(e.tier)], ['As of seq', num(e.as_of_seq)]]),
      h('h2', {}, 'Weight changes')];
    if (!changes.length) { out.push(note('No recorded change.')); return out; }
    const pts = changes.filter((c) => typeof c.after === 'number').slice(-400).map((c) => [c.seq, c.after]);
    out.push(G.lines({ label: `Weight over time: ${changes.length} changes, now ${num(e.weight)}`, series: [{ name: 'weight', color: G.TIERS[e.tier] || '#1f5fbf', points: pts }], xLabel: 'seq', yLabel: 'weight', height: 180 }));
    out.push(table([
      { label: 'Seq', num: true, get: (c) => num(c.seq) }, { label: 'Time (UTC)', get: (c) => when(c.ts) },
      { label: 'Before', num: true, get: (c) => num(c.before) }, { label: 'After', num: true, get: (c) => num(c.after) },
      { label: 'Change', num: true, get: (c) => (typeof c.before === 'number' && typeof c.after === 'number' ? signed(c.after - c.before) : 'new') },
      { label: 'Rule', get: (c) => c.rule || '—' }, { label: 'Cause', get: (c) => causeNode(c.cause) },
    ], changes, `${changes.length} changes, oldest first`, { last: true }));
    return out;
  }

  function renderWhatif(d) {
    const ov = Object.entries(d.overrides || {}).map(([k, v]) => `${k} ${v}`).join(', ') || 'no override';
    const out = [h('p', {}, `Replayed seq ${num(d.from_seq)} to ${num(d.to_seq)} with ${ov}.`)];
    if (d.replay) out.push(kv(Object.entries(d.replay).map(([k, v]) => [k.replace(/_/g, ' '), num(v)])));
    out.push(h('h3', {}, 'Edges'), countsTable([['Edges', d.edges]], null));
    if (d.tiers) out.push(tierCompare(d.tiers.real, d.tiers.what_if, 'Real', 'What if', 'Edges per tier'), transitions(d.tiers.transitions));
    if (d.queries) {
      const q = d.queries;
      out.push(h('h3', {}, 'Questions asked again'),
        h('p', {}, `${num(q.count)} questions: mean fired ${num(q.real && q.real.mean_fired, 2)} (real) vs ${num(q.what_if && q.what_if.mean_fired, 2)} (what if); ` +
          `mean context ${num(q.real && q.real.mean_context_chars, 0)} vs ${num(q.what_if && q.what_if.mean_context_chars, 0)} characters; ${num(q.changed)} changed.`));
      if ((q.top || []).length) out.push(table(autoCols(q.top), q.top));
    }
    const top = (d.edges && d.edges.top) || [];
    if (top.length) out.push(h('h3', {}, 'Largest edge changes'), table(autoCols(top), top));
    return out;
  }

  Ocb.pages.why = { title: 'Why', build: pageWhy };
})();
