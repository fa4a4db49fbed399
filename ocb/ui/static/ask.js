/* OpenClawBrain window: the Ask page: a question's results, its walk, route and
 * context, and (writes on) the feedback that scores, corrects or retracts the answer. */
(function () {
  'use strict';

  const Ocb = window.Ocb;
  const G = window.OcbGraph;
  const { WRITES, main, h, setStatus, markReady, num, signed, when, whyHref, askHref, nodeLink, kv, note,
    ApiError, api, errorBox, loader, table, tierTag, legend, tierLegend, pageHead } = Ocb;

  const askCache = new Map();

  function pageAsk() {
    const input = h('input', { type: 'search', id: 'q', name: 'q', autocomplete: 'off', spellcheck: 'false' });
    const form = h('form', { role: 'search', class: 'bar', action: '/ask', method: 'get' },
      h('label', { for: 'q' }, 'Question'), input, h('button', { type: 'submit' }, 'Search'));
    const region = h('div', { class: 'region' });
    const load = loader(region);
    let top = null;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const q = input.value.trim();
      Ocb.navigate(q ? askHref(q) : '/ask');
    });
    main.append(...pageHead('Ask', 'Ask the brain a question: the chunks it returns, the walk that found them and the context an agent would get.'), form, region);
    function update(params) {
      const q = (params.get('q') || '').trim();
      top = params.get('top');
      input.value = q;
      document.title = (q ? `Ask: ${q}` : 'Ask') + ' · OpenClawBrain';
      if (!q) { region.replaceChildren(note('Type a question and press Enter.')); markReady(); return; }
      const path = `/api/ask?q=${encodeURIComponent(q)}` + (top ? `&top=${encodeURIComponent(top)}` : '');
      // back and forward show the answer already given (asking again would record a new trace)
      const cached = Ocb.state.fromHistory ? askCache.get(path) : null;
      load(() => (cached ? Promise.resolve(cached) : api(path)), (d) => {
        askCache.set(path, d);
        if (askCache.size > 20) askCache.delete(askCache.keys().next().value);
        setStatus(`${d.answer.results.length} results for the question`);
        return renderAnswer(d);
      }, 'Asking the brain…').then(markReady);
    }
    return { update };
  }

  function renderAnswer(d) {
    const a = d.answer;
    const out = [h('p', { class: 'echo' }, 'Answer to ', h('q', {}, a.query),
      a.trace_id ? [' · trace ', h('code', {}, a.trace_id)] : ' · not recorded')];
    if (!WRITES) out.push(note('This window is read-only: start it with ocb ui --allow-writes to score, correct or retract answers.'));
    out.push(h('h2', {}, 'Results'));
    out.push(a.results.length ? h('ol', { class: 'results' }, a.results.map(resultItem)) : note('Nothing matched the question.'));
    out.push(h('h2', {}, 'Walk'), walkSection(a));
    out.push(h('h2', {}, 'Route'), routeSection(a, d.credits || []));
    out.push(h('h2', {}, 'Context'), contextSection(a, d.budget));
    if (WRITES && d.recorded) out.push(h('h2', {}, 'Feedback'), feedbackSection(a));
    else if (WRITES) out.push(note('This answer was not recorded, so it cannot be scored.'));
    return out;
  }

  function resultItem(r) {
    const tags = [h('span', { class: 'badge ' + (r.fired ? 'b-fired' : 'b-unfired') }, r.fired ? 'fired' : 'not fired')];
    if (r.kind && r.kind !== 'chunk') tags.push(h('span', { class: 'badge b-kind' }, r.kind));
    if (r.claim) tags.push(h('span', { class: 'badge b-warn' }, 'unconfirmed claim'));
    if (r.cut) tags.push(h('span', { class: 'badge b-kind' }, 'cut'));
    return h('li', { class: 'card result' },
      h('div', { class: 'result-head' }, h('a', { href: whyHref(r.id), class: 'cite' }, r.source || r.id),
        h('span', { class: 'score' }, 'score ', num(r.score)), tags),
      h('pre', { class: 'passage' }, r.text),
      r.also && r.also.length ? note('Also merged: ', r.also.join(', ')) : null);
  }

  function walkSection(a) {
    const w = G.normWalk(a.walk);
    if (!w || (!w.seeds.length && !w.steps.length)) {
      return note(a.route ? `No walk: the question followed route ${a.route} (${a.route_mode || 'route'}).` : 'No walk was recorded for this question.');
    }
    const hops = w.steps.reduce((m, st) => Math.max(m, st.hop), 0);
    const frag = [h('div', { class: 'walk-wrap' }, G.walk(w, { label: `Walk from ${w.seeds.length} seeds through ${hops} hops` })),
      legend([...tierLegend(), ['line', '#1a1a1a', 'solid: followed (wider: heavier)'], ['dash', '#1a1a1a', 'dashed: considered, not followed'],
        ['square', '#1a1a1a', 'square: seed'], ['fill', '#1a1a1a', 'filled: fired'], ['hollow', '#1a1a1a', 'hollow: not fired'],
        ['cross', '#b3261e', 'red cross: vetoed']])];
    if (w.vetoed.length) {
      frag.push(h('p', { class: 'vetoed' }, `Vetoed by corrections (${w.vetoed.length}): `,
        w.vetoed.slice(0, 50).map((id, i) => [i ? ', ' : '', nodeLink(id)])));
    }
    frag.push(h('details', {}, h('summary', {}, 'Seeds as a table'), table([
      { label: 'Chunk', get: (s) => nodeLink(s.node_id) }, { label: 'Score', num: true, get: (s) => num(s.score) },
      { label: 'Lexical', num: true, get: (s) => num(s.lexical) }, { label: 'Vector', num: true, get: (s) => num(s.vector) },
    ], w.seeds)));
    const rows = [];
    for (const st of w.steps) {
      const follow = new Set(st.followed);
      for (const c of st.candidates) rows.push({ st, c, taken: c.target === st.chosen ? 'chosen' : follow.has(c.target) ? 'followed' : 'no' });
      if (st.chosen === '<STOP>') rows.push({ st, c: { target: '<STOP>', weight: null, logit: st.stop_logit, tier: '' }, taken: 'chosen' });
    }
    frag.push(h('details', {}, h('summary', {}, 'Steps as a table'), table([
      { label: 'Hop', num: true, get: (r) => num(r.st.hop) }, { label: 'From', get: (r) => nodeLink(r.st.node) },
      { label: 'To', get: (r) => (r.c.target === '<STOP>' ? 'STOP' : nodeLink(r.c.target)) },
      { label: 'Weight', num: true, get: (r) => num(r.c.weight) }, { label: 'Logit', num: true, get: (r) => num(r.c.logit) },
      { label: 'Tier', get: (r) => (r.c.tier ? tierTag(r.c.tier) : '—') }, { label: 'Uses', num: true, get: (r) => num(r.c.uses) },
      { label: 'Taken', get: (r) => r.taken },
    ], rows)));
    return frag;
  }

  const ROUTE_MODES = { compiled: 'fired the route\u2019s chunks', explore: 'fired the best chunks the route has not tried', spent: 'fired nothing' };
  function routeSection(a, credits) {
    const out = [];
    if (a.route) {
      out.push(kv([['Route', h('code', {}, a.route)], ['Mode', `${a.route_mode || '—'}${ROUTE_MODES[a.route_mode] ? ' (' + ROUTE_MODES[a.route_mode] + ')' : ''}`],
        ['Question', a.route_question ? h('q', {}, a.route_question) : 'its own']]));
    } else out.push(h('p', {}, 'Walked the graph (no route).'));
    if (credits.length) {
      out.push(table([
        { label: 'Seq', num: true, get: (c) => num(c.seq) }, { label: 'Time (UTC)', get: (c) => when(c.ts) },
        { label: 'Question', get: (c) => c.question }, { label: 'Chunk', get: (c) => nodeLink(c.node) },
        { label: 'Credit', num: true, get: (c) => signed(c.delta) }, { label: 'Cause seq', num: true, get: (c) => num(c.cause_seq) },
      ], credits, `Credits of route ${a.route} (${credits.length})`));
    }
    return out;
  }

  function contextSection(a, budget) {
    const chars = a.context_chars || 0;
    return [h('p', {}, `${num(chars)} of ${num(budget)} characters`, ' · stopped: ', h('code', {}, a.stop_reason || '—')),
      h('div', { class: 'meter-row' }, h('label', { for: 'context-meter' }, 'Context budget used'),
        h('meter', { id: 'context-meter', min: 0, max: budget || 1, value: Math.min(chars, budget || chars), optimum: 0 },
          `${chars} of ${budget}`)),
      h('pre', { class: 'context', tabindex: 0 }, a.context || '')];
  }

  function feedbackSection(a) {
    const trace = a.trace_id;
    const fired = a.results.filter((r) => r.fired);
    const said = h('p', { role: 'status', class: 'said' });
    const errs = h('div', {});
    const checks = fired.map((r, i) => h('input', { type: 'checkbox', id: `used-${i}`, value: r.id, checked: true }));
    const buttons = [];
    async function send(path, body, summary) {
      buttons.forEach((b) => { b.disabled = true; });
      errs.replaceChildren();
      said.textContent = 'Sending…';
      try {
        const got = await api(path, body);
        said.textContent = summary(got);
      } catch (err) {
        said.textContent = '';
        errs.replaceChildren(errorBox(err));
      } finally { buttons.forEach((b) => { b.disabled = false; }); }
    }
    const score = (outcome) => send('/api/learn', { trace_id: trace, outcome, used: checks.filter((c) => c.checked).map((c) => c.value) }, learnSummary);
    const good = h('button', { type: 'button', onclick: () => score(1) }, 'Good answer (+1)');
    const bad = h('button', { type: 'button', onclick: () => score(-1) }, 'Bad answer (-1)');
    const text = h('textarea', { id: 'correction', name: 'correction', rows: 3 });
    const correctBtn = h('button', { type: 'submit' }, 'Record correction');
    const correction = h('form', { class: 'stack', onsubmit: (e) => {
      e.preventDefault();
      if (!text.value.trim()) { errs.replaceChildren(errorBox(new ApiError('no correction given', 'type what the answer got wrong'))); return; }
      send('/api/correct', { trace_id: trace, content: text.value }, (g) =>
        `Correction ${g.created === false ? 'already recorded' : 'recorded'} as ${g.node_id}: ${num(g.connections)} connections, ` +
        `${(g.vetoed || []).length} chunks vetoed, ${(g.inhibits || []).length} inhibited.`);
    } }, h('label', { for: 'correction' }, 'Correction'), text, h('div', {}, correctBtn));
    const reason = h('input', { type: 'text', id: 'reason', name: 'reason', autocomplete: 'off' });
    const retractBtn = h('button', { type: 'submit' }, 'Retract score');
    const retract = h('form', { class: 'bar', onsubmit: (e) => {
      e.preventDefault();
      send('/api/retract', { trace_id: trace, reason: reason.value }, (g) =>
        `Retracted ${(g.target && g.target.detail) || 'the outcome'} (seq ${g.seq}): ${(g.weights || []).length} weights and ` +
        `${(g.credits || []).length} route credits restored.`);
    } }, h('label', { for: 'reason' }, 'Reason for retracting (optional)'), reason, retractBtn);
    buttons.push(good, bad, correctBtn, retractBtn);
    return [h('div', { class: 'card feedback' },
      fired.length ? h('fieldset', {}, h('legend', {}, 'Chunks the answer used'),
        h('ul', { class: 'checks' }, fired.map((r, i) => h('li', {}, checks[i], h('label', { for: `used-${i}`, class: 'mono' }, r.source || r.id)))))
        : note('Nothing fired.'),
      h('div', { class: 'buttons' }, good, bad), correction, retract, said, errs)];
  }

  function learnSummary(g) {
    const n = Object.keys(g.credits || {}).length;
    let t = `Scored ${signed(g.reward, 2)}: ${(g.deltas || []).length} edges changed`;
    if (g.route) t += `, route ${g.route} credited ${n} chunks`;
    t += ` (outcome seq ${g.outcome_seq}, rule ${g.rule}).`;
    if (g.recorded === false) t += ' Already scored: nothing new recorded.';
    if ((g.unmatched || []).length) t += ` Unmatched: ${g.unmatched.join(', ')}.`;
    return t;
  }

  Ocb.pages.ask = { title: 'Ask', build: pageAsk };
})();
