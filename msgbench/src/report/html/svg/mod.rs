//! Charts as inline SVG: linear and logarithmic scales with 1-2-5 ticks, axes with labels,
//! a legend that wraps, line series (with gaps) and grouped bars (with whiskers). Every
//! chart is drawn in its own coordinate system ([`NARROW`] or [`WIDE`] units across, about
//! the pixels it gets on a desktop, so text there is at its nominal size) and scaled by the
//! page through its `viewBox`, so one drawing serves a phone, a desktop and paper.
//!
//! The data contract a test relies on: `<svg class="chart" data-chart=KIND
//! [data-input=LABEL]>`; each series a `<g class="series" data-series=ID data-points=N>`
//! holding a `<path data-series data-points data-values>` (lines) or N
//! `<rect class="bar" data-series data-category data-value>` (bars); line points as
//! `<circle class="pt" data-value …>` while a series has at most [`MAX_MARKERS`] of them;
//! reference lines as `<g class="ref" data-ref=LABEL data-value=Y>` (horizontal) and
//! `<g class="xref" data-ref=LABEL data-value=X [data-lo data-hi]>` (vertical, with a band);
//! levels and whiskers (`marks`) as that module says.
//!
//! The arithmetic of where values sit (`scale`: scales and 1-2-5 ticks) is kept apart from the
//! drawing (`draw`: layout, axes, legends, lines and bars; `refs`: reference lines across a
//! plot; `marks`: levels over part of a plot and whiskers on points), so each can be read and
//! tested on its own. HTML escaping lives here because every label drawn needs it; the page
//! and the tables use the same function.

mod draw;
mod marks;
mod refs;
mod scale;

pub use draw::{bars, lines, lines_marked, Bar, BarSet, Chart, Line, Point};
pub use marks::{Level, Marks, Whisker};
pub use refs::{RefLine, RefStyle, XRef};
pub use scale::{Axis, Scale, Tick};
// What only the tests reach from outside the kit.
#[cfg(test)]
pub use scale::{linear_ticks, log_ticks, nice_step};

/// `s` made safe as HTML text and as a quoted attribute value.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A raw number for a `data-*` attribute: the shortest text that reads back as the same
/// double, so a test comparing it with the input file can demand equality.
pub fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}
