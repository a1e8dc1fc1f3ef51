//! `msgbench report` end to end: real results from a real nats-server turned into one HTML
//! file, loaded in a real headless Chromium driven over WebDriver, and checked against the JSON
//! it came from: no console errors, each chart's data attributes equal to the inputs' numbers,
//! the summary showing them, nothing drawn outside its chart, the legend toggling series, a
//! phone-width page that does not scroll sideways. A screenshot, a phone screenshot, the PDF
//! print and the HTML are kept in `target/artifacts/` for people to look at.
//!
//! The latency-against-throughput curve is checked the same way, on a page of its own
//! (`report-knee.*` in the artifacts): each point's attributes equal its stage's or probed
//! rate's numbers, each SLO line and the sustainable rate are drawn where their values are on
//! the chart's scales, and the capacity search's tables hold its numbers. Its inputs are a
//! real stepped latency run and a real capacity search.
//!
//! Chromium and chromedriver are found as `browser.rs` says: `CHROME` and `CHROMEDRIVER`
//! when set, else where distributions install them, else on PATH (`scripts/install-browser.sh`
//! installs Debian's packages). Without one of them the browser part is skipped with a line
//! naming what is missing and how to install it (left in `target/test-skips/` for `make unit` to
//! print), unless `MSGBENCH_REQUIRE_BROWSER=1` (CI), which makes its absence a failure.
//!
//! Also here: bad input gives one clear error line and a non-zero exit.

use std::path::{Path, PathBuf};

use crate::support::{self, run, schema_errors_in, scratch_dir, stderr, TestServer};
use crate::webdriver::{browser_available, Browser};
use base64::Engine as _;
use serde_json::{json, Value};

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Runs msgbench, which must succeed, writing its result to `out`.
fn produce(args: &[&str], out: &Path) -> Value {
    let mut all = args.to_vec();
    all.extend(["--json", out.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    read_json(out)
}

// ---------------------------------------------------------------------------------------------
// What the page holds, read in the browser.

/// Every chart with its series, points and bars; the summary cells; the embedded inputs; and
/// any text drawn outside its chart. Attribute values go back as raw numbers so they can be
/// compared exactly with the input files.
const COLLECT: &str = r#"
const num = (s) => (s === null || s === undefined || s === '') ? null : Number(s);
const charts = [...document.querySelectorAll('svg.chart')].map((svg) => {
  const vb = svg.viewBox.baseVal;
  const outside = [...svg.querySelectorAll('text')].filter((t) => {
    const b = t.getBBox();
    if (b.width === 0) return false;
    // Rotated labels: their box in the chart's coordinates.
    const m = t.getCTM(), s = svg.getCTM();
    const k = s.inverse().multiply(m);
    const pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]
      .map(([x, y]) => new DOMPoint(x, y).matrixTransform(k));
    return pts.some((p) => p.x < -0.5 || p.y < -0.5 || p.x > vb.width + 0.5 || p.y > vb.height + 0.5);
  }).map((t) => t.textContent);
  return {
    chart: svg.dataset.chart,
    input: svg.dataset.input || null,
    outside,
    // Markers whose dot lies outside the drawing.
    outsideMarks: [...svg.querySelectorAll('circle')].filter((c) => {
      const x = Number(c.getAttribute('cx')), y = Number(c.getAttribute('cy'));
      return x < 0 || y < 0 || x > vb.width || y > vb.height;
    }).length,
    series: [...svg.querySelectorAll('path.line[data-series]')].map((p) => ({
      id: p.dataset.series,
      points: Number(p.dataset.points),
      values: p.dataset.values === '' ? [] : p.dataset.values.split(' ').map(Number),
      markers: [...p.parentNode.querySelectorAll('circle[data-value]')].map((c) => Number(c.dataset.value)),
      // Each marker's data attributes (as strings) and where it is drawn.
      marks: [...p.parentNode.querySelectorAll('circle[data-value]')].map((c) => ({
        ...c.dataset, cx: Number(c.getAttribute('cx')), cy: Number(c.getAttribute('cy')),
        hollow: c.classList.contains('hollow'),
      })),
    })),
    refs: [...svg.querySelectorAll('g.ref')].map((g) => ({
      label: g.dataset.ref, value: Number(g.dataset.value), limit: g.classList.contains('limit'),
      y: Number(g.querySelector('line').getAttribute('y1')),
    })),
    xrefs: [...svg.querySelectorAll('g.xref')].map((g) => {
      const band = g.querySelector('rect.band');
      return {
        label: g.dataset.ref, value: Number(g.dataset.value), lo: num(g.dataset.lo),
        hi: num(g.dataset.hi), x: Number(g.querySelector('line').getAttribute('x1')),
        observed: g.classList.contains('observed'),
        band: band ? [Number(band.getAttribute('x')),
          Number(band.getAttribute('x')) + Number(band.getAttribute('width'))] : null,
      };
    }),
    bars: [...svg.querySelectorAll('rect.bar[data-value]')].map((r) => ({
      series: r.dataset.series, category: r.dataset.category, value: Number(r.dataset.value),
      min: num(r.dataset.min), max: num(r.dataset.max),
    })),
  };
});
const cells = [...document.querySelectorAll('table.summary td[data-metric]')].map((td) => ({
  input: td.dataset.input, metric: td.dataset.metric, value: num(td.dataset.value),
  min: num(td.dataset.min), max: num(td.dataset.max), n: num(td.dataset.n),
  text: td.textContent,
}));
const capacity = [...document.querySelectorAll('div.capacity')].map((d) => ({
  input: d.dataset.input,
  findings: Object.fromEntries([...d.querySelectorAll('table.capacity td[data-metric]')]
    .map((td) => [td.dataset.metric, {...td.dataset, text: td.textContent}])),
  probes: [...d.querySelectorAll('table.probes tbody tr')].map((tr) => ({
    ...tr.dataset,
    text: tr.textContent,
    cells: Object.fromEntries([...tr.querySelectorAll('td[data-metric]')]
      .map((td) => [td.dataset.metric, num(td.dataset.value)])),
  })),
}));
const inputs = [...document.querySelectorAll('script.input-data')].map((s) => ({
  input: s.dataset.input, doc: JSON.parse(s.textContent),
}));
return {charts, cells, capacity, inputs, title: document.title};
"#;

/// Equal as JSON, numbers compared by value: JavaScript has no integer/float distinction, so
/// `2.0` in a file comes back from the browser as `2`.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn chart<'a>(page: &'a Value, kind: &str, input: Option<&str>) -> &'a Value {
    page["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["chart"] == kind && c["input"].as_str() == input)
        .unwrap_or_else(|| panic!("no {kind} chart for {input:?}"))
}

fn series<'a>(chart: &'a Value, id: &str) -> &'a Value {
    chart["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no series {id} in {}", chart["chart"]))
}

fn values(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(f).collect()
}

fn cell<'a>(page: &'a Value, input: &str, metric: &str) -> &'a Value {
    page["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["input"] == input && c["metric"] == metric)
        .unwrap_or_else(|| panic!("no summary cell {metric} for {input}"))
}

/// A shown duration (`1.17 ms`, `54.3 µs`) in nanoseconds.
fn shown_ns(text: &str) -> f64 {
    let text = text.replace('\u{a0}', " ");
    let mut parts = text.split_whitespace();
    let n: f64 = parts.next().unwrap().parse().unwrap();
    let scale = match parts.next().unwrap() {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => panic!("unit {u} in {text:?}"),
    };
    n * scale
}

/// Each client's bars equal `clients[].msgs_per_sec`, one per client, in order.
fn check_client_bars(page: &Value, label: &str, doc: &Value) {
    let bars = chart(page, "clients", Some(label))["bars"]
        .as_array()
        .unwrap();
    let clients = doc["clients"].as_array().unwrap();
    assert_eq!(bars.len(), clients.len(), "{label}: one bar per client");
    for (b, c) in bars.iter().zip(clients) {
        // Named by what the client's side counts ("publishes 0", "deliveries 0").
        let role = c["role"].as_str().unwrap();
        let counts = &doc["by_role"][role]["counts"];
        let name = format!("{} {}", counts.as_str().unwrap(), c["id"]);
        assert_eq!(b["category"], name.as_str(), "{label}");
        assert_eq!(b["series"], *counts, "{label}");
        assert_eq!(f(&b["value"]), f(&c["msgs_per_sec"]), "{label} {name}");
    }
}

/// Per-client throughput steps equal msgs[i] / span_s of each tick; latency steps equal each
/// tick's P50/P99/max, with ticks without latency left out.
fn check_timeline(page: &Value, label: &str, doc: &Value) {
    let t = &doc["timeline"];
    let ticks = t["ticks"].as_array().unwrap();
    assert!(!ticks.is_empty(), "{label}: the result has a timeline");
    let thr = chart(page, "throughput-timeline", Some(label));
    for (i, c) in t["clients"].as_array().unwrap().iter().enumerate() {
        // Each client's line is named by what its side counts ("publishes 0").
        let role = c["role"].as_str().unwrap();
        let counts = doc["by_role"][role]["counts"].as_str().unwrap();
        let id = format!("{counts} {}", c["id"]);
        let s = series(thr, &id);
        let want: Vec<f64> = ticks
            .iter()
            .map(|k| f(&k["msgs"][i]) / f(&k["span_s"]))
            .collect();
        assert_eq!(values(&s["values"]), want, "{label} {id}");
        assert_eq!(values(&s["markers"]), want, "{label} {id} markers");
        assert_eq!(s["points"], ticks.len(), "{label} {id}");
    }
    let with_latency: Vec<&Value> = ticks.iter().filter(|k| !k["latency"].is_null()).collect();
    if with_latency.is_empty() {
        return;
    }
    let lat = chart(page, "latency-timeline", Some(label));
    for (id, key) in [("P50", "p50_ns"), ("P99", "p99_ns"), ("max", "max_ns")] {
        let want: Vec<f64> = with_latency.iter().map(|k| f(&k["latency"][key])).collect();
        assert_eq!(values(&series(lat, id)["values"]), want, "{label} {id}");
    }
}

#[test]
fn report_draws_real_results_in_a_real_browser() {
    let dir = scratch_dir("report");
    let server = TestServer::start();
    let url = server.url.as_str();
    let (lat_path, ps_path, cal_path) = (
        dir.join("lat.json"),
        dir.join("ps.json"),
        dir.join("cal.json"),
    );
    let lat = produce(
        &[
            "latency",
            "--server",
            url,
            "--rate",
            "1000",
            "--duration",
            "2s",
            "--threshold",
            "p99<10s",
            "--threshold",
            "lost==0",
            "--no-progress",
        ],
        &lat_path,
    );
    // Repeated, so the report's medians, ranges and whiskers are exercised on real data.
    let ps = produce(
        &[
            "pubsub",
            "--server",
            url,
            "--msgs",
            "20000",
            "--pubs",
            "2",
            "--subs",
            "2",
            "--runs",
            "3",
            "--no-progress",
        ],
        &ps_path,
    );
    produce(
        &["calibrate", "--server", url, "--samples", "500"],
        &cal_path,
    );
    drop(server);

    let html_path = dir.join("out.html");
    let out = run(&[
        "report",
        lat_path.to_str().unwrap(),
        ps_path.to_str().unwrap(),
        cal_path.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "report: wrote {} (2 results, 1 calibration)\n",
            html_path.display()
        )
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    std::fs::write(artifacts().join("report.html"), &html).unwrap();
    // Self-contained: nothing is fetched when the page is viewed.
    for needle in ["src=\"http", "href=\"http", "src=\"//", "@import", "url("] {
        assert!(!html.contains(needle), "the page refers out: {needle}");
    }

    let Some(programs) = browser_available("report browser test", "report-browser") else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let browser = Browser::showing(&dir, &programs, &html_path);
    let page = browser.execute(COLLECT);

    // The embedded copies of the inputs read back as the files themselves.
    let inputs = page["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    assert!(
        same(&inputs[0]["doc"], &lat),
        "the embedded lat.json differs"
    );
    assert!(same(&inputs[1]["doc"], &ps), "the embedded ps.json differs");

    // Percentiles: a corrected and an uncorrected curve for the latency run, ending at its
    // maximum (HdrHistogram reports a bucket's highest equivalent value for both).
    let pct = chart(&page, "percentiles", None);
    for (id, section) in [
        ("lat.json corrected", "latency"),
        ("lat.json uncorrected", "latency_uncorrected"),
    ] {
        let s = series(pct, id);
        let vs = values(&s["values"]);
        assert!(vs.len() > 10, "{id}: {} points", vs.len());
        assert_eq!(s["points"], vs.len());
        assert_eq!(values(&s["markers"]), vs, "{id}: a marker per point");
        assert!(vs.windows(2).all(|w| w[0] <= w[1]), "{id} rises: {vs:?}");
        let top = vs.iter().copied().fold(0.0, f64::max);
        let max = f(&lat[section]["max_ns"]);
        assert!(
            (top - max).abs() <= max * 1e-3,
            "{id}: top {top} vs max_ns {max}"
        );
        let min = f(&lat[section]["min_ns"]);
        assert!(
            vs[0] >= min * 0.999,
            "{id}: starts at {} below min {min}",
            vs[0]
        );
    }
    assert_eq!(
        pct["series"].as_array().unwrap().len(),
        2,
        "pubsub measures no latency, so it has no curve"
    );

    check_client_bars(&page, "lat.json", &lat);
    check_client_bars(&page, "ps.json", &ps);
    check_timeline(&page, "lat.json", &lat);
    check_timeline(&page, "ps.json", &ps);

    // Summary: the latency run's percentiles, shown in readable units that match them.
    for (metric, key) in [("p50", "50"), ("p99", "99"), ("p99.9", "99.9")] {
        let c = cell(&page, "lat.json", metric);
        let want = f(&lat["latency"]["percentiles_ns"][key]);
        assert_eq!(f(&c["value"]), want, "{metric}");
        let shown = shown_ns(c["text"].as_str().unwrap());
        assert!(
            (shown - want).abs() <= want * 0.006,
            "{metric}: shown {shown}, is {want}"
        );
    }
    assert_eq!(
        f(&cell(&page, "lat.json", "max")["value"]),
        f(&lat["latency"]["max_ns"])
    );
    // The repeated run: the median, with the range and the count of runs.
    let runs = &ps["runs"]["metrics"]["msgs_per_sec"];
    let c = cell(&page, "ps.json", "msgs_per_sec");
    assert_eq!(f(&c["value"]), f(&runs["median"]));
    assert_eq!(
        (f(&c["min"]), f(&c["max"]), f(&c["n"])),
        (f(&runs["min"]), f(&runs["max"]), 3.0)
    );
    assert!(
        c["text"].as_str().unwrap().contains("n\u{a0}=\u{a0}3"),
        "{c}"
    );
    assert_eq!(f(&cell(&page, "ps.json", "lost")["value"]), 0.0);
    let gates = cell(&page, "lat.json", "thresholds");
    assert_eq!(f(&gates["value"]), 0.0, "no threshold failed: {gates}");
    assert!(
        gates["text"].as_str().unwrap().contains("all 2 pass"),
        "{gates}"
    );

    // Side by side: one throughput bar per input, the repeated run's with its whisker.
    let cmp = chart(&page, "compare-throughput", None)["bars"]
        .as_array()
        .unwrap();
    assert_eq!(cmp.len(), 2, "one bar per input: {cmp:?}");
    assert_eq!(
        (cmp[0]["category"].as_str(), f(&cmp[0]["value"])),
        (Some("lat.json"), f(&lat["throughput"]["msgs_per_sec"]))
    );
    assert!(cmp[0]["min"].is_null());
    assert_eq!(
        (f(&cmp[1]["value"]), f(&cmp[1]["min"]), f(&cmp[1]["max"])),
        (f(&runs["median"]), f(&runs["min"]), f(&runs["max"]))
    );
    let cmp_lat = chart(&page, "compare-latency", None)["bars"]
        .as_array()
        .unwrap();
    let got: Vec<(&str, &str, f64)> = cmp_lat
        .iter()
        .map(|b| {
            (
                b["series"].as_str().unwrap(),
                b["category"].as_str().unwrap(),
                f(&b["value"]),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "P50",
                "lat.json",
                f(&lat["latency"]["percentiles_ns"]["50"])
            ),
            (
                "P99",
                "lat.json",
                f(&lat["latency"]["percentiles_ns"]["99"])
            ),
        ]
    );

    // Nothing drawn outside its chart (a clipped label is an unreadable one).
    for c in page["charts"].as_array().unwrap() {
        assert_eq!(
            c["outside"],
            json!([]),
            "text outside {} {}",
            c["chart"],
            c["input"]
        );
        assert_eq!(
            c["outsideMarks"], 0,
            "markers outside {} {}",
            c["chart"], c["input"]
        );
    }

    // The legend hides and shows its series.
    let toggled = browser.execute(
        r#"
        const svg = document.querySelector('svg[data-chart="percentiles"]');
        const item = svg.querySelector('.legend-item');
        const group = [...svg.querySelectorAll('g.series')]
          .find((g) => g.dataset.series === item.dataset.series);
        item.dispatchEvent(new MouseEvent('click', {bubbles: true}));
        const hidden = getComputedStyle(group).display === 'none';
        item.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
        return [hidden, getComputedStyle(group).display !== 'none', item.getAttribute('aria-pressed')];
    "#,
    );
    assert_eq!(toggled, json!([true, true, "true"]));

    // The whole page as one picture for people, at desktop width.
    let height = f(&browser.execute("return document.documentElement.scrollHeight;"));
    browser.resize(1280, (height as u32 + 120).min(16_000));
    browser.screenshot(&artifacts().join("report.png"));

    // A phone: the page itself must not scroll sideways (wide tables scroll in their box).
    browser.resize(390, 844);
    let widths = browser.execute(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
    );
    assert!(
        f(&widths[0]) <= f(&widths[1]),
        "the page scrolls sideways on a phone: {widths}"
    );
    let height = f(&browser.execute("return document.documentElement.scrollHeight;"));
    browser.resize(390, (height as u32 + 120).min(16_000));
    browser.screenshot(&artifacts().join("report-phone.png"));

    // Printing works and gives a PDF.
    let pdf = browser.cmd("POST", "/print", Some(json!({"background": false})));
    let pdf = base64::engine::general_purpose::STANDARD
        .decode(pdf.as_str().unwrap())
        .unwrap();
    assert!(pdf.starts_with(b"%PDF"), "not a PDF");
    std::fs::write(artifacts().join("report.pdf"), pdf).unwrap();

    // Hostile text in an input stays text: in the embedded JSON, attributes, tables and
    // charts alike. Nothing runs, nothing loads, and the strings read back unchanged.
    let evil =
        r#"</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'"&amp;"#;
    let mut doc = lat.clone();
    doc["params"]["subject"] = evil.into();
    doc["scenario"] = evil.into();
    doc["clients"][0]["role"] = evil.into();
    doc["errors"] = json!({evil: 1});
    let evil_path = dir.join("evil<b>\"'.json");
    std::fs::write(&evil_path, doc.to_string()).unwrap();
    let evil_html = dir.join("evil.html");
    let out = run(&[
        "report",
        evil_path.to_str().unwrap(),
        "-o",
        evil_html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    browser.cmd(
        "POST",
        "/url",
        Some(json!({"url": format!("file://{}", evil_html.display()).replace('"', "%22")})),
    );
    let seen = browser.execute(
        r#"
        return {
          pwned: window.pwned === undefined ? null : window.pwned,
          scripts: document.querySelectorAll('script').length,
          images: document.querySelectorAll('img').length,
          embedded: JSON.parse(document.querySelector('script.input-data').textContent),
          label: document.querySelector('script.input-data').dataset.input,
          bars: [...document.querySelectorAll('svg[data-chart="clients"] rect.bar')].map((r) => r.dataset.series),
          cells: [...document.querySelectorAll('td')].filter((td) => td.textContent.includes('window.pwned=1')).length,
        };
    "#,
    );
    assert_eq!(seen["pwned"], Value::Null, "input ran as script: {seen}");
    assert_eq!(
        seen["scripts"], 2,
        "only the embedded data and the page's own script"
    );
    assert_eq!(seen["images"], 0);
    assert!(same(&seen["embedded"], &doc), "the embedded copy differs");
    assert_eq!(seen["label"], "evil<b>\"'.json");
    assert_eq!(seen["bars"][0], evil);
    assert!(
        f(&seen["cells"]) >= 2.0,
        "the text is shown as text: {seen}"
    );

    let console = browser.console();
    for e in &console {
        println!("console: {} {}", e["level"], e["message"]);
    }
    let severe: Vec<&Value> = console.iter().filter(|e| e["level"] == "SEVERE").collect();
    assert!(severe.is_empty(), "console errors: {severe:?}");
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Latency against throughput ("the knee").

/// Median as msgbench reports one: the middle value, or the mean of the middle two (each halved
/// first, as msgbench does, so the sums agree to the last bit).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        xs[m - 1] / 2.0 + xs[m] / 2.0
    }
}

/// A number a marker or cell carries as text.
fn attr(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a number attribute: {v}"))
}

/// Where the chart puts values: x linear in msgs/s, y linear in log10(ns). Fitted from the
/// markers at the extremes and checked against every other marker, so that a line drawn at a
/// value can be checked to be where that value is. Coordinates are written to 0.1, so a fit
/// and its use are good to a fraction of a pixel.
struct Placement {
    x: (f64, f64),
    y: (f64, f64),
}

const PX: f64 = 0.6;

impl Placement {
    fn of(chart: &Value) -> Placement {
        // (msgs/s, cx) and (log10 ns, cy) of every marker.
        let (xs, ys): (Vec<Pair>, Vec<Pair>) = chart["series"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["marks"].as_array().unwrap().iter())
            .map(|m| {
                (
                    (attr(&m["msgsPerSec"]), f(&m["cx"])),
                    (attr(&m["value"]).log10(), f(&m["cy"])),
                )
            })
            .unzip();
        let p = Placement {
            x: fit(&xs),
            y: fit(&ys),
        };
        assert!(
            p.x.1 > 0.0 && p.y.1 < 0.0,
            "more is right and up: {:?} {:?}",
            p.x,
            p.y
        );
        for (x, y) in xs.iter().zip(&ys) {
            assert!(
                (p.px(x.0) - x.1).abs() <= PX,
                "a marker off the x scale: {x:?}"
            );
            assert!(
                (p.py(10f64.powf(y.0)) - y.1).abs() <= PX,
                "a marker off the y scale: {y:?}"
            );
        }
        p
    }

    fn px(&self, msgs_per_sec: f64) -> f64 {
        self.x.0 + self.x.1 * msgs_per_sec
    }

    fn py(&self, ns: f64) -> f64 {
        self.y.0 + self.y.1 * ns.log10()
    }
}

/// A value and where it is drawn.
type Pair = (f64, f64);

/// (offset, slope) of the line through the pairs (value, position) at the lowest and the
/// highest value.
fn fit(pairs: &[Pair]) -> (f64, f64) {
    let lo = pairs.iter().min_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
    let hi = pairs.iter().max_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
    let slope = (hi.1 - lo.1) / (hi.0 - lo.0);
    (lo.1 - slope * lo.0, slope)
}

/// The SLO lines of a knee chart: exactly `want` (label, ns), each drawn at its value.
fn check_slo_lines(chart: &Value, at: &Placement, want: &[(&str, f64)]) {
    let refs = chart["refs"].as_array().unwrap();
    let got: Vec<(&str, f64)> = refs
        .iter()
        .map(|r| (r["label"].as_str().unwrap(), f(&r["value"])))
        .collect();
    assert_eq!(got, want, "{}", chart["input"]);
    for r in refs {
        assert_eq!(r["limit"], true, "an SLO is drawn as a limit: {r}");
        assert!(
            (at.py(f(&r["value"])) - f(&r["y"])).abs() <= PX,
            "the SLO line is not at its value: {r}"
        );
    }
}

/// Each stage with latency is a point of P50, P99 and P99.9, in order of achieved throughput,
/// carrying its stage's numbers; the run's latency thresholds are the SLO lines.
fn check_schedule_knee(page: &Value, label: &str, doc: &Value) {
    let c = chart(page, "latency-throughput", Some(label));
    let mut stages: Vec<&Value> = doc["schedule"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["latency"].is_null())
        .collect();
    stages.sort_by(|a, b| f(&a["msgs_per_sec"]).total_cmp(&f(&b["msgs_per_sec"])));
    assert_eq!(stages.len(), 5, "{label}");
    assert_eq!(c["series"].as_array().unwrap().len(), 3);
    for (id, key) in [("P50", "50"), ("P99", "99"), ("P99.9", "99.9")] {
        let s = series(c, id);
        let want: Vec<f64> = stages
            .iter()
            .map(|st| f(&st["latency"]["percentiles_ns"][key]))
            .collect();
        assert_eq!(values(&s["values"]), want, "{label} {id}");
        assert_eq!(values(&s["markers"]), want, "{label} {id} markers");
        for (m, st) in s["marks"].as_array().unwrap().iter().zip(&stages) {
            assert_eq!(
                attr(&m["msgsPerSec"]),
                f(&st["msgs_per_sec"]),
                "{label} {id}"
            );
            assert_eq!(
                attr(&m["targetRate"]),
                f(&st["target_rate"]),
                "{label} {id}"
            );
            assert_eq!(attr(&m["stage"]), f(&st["index"]), "{label} {id}");
            assert_eq!(m["hollow"], false, "a stage is not judged on its own");
        }
    }
    let at = Placement::of(c);
    check_slo_lines(c, &at, &[("SLO p99<2s", 2e9)]);
    assert!(c["xrefs"].as_array().unwrap().is_empty());
}

/// A run's last try at `rate`, one per run in the order of their first tries: the search runs
/// a void run (msgbench fell behind its schedule) again, and the run counts by its last try.
fn last_tries(probes: &[Value], rate: f64) -> Vec<&Value> {
    let mut last: Vec<&Value> = Vec::new();
    for p in probes.iter().filter(|p| f(&p["rate"]) == rate) {
        match last.iter_mut().find(|q| q["run"] == p["run"]) {
            Some(q) => *q = p,
            None => last.push(p),
        }
    }
    last
}

/// A run that measured the tool: late, and failing nothing its lateness cannot explain.
fn void(p: &Value) -> bool {
    p["void"] == true
}

/// One point per probed rate with latency: the medians over its runs (each by its last try)
/// that measured the system, hollow where one of them did not hold; void runs (the tool fell
/// behind) are left out, and a rate with only void runs has no point; the SLO line; the
/// sustainable rate in its interval.
fn check_capacity_knee(page: &Value, label: &str, doc: &Value) {
    let c = chart(page, "latency-throughput", Some(label));
    let probes = doc["probes"].as_array().unwrap();
    let mut rates: Vec<f64> = probes.iter().map(|p| f(&p["rate"])).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    assert_eq!(rates.len(), 7);
    let drawn: Vec<f64> = rates
        .iter()
        .copied()
        .filter(|r| last_tries(probes, *r).iter().any(|p| !void(p)))
        .collect();
    for (i, (id, key)) in [("P50", "p50_ns"), ("P99", "p99_ns"), ("P99.9", "p999_ns")]
        .into_iter()
        .enumerate()
    {
        let s = series(c, id);
        let marks = s["marks"].as_array().unwrap();
        assert_eq!(marks.len(), drawn.len(), "{label} {id}: a point per rate");
        for (m, rate) in marks.iter().zip(&drawn) {
            let at = last_tries(probes, *rate);
            let judged: Vec<&&Value> = at.iter().filter(|p| !void(p)).collect();
            let measured: Vec<&&&Value> =
                judged.iter().filter(|p| !p["latency"].is_null()).collect();
            let lat: Vec<f64> = measured.iter().map(|p| f(&p["latency"][key])).collect();
            let failed = judged.iter().filter(|p| p["pass"] == false).count();
            let want = median(lat.clone());
            assert_eq!(attr(&m["value"]), want, "{label} {id} at {rate}");
            assert_eq!(
                attr(&m["msgsPerSec"]),
                median(measured.iter().map(|p| f(&p["msgs_per_sec"])).collect()),
                "{label} {id} at {rate}"
            );
            assert_eq!(attr(&m["targetRate"]), *rate);
            assert_eq!(attr(&m["runs"]), at.len() as f64);
            assert_eq!(attr(&m["void"]), (at.len() - judged.len()) as f64);
            assert_eq!(attr(&m["measured"]), measured.len() as f64);
            assert_eq!(attr(&m["failed"]), failed as f64, "{label} at {rate}");
            assert_eq!(
                (attr(&m["min"]), attr(&m["max"])),
                (
                    lat.iter().copied().fold(f64::INFINITY, f64::min),
                    lat.iter().copied().fold(0.0, f64::max)
                )
            );
            assert_eq!(
                m["hollow"],
                failed > 0,
                "{label} {id} at {rate}: runs that did not hold"
            );
            if i == 0 {
                // The rates above the edge failed, and no other.
                assert_eq!(failed > 0, *rate > 1500.0, "{rate}");
            }
        }
    }
    let at = Placement::of(c);
    check_slo_lines(c, &at, &[("SLO p99<2s", 2e9)]);
    let x = &c["xrefs"][0];
    assert_eq!(c["xrefs"].as_array().unwrap().len(), 1);
    let ci = &doc["confidence"];
    assert_eq!(
        (f(&x["value"]), f(&x["lo"]), f(&x["hi"])),
        (f(&doc["sustainable_rate"]), f(&ci["low"]), f(&ci["high"]))
    );
    assert!((at.px(f(&x["value"])) - f(&x["x"])).abs() <= PX, "{x}");
    let band = values(&x["band"]);
    assert!((at.px(f(&ci["low"])) - band[0]).abs() <= PX, "{x}");
    assert!((at.px(f(&ci["high"])) - band[1]).abs() <= PX, "{x}");
    assert!(
        x["label"]
            .as_str()
            .unwrap()
            .starts_with("sustainable 1.50k msgs/s (95 %"),
        "{x}"
    );
}

/// The search's findings and one probes row per run, by rate and then run.
fn check_capacity_tables(page: &Value, label: &str, doc: &Value) {
    let sec = page["capacity"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["input"] == label)
        .unwrap_or_else(|| panic!("no capacity section for {label}"));
    let found = &sec["findings"];
    assert_eq!(
        attr(&found["sustainable_rate"]["value"]),
        f(&doc["sustainable_rate"])
    );
    let ci = &found["confidence"];
    assert_eq!(
        (attr(&ci["level"]), attr(&ci["lo"]), attr(&ci["hi"])),
        (
            f(&doc["confidence"]["level"]),
            f(&doc["confidence"]["low"]),
            f(&doc["confidence"]["high"])
        )
    );
    assert_eq!(found["limiter"]["kind"], doc["limiter"]["kind"]);
    let detail = doc["limiter"]["detail"].as_str().unwrap();
    assert!(
        found["limiter"]["text"].as_str().unwrap().contains(detail),
        "{found}"
    );
    let mut want: Vec<&Value> = doc["probes"].as_array().unwrap().iter().collect();
    want.sort_by(|a, b| {
        f(&a["rate"])
            .total_cmp(&f(&b["rate"]))
            .then(f(&a["run"]).total_cmp(&f(&b["run"])))
    });
    let rows = sec["probes"].as_array().unwrap();
    assert_eq!(rows.len(), want.len());
    for (row, p) in rows.iter().zip(want) {
        assert_eq!(
            (attr(&row["rate"]), attr(&row["run"]), row["pass"].as_str()),
            (
                f(&p["rate"]),
                f(&p["run"]),
                Some(if p["pass"] == true { "true" } else { "false" })
            )
        );
        // A run in which the tool fell behind reads as void, never as a failure.
        let text = row["text"].as_str().unwrap();
        assert_eq!(
            row["void"].as_str(),
            Some(if void(p) { "true" } else { "false" })
        );
        if void(p) {
            assert!(text.contains("⊘ void") && !text.contains('✗'), "{row}");
        } else {
            assert!(!text.contains("void"), "{row}");
        }
        let cells = &row["cells"];
        assert_eq!(f(&cells["msgs_per_sec"]), f(&p["msgs_per_sec"]));
        assert_eq!(f(&cells["shortfall_pct"]), f(&p["shortfall_pct"]));
        for (metric, key) in [("p50", "p50_ns"), ("p99", "p99_ns"), ("p99.9", "p999_ns")] {
            match p["latency"].is_null() {
                true => assert!(cells[metric].is_null(), "{row}"),
                false => assert_eq!(f(&cells[metric]), f(&p["latency"][key]), "{row}"),
            }
        }
    }
}

#[test]
fn report_draws_latency_against_throughput_in_a_real_browser() {
    let dir = scratch_dir("report-knee");
    // Real documents: a stepped latency run (five stages) and a capacity search whose edge is
    // known exactly (its judged second sends RATE messages, so `sent<=1500` holds up to 1,500/s
    // and fails above): rates 500, 1,000, 2,000, then 1,500, 1,750, 1,625 and 1,563.
    let server = TestServer::start();
    let (sched_path, cap_path) = (dir.join("sched.json"), dir.join("cap.json"));
    let sched = produce(
        &[
            "latency",
            "--server",
            &server.url,
            "--rate-schedule",
            "step:500:500:700ms:2500",
            "--warmup",
            "100ms",
            // Loose, so that a busy machine cannot fail the run: the test is of the drawing.
            "--threshold",
            "p99<2s",
            "--no-progress",
        ],
        &sched_path,
    );
    let out = run(&[
        "capacity",
        "latency",
        "--server",
        &server.url,
        // The latency SLO is loose on purpose: the edge is `sent<=1500`'s, which no busy
        // machine moves, and a P99 of 2 s at 1,500/s would take a machine frozen for seconds.
        "--slo",
        "p99<2s",
        "--slo",
        "sent<=1500",
        "--probe-duration",
        "1s",
        "--probe-warmup",
        "100ms",
        "--probe-runs",
        "2",
        "--start-rate",
        "500",
        "--json",
        cap_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cap = read_json(&cap_path);
    drop(server);
    assert_eq!(
        schema_errors_in("capacity-v1.schema.json", &cap),
        Vec::<String>::new()
    );
    let html_path = dir.join("knee.html");
    let out = run(&[
        "report",
        sched_path.to_str().unwrap(),
        cap_path.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "report: wrote {} (1 result, 1 capacity search)\n",
            html_path.display()
        )
    );
    std::fs::write(
        artifacts().join("report-knee.html"),
        std::fs::read(&html_path).unwrap(),
    )
    .unwrap();

    let Some(programs) = browser_available("report browser test", "report-browser") else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let browser = Browser::showing(&dir, &programs, &html_path);
    let page = browser.execute(COLLECT);

    let inputs = page["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    assert!(
        same(&inputs[0]["doc"], &sched),
        "the embedded sched.json differs"
    );
    assert!(
        same(&inputs[1]["doc"], &cap),
        "the embedded cap.json differs"
    );

    check_schedule_knee(&page, "sched.json", &sched);
    check_capacity_knee(&page, "cap.json", &cap);
    check_capacity_tables(&page, "cap.json", &cap);

    for c in page["charts"].as_array().unwrap() {
        assert_eq!(
            c["outside"],
            json!([]),
            "text outside {} {}",
            c["chart"],
            c["input"]
        );
        assert_eq!(
            c["outsideMarks"], 0,
            "markers outside {} {}",
            c["chart"], c["input"]
        );
    }

    // A 1,400 px window shows every cell of the capacity tables whole: no table scrolls
    // sideways in its box, no cell lies past the box's edge, no cell's text past its own.
    browser.resize(1400, 900);
    let cut = browser.execute(
        r#"
        const cut = [];
        for (const wrap of document.querySelectorAll('div.capacity .table-wrap')) {
          const edge = wrap.getBoundingClientRect().right;
          if (wrap.scrollWidth > wrap.clientWidth) {
            cut.push(`a table ${wrap.scrollWidth} px wide in a box of ${wrap.clientWidth}`);
          }
          for (const c of wrap.querySelectorAll('th, td')) {
            const r = c.getBoundingClientRect();
            if (r.right > edge + 0.5 || c.scrollWidth > c.clientWidth + 1) {
              cut.push(`${c.tagName} "${c.textContent}" ends at ${r.right} of ${edge}`);
            }
          }
        }
        return [document.documentElement.clientWidth, cut];
    "#,
    );
    assert!(
        f(&cut[0]) > 1300.0,
        "the window is not 1,400 px wide: {cut}"
    );
    assert_eq!(cut[1], json!([]), "capacity cells cut off at 1,400 px");

    let height = f(&browser.execute("return document.documentElement.scrollHeight;"));
    browser.resize(1280, (height as u32 + 120).min(16_000));
    browser.screenshot(&artifacts().join("report-knee.png"));
    // A phone: the probes table scrolls in its box, not the page.
    browser.resize(390, 844);
    let widths = browser.execute(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
    );
    assert!(
        f(&widths[0]) <= f(&widths[1]),
        "the page scrolls sideways on a phone: {widths}"
    );
    let height = f(&browser.execute("return document.documentElement.scrollHeight;"));
    browser.resize(390, (height as u32 + 120).min(16_000));
    browser.screenshot(&artifacts().join("report-knee-phone.png"));

    let console = browser.console();
    for e in &console {
        println!("console: {} {}", e["level"], e["message"]);
    }
    let severe: Vec<&Value> = console.iter().filter(|e| e["level"] == "SEVERE").collect();
    assert!(severe.is_empty(), "console errors: {severe:?}");
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gives_one_clear_line() {
    let dir = scratch_dir("report-bad");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    std::fs::write(path("notes.txt"), "hello, not JSON").unwrap();
    std::fs::write(path("other.json"), r#"{"hello": "world"}"#).unwrap();
    std::fs::write(path("future.json"), r#"{"schema": "msgbench.result/v9"}"#).unwrap();
    std::fs::write(
        path("cal.json"),
        json!({
            "schema": "msgbench.calibration/v1",
            "tool": {"name": "msgbench", "version": "0.1.0"},
            "started_at": "2026-01-01T00:00:00Z",
            "server": {"url": "nats://127.0.0.1:4222", "version": "2.15.2", "embedded": true},
            "environment": {"cpus": 1, "samples": 1, "size": 16, "floor_ns": {}}
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        path("broken.json"),
        r#"{"schema": "msgbench.result/v1", "clients": "many"}"#,
    )
    .unwrap();
    std::fs::write(path("minimal.json"), r#"{"schema": "msgbench.result/v1"}"#).unwrap();
    let out_html = path("out.html");
    let cases: [(Vec<String>, u8, &str); 7] = [
        (vec![path("missing.json")], 1, "cannot read"),
        (vec![path("notes.txt")], 2, "is not JSON"),
        (vec![path("other.json")], 2, "not a msgbench result"),
        (vec![path("future.json")], 2, "does not read"),
        (vec![path("cal.json")], 2, "no result file among the inputs"),
        (vec![path("broken.json")], 2, "wrong type"),
        (
            vec![path("minimal.json"), "-o".into(), path("minimal.json")],
            2,
            "is one of the inputs",
        ),
    ];
    for (args, code, needle) in cases {
        let mut all = vec!["report".to_string()];
        all.extend(args.iter().cloned());
        if !args.contains(&"-o".to_string()) {
            all.extend(["-o".into(), out_html.clone()]);
        }
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(i32::from(code)), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        // The message names the file at fault.
        let named = Path::new(&args[0]).file_name().unwrap().to_str().unwrap();
        assert!(err.contains(named), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!Path::new(&out_html).exists(), "{args:?} wrote a report");
    }
    // A directory that does not exist for the output: refused as bad input before the inputs
    // are read, naming the flag and the file.
    let out = run(&[
        "report",
        &path("minimal.json"),
        "-o",
        &path("no/such/dir/out.html"),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot write --output file") && err.contains("out.html"),
        "{err}"
    );
}

/// A run in which the servers' samples saw a stream leader change after a `kill-leader` fault
/// at `injected` s (on the timeline's clock), rendered and viewed in headless Chromium: the
/// change is marked, dotted (observed), on the latency, throughput and CPU charts where its
/// readings place it, after the kill, whose own solid line on the throughput chart lies left
/// of it; the table of server events lists it. Called by the durability test that makes the
/// run.
pub(crate) fn server_events_drawn_in_a_real_browser(v: &Value, injected: f64) {
    let dir = scratch_dir("report-events");
    let json_path = dir.join("kill.json");
    std::fs::write(&json_path, serde_json::to_vec(v).unwrap()).unwrap();
    support::report_page(&json_path);
    let html_path = json_path.with_extension("html");
    let Some(programs) =
        browser_available("report server-events browser test", "report-events-browser")
    else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let browser = Browser::showing(&dir, &programs, &html_path);
    let page = browser.execute(COLLECT);
    for kind in ["latency-timeline", "throughput-timeline", "cpu-timeline"] {
        let c = chart(&page, kind, Some("kill.json"));
        let marks = c["xrefs"].as_array().unwrap();
        let change = marks
            .iter()
            .find(|x| {
                x["label"]
                    .as_str()
                    .unwrap()
                    .contains("stream leader change")
            })
            .unwrap_or_else(|| panic!("{kind}: no leader change among {marks:?}"));
        assert_eq!(change["observed"], true, "{kind}: {change}");
        assert!(
            f(&change["value"]) >= injected,
            "{kind}: {change} against {injected}"
        );
        let band = values(&change["band"]);
        assert!(
            band[0] < band[1] && (f(&change["x"]) - band[1]).abs() <= PX,
            "{kind}: {change}"
        );
        if kind == "throughput-timeline" {
            let kill = marks
                .iter()
                .find(|x| x["label"] == "kill-leader")
                .unwrap_or_else(|| panic!("no fault mark among {marks:?}"));
            assert_eq!(kill["observed"], false, "{kill}");
            assert!(
                f(&kill["x"]) < f(&change["x"]),
                "the kill left of the change: {kill} {change}"
            );
        }
    }
    let rows = browser.execute(
        "return [...document.querySelectorAll('#server-events tbody tr')]\
         .map((tr) => ({...tr.dataset, text: tr.textContent}));",
    );
    let change = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "stream_leader_change")
        .unwrap_or_else(|| panic!("no row for the change: {rows}"));
    assert!(change["text"].as_str().unwrap().contains(" → "), "{change}");
    assert!(
        browser.console().iter().all(|m| m["level"] != "SEVERE"),
        "console errors"
    );
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);
}
