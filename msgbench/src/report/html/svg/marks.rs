//! Marks that summarise a line's points rather than being points: a level held over part of x
//! (a segment's median between change points, shaded across its spread) and a whisker on one
//! point (its range over repeated runs). Drawn under the series, like reference lines, but
//! bounded in x and carrying the values they stand for in `data-*` attributes:
//! `<g class="level" data-level=LABEL data-value=Y data-from=X0 data-to=X1 [data-lo data-hi]>`
//! and `<path class="whisker" data-x=X data-min=LO data-max=HI>`.

use std::fmt::Write as _;

use super::draw::{c, Rect};
use super::scale::Scale;
use super::{esc, num};

/// A level `y` held from `x0` to `x1`, with a band `lo..hi` (its spread) when there is one.
pub struct Level {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub band: Option<(f64, f64)>,
    /// What the level is, shown on hover.
    pub label: String,
    pub color: &'static str,
}

/// A vertical range at `x`, from `lo` to `hi`.
pub struct Whisker {
    pub x: f64,
    pub lo: f64,
    pub hi: f64,
}

/// What a line chart draws besides its series and reference lines.
#[derive(Default)]
pub struct Marks {
    pub levels: Vec<Level>,
    pub whiskers: Vec<Whisker>,
}

pub(super) fn level(o: &mut String, r: &Rect, x: Scale, y: Scale, l: &Level) {
    let (a, b) = (r.x(x, l.x0).max(r.x0), r.x(x, l.x1).min(r.x1));
    let _ = write!(
        o,
        "<g class=\"level\" data-level=\"{}\" data-value=\"{}\" data-from=\"{}\" data-to=\"{}\"",
        esc(&l.label),
        num(l.y),
        num(l.x0),
        num(l.x1)
    );
    if let Some((lo, hi)) = l.band {
        let (top, bottom) = (r.y(y, hi), r.y(y, lo));
        let _ = write!(
            o,
            " data-lo=\"{}\" data-hi=\"{}\"><rect class=\"band\" x=\"{}\" y=\"{}\" \
             width=\"{}\" height=\"{}\" style=\"fill:{}\"/>",
            num(lo),
            num(hi),
            c(a),
            c(top),
            c((b - a).max(0.0)),
            c((bottom - top).max(0.0)),
            l.color
        );
    } else {
        o.push('>');
    }
    let py = c(r.y(y, l.y));
    // The colour is one of the kit's callers' constants, never text from an input.
    let _ = write!(
        o,
        "<line x1=\"{}\" y1=\"{py}\" x2=\"{}\" y2=\"{py}\" style=\"stroke:{}\"/>\
         <title>{}</title></g>",
        c(a),
        c(b),
        l.color,
        esc(&l.label)
    );
}

pub(super) fn whisker(o: &mut String, r: &Rect, x: Scale, y: Scale, w: &Whisker) {
    let px = r.x(x, w.x);
    let (ylo, yhi) = (r.y(y, w.lo), r.y(y, w.hi));
    let _ = write!(
        o,
        "<path class=\"whisker\" data-x=\"{}\" data-min=\"{}\" data-max=\"{}\" \
         d=\"M{} {}V{}M{} {}H{}M{} {}H{}\"/>",
        num(w.x),
        num(w.lo),
        num(w.hi),
        c(px),
        c(ylo),
        c(yhi),
        c(px - 3.0),
        c(ylo),
        c(px + 3.0),
        c(px - 3.0),
        c(yhi),
        c(px + 3.0)
    );
}
