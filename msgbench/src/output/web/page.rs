//! The live page itself: the report's style and script inlined with the page's own, so it
//! fetches nothing from anywhere (its Content-Security-Policy says so to the browser too).

use std::fmt::Write as _;

use crate::report::html::{CSS, JS};

const LIVE_JS: &str = include_str!("live.js");
const LIVE_CSS: &str = "#now .table-wrap { display: inline-block; }\n\
                        table.figures { width: auto; min-width: 420px; }\n\
                        table.figures td { min-width: 14ch; }\n\
                        pre.result { background: var(--panel); padding: 12px; overflow-x: auto; }\n";

/// What the page may load: its own inline style and script and its own event stream.
pub const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; \
                          script-src 'unsafe-inline'; connect-src 'self'; img-src data:";

/// The page's HTML.
pub fn page() -> String {
    let mut o = String::with_capacity(CSS.len() + JS.len() + LIVE_JS.len() + 2048);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\n\
         <meta name=\"generator\" content=\"msgbench {}\">\n<title>msgbench live</title>\n\
         <style>\n{CSS}{LIVE_CSS}</style>\n</head>\n<body>\n<header>\n<h1>msgbench live: \
         <span id=\"scenario\">waiting for the first second</span></h1>\n\
         <p class=\"sub\" id=\"state\">connecting</p>\n</header>\n<main>\n\
         <section id=\"search\" hidden>\n<h2>Capacity search</h2>\n\
         <div class=\"charts\" id=\"knee\"></div>\n</section>\n<section id=\"now\">\n<h2>This second</h2>\n<div class=\"table-wrap\">\
         <table class=\"figures\"><tbody id=\"figures\"></tbody></table></div>\n</section>\n\
         <section id=\"agents\" hidden>\n<h2>Agents</h2>\n<div class=\"table-wrap\">\
         <table class=\"agents\"><thead><tr><th>agent</th><th>state</th><th>share</th>\
         <th>clock offset</th><th>sent/s</th><th>received/s</th><th>P99</th><th>errors</th>\
         </tr></thead><tbody id=\"agent-rows\"></tbody></table></div>\n</section>\n\
         <section id=\"classes\" hidden>\n<h2>Classes</h2>\n<div id=\"class-list\"></div>\n\
         </section>\n<section id=\"over-time\">\n<h2>Over time</h2>\n<div class=\"charts\" id=\"charts\">\
         </div>\n</section>\n<section id=\"result\" hidden>\n<h2>Final result</h2>\n\
         <p><a id=\"download-json\" download=\"result.json\">Download the result (JSON)</a> · \
         <a id=\"download-report\" download=\"report.html\">Download the HTML report</a>\
         <span id=\"report-error\"></span></p>\n<pre class=\"result\" id=\"result-text\"></pre>\n\
         </section>\n</main>\n<footer>msgbench {} live page: figures and charts once a second \
         from the same ticks as the result's timeline.</footer>\n\
         <script>\n{JS}</script>\n<script>\n{LIVE_JS}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_VERSION"),
    );
    o
}
