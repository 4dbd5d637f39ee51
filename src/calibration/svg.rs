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

/// The plot of one calibration pass; `perf` names the rating pool on the y axis.
pub fn plot(cal: &Calibration, perf: &str) -> String {
    plot_with_anchors(cal, perf, &[])
}

/// [`plot`] with the anchors' ratings as labelled horizontal lines (those inside the plotted
/// range), so each level can be read against the players it was measured with.
pub fn plot_with_anchors(cal: &Calibration, perf: &str, anchors: &[(String, f64)]) -> String {
    let levels = &cal.proposal.levels;
    let points: Vec<(f64, f64, f64)> = levels
        .iter()
        .filter_map(|u| u.estimate.map(|e| (u.level, e.rating, e.ci95())))
        .collect();
    let targets: Vec<(f64, f64)> = levels
        .iter()
        .filter_map(|u| Some((u.level, u.target?)))
        .collect();
    let fitted: Vec<(f64, f64)> = match cal.proposal.fit {
        Some(f) => levels
            .iter()
            .map(|u| (u.level, f.at(u.exponent_old)))
            .collect(),
        None => Vec::new(),
    };

    let xs = levels.iter().map(|u| u.level);
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !x0.is_finite() {
        (x0, x1) = (1.0, 2.0);
    }
    x0 -= 0.5;
    x1 += 0.5;
    let ys = points
        .iter()
        .flat_map(|p| [p.1 - p.2, p.1 + p.2])
        .chain(targets.iter().map(|t| t.1))
        .chain(fitted.iter().map(|f| f.1));
    let (mut y0, mut y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    if !y0.is_finite() {
        (y0, y1) = (0.0, 1000.0);
    }
    let step = nice_step((y1 - y0).max(100.0), 8.0);
    y0 = (y0 / step).floor() * step;
    y1 = ((y1 / step).ceil() * step).max(y0 + step);

    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| TOP + (y1 - y) / (y1 - y0) * plot_h;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        "<title>Measured {} rating by level, coefficients v{}</title>",
        xml(perf),
        cal.proposal.coefficients.version - 1
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    // Axes, grid and ticks.
    let _ = writeln!(s, r#"<g class="axes" stroke="black">"#);
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h
    );
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.1}"/>"#,
        TOP + plot_h
    );
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g class="ticks">"#);
    let mut y = y0;
    while y <= y1 + 1e-9 {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4:.0}</text>"##,
            py(y),
            LEFT + plot_w,
            LEFT - 6.0,
            py(y) + 4.0,
            y
        );
        y += step;
    }
    let mut level = x0.ceil();
    let level_step = nice_step(x1 - x0, 12.0).max(0.5);
    while level <= x1 {
        let _ = writeln!(
            s,
            r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="black"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"#,
            px(level),
            TOP + plot_h,
            TOP + plot_h + 5.0,
            TOP + plot_h + 18.0,
            level_key(level)
        );
        level += level_step;
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r#"<text class="xlabel" x="{:.1}" y="{:.1}" text-anchor="middle">level</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 15.0
    );
    let _ = writeln!(
        s,
        r#"<text class="ylabel" x="18" y="{0:.1}" text-anchor="middle" transform="rotate(-90 18 {0:.1})">{1} rating (Elo)</text>"#,
        TOP + plot_h / 2.0,
        xml(perf)
    );

    let polyline = |pts: &[(f64, f64)]| {
        pts.iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !targets.is_empty() {
        let _ = writeln!(
            s,
            r##"<polyline class="target" fill="none" stroke="#2a7" stroke-width="2" stroke-dasharray="6 4" points="{}"/>"##,
            polyline(&targets)
        );
    }
    if !fitted.is_empty() {
        let _ = writeln!(
            s,
            r##"<polyline class="fit" fill="none" stroke="#c33" stroke-width="1.5" points="{}"/>"##,
            polyline(&fitted)
        );
    }
    let _ = writeln!(s, r#"<g class="anchors">"#);
    for (name, rating) in anchors.iter().filter(|(_, r)| *r >= y0 && *r <= y1) {
        let _ = writeln!(
            s,
            r##"<g class="anchor" data-anchor="{name}" data-rating="{rating:.0}"><line x1="{LEFT}" y1="{y:.1}" x2="{x2:.1}" y2="{y:.1}" stroke="#999" stroke-dasharray="2 3"/><text x="{tx:.1}" y="{ty:.1}" fill="#666" font-size="10">{name} {rating:.0}</text></g>"##,
            name = xml(name),
            y = py(*rating),
            x2 = LEFT + plot_w,
            tx = LEFT + plot_w + 4.0,
            ty = py(*rating) + 3.0,
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g class="measured">"#);
    for (level, rating, ci) in &points {
        let _ = writeln!(
            s,
            r##"<g class="level" data-level="{key}" data-rating="{rating:.0}" data-ci95="{ci:.0}"><line x1="{x:.1}" y1="{lo:.1}" x2="{x:.1}" y2="{hi:.1}" stroke="#246" stroke-width="1.5"/><circle cx="{x:.1}" cy="{y:.1}" r="4" fill="#246"/></g>"##,
            key = level_key(*level),
            x = px(*level),
            y = py(*rating),
            lo = py(rating - ci),
            hi = py(rating + ci),
        );
    }
    let _ = writeln!(s, "</g>");
    // Legend.
    let lx = LEFT + plot_w + 15.0;
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
    let _ = writeln!(s, "</svg>");
    s
}

/// Top-1 match (%) of each band's level with the people of that band, one point per band
/// with its 95% interval, at the band's middle rating; only bands with compared moves appear.
pub fn plot_likeness(likeness: &Likeness, perf: &str) -> String {
    let bands = &likeness.bands;
    let mids: Vec<f64> = bands.iter().map(|b| 0.5 * (b.low + b.high)).collect();
    let (mut x0, mut x1) = mids
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if !x0.is_finite() {
        (x0, x1) = (600.0, 2400.0);
    }
    let width = bands.first().map_or(200.0, |b| b.high - b.low);
    x0 -= width;
    x1 += width;
    let (y0, y1) = (0.0, 100.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| TOP + (y1 - y) / (y1 - y0) * plot_h;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        "<title>Top-1 match of each band's level with the people's moves, by {} rating</title>",
        xml(perf)
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<g class="axes" stroke="black"><line x1="{LEFT}" y1="{b:.1}" x2="{r:.1}" y2="{b:.1}"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b:.1}"/></g>"#,
        b = TOP + plot_h,
        r = LEFT + plot_w,
    );
    let _ = writeln!(s, r#"<g class="ticks">"#);
    for y in (0..=100).step_by(10) {
        let y = f64::from(y);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4:.0}</text>"##,
            py(y),
            LEFT + plot_w,
            LEFT - 6.0,
            py(y) + 4.0,
            y
        );
    }
    let step = nice_step(x1 - x0, 10.0);
    let mut x = (x0 / step).ceil() * step;
    while x <= x1 {
        let _ = writeln!(
            s,
            r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="black"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4:.0}</text>"#,
            px(x),
            TOP + plot_h,
            TOP + plot_h + 5.0,
            TOP + plot_h + 18.0,
            x
        );
        x += step;
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r#"<text class="xlabel" x="{:.1}" y="{:.1}" text-anchor="middle">people's {} rating (band middle)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 15.0,
        xml(perf)
    );
    let _ = writeln!(
        s,
        r#"<text class="ylabel" x="18" y="{0:.1}" text-anchor="middle" transform="rotate(-90 18 {0:.1})">top-1 match (%)</text>"#,
        TOP + plot_h / 2.0,
    );
    let _ = writeln!(s, r#"<g class="measured">"#);
    for (b, &mid) in bands.iter().zip(&mids) {
        let (p, ci) = (100.0 * b.top1(), 100.0 * b.ci95());
        let _ = writeln!(
            s,
            r##"<g class="band" data-low="{low:.0}" data-level="{level}" data-top1="{p:.1}" data-positions="{n}"><line x1="{x:.1}" y1="{lo:.1}" x2="{x:.1}" y2="{hi:.1}" stroke="#246" stroke-width="1.5"/><circle cx="{x:.1}" cy="{y:.1}" r="4" fill="#246"/><text x="{tx:.1}" y="{ty:.1}" font-size="10" fill="#444">L{level}</text></g>"##,
            low = b.low,
            level = level_key(b.level),
            n = b.positions,
            x = px(mid),
            y = py(p),
            lo = py((p - ci).max(0.0)),
            hi = py((p + ci).min(100.0)),
            tx = px(mid) + 6.0,
            ty = py(p) - 6.0,
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, "</svg>");
    s
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
