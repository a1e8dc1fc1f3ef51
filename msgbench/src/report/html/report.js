// msgbench report: the page's only script. It toggles a chart's series from its legend (click,
// Enter or Space); everything else, values on hover included (SVG <title>), works without it.
// It reads nothing from the inputs: series are matched by comparing attribute values, never by
// building a selector or code out of them. It listens on the document, not on each legend, so
// that charts put in later (the live page redraws its charts every second) toggle too.
(function () {
  'use strict';

  function toggle(item) {
    var svg = item.closest('svg');
    if (!svg) {
      return;
    }
    var id = item.getAttribute('data-series');
    var hide = item.getAttribute('aria-pressed') !== 'false';
    item.setAttribute('aria-pressed', hide ? 'false' : 'true');
    var groups = svg.querySelectorAll('g.series');
    for (var i = 0; i < groups.length; i++) {
      if (groups[i].getAttribute('data-series') === id) {
        groups[i].classList.toggle('off', hide);
      }
    }
  }

  function legendItem(e) {
    var t = e.target;
    return t && t.closest ? t.closest('svg.chart .legend-item') : null;
  }

  document.addEventListener('click', function (e) {
    var item = legendItem(e);
    if (item) {
      toggle(item);
    }
  });
  document.addEventListener('keydown', function (e) {
    var item = legendItem(e);
    if (item && (e.key === 'Enter' || e.key === ' ')) {
      e.preventDefault();
      toggle(item);
    }
  });
})();
