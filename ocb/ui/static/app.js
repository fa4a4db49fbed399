/* OpenClawBrain window: the pages' URLs (routing, links and the back and forward
 * buttons), live updates from /api/stream, and the start. The helpers are in core.js,
 * each page in its own file (ask.js, history.js, why.js, memory.js, health.js). */
(function () {
  'use strict';

  const Ocb = window.Ocb;
  const { main, h, setStatus, errorBox, state } = Ocb;

  // ------------------------------------------------------------------ routing

  const PAGES = Ocb.pages; // each page's file registers it

  function pageName() {
    const p = location.pathname.replace(/\/+$/, '').replace(/^\//, '');
    return PAGES[p] ? p : 'ask';
  }
  function markNav(name) {
    for (const a of document.querySelectorAll('nav a[data-page]')) {
      if (a.getAttribute('data-page') === name) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  function route(focus) {
    const name = pageName();
    const params = new URLSearchParams(location.search);
    state.lastRouted = location.pathname + location.search;
    markNav(name);
    try {
      if (state.current.name === name && state.current.update) { state.current.update(params); return; }
      main.replaceChildren();
      document.title = PAGES[name].title + ' · OpenClawBrain';
      state.current = { name, update: null, refresh: null };
      const got = PAGES[name].build(params) || {};
      state.current.update = got.update || null;
      state.current.refresh = got.refresh || null;
      if (state.current.update) state.current.update(params);
      if (focus) { main.focus({ preventScroll: true }); window.scrollTo(0, 0); }
    } catch (err) {
      main.replaceChildren(h('h1', {}, PAGES[name].title), errorBox(err));
    }
  }

  function navigate(url) {
    const target = new URL(url, location.href);
    const next = target.pathname + target.search;
    const same = next === location.pathname + location.search;
    const samePage = target.pathname.replace(/\/+$/, '') === location.pathname.replace(/\/+$/, '');
    history[same ? 'replaceState' : 'pushState'](null, '', next);
    route(!samePage);
  }
  Ocb.navigate = navigate; // the pages' forms go through it

  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target instanceof Element ? e.target.closest('a') : null;
    if (!a || a.hasAttribute('download') || (a.getAttribute('target') || '_self') !== '_self') return;
    const raw = a.getAttribute('href');
    if (!raw || raw.startsWith('#')) return;
    let url;
    try { url = new URL(raw, location.href); } catch (err) { return; }
    if (url.origin !== location.origin) return;
    const name = url.pathname.replace(/\/+$/, '').replace(/^\//, '');
    if (!PAGES[name]) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
  window.addEventListener('popstate', () => {
    if (location.pathname + location.search === state.lastRouted) return;
    state.fromHistory = true;
    try { route(false); } finally { state.fromHistory = false; }
  });
  window.addEventListener('unhandledrejection', (e) => {
    e.preventDefault();
    setStatus('Error: ' + ((e.reason && e.reason.message) || e.reason));
  });

  // ------------------------------------------------------------------ live

  function live() {
    if (typeof window.EventSource !== 'function') return;
    let seen = null, timer = null, busy = false;
    const refresh = () => {
      timer = null;
      if (busy || !state.current.refresh || (state.current.name !== 'history' && state.current.name !== 'health')) return;
      busy = true;
      Promise.resolve().then(() => state.current.refresh()).catch(() => {}).then(() => { busy = false; });
    };
    try {
      const es = new EventSource('/api/stream');
      es.addEventListener('message', (ev) => {
        try {
          const seq = Number(JSON.parse(ev.data).last_seq);
          if (!isFinite(seq)) return;
          if (seen !== null && seq > seen) {
            setStatus(`new events up to seq ${seq}`);
            if (state.info) state.info.last_seq = seq;
            if (!timer) timer = setTimeout(refresh, 1200);
          }
          if (seen === null || seq > seen) seen = seq;
        } catch (err) { /* a message that is not JSON: ignored */ }
      });
      es.addEventListener('error', () => { /* EventSource reconnects itself */ });
    } catch (err) { /* no live updates */ }
  }

  // ------------------------------------------------------------------ start

  function start() {
    try {
      if (!document.querySelector('link[rel~="icon"]')) {
        document.head.appendChild(h('link', { rel: 'icon', href: 'data:,' }));
      }
      const p = new URLSearchParams(location.search);
      if (p.has('token')) {
        p.delete('token');
        const qs = p.toString();
        history.replaceState(null, '', location.pathname + (qs ? '?' + qs : '') + location.hash);
      }
    } catch (err) { /* keep going */ }
    route(false);
    live();
  }
  start();
})();
