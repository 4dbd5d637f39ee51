//! The calibration plot as hand-written SVG: measured rating by level with 95% error bars, the
//! target line and the fitted line, labelled axes. Each point carries its numbers as data-*
//! attributes so the plot can be checked against the report's table. Also the human-likeness
//! plot: top-1 match by rating band of the people played.

use std::fmt::Write;

use super::likeness::Likeness;
use super::pipeline::Calibration;
use crate::levels::level_key;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

/// Escapes text for XML content and attribute values.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A step of 1, 2 or 5 × 10^k giving about `count` ticks over `span`.
fn nice_step(span: f64, count: f64) -> f64 {
    let raw = (span / count).max(1e-9);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// The plotted area's size inside the margins.
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const PLOT_H: f64 = HEIGHT - TOP - BOTTOM;

/// The plotted ranges [x0, x1] × [y0, y1], and where a point of them lands in the SVG.
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    /// The SVG x coordinate of `x`.
    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.x0) / (self.x1 - self.x0) * PLOT_W
    }

    /// The SVG y coordinate of `y` (up is larger).
    fn py(&self, y: f64) -> f64 {
        TOP + (self.y1 - y) / (self.y1 - self.y0) * PLOT_H
    }
}

/// The smallest and largest of `values`, or `empty` when there is none.
fn range(values: impl Iterator<Item = f64>, empty: (f64, f64)) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if lo.is_finite() { (lo, hi) } else { empty }
}

/// The opening of a plot: the svg element, its title (already escaped) and a white background.
fn open_svg(s: &mut String, title: &str) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, "<title>{title}</title>");
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
}

/// A horizontal grid line at rating (or percentage) `y`, labelled on the left.
fn y_tick(s: &mut String, frame: &Frame, y: f64) {
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4:.0}</text>"##,
        frame.py(y),
        LEFT + PLOT_W,
        LEFT - 6.0,
        frame.py(y) + 4.0,
        y
    );
}

/// A tick below the x axis at `x`, with its label.
fn x_tick(s: &mut String, frame: &Frame, x: f64, label: &str) {
    let _ = writeln!(
        s,
        r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="black"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"#,
        frame.px(x),
        TOP + PLOT_H,
        TOP + PLOT_H + 5.0,
        TOP + PLOT_H + 18.0,
        label
    );
}

/// The axes' names: `x` under the x axis, `y` turned up along the y axis (both escaped).
fn axis_labels(s: &mut String, x: &str, y: &str) {
    let _ = writeln!(
        s,
        r#"<text class="xlabel" x="{:.1}" y="{:.1}" text-anchor="middle">{x}</text>"#,
        LEFT + PLOT_W / 2.0,
        HEIGHT - 15.0
    );
    let _ = writeln!(
        s,
        r#"<text class="ylabel" x="18" y="{0:.1}" text-anchor="middle" transform="rotate(-90 18 {0:.1})">{y}</text>"#,
        TOP + PLOT_H / 2.0,
    );
}

/// The plot of one calibration pass; `perf` names the rating pool on the y axis.
pub fn plot(cal: &Calibration, perf: &str) -> String {
    plot_with_anchors(cal, perf, &[])
}

/// [`plot`] with the anchors' ratings as labelled horizontal lines (those inside the plotted
/// range), so each level can be read against the players it was measured with.
pub fn plot_with_anchors(cal: &Calibration, perf: &str, anchors: &[(String, f64)]) -> String {
    let series = LevelSeries::of(cal);
    let (frame, step) = series.frame();
    let mut s = String::new();
    open_svg(
        &mut s,
        &format!(
            "Measured {} rating by level, coefficients v{}",
            xml(perf),
            cal.proposal.coefficients.version - 1
        ),
    );
    level_axes(&mut s, &frame, step);
    axis_labels(&mut s, "level", &format!("{} rating (Elo)", xml(perf)));
    series.lines(&mut s, &frame);
    anchor_lines(&mut s, &frame, anchors);
    series.measured(&mut s, &frame);
    level_legend(&mut s);
    let _ = writeln!(s, "</svg>");
    s
}

/// What the calibration plot draws, in (level, rating) terms.
struct LevelSeries {
    /// (level, rating, ±95%) of the levels with an estimate.
    points: Vec<(f64, f64, f64)>,
    /// (level, target) of the levels with a target.
    targets: Vec<(f64, f64)>,
    /// The fitted line at each level's exponent, when there is a fit.
    fitted: Vec<(f64, f64)>,
    /// Every level of the proposal.
    levels: Vec<f64>,
}

impl LevelSeries {
    /// The series of `cal`'s proposal.
    fn of(cal: &Calibration) -> LevelSeries {
        let levels = &cal.proposal.levels;
        LevelSeries {
            points: levels
                .iter()
                .filter_map(|u| u.estimate.map(|e| (u.level, e.rating, e.ci95())))
                .collect(),
            targets: levels
                .iter()
                .filter_map(|u| Some((u.level, u.target?)))
                .collect(),
            fitted: match cal.proposal.fit {
                Some(f) => levels
                    .iter()
                    .map(|u| (u.level, f.at(u.exponent.old)))
                    .collect(),
                None => Vec::new(),
            },
            levels: levels.iter().map(|u| u.level).collect(),
        }
    }

    /// The frame holding every level (half a level of margin) and every error bar, target and
    /// fitted rating, its rating range rounded out to the returned tick step.
    fn frame(&self) -> (Frame, f64) {
        let (x0, x1) = range(self.levels.iter().copied(), (1.0, 2.0));
        let ys = self
            .points
            .iter()
            .flat_map(|p| [p.1 - p.2, p.1 + p.2])
            .chain(self.targets.iter().map(|t| t.1))
            .chain(self.fitted.iter().map(|f| f.1));
        let (y0, y1) = range(ys, (0.0, 1000.0));
        let step = nice_step((y1 - y0).max(100.0), 8.0);
        let y0 = (y0 / step).floor() * step;
        let y1 = ((y1 / step).ceil() * step).max(y0 + step);
        let frame = Frame {
            x0: x0 - 0.5,
            x1: x1 + 0.5,
            y0,
            y1,
        };
        (frame, step)
    }

    /// The target line (dashed green) and the fitted line (red), where there are some.
    fn lines(&self, s: &mut String, frame: &Frame) {
        let polyline = |pts: &[(f64, f64)]| {
            pts.iter()
                .map(|(x, y)| format!("{:.1},{:.1}", frame.px(*x), frame.py(*y)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if !self.targets.is_empty() {
            let _ = writeln!(
                s,
                r##"<polyline class="target" fill="none" stroke="#2a7" stroke-width="2" stroke-dasharray="6 4" points="{}"/>"##,
                polyline(&self.targets)
            );
        }
        if !self.fitted.is_empty() {
            let _ = writeln!(
                s,
                r##"<polyline class="fit" fill="none" stroke="#c33" stroke-width="1.5" points="{}"/>"##,
                polyline(&self.fitted)
            );
        }
    }

    /// Each measured level as a point with its 95% error bar and its numbers as data-*.
    fn measured(&self, s: &mut String, frame: &Frame) {
        let _ = writeln!(s, r#"<g class="measured">"#);
        for (level, rating, ci) in &self.points {
            let _ = writeln!(
                s,
                r##"<g class="level" data-level="{key}" data-rating="{rating:.0}" data-ci95="{ci:.0}"><line x1="{x:.1}" y1="{lo:.1}" x2="{x:.1}" y2="{hi:.1}" stroke="#246" stroke-width="1.5"/><circle cx="{x:.1}" cy="{y:.1}" r="4" fill="#246"/></g>"##,
                key = level_key(*level),
                x = frame.px(*level),
                y = frame.py(*rating),
                lo = frame.py(rating - ci),
                hi = frame.py(rating + ci),
            );
        }
        let _ = writeln!(s, "</g>");
    }
}

/// The calibration plot's axes, its rating grid every `step` and its level ticks.
fn level_axes(s: &mut String, frame: &Frame, step: f64) {
    let _ = writeln!(s, r#"<g class="axes" stroke="black">"#);
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
        TOP + PLOT_H,
        LEFT + PLOT_W,
        TOP + PLOT_H
    );
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.1}"/>"#,
        TOP + PLOT_H
    );
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g class="ticks">"#);
    let mut y = frame.y0;
    while y <= frame.y1 + 1e-9 {
        y_tick(s, frame, y);
        y += step;
    }
    let mut level = frame.x0.ceil();
    let level_step = nice_step(frame.x1 - frame.x0, 12.0).max(0.5);
    while level <= frame.x1 {
        x_tick(s, frame, level, &level_key(level));
        level += level_step;
    }
    let _ = writeln!(s, "</g>");
}

/// The anchors inside the rating range, each a dotted line labelled with its name and rating.
fn anchor_lines(s: &mut String, frame: &Frame, anchors: &[(String, f64)]) {
    let _ = writeln!(s, r#"<g class="anchors">"#);
    for (name, rating) in anchors
        .iter()
        .filter(|(_, r)| *r >= frame.y0 && *r <= frame.y1)
    {
        let _ = writeln!(
            s,
            r##"<g class="anchor" data-anchor="{name}" data-rating="{rating:.0}"><line x1="{LEFT}" y1="{y:.1}" x2="{x2:.1}" y2="{y:.1}" stroke="#999" stroke-dasharray="2 3"/><text x="{tx:.1}" y="{ty:.1}" fill="#666" font-size="10">{name} {rating:.0}</text></g>"##,
            name = xml(name),
            y = frame.py(*rating),
            x2 = LEFT + PLOT_W,
            tx = LEFT + PLOT_W + 4.0,
            ty = frame.py(*rating) + 3.0,
        );
    }
    let _ = writeln!(s, "</g>");
}

/// The calibration plot's legend, right of the plotted area.
fn level_legend(s: &mut String) {
    let lx = LEFT + PLOT_W + 15.0;
    let _ = writeln!(
        s,
        r##"<g class="legend"><circle cx="{0:.1}" cy="{1:.1}" r="4" fill="#246"/><text x="{2:.1}" y="{3:.1}">measured ±95%</text><line x1="{4:.1}" y1="{5:.1}" x2="{6:.1}" y2="{5:.1}" stroke="#2a7" stroke-width="2" stroke-dasharray="6 4"/><text x="{2:.1}" y="{7:.1}">target</text><line x1="{4:.1}" y1="{8:.1}" x2="{6:.1}" y2="{8:.1}" stroke="#c33" stroke-width="1.5"/><text x="{2:.1}" y="{9:.1}">fit</text></g>"##,
        lx + 8.0,
        TOP + 10.0,
        lx + 22.0,
        TOP + 14.0,
        lx,
        TOP + 30.0,
        lx + 16.0,
        TOP + 34.0,
        TOP + 50.0,
        TOP + 54.0,
    );
}

/// Top-1 match (%) of each band's level with the people of that band, one point per band
/// with its 95% interval, at the band's middle rating; only bands with compared moves appear.
pub fn plot_likeness(likeness: &Likeness, perf: &str) -> String {
    let bands = &likeness.bands;
    let mids: Vec<f64> = bands.iter().map(|b| 0.5 * (b.low + b.high)).collect();
    let (x0, x1) = range(mids.iter().copied(), (600.0, 2400.0));
    let width = bands.first().map_or(200.0, |b| b.high - b.low);
    let frame = Frame {
        x0: x0 - width,
        x1: x1 + width,
        y0: 0.0,
        y1: 100.0,
    };
    let mut s = String::new();
    open_svg(
        &mut s,
        &format!(
            "Top-1 match of each band's level with the people's moves, by {} rating",
            xml(perf)
        ),
    );
    let _ = writeln!(
        s,
        r#"<g class="axes" stroke="black"><line x1="{LEFT}" y1="{b:.1}" x2="{r:.1}" y2="{b:.1}"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b:.1}"/></g>"#,
        b = TOP + PLOT_H,
        r = LEFT + PLOT_W,
    );
    let _ = writeln!(s, r#"<g class="ticks">"#);
    for y in (0..=100).step_by(10) {
        y_tick(&mut s, &frame, f64::from(y));
    }
    let step = nice_step(frame.x1 - frame.x0, 10.0);
    let mut x = (frame.x0 / step).ceil() * step;
    while x <= frame.x1 {
        x_tick(&mut s, &frame, x, &format!("{x:.0}"));
        x += step;
    }
    let _ = writeln!(s, "</g>");
    axis_labels(
        &mut s,
        &format!("people's {} rating (band middle)", xml(perf)),
        "top-1 match (%)",
    );
    band_points(&mut s, &frame, likeness, &mids);
    let _ = writeln!(s, "</svg>");
    s
}

/// Each band as a point at its middle rating with its 95% interval, labelled with its level.
fn band_points(s: &mut String, frame: &Frame, likeness: &Likeness, mids: &[f64]) {
    let _ = writeln!(s, r#"<g class="measured">"#);
    for (b, &mid) in likeness.bands.iter().zip(mids) {
        let p = 100.0 * b.top1();
        let (lo, hi) = b.interval95();
        let _ = writeln!(
            s,
            r##"<g class="band" data-low="{low:.0}" data-level="{level}" data-top1="{p:.1}" data-positions="{n}"><line x1="{x:.1}" y1="{lo:.1}" x2="{x:.1}" y2="{hi:.1}" stroke="#246" stroke-width="1.5"/><circle cx="{x:.1}" cy="{y:.1}" r="4" fill="#246"/><text x="{tx:.1}" y="{ty:.1}" font-size="10" fill="#444">L{level}</text></g>"##,
            low = b.low,
            level = level_key(b.level),
            n = b.positions,
            x = frame.px(mid),
            y = frame.py(p),
            lo = frame.py(100.0 * lo),
            hi = frame.py(100.0 * hi),
            tx = frame.px(mid) + 6.0,
            ty = frame.py(p) - 6.0,
        );
    }
    let _ = writeln!(s, "</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(1000.0, 8.0), 200.0);
        assert_eq!(nice_step(2000.0, 8.0), 500.0);
        assert_eq!(nice_step(90.0, 8.0), 20.0);
        assert_eq!(xml("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
    }
}
