/* OpenClawBrain window: the Health page: tier shares and findings, the log's
 * verification (on demand) and what serves the brain. */
(function () {
  'use strict';

  const Ocb = window.Ocb;
  const { main, h, setStatus, markReady, num, when, duration, kv, note, api, errorBox, swap, loader, table,
    pageHead, tiersBlock } = Ocb;

  function pageHealth() {
    const loading = (t) => h('div', { class: 'region' }, h('p', { class: 'loading' }, t || 'Loading…'));
    const tiers = loading(), findings = loading(), doc = loading('Verifying the log…'), served = loading();
    main.append(...pageHead('Health', 'Tier shares and query costs, the log\u2019s verification and what serves the brain.'),
      h('h2', {}, 'Tiers'), tiers, h('h2', {}, 'Findings'), findings, h('h2', {}, 'Log verification'), doc, h('h2', {}, 'Served by'), served);
    const loadDoc = loader(doc);
    let ticket = 0, docAt = 0;
    async function run(quiet) {
      const mine = ++ticket;
      if (!quiet) setStatus('Checking the brain…');
      try {
        const d = await api('/api/health');
        if (mine !== ticket || !tiers.isConnected) return;
        swap(tiers, tiersBlock(d.health || {}, 'now'));
        swap(findings, renderFindings(d.health || {}));
        swap(served, renderServed(d.status || {}, d.last_sync));
        if (!quiet) setStatus('');
        if (!docAt) { // the checks rebuild every projection (seconds on a long log): on demand
          docAt = 1;
          const verify = h('button', { type: 'button' }, 'Run the checks');
          verify.addEventListener('click', () => {
            verify.disabled = true;
            loadDoc(() => api('/api/doctor'), renderDoctor, 'Verifying the log and rebuilding every projection…');
          });
          swap(doc, [note('The log\u2019s checksums and hash chain, the projections against a full rebuild, vectors, blobs and privacy (ocb doctor).'), verify]);
        }
      } catch (err) {
        if (mine !== ticket || !tiers.isConnected) return;
        tiers.replaceChildren(errorBox(err));
        for (const r of [findings, served]) r.replaceChildren();
        if (!docAt) doc.replaceChildren();
        setStatus('Error: ' + err.message);
      }
    }
    return { update: () => run(false).then(markReady), refresh: () => run(true).then(markReady) };
  }

  const EXTRA_NAMES = { writes: 'write jobs', groups: 'write groups', watched_files: 'watched files', brain_id: 'brain id' };
  const BADGES = { pass: ['✓', 'b-pass'], warn: ['!', 'b-warn'], fail: ['✗', 'b-fail'], skip: ['–', 'b-skip'] };
  function renderFindings(hl) {
    return [(hl.findings || []).length ? h('ul', { class: 'findings' }, hl.findings.map((f) => h('li', {}, typeof f === 'string' ? f : JSON.stringify(f))))
      : h('p', {}, 'No findings: no sign of brain death (tiers balanced, answers not growing).'),
    (hl.proposals || []).length ? table([
      { label: 'Setting', get: (p) => h('code', {}, p.key) }, { label: 'Current', num: true, get: (p) => num(p.current) },
      { label: 'Proposed', num: true, get: (p) => num(p.proposed) }, { label: 'Why', get: (p) => p.reason },
    ], hl.proposals, 'Proposed setting changes') : note('No setting change proposed.')];
  }
  function renderDoctor(doc) {
    const checks = doc.checks || [];
    const worst = checks.some((c) => c.status === 'fail') || doc.ok === false ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'pass';
    return [h('p', {}, badge(worst), ' ', worst === 'fail' ? 'Some checks failed.' : worst === 'warn' ? 'The log verifies; some checks warn.' : 'Every check passes.'),
      table([{ label: 'Check', get: (c) => c.name }, { label: 'Status', get: (c) => badge(c.status) }, { label: 'Detail', get: (c) => c.detail }], checks)];
  }
  function renderServed(st, sync) {
    const mem = typeof st.rss_bytes === 'number' ? `${(st.rss_bytes / 1048576).toFixed(1)} MB` : '—';
    const shownKeys = ['mode', 'pid', 'uptime_s', 'clients', 'requests', 'rss_bytes', 'seq', 'brain'];
    const extra = Object.entries(st).filter(([k, v]) => !shownKeys.includes(k) && (typeof v !== 'object' || v === null));
    return kv([
      ['Mode', st.mode === 'daemon' ? 'daemon (ocb serve)' : st.mode || '—'], ['Process id', st.pid === undefined ? '—' : String(st.pid)], ['Uptime', duration(st.uptime_s)],
      ['Clients', st.clients === undefined ? '—' : num(st.clients)], ['Requests', st.requests === undefined ? '—' : num(st.requests)],
      ['Memory', mem], ['Last seq', num(st.seq)], ['Brain', st.brain ? h('code', {}, st.brain) : '—'],
      sync ? ['Last workspace sync', sync.seq === null || sync.seq === undefined ? 'never' : `seq ${num(sync.seq)}, ${when(sync.ts)} UTC`] : null,
      ...extra.map(([k, v]) => [EXTRA_NAMES[k] || k.replace(/_/g, ' '), typeof v === 'number' ? num(v) : String(v)])]);
  }
  function badge(status) {
    const [icon, cls] = BADGES[status] || ['?', 'b-skip'];
    return h('span', { class: 'badge ' + cls }, `${icon} ${status}`);
  }

  Ocb.pages.health = { title: 'Health', build: pageHealth };
})();
