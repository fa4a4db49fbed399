/* OpenClawBrain window: the Memory page: typed facts by question or entity, the
 * current facts of an entity and reflect's moves of opinions' confidence. */
(function () {
  'use strict';

  const Ocb = window.Ocb;
  const G = window.OcbGraph;
  const { main, h, markReady, num, when, note, api, loader, table, pageHead, lazyDetails } = Ocb;

  const KIND_NAMES = { W: 'World', B: 'Experience', O: 'Opinion', S: 'Summary' };

  function pageMemory() {
    const mq = h('input', { type: 'search', id: 'mq', name: 'q', autocomplete: 'off' });
    const entity = h('input', { type: 'text', id: 'entity', name: 'entity', list: 'subjects', autocomplete: 'off' });
    const subjects = h('datalist', { id: 'subjects' });
    const region = h('div', { class: 'region' });
    const load = loader(region);
    const known = new Set();
    main.append(...pageHead('Memory', 'Typed facts (world, experience, opinion, summary) by question or entity, current facts and opinions\u2019 confidence moves.'),
      h('form', { class: 'bar', onsubmit: (e) => {
        e.preventDefault();
        const p = new URLSearchParams();
        if (entity.value.trim()) p.set('entity', entity.value.trim());
        if (mq.value.trim()) p.set('q', mq.value.trim());
        const qs = p.toString();
        Ocb.navigate('/memory' + (qs ? '?' + qs : ''));
      } }, h('label', { for: 'mq' }, 'Search facts'), mq, h('label', { for: 'entity' }, 'Entity'), entity, subjects,
      h('button', { type: 'submit' }, 'Show')), region);
    function update(p) {
      const q = p.get('q') || '', who = p.get('entity') || '';
      mq.value = q;
      entity.value = who;
      const qs = new URLSearchParams();
      if (q) qs.set('q', q);
      if (who) qs.set('entity', who);
      load(() => api('/api/memory?' + qs.toString()), (d) => {
        for (const s of d.subjects || []) known.add(s);
        for (const f of (d.facts && d.facts.results) || []) for (const en of f.entities || []) known.add(en);
        subjects.replaceChildren(...[...known].sort().slice(0, 1000).map((s) => h('option', { value: s })));
        const slot = h('div', { class: 'region' }, h('p', { class: 'loading' }, 'Reading reflect\u2019s moves…'));
        const texts = new Map(((d.facts && d.facts.results) || []).map((f) => [f.id, f.text]));
        // the moves are a read of the whole log: asked for after the facts are shown
        const got = d.reflected ? Promise.resolve(d.reflected) : (movesOnce = movesOnce || api('/api/moves').then((m) => m.moves || []));
        loader(slot)(() => got, (moves) => renderMoves(moves, texts), 'Reading reflect’s moves…', true);
        if (!d.reflected) got.catch(() => { movesOnce = null; });
        return [renderMemory(d), h('h2', {}, 'Confidence moves'), slot];
      }, 'Recalling facts…').then(markReady);
    }
    let movesOnce = null;
    return { update };
  }

  function renderMemory(d) {
    const facts = (d.facts && d.facts.results) || [];
    const out = [h('p', { class: 'echo' }, `${facts.length} facts`, d.query ? [' for ', h('q', {}, d.query)] : null,
      d.entity ? [' about ', h('strong', {}, d.entity)] : null, '.')];
    if (d.kg) {
      const kg = d.kg;
      out.push(h('h2', {}, 'Current facts'), note(`${kg.subject}, as of seq ${num(kg.seq)} (${when(kg.now)}); stale after ${num(kg.stale_days)} days.`),
        table([
          { label: 'Property', get: (f) => f.predicate }, { label: 'Value', get: (f) => h('strong', {}, f.value) },
          { label: 'Source', get: (f) => h('code', {}, f.source || '—') }, { label: 'Since', get: (f) => when(f.since) },
          { label: 'Verified', get: (f) => when(f.verified) }, { label: 'Age (days)', num: true, get: (f) => num(f.age_days, 1) },
          { label: 'Caveats', get: (f) => caveats(f) },
        ], kg.facts || []));
    }
    const groups = new Map();
    for (const f of facts) {
      const ents = f.entities || [];
      const key = ents.length ? (d.entity && ents.some((x) => x.toLowerCase() === d.entity.toLowerCase()) ? ents.find((x) => x.toLowerCase() === d.entity.toLowerCase()) : ents[0]) : '';
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(f);
    }
    const keys = [...groups.keys()].filter((k) => k).concat(groups.has('') ? [''] : []);
    if (!facts.length) out.push(note(d.facts === null && d.entity ? `No fact mentions ${d.entity}; only its current facts are known.` : 'No fact matches.'));
    for (const k of keys) {
      out.push(h('h2', {}, k || 'No entity'), h('ul', { class: 'facts' }, groups.get(k).map((f) => factItem(f, k))));
    }
    return out;
  }

  function renderMoves(all, texts) {
    const moves = all.filter((r) => r.change === 'opinion_confidence');
    const others = all.filter((r) => r.change !== 'opinion_confidence');
    const out = [moves.length ? table([
      { label: 'Seq', num: true, get: (r) => num(r.seq) }, { label: 'Time (UTC)', get: (r) => when(r.ts) },
      { label: 'File', get: (r) => h('code', {}, r.path) }, { label: 'Opinion', get: (r) => [h('code', {}, r.subject), texts.has(r.subject) ? [' ', texts.get(r.subject)] : null] },
      { label: 'Confidence', get: (r) => `${r.before || '—'} → ${r.after || '—'}` },
      { label: 'Supporting', num: true, get: (r) => num((r.supporting || []).length) },
      { label: 'Contradicting', num: true, get: (r) => num((r.contradicting || []).length) },
    ], moves, null, { last: true }) : note('Reflect has moved no opinion\u2019s confidence yet.')];
    if (others.length) {
      out.push(lazyDetails(`Other changes reflect recorded (${others.length})`, () => table([
        { label: 'Seq', num: true, get: (r) => num(r.seq) }, { label: 'File', get: (r) => h('code', {}, r.path) },
        { label: 'Subject', get: (r) => r.subject }, { label: 'Change', get: (r) => r.change },
        { label: 'After', get: (r) => h('pre', { class: 'small', tabindex: 0 }, r.after || '') },
      ], others, null, { last: true })));
    }
    return out;
  }

  function caveats(f) {
    const out = [];
    if (f.stale) out.push(h('strong', { class: 'caveat' }, '⚠ stale'));
    if (f.caveat) out.push(h('strong', { class: 'caveat' }, '⚠ ', f.caveat));
    for (const c of f.conflicts || []) out.push(h('span', { class: 'caveat-soft' }, `was ${c.value} (${c.source || '?'}, ${when(c.time)})`));
    return out.length ? h('div', { class: 'caveats' }, out) : '—';
  }

  function factItem(f, group) {
    const kind = KIND_NAMES[f.kind] || f.kind || '?';
    const others = (f.entities || []).filter((e) => e !== group);
    const conf = typeof f.confidence === 'number' ? f.confidence : null;
    return h('li', { class: 'card fact' },
      h('div', { class: 'fact-head' }, h('span', { class: 'badge k-' + (f.kind || 'x') }, kind), h('code', { class: 'cite' }, f.source || f.id),
        f.day ? h('span', { class: 'muted' }, f.day) : null,
        conf !== null || f.kind === 'O' ? h('span', { class: 'conf' }, 'confidence ', num(conf || 0, 2), G.meter(conf || 0)) : null,
        h('span', { class: 'muted' }, 'score ', num(f.score))),
      h('p', { class: 'fact-text' }, f.text),
      others.length ? note('Also about: ', others.join(', ')) : null,
      (f.via || []).length ? note('Via: ', f.via.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ')) : null);
  }

  Ocb.pages.memory = { title: 'Memory', build: pageMemory };
})();
