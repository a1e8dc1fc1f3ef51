// msgbench live page (--web): shows each event of the run's stream as it comes. Figures are put
// in as text (textContent), never as markup; the charts are SVG drawn by msgbench itself, the
// report's own drawing code, and replace the previous second's. The page fetches nothing but
// its own stream and, at the end, offers the result files the server holds.
(function () {
  'use strict';

  var state = document.getElementById('state');
  var figures = document.getElementById('figures');
  var charts = document.getElementById('charts');
  var result = document.getElementById('result');

  function showTick(e) {
    if (e.class) {
      showClass(e);
      return;
    }
    document.getElementById('scenario').textContent = e.title;
    state.textContent = (e.finished ? 'run ended at ' : 'running: ') + e.t_s.toFixed(2) + ' s';
    fillFigures(figures, e);
    charts.innerHTML = e.charts.join('\n');
    if (e.agents) {
      showAgents(e.agents);
    }
  }

  // A workload's class: its figures and charts in a section of its own, made the first time
  // the class ticks and put in the classes' order; the sections of a single run are hidden.
  function showClass(e) {
    var list = document.getElementById('class-list');
    var section = null;
    var before = null;
    for (var i = 0; i < list.children.length; i++) {
      var c = list.children[i];
      if (c.getAttribute('data-class') === e.class) {
        section = c;
      } else if (before === null && Number(c.getAttribute('data-index')) > e.class_index) {
        before = c;
      }
    }
    if (section === null) {
      section = document.createElement('section');
      section.setAttribute('data-class', e.class);
      section.setAttribute('data-index', String(e.class_index));
      var h = document.createElement('h3');
      h.textContent = e.title;
      var wrap = document.createElement('div');
      wrap.className = 'table-wrap';
      var table = document.createElement('table');
      table.className = 'figures';
      table.appendChild(document.createElement('tbody'));
      wrap.appendChild(table);
      var drawn = document.createElement('div');
      drawn.className = 'charts';
      section.appendChild(h);
      section.appendChild(wrap);
      section.appendChild(drawn);
      list.insertBefore(section, before);
      document.getElementById('scenario').textContent = 'workload';
      document.getElementById('now').hidden = true;
      document.getElementById('over-time').hidden = true;
      document.getElementById('classes').hidden = false;
    }
    section.setAttribute('data-finished', String(e.finished));
    fillFigures(section.querySelector('tbody'), e);
    section.querySelector('div.charts').innerHTML = e.charts.join('\n');
    var done = list.querySelectorAll('section[data-finished="true"]').length;
    state.textContent = 'workload: ' + list.children.length + ' classes shown, ' + done + ' ended';
  }

  // One run's figures into `body`: a row each, with the tick they are from on `body`.
  function fillFigures(body, e) {
    body.setAttribute('data-t', String(e.t_s));
    if (e.span_s !== undefined) {
      body.setAttribute('data-span', String(e.span_s));
    }
    body.setAttribute('data-finished', String(e.finished));
    var rows = document.createDocumentFragment();
    e.figures.forEach(function (f) {
      var row = document.createElement('tr');
      row.setAttribute('data-figure', f.id);
      row.setAttribute('data-value', f.value === null ? '' : String(f.value));
      var th = document.createElement('th');
      th.setAttribute('scope', 'row');
      th.textContent = f.label;
      var td = document.createElement('td');
      td.textContent = f.text;
      row.appendChild(th);
      row.appendChild(td);
      rows.appendChild(row);
    });
    body.replaceChildren(rows);
  }

  // A run on agents: one row per agent, a missing one in red.
  function showAgents(agents) {
    var rows = document.createDocumentFragment();
    agents.forEach(function (a) {
      var row = document.createElement('tr');
      row.setAttribute('data-agent', a.agent);
      row.setAttribute('data-missing', String(a.missing));
      row.setAttribute('data-clock-offset-ns', String(a.clock_offset_ns));
      if (a.missing) {
        row.className = 'fail';
      }
      var th = document.createElement('th');
      th.setAttribute('scope', 'row');
      th.textContent = a.agent;
      row.appendChild(th);
      [a.state, a.share, a.clock, a.sent, a.received, a.p99,
        a.errors === null ? '—' : String(a.errors)].forEach(function (text) {
        var td = document.createElement('td');
        td.textContent = text;
        row.appendChild(td);
      });
      rows.appendChild(row);
    });
    document.getElementById('agent-rows').replaceChildren(rows);
    document.getElementById('agents').hidden = false;
  }

  // A capacity search: its knee chart so far, one point more with each probe.
  function showKnee(e) {
    var knee = document.getElementById('knee');
    knee.setAttribute('data-probes', String(e.probes));
    knee.innerHTML = e.chart || '';
    document.getElementById('search').hidden = false;
  }

  function showResult(e) {
    state.textContent = 'run ended: final result below';
    document.getElementById('result-text').textContent = e.text;
    var json = document.getElementById('download-json');
    json.setAttribute('href', e.json);
    var report = document.getElementById('download-report');
    if (e.report) {
      report.setAttribute('href', e.report);
      report.hidden = false;
    } else {
      report.hidden = true;
      document.getElementById('report-error').textContent =
        'The HTML report could not be drawn: ' + e.report_error;
    }
    result.setAttribute('data-run', e.run_id);
    result.hidden = false;
  }

  var source = new EventSource('/events');
  source.onmessage = function (m) {
    var e = JSON.parse(m.data);
    if (e.kind === 'tick') {
      showTick(e);
    } else if (e.kind === 'knee') {
      showKnee(e);
    } else if (e.kind === 'result') {
      showResult(e);
      // The run is over: nothing more will come, and the server will go.
      source.close();
    }
  };
  source.onerror = function () {
    if (result.hidden) {
      state.textContent = 'connection to msgbench lost; retrying';
    }
  };
})();
