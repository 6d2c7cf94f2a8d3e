// croq monitor: the little JavaScript the dashboard needs. Pages are rendered by the server;
// this script listens to the event stream (/api/v1/events) and swaps in fresh server-rendered
// fragments and SVG charts when something changes, appends live log lines, filters the rounds
// table, and sends the task actions and the add-task form as JSON.
(function () {
  'use strict';
  var body = document.body;
  var page = body.getAttribute('data-page') || '';
  var uid = body.getAttribute('data-task') || '';
  var live = document.getElementById('live');

  function $(id) { return document.getElementById(id); }
  function later(fn, ms) {
    var t = null;
    return function () { if (t) return; t = setTimeout(function () { t = null; fn(); }, ms); };
  }
  function flash(msg) {
    var f = $('flash');
    if (!f) { alert(msg); return; }
    f.textContent = msg;
    f.className = 'flash show';
  }
  function get(url) {
    return fetch(url, { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
      if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
      return r;
    });
  }
  function swap(id, url) {
    var el = $(id);
    if (!el) return Promise.resolve();
    return get(url).then(function (r) { return r.text(); }).then(function (t) { el.innerHTML = t; });
  }
  function send(method, url, payload) {
    return fetch(url, {
      method: method, credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(payload || {})
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) throw new Error((j.error && (j.error.message + (j.error.hint ? ' (' + j.error.hint + ')' : ''))) || ('HTTP ' + r.status));
        return j;
      });
    });
  }

  // ---- relative times ----
  function ago(ts) {
    var t = Date.parse(ts);
    if (isNaN(t)) return '';
    var s = Math.max(0, (Date.now() - t) / 1000);
    if (s < 60) return Math.round(s) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    return Math.round(s / 86400) + ' d ago';
  }
  function refreshTimes() {
    var els = document.querySelectorAll('[data-ts]');
    for (var i = 0; i < els.length; i++) {
      var a = ago(els[i].getAttribute('data-ts'));
      if (a) els[i].textContent = a;
    }
  }
  refreshTimes();
  setInterval(refreshTimes, 20000);

  // ---- rounds table filters ----
  function applyFilters() {
    var table = $('rounds');
    if (!table) return;
    var f = {};
    var inputs = document.querySelectorAll('[data-filter]');
    for (var i = 0; i < inputs.length; i++) f[inputs[i].getAttribute('data-filter')] = inputs[i].value.toLowerCase();
    var rows = table.tBodies[0] ? table.tBodies[0].rows : [];
    var shown = 0;
    for (var j = 0; j < rows.length; j++) {
      var r = rows[j], ok = true;
      var d = (r.getAttribute('data-decision') || '').toLowerCase();
      if (f.decision) ok = f.decision === 'fail' ? /fail|segfault|hang/.test(d) : d === f.decision;
      if (ok && f.bottleneck) ok = (r.getAttribute('data-bottleneck') || '').toLowerCase() === f.bottleneck;
      if (ok && f.category) ok = (r.getAttribute('data-category') || '').toLowerCase() === f.category;
      if (ok && f.text) ok = r.textContent.toLowerCase().indexOf(f.text) >= 0;
      r.className = ok ? '' : 'hidden';
      if (ok) shown++;
    }
    var c = $('rounds-shown');
    if (c) c.textContent = shown + ' of ' + rows.length;
  }
  var filterInputs = document.querySelectorAll('[data-filter]');
  for (var i = 0; i < filterInputs.length; i++) filterInputs[i].addEventListener('input', applyFilters);
  applyFilters();

  // ---- task page: charts, header and new rounds ----
  function lastSeq() {
    var t = $('rounds');
    return t ? parseInt(t.getAttribute('data-last-seq') || '-1', 10) : -1;
  }
  function newRounds() {
    var t = $('rounds');
    if (!t || !t.tBodies[0]) return Promise.resolve();
    return get('/fragments/tasks/' + uid + '/rounds?after_seq=' + lastSeq()).then(function (r) {
      var last = r.headers.get('X-Last-Seq');
      return r.text().then(function (html) {
        if (!html) return;
        var tmp = document.createElement('tbody');
        tmp.innerHTML = html;
        var tb = t.tBodies[0];
        while (tmp.lastChild) tb.insertBefore(tmp.lastChild, tb.firstChild);
        if (last !== null) t.setAttribute('data-last-seq', last);
        applyFilters();
      });
    });
  }
  // Charts are drawn by the server at the width they are shown at, so their text stays readable.
  var charts = ['convergence', 'progression', 'bottlenecks'];
  function chartUrl(name) {
    var el = $(name);
    var w = el ? Math.round(el.clientWidth - 14) : 0;
    w = Math.max(320, Math.min(1600, w));
    return '/api/v1/tasks/' + uid + '/charts/' + name + '.svg?width=' + w;
  }
  function swapCharts() {
    return Promise.all(charts.map(function (name) { return swap(name, chartUrl(name)); }));
  }
  function chartsNeedResize() {
    for (var i = 0; i < charts.length; i++) {
      var el = $(charts[i]), svg = el && el.querySelector('svg');
      if (svg && Math.abs(svg.viewBox.baseVal.width - (el.clientWidth - 14)) > 60) return true;
    }
    return false;
  }
  var refreshTask = later(function () {
    Promise.all([
      swap('task-head', '/fragments/tasks/' + uid + '/head'),
      swapCharts(),
      swap('ideas', '/fragments/tasks/' + uid + '/ideas'),
      newRounds()
    ]).then(function () { refreshTimes(); bindActions(); }).catch(function (e) { console.warn(e); });
  }, 400);
  if (page === 'task') {
    var resized = later(function () { if (chartsNeedResize()) swapCharts(); }, 300);
    window.addEventListener('resize', resized);
    if (chartsNeedResize()) swapCharts();
  }
  var refreshList = later(function () {
    swap('task-rows', '/fragments/tasks' + location.search).then(refreshTimes).catch(function (e) { console.warn(e); });
  }, 400);
  var refreshSystem = later(function () {
    swap('system', '/fragments/system').catch(function (e) { console.warn(e); });
  }, 1000);

  // ---- live log ----
  var log = $('log');
  function appendLog(line) {
    if (!log) return;
    var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
    log.appendChild(document.createTextNode(line + '\n'));
    while (log.childNodes.length > 2000) log.removeChild(log.firstChild);
    if (stick) log.scrollTop = log.scrollHeight;
  }
  if (log) log.scrollTop = log.scrollHeight;

  // ---- actions ----
  function bindActions() {
    var buttons = document.querySelectorAll('button[data-action]');
    for (var i = 0; i < buttons.length; i++) {
      if (buttons[i].getAttribute('data-bound')) continue;
      buttons[i].setAttribute('data-bound', '1');
      buttons[i].addEventListener('click', function (ev) {
        var b = ev.currentTarget, action = b.getAttribute('data-action');
        if (action === 'cancel' && !confirm('Cancel this task? Its child process is stopped.')) return;
        b.disabled = true;
        send('POST', '/api/v1/tasks/' + b.getAttribute('data-uid') + '/' + action, {})
          .then(function (j) {
            if (j && j.request && j.message) flash(j.message);  // another server's task: a request
            if (page === 'task') refreshTask(); else refreshList();
          })
          .catch(function (e) { flash(e.message); })
          .then(function () { b.disabled = false; });
      });
    }
  }
  bindActions();

  // ---- add-task form ----
  var form = $('add-task');
  if (form) {
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var v = function (name) { var e = form.elements[name]; return e ? e.value.trim() : ''; };
      var n = function (name) { var x = v(name); return x === '' ? undefined : Number(x); };
      var argv = v('argv').split('\n').map(function (s) { return s.replace(/\r$/, ''); }).filter(function (s) { return s !== ''; });
      var env = {};
      v('env').split('\n').forEach(function (line) {
        var k = line.indexOf('=');
        if (k > 0) env[line.slice(0, k).trim()] = line.slice(k + 1);
      });
      var spec = {
        dsl: v('dsl'), shape_key: v('shape_key'), model: v('model'), mode: v('mode') || undefined,
        device: v('device') || undefined, priority: n('priority'),
        driver: { kind: v('kind'), argv: argv, cwd: v('cwd'), env: env },
        budgets: { rounds: n('rounds'), seconds: n('seconds'), max_restarts: n('max_restarts'),
                   park_seconds: n('park_seconds') },
        restart_on_exit: form.elements.restart_on_exit ? form.elements.restart_on_exit.checked : false
      };
      if (v('gpu')) spec.gpu = v('gpu');
      send('POST', '/api/v1/tasks', spec)
        .then(function (j) { location.href = '/tasks/' + encodeURIComponent(j.task.uid); })
        .catch(function (e) { flash(e.message); });
    });
  }

  // ---- the event stream ----
  if (!window.EventSource) return;
  var es = new EventSource('/api/v1/events' + (uid ? '?task=' + encodeURIComponent(uid) : ''));
  es.onopen = function () { if (live) { live.className = 'live on'; live.textContent = 'live'; } };
  es.onerror = function () { if (live) { live.className = 'live'; live.textContent = 'reconnecting'; } };
  function onChange(ev) {
    if (page === 'tasks') refreshList();
    else if (page === 'task') refreshTask();
    else if (page === 'system') refreshSystem();
  }
  es.addEventListener('round', onChange);
  es.addEventListener('state', onChange);
  es.addEventListener('task', onChange);
  es.addEventListener('reset', function () { location.reload(); });
  es.addEventListener('log', function (ev) {
    if (page !== 'task') return;
    try { appendLog(JSON.parse(ev.data).line); } catch (e) { /* a malformed event is skipped */ }
  });
})();
