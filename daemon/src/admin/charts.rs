//! Click charts as inline SVG, rendered on the server (no script, no CDN).

use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 40.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 10.0;

/// One bar: its label for the tooltip and the axis, and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    /// Shown on hover and, every `label_every` bars, under the axis.
    pub label: String,
    /// Short form under the axis.
    pub tick: String,
    pub value: i64,
}

/// Most grid intervals on the y axis.
const INTERVALS: i64 = 4;

/// The y axis of values up to `max`: a "nice" step (1, 2 or 5 × 10^n)
/// and how many steps reach the top (1 to [`INTERVALS`]), so every tick
/// is a multiple of the step (0, 2, 4, 6, never 0, 1, 2, 3, 5).
pub fn y_axis(max: i64) -> (i64, i64) {
    let max = max.max(1);
    let least = (max + INTERVALS - 1) / INTERVALS;
    let mut magnitude = 1i64;
    let step = loop {
        if let Some(&m) = [1, 2, 5].iter().find(|&&m| m * magnitude >= least) {
            break m * magnitude;
        }
        magnitude = magnitude.saturating_mul(10);
    };
    (step, (max + step - 1) / step)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A bar chart of `bars`, titled `title` (for screen readers), with a tick
/// label under every `label_every`-th bar.
pub fn bar_chart(title: &str, bars: &[Bar], label_every: usize) -> String {
    let (step, intervals) = y_axis(bars.iter().map(|b| b.value).max().unwrap_or(0));
    let max = step * intervals;
    let plot_w = WIDTH - LEFT - 8.0;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = plot_w / bars.len().max(1) as f64;
    let bar_w = (slot * 0.8).max(1.0);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         role=\"img\" aria-label=\"{t}\"><title>{t}</title>",
        t = esc(title)
    );
    for i in 0..=intervals {
        let v = step * i;
        let y = TOP + plot_h - plot_h * (i as f64) / intervals as f64;
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"axis\" x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{v}</text>",
            x2 = WIDTH - 8.0,
            tx = LEFT - 4.0,
            ty = y + 4.0
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let h = plot_h * b.value as f64 / max as f64;
        let x = LEFT + slot * i as f64 + (slot - bar_w) / 2.0;
        let y = TOP + plot_h - h;
        let _ = write!(
            s,
            "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bar_w:.1}\" height=\"{h:.1}\">\
             <title>{}: {}</title></rect>",
            esc(&b.label),
            b.value
        );
        if label_every > 0 && i % label_every == 0 {
            let _ = write!(
                s,
                "<text class=\"axis\" x=\"{cx:.1}\" y=\"{ly}\" text-anchor=\"middle\">{}</text>",
                esc(&b.tick),
                cx = x + bar_w / 2.0,
                ly = HEIGHT - 6.0
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The chart of a daily series: "Clicks per day, last 30 days".
pub fn daily_clicks(series: &[crate::stats::Point]) -> String {
    let bars: Vec<Bar> = series
        .iter()
        .map(|p| {
            let label = super::view::time(p.t.unix());
            Bar {
                tick: label[5..10].to_string(),
                label: label[..10].to_string(),
                value: p.clicks,
            }
        })
        .collect();
    bar_chart("Clicks per day, last 30 days", &bars, 5)
}

/// The chart of a link's clicks per A/B variant (one bar each, in the
/// link's order, labelled by the variant's number from 1 and its URL).
pub fn variant_clicks(variants: &[crate::stats::VariantCount]) -> String {
    let bars: Vec<Bar> = variants
        .iter()
        .map(|v| Bar {
            label: match &v.url {
                Some(url) => format!("Variant {} ({url})", v.index + 1),
                None => format!("Variant {}", v.index + 1),
            },
            tick: format!("{}", v.index + 1),
            value: v.clicks,
        })
        .collect();
    bar_chart("Clicks per variant, last 30 days", &bars, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_steps_are_nice_and_reach_the_top() {
        // (largest value, step, intervals)
        for (max, step, n) in [
            (0, 1, 1),
            (3, 1, 3),
            (4, 1, 4),
            (5, 2, 3),
            (7, 2, 4),
            (11, 5, 3),
            (20, 5, 4),
            (21, 10, 3),
            (999, 500, 2),
            (1_234_567, 500_000, 3),
        ] {
            assert_eq!(y_axis(max), (step, n), "{max}");
        }
        for max in 0..5000 {
            let (step, n) = y_axis(max);
            let mantissa = step / 10i64.pow(step.ilog10());
            assert!([1, 2, 5].contains(&mantissa), "{max}: step {step}");
            assert!(step * n >= max && (1..=INTERVALS).contains(&n), "{max}");
            assert!(step * (n - 1) < max.max(1), "{max}: a needless interval");
        }
    }

    #[test]
    fn the_axis_labels_are_multiples_of_the_step() {
        let bars: Vec<Bar> = [0, 5, 3]
            .iter()
            .map(|&value| Bar {
                label: String::new(),
                tick: String::new(),
                value,
            })
            .collect();
        let svg = bar_chart("c", &bars, 0);
        let labels: Vec<&str> = svg
            .split("text-anchor=\"end\">")
            .skip(1)
            .map(|t| t.split('<').next().unwrap())
            .collect();
        assert_eq!(labels, ["0", "2", "4", "6"]);
    }

    #[test]
    fn one_rect_per_bar_and_escaped_labels() {
        let bars: Vec<Bar> = (0..48)
            .map(|i| Bar {
                label: format!("<h{i}>"),
                tick: format!("{i}"),
                value: i,
            })
            .collect();
        let svg = bar_chart("Clicks & more", &bars, 6);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 48);
        assert!(svg.contains("Clicks &amp; more"));
        assert!(svg.contains("&lt;h47&gt;: 47"));
        assert!(!svg.contains("<h47>"));
        assert_eq!(svg.matches("text-anchor=\"middle\"").count(), 8);
    }

    #[test]
    fn one_labelled_bar_per_variant() {
        let v = |index, url: &str, clicks| crate::stats::VariantCount {
            index,
            url: Some(url.into()),
            weight: 1,
            clicks,
        };
        let svg = variant_clicks(&[
            v(0, "https://a.example/", 7),
            v(1, "https://b.example/?x&y", 0),
        ]);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 2);
        assert!(svg.contains("Variant 1 (https://a.example/): 7"), "{svg}");
        assert!(
            svg.contains("Variant 2 (https://b.example/?x&amp;y): 0"),
            "{svg}"
        );
        assert_eq!(svg.matches("text-anchor=\"middle\"").count(), 2);
    }
}
