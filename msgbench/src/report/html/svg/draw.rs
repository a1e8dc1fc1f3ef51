//! Drawing a chart: the layout of the drawing (plot area, margins, legend rows), axes with
//! their ticks and labels, the legend, and the two kinds of chart, [`lines`] and [`bars`]. Text
//! is budgeted by character count rather than measured, so a drawing needs no font metrics and
//! comes out the same everywhere.

use std::fmt::Write as _;

use super::marks::{level, whisker, Marks};
use super::refs::{x_ref, y_ref, RefLine, XRef};
use super::scale::{Axis, Scale};
use super::{esc, num};

/// A chart sharing a row with another.
pub const NARROW: f64 = 600.0;
/// A chart with a row of its own.
pub const WIDE: f64 = 960.0;
/// Room left of the plot for tick labels and the rotated axis label.
const LEFT: f64 = 84.0;
const RIGHT: f64 = 28.0;
/// Room above the plot for the title.
const TOP: f64 = 44.0;
/// Room under the plot for tick labels and the axis label.
const BOTTOM: f64 = 54.0;
const LEGEND_ROW: f64 = 20.0;
/// Roughly the advance of one 12 px character: the drawing is laid out without measuring
/// text, so labels are budgeted by character count (a little generously).
pub const CHAR_W: f64 = 7.0;
/// Point markers (hover targets with their values) per series; a longer series (a long
/// run's timeline) keeps its values on the path only, so the page stays light.
pub const MAX_MARKERS: usize = 400;
/// Markers are drawn visibly when a series is this short (a few ticks would otherwise be
/// an almost invisible line); longer ones show a marker on hover only.
const VISIBLE_MARKERS: usize = 40;
/// The chart's identity: what it shows (`data-chart`), for which input, and its title.
pub struct Chart {
    pub kind: &'static str,
    pub input: Option<String>,
    pub title: String,
    /// Drawn across the page rather than in a column.
    pub wide: bool,
}

impl Chart {
    fn width(&self) -> f64 {
        if self.wide {
            WIDE
        } else {
            NARROW
        }
    }

    fn plot_height(&self) -> f64 {
        if self.wide {
            300.0
        } else {
            240.0
        }
    }
}

/// One point of a line: its position in the axes' data units, the raw value for
/// `data-value` (what the y position shows, in the input's unit), extra attributes, and
/// the tooltip.
pub struct Point {
    pub x: f64,
    /// Where the interval the value covers starts, for a value that holds over an interval
    /// (a tick's rate): drawn as a step from `x0` to `x` rather than at one instant.
    pub x0: Option<f64>,
    pub y: f64,
    pub attrs: Vec<(&'static str, String)>,
    pub tip: String,
    /// Drawn as a ring rather than a dot, and always shown: a point to be told apart (one that
    /// did not hold a rate, a partial interval), by shape so that it does not rest on colour
    /// alone. Each chart's caption says what its rings are.
    pub hollow: bool,
}

/// A line series; `None` points are gaps (a tick without latency).
pub struct Line {
    pub id: String,
    pub color: &'static str,
    pub dashed: bool,
    pub points: Vec<Option<Point>>,
}

pub struct Bar {
    pub value: f64,
    /// Whisker from min to max (repeated runs).
    pub range: Option<(f64, f64)>,
    /// Overrides the series colour (one colour per input).
    pub color: Option<&'static str>,
    /// Printed above the bar.
    pub label: Option<String>,
    pub tip: String,
}

/// A bar series: at most one bar per category.
pub struct BarSet {
    pub id: String,
    pub color: &'static str,
    pub bars: Vec<Option<Bar>>,
}

/// The plotting area inside the drawing, and the drawing's width.
pub(super) struct Rect {
    pub(super) x0: f64,
    pub(super) y0: f64,
    pub(super) x1: f64,
    pub(super) y1: f64,
    width: f64,
}

impl Rect {
    fn plot(chart: &Chart) -> Self {
        Self {
            x0: LEFT,
            y0: TOP,
            x1: chart.width() - RIGHT,
            y1: TOP + chart.plot_height(),
            width: chart.width(),
        }
    }
    pub(super) fn x(&self, s: Scale, v: f64) -> f64 {
        self.x0 + s.frac(v) * (self.x1 - self.x0)
    }
    pub(super) fn y(&self, s: Scale, v: f64) -> f64 {
        self.y1 - s.frac(v) * (self.y1 - self.y0)
    }
}

/// Coordinates in the drawing: one decimal is finer than any screen or printer resolves.
pub(super) fn c(v: f64) -> String {
    format!("{:.1}", v)
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// `s` cut to `max` characters, with an ellipsis when cut.
pub fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1).max(1)).collect();
        t.push('…');
        t
    }
}

struct LegendEntry<'a> {
    id: &'a str,
    color: &'a str,
    dashed: bool,
    bar: bool,
}

const LEGEND_LABEL_CHARS: usize = 44;

/// Places legend entries left to right, wrapping: (x, row) of each, and the row count.
fn legend_layout(entries: &[LegendEntry], width: f64) -> (Vec<(f64, usize)>, usize) {
    let (mut x, mut row) = (LEFT, 0);
    let mut placed = Vec::new();
    for e in entries {
        let w = 30.0 + fit(e.id, LEGEND_LABEL_CHARS).chars().count() as f64 * CHAR_W + 18.0;
        if x + w > width - RIGHT && x > LEFT {
            row += 1;
            x = LEFT;
        }
        placed.push((x, row));
        x += w;
    }
    let rows = if entries.is_empty() { 0 } else { row + 1 };
    (placed, rows)
}

fn legend(o: &mut String, entries: &[LegendEntry], r: &Rect) {
    let top = r.y1 + BOTTOM + 8.0;
    let (placed, _) = legend_layout(entries, r.width);
    for (e, (x, row)) in entries.iter().zip(placed) {
        let y = top + row as f64 * LEGEND_ROW;
        let _ = write!(
            o,
            "<g class=\"legend-item\" data-series=\"{}\" tabindex=\"0\" role=\"button\" \
             aria-pressed=\"true\"><title>{} (click to hide or show)</title>",
            esc(e.id),
            esc(e.id)
        );
        if e.bar {
            let _ = write!(
                o,
                "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{}\"/>",
                c(x),
                c(y - 9.0),
                e.color
            );
        } else {
            let _ = write!(
                o,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" \
                 stroke-width=\"2.5\"{}/>",
                c(x),
                c(y - 4.0),
                c(x + 22.0),
                c(y - 4.0),
                e.color,
                if e.dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                }
            );
        }
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\">{}</text></g>",
            c(x + 30.0),
            c(y),
            esc(&fit(e.id, LEGEND_LABEL_CHARS))
        );
    }
}

/// Opens the drawing and writes its title.
fn open(o: &mut String, chart: &Chart, height: f64) {
    let _ = write!(o, "<svg class=\"chart\" data-chart=\"{}\"", esc(chart.kind));
    if let Some(i) = &chart.input {
        let _ = write!(o, " data-input=\"{}\"", esc(i));
    }
    let _ = write!(
        o,
        " viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        c(chart.width()),
        c(height),
        esc(&chart.title)
    );
    // Title characters are ~1.25× a label's at 15 px.
    let room = ((chart.width() - 24.0) / (CHAR_W * 1.25)) as usize;
    let _ = write!(
        o,
        "<text class=\"title\" x=\"12\" y=\"24\">{}</text>",
        esc(&fit(&chart.title, room))
    );
}

fn y_axis(o: &mut String, r: &Rect, a: &Axis) {
    for t in &a.ticks {
        let y = r.y(a.scale, t.at);
        let _ = write!(
            o,
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
             <text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            c(r.x0),
            c(r.x1),
            c(r.x0 - 8.0),
            c(y + 4.0),
            esc(&t.label),
            y = c(y)
        );
    }
    let mid = (r.y0 + r.y1) / 2.0;
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
         <text class=\"axis-label\" transform=\"translate(18 {}) rotate(-90)\" \
         text-anchor=\"middle\">{}</text>",
        c(r.y0),
        c(r.y1),
        c(mid),
        esc(&fit(&a.label, ((r.y1 - r.y0) / CHAR_W) as usize)),
        x = c(r.x0)
    );
}

fn x_axis_line(o: &mut String, r: &Rect, label: &str) {
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
         <text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        c(r.x0),
        c(r.x1),
        c((r.x0 + r.x1) / 2.0),
        c(r.y1 + 44.0),
        esc(&fit(label, ((r.x1 - r.x0) / CHAR_W) as usize)),
        y = c(r.y1)
    );
}

fn x_axis(o: &mut String, r: &Rect, a: &Axis) {
    for t in &a.ticks {
        let x = r.x(a.scale, t.at);
        let _ = write!(
            o,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
             <line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\
             <text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            c(r.y0),
            c(r.y1),
            c(r.y1),
            c(r.y1 + 5.0),
            c(r.y1 + 19.0),
            esc(&t.label),
            x = c(x)
        );
    }
    x_axis_line(o, r, &a.label);
}

/// Category names under bands; every k-th when they would not fit side by side.
fn x_categories(o: &mut String, r: &Rect, cats: &[String], label: &str) {
    let band = (r.x1 - r.x0) / cats.len().max(1) as f64;
    let longest = cats.iter().map(|s| s.chars().count()).max().unwrap_or(1);
    let room = ((band / CHAR_W) as usize).saturating_sub(1);
    let (chars, every) = if room >= 4 {
        (room.min(longest), 1)
    } else {
        let want = longest.min(8);
        (want, ((want + 1) as f64 * CHAR_W / band).ceil() as usize)
    };
    for (i, cat) in cats.iter().enumerate() {
        if i % every.max(1) != 0 {
            continue;
        }
        let x = r.x0 + band * (i as f64 + 0.5);
        let _ = write!(
            o,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}<title>{}</title></text>",
            c(x),
            c(r.y1 + 19.0),
            esc(&fit(cat, chars.max(3))),
            esc(cat)
        );
    }
    x_axis_line(o, r, label);
}

fn close(o: &mut String) {
    o.push_str("</svg>");
}

fn height_with_legend(chart: &Chart, rows: usize) -> f64 {
    TOP + chart.plot_height() + BOTTOM + rows as f64 * LEGEND_ROW + if rows > 0 { 6.0 } else { 0.0 }
}

/// A line chart. Legend when there is more than one series.
pub fn lines(
    chart: &Chart,
    x: &Axis,
    y: &Axis,
    series: &[Line],
    refs: &[RefLine],
    xrefs: &[XRef],
) -> String {
    lines_marked(chart, x, y, series, refs, xrefs, &Marks::default())
}

/// [`lines`] with levels and whiskers drawn under the series (a history's segments and each
/// run's range over its repeats).
pub fn lines_marked(
    chart: &Chart,
    x: &Axis,
    y: &Axis,
    series: &[Line],
    refs: &[RefLine],
    xrefs: &[XRef],
    marks: &Marks,
) -> String {
    let entries: Vec<LegendEntry> = if series.len() > 1 {
        series
            .iter()
            .map(|s| LegendEntry {
                id: &s.id,
                color: s.color,
                dashed: s.dashed,
                bar: false,
            })
            .collect()
    } else {
        Vec::new()
    };
    let r = Rect::plot(chart);
    let (_, rows) = legend_layout(&entries, r.width);
    let mut o = String::new();
    open(&mut o, chart, height_with_legend(chart, rows));
    y_axis(&mut o, &r, y);
    x_axis(&mut o, &r, x);
    for xr in xrefs {
        x_ref(&mut o, &r, x.scale, xr);
    }
    for rl in refs {
        y_ref(&mut o, &r, y.scale, rl);
    }
    for l in &marks.levels {
        level(&mut o, &r, x.scale, y.scale, l);
    }
    for w in &marks.whiskers {
        whisker(&mut o, &r, x.scale, y.scale, w);
    }
    for s in series {
        let n = s.points.iter().flatten().count();
        let values: Vec<String> = s.points.iter().flatten().map(|p| num(p.y)).collect();
        let mut d = String::new();
        let mut pen_down = false;
        for p in &s.points {
            match p {
                Some(p) => {
                    let py = c(r.y(y.scale, p.y));
                    // A step starts at its interval's start, joined to the previous step
                    // by a vertical rise or fall.
                    if let Some(x0) = p.x0 {
                        let _ = write!(
                            d,
                            "{}{} {py}",
                            if pen_down { "L" } else { "M" },
                            c(r.x(x.scale, x0))
                        );
                        pen_down = true;
                    }
                    let _ = write!(
                        d,
                        "{}{} {py}",
                        if pen_down { "L" } else { "M" },
                        c(r.x(x.scale, p.x))
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let _ = write!(
            o,
            "<g class=\"series\" data-series=\"{id}\" data-points=\"{n}\">\
             <path class=\"line\" d=\"{d}\" stroke=\"{}\"{} data-series=\"{id}\" \
             data-points=\"{n}\" data-values=\"{}\"/>",
            s.color,
            if s.dashed {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            },
            values.join(" "),
            id = esc(&s.id)
        );
        if n <= MAX_MARKERS {
            let class = if n <= VISIBLE_MARKERS { "pt few" } else { "pt" };
            for p in s.points.iter().flatten() {
                // A ring: white inside, its series' colour around.
                let (class, paint) = if p.hollow {
                    (
                        "pt few hollow",
                        format!("fill=\"#fff\" stroke=\"{}\" stroke-width=\"2\"", s.color),
                    )
                } else {
                    (class, format!("fill=\"{}\"", s.color))
                };
                let _ = write!(
                    o,
                    "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"3.5\" {paint} \
                     data-value=\"{}\"",
                    // A step's marker sits mid-step.
                    c(r.x(x.scale, p.x0.map_or(p.x, |x0| (x0 + p.x) / 2.0))),
                    c(r.y(y.scale, p.y)),
                    num(p.y)
                );
                for (k, v) in &p.attrs {
                    let _ = write!(o, " {k}=\"{}\"", esc(v));
                }
                let _ = write!(o, "><title>{}</title></circle>", esc(&p.tip));
            }
        }
        o.push_str("</g>");
    }
    legend(&mut o, &entries, &r);
    close(&mut o);
    o
}

/// A bar chart over categories, linear from zero (a bar's length is its value, so the axis
/// may not start anywhere else). Bars of several series share a category's band; a
/// category where only some series have a bar centres those.
pub fn bars(
    chart: &Chart,
    cats: &[String],
    y_label: &str,
    sets: &[BarSet],
    fmt: impl Fn(f64) -> String,
) -> String {
    let top = sets
        .iter()
        .flat_map(|s| s.bars.iter().flatten())
        .map(|b| b.range.map_or(b.value, |(_, hi)| hi.max(b.value)))
        .fold(0.0, f64::max);
    let y = Axis::linear(0.0, top, y_label, fmt);
    let entries: Vec<LegendEntry> = if sets.len() > 1 {
        sets.iter()
            .map(|s| LegendEntry {
                id: &s.id,
                color: s.color,
                dashed: false,
                bar: true,
            })
            .collect()
    } else {
        Vec::new()
    };
    let r = Rect::plot(chart);
    let (_, rows) = legend_layout(&entries, r.width);
    let mut o = String::new();
    open(&mut o, chart, height_with_legend(chart, rows));
    y_axis(&mut o, &r, &y);
    x_categories(&mut o, &r, cats, "");
    let band = (r.x1 - r.x0) / cats.len().max(1) as f64;
    // Per category: which series have a bar there, in series order.
    let present: Vec<Vec<usize>> = (0..cats.len())
        .map(|ci| {
            (0..sets.len())
                .filter(|si| sets[*si].bars.get(ci).is_some_and(Option::is_some))
                .collect()
        })
        .collect();
    for (si, s) in sets.iter().enumerate() {
        let n = s.bars.iter().flatten().count();
        let _ = write!(
            o,
            "<g class=\"series\" data-series=\"{}\" data-points=\"{n}\">",
            esc(&s.id)
        );
        for (ci, bar) in s.bars.iter().enumerate() {
            let Some(b) = bar else { continue };
            let Some(cat) = cats.get(ci) else { continue };
            let m = present[ci].len() as f64;
            let slot = present[ci].iter().position(|i| *i == si).unwrap_or(0) as f64;
            let w = (band * 0.72 / m).min(64.0);
            let x = r.x0 + band * ci as f64 + (band - w * m) / 2.0 + slot * w;
            let top_y = r.y(y.scale, b.value);
            let _ = write!(
                o,
                "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" \
                 data-series=\"{}\" data-category=\"{}\" data-value=\"{}\"",
                c(x + 1.0),
                c(top_y),
                c((w - 2.0).max(1.0)),
                c((r.y1 - top_y).max(0.0)),
                b.color.unwrap_or(s.color),
                esc(&s.id),
                esc(cat),
                num(b.value)
            );
            if let Some((lo, hi)) = b.range {
                let _ = write!(o, " data-min=\"{}\" data-max=\"{}\"", num(lo), num(hi));
            }
            let _ = write!(o, "><title>{}</title></rect>", esc(&b.tip));
            let mid = x + w / 2.0;
            let mut label_y = top_y;
            if let Some((lo, hi)) = b.range {
                let (ylo, yhi) = (r.y(y.scale, lo), r.y(y.scale, hi));
                let _ = write!(
                    o,
                    "<path class=\"whisker\" d=\"M{} {}V{}M{} {}H{}M{} {}H{}\"/>",
                    c(mid),
                    c(ylo),
                    c(yhi),
                    c(mid - 4.0),
                    c(ylo),
                    c(mid + 4.0),
                    c(mid - 4.0),
                    c(yhi),
                    c(mid + 4.0)
                );
                label_y = label_y.min(yhi);
            }
            if let Some(l) = &b.label {
                if l.chars().count() as f64 * CHAR_W * 0.9 <= band.max(w) {
                    let _ = write!(
                        o,
                        "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                        c(mid),
                        c(label_y - 5.0),
                        esc(l)
                    );
                }
            }
        }
        o.push_str("</g>");
    }
    legend(&mut o, &entries, &r);
    close(&mut o);
    o
}
