//! Reference lines drawn across a line chart's plot: horizontal ones at a value (a calibrated
//! floor, an SLO's limit) and vertical ones at a position on x (a sustainable rate, shaded
//! across its confidence interval). Apart from `draw` because they are not data series: they
//! have no legend entry and no markers, and carry their value in `data-value` on their group.

use std::fmt::Write as _;

use super::draw::{c, fit, Rect, CHAR_W};
use super::scale::Scale;
use super::{esc, num};

/// A horizontal reference line: a calibrated floor or a limit.
pub struct RefLine {
    pub y: f64,
    pub label: String,
    pub style: RefStyle,
}

/// How a reference line looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefStyle {
    /// Dotted grey: something to compare with (a floor).
    Floor,
    /// Dashed, in the colour of the series it bounds: a limit that series must stay under.
    Limit(&'static str),
}

/// A vertical reference line at `x` (a sustainable rate), with a shaded band `lo..hi` around
/// it (its confidence interval) when there is one.
#[derive(Debug, Clone)]
pub struct XRef {
    pub x: f64,
    pub band: Option<(f64, f64)>,
    pub label: String,
    /// Something seen happening rather than done or found (a server's event, beside the faults
    /// msgbench injected): drawn dotted, class `observed`.
    pub observed: bool,
}

/// A horizontal reference across the plot, its label just above it.
pub(super) fn y_ref(o: &mut String, r: &Rect, scale: Scale, rl: &RefLine) {
    let py = r.y(scale, rl.y);
    // The colour is one of the kit's own constants, never text from an input. A floor's
    // label sits at the right, under a latency curve's rising tail; a limit's at the left,
    // under a curve that climbs towards its limit on the right.
    let (class, line_style, text_style, tx, anchor) = match rl.style {
        RefStyle::Floor => ("ref", String::new(), String::new(), r.x1 - 4.0, "end"),
        RefStyle::Limit(color) => (
            "ref limit",
            format!(" style=\"stroke:{color}\""),
            format!(" style=\"fill:{color}\""),
            r.x0 + 4.0,
            "start",
        ),
    };
    let _ = write!(
        o,
        "<g class=\"{class}\" data-ref=\"{}\" data-value=\"{}\"><line x1=\"{}\" \
         y1=\"{py}\" x2=\"{}\" y2=\"{py}\"{line_style}/><text x=\"{}\" y=\"{}\" \
         text-anchor=\"{anchor}\"{text_style}>{}</text></g>",
        esc(&rl.label),
        num(rl.y),
        c(r.x0),
        c(r.x1),
        c(tx),
        c(py - 4.0),
        esc(&fit(&rl.label, ((r.x1 - r.x0) / CHAR_W) as usize - 2)),
        py = c(py)
    );
}

/// A vertical reference: its band (under everything drawn after it), its line, and its label
/// at the top of the plot, on whichever side of the line has room for it.
pub(super) fn x_ref(o: &mut String, r: &Rect, scale: Scale, xr: &XRef) {
    let px = r.x(scale, xr.x);
    let _ = write!(
        o,
        "<g class=\"xref{}\" data-ref=\"{}\" data-value=\"{}\"",
        if xr.observed { " observed" } else { "" },
        esc(&xr.label),
        num(xr.x)
    );
    if let Some((lo, hi)) = xr.band {
        let _ = write!(o, " data-lo=\"{}\" data-hi=\"{}\">", num(lo), num(hi));
        let (a, b) = (r.x(scale, lo).max(r.x0), r.x(scale, hi).min(r.x1));
        let _ = write!(
            o,
            "<rect class=\"band\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            c(a),
            c(r.y0),
            c((b - a).max(0.0)),
            c(r.y1 - r.y0)
        );
    } else {
        o.push('>');
    }
    let room = ((r.x1 - r.x0) / CHAR_W) as usize - 2;
    let label = fit(&xr.label, room);
    let width = label.chars().count() as f64 * CHAR_W;
    let (tx, anchor) = if px + 4.0 + width <= r.x1 {
        (px + 4.0, "start")
    } else {
        ((px - 4.0).max(r.x0 + width), "end")
    };
    let _ = write!(
        o,
        "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" \
         text-anchor=\"{anchor}\">{}</text></g>",
        c(r.y0),
        c(r.y1),
        c(tx),
        c(r.y0 + 13.0),
        esc(&label),
        x = c(px)
    );
}
