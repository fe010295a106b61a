//! The report's plots, drawn by plotters into SVG strings: every plot has a
//! title, labelled axes with units and a legend.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::PolicyRun;
use crate::metrics::{HeatMap, StepRecord};

/// Plot size, pixels.
const SIZE: (u32, u32) = (960, 380);
/// Most points drawn per line (steps are averaged into this many bins).
const MAX_POINTS: usize = 720;
/// Most heat-map rows (nodes are sampled evenly beyond this).
const MAX_ROWS: usize = 120;

/// Colours of successive policies.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x55, 0x55, 0x55),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
];

/// A named series: label, colour, value of a step.
type Named = (&'static str, RGBColor, fn(&StepRecord) -> f64);

/// A plotting failure (only possible with a broken backend; reported in
/// the page instead of the plot).
type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Averages `f` over bins of steps: (hour, value) points.
fn series(steps: &[StepRecord], f: impl Fn(&StepRecord) -> f64) -> Vec<(f64, f64)> {
    let bin = steps.len().div_ceil(MAX_POINTS).max(1);
    steps
        .chunks(bin)
        .map(|c| {
            let hour = c.last().map_or(0.0, |s| s.hour);
            (hour, c.iter().map(&f).sum::<f64>() / c.len() as f64)
        })
        .collect()
}

fn hours(runs: &[PolicyRun]) -> f64 {
    runs.iter().filter_map(|r| r.result.steps.last()).map(|s| s.hour).fold(0.0, f64::max).max(1e-6)
}

fn draw(
    f: impl FnOnce(DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> PlotResult,
) -> String {
    let mut svg = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        f(root)
    };
    match result {
        Ok(()) => svg,
        Err(e) => format!("<p>plot failed: {e}</p>"),
    }
}

type Root<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;
type TimeChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The hour ticks of an axis up to `hours`: every 6 h for a day or more
/// (0, 6, 12, 18, 24), every 1 or 2 h for shorter runs, at most 9.
pub fn hour_ticks(hours: f64) -> Vec<f64> {
    let step = [1.0, 2.0, 6.0, 12.0, 24.0, 48.0, 168.0]
        .into_iter()
        .find(|step| hours / step <= 8.0)
        .unwrap_or(24.0 * ((hours / 24.0 / 8.0).ceil()));
    let mut ticks = Vec::new();
    let mut t = 0.0;
    while t <= hours + 1e-9 {
        ticks.push(t);
        t += step;
    }
    ticks
}

/// A chart over simulated time (x from 0 to `hours`, y from 0 to `top`)
/// with its title and labelled axes.
fn time_chart<'a, 'b>(
    root: &'a Root<'b>,
    caption: &str,
    (hours, top): (f64, f64),
    (x_desc, y_desc): (&str, &str),
) -> Result<TimeChart<'a, 'b>, Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..hours.max(1e-6), 0f64..top.max(1e-6))?;
    let decimals = if top >= 10.0 { 0 } else { 1 };
    let ticks = hour_ticks(hours);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_label_formatter(&|v| format!("{v:.decimals$}"))
        // A mark every hour, a label at each of `hour_ticks` only.
        .x_labels((hours.ceil() as usize + 1).min(200))
        .x_label_formatter(&|v| {
            let labelled = ticks.iter().any(|t| (t - v).abs() < 1e-6);
            if labelled { format!("{v:.0}") } else { String::new() }
        })
        .draw()?;
    Ok(chart)
}

/// A legend entry drawn as a line.
fn line_key(
    c: RGBColor,
    width: u32,
    length: i32,
) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + length, y)], c.stroke_width(width))
}

/// Draws the legend at `position` and finishes the plot.
fn finish<'a, 'b>(
    root: &Root<'b>,
    chart: &mut TimeChart<'a, 'b>,
    position: SeriesLabelPosition,
) -> PlotResult
where
    'b: 'a,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Cluster CPU utilization over time, one line per policy, plus the LS +
/// system level (the same workload in every policy).
pub fn utilization(runs: &[PolicyRun]) -> String {
    draw(|root| {
        let mut chart = time_chart(
            &root,
            "Cluster CPU utilization",
            (hours(runs), 100.0),
            ("simulated time (h)", "CPU used / capacity (%)"),
        )?;
        for (i, r) in runs.iter().enumerate() {
            let c = colour(i + 1);
            let summary = &r.result.summary;
            chart
                .draw_series(LineSeries::new(
                    series(&r.result.steps, |s| s.cpu_utilization * 100.0),
                    c.stroke_width(2),
                ))?
                .label(format!(
                    "{} (avg {:.1}%)",
                    summary.policy,
                    summary.cpu_utilization_avg * 100.0
                ))
                .legend(line_key(c, 2, 20));
        }
        if let Some(r) = runs.first() {
            let ls_only = |s: &StepRecord| {
                let used = s.system_cpu + s.ls_cpu + s.be_cpu;
                if used > 0.0 {
                    s.cpu_utilization * (s.system_cpu + s.ls_cpu) / used * 100.0
                } else {
                    0.0
                }
            };
            chart
                .draw_series(LineSeries::new(
                    series(&r.result.steps, ls_only),
                    colour(0).stroke_width(1),
                ))?
                .label("LS + system only")
                .legend(line_key(colour(0), 1, 20));
        }
        finish(&root, &mut chart, SeriesLabelPosition::UpperRight)
    })
}

/// One policy's CPU use stacked: system, LS, BE, against capacity.
pub fn stacked(run: &PolicyRun, capacity_cores: f64) -> String {
    draw(|root| {
        let steps = &run.result.steps;
        let max_h = steps.last().map_or(1.0, |s| s.hour);
        let mut chart = time_chart(
            &root,
            &format!("{}: CPU used by LS and BE (stacked)", run.result.summary.policy),
            (max_h, capacity_cores * 1.25),
            ("simulated time (h)", "CPU (cores)"),
        )?;
        let layers: [Named; 3] = [
            ("BE pods", RGBColor(0xff, 0x9f, 0x4a), |s| s.system_cpu + s.ls_cpu + s.be_cpu),
            ("LS pods", RGBColor(0x1f, 0x77, 0xb4), |s| s.system_cpu + s.ls_cpu),
            ("system", RGBColor(0x99, 0x99, 0x99), |s| s.system_cpu),
        ];
        for (name, c, f) in layers {
            chart
                .draw_series(AreaSeries::new(series(steps, f), 0.0, c.mix(0.85)).border_style(c))?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
        }
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, capacity_cores), (max_h, capacity_cores)],
                BLACK.stroke_width(2),
            ))?
            .label(format!("capacity ({capacity_cores:.0} cores)"))
            .legend(line_key(BLACK, 2, 20));
        finish(&root, &mut chart, SeriesLabelPosition::UpperRight)
    })
}

/// The y-axis top shared by every policy's batch plot, so plots read
/// side by side compare at one scale.
pub fn batch_top(runs: &[PolicyRun]) -> f64 {
    runs.iter()
        .flat_map(|r| &r.result.steps)
        .map(|s| s.batch_allocatable.max(s.be_requested).max(s.be_cpu))
        .fold(1.0, f64::max)
        * 1.1
}

/// One policy's batch allocatable (what the manager published) against
/// what BE pods requested and used, up to `top` cores ([`batch_top`]).
pub fn batch(run: &PolicyRun, top: f64) -> String {
    draw(|root| {
        let steps = &run.result.steps;
        let max_h = steps.last().map_or(1.0, |s| s.hour);
        let mut chart = time_chart(
            &root,
            &format!("{}: batch allocatable vs BE requested and used", run.result.summary.policy),
            (max_h, top),
            ("simulated time (h)", "CPU (cores)"),
        )?;
        let lines: [Named; 3] = [
            ("batch-cpu allocatable (Σ nodes)", RGBColor(0x2c, 0xa0, 0x2c), |s| {
                s.batch_allocatable
            }),
            ("BE requested", RGBColor(0x94, 0x67, 0xbd), |s| s.be_requested),
            ("BE used", RGBColor(0xff, 0x7f, 0x0e), |s| s.be_cpu),
        ];
        for (name, c, f) in lines {
            chart
                .draw_series(LineSeries::new(series(steps, f), c.stroke_width(2)))?
                .label(name)
                .legend(line_key(c, 2, 20));
        }
        finish(&root, &mut chart, SeriesLabelPosition::LowerRight)
    })
}

/// (hour, count) per simulated hour of a per-step count.
fn per_hour(steps: &[StepRecord], f: fn(&StepRecord) -> u64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for s in steps {
        let end = (s.hour - 1e-9).max(0.0).floor() + 1.0;
        match out.last_mut() {
            Some(last) if last.0 == end => last.1 += f(s) as f64,
            _ => out.push((end, f(s) as f64)),
        }
    }
    out
}

/// Evictions and OOM kills per hour, one pair of lines per policy; a
/// sentence instead of a flat plot when there were none.
pub fn evictions(runs: &[PolicyRun]) -> String {
    let none = |r: &PolicyRun| {
        r.result.summary.be_pods_evicted == 0 && r.result.summary.be_pods_oom_killed == 0
    };
    if runs.iter().all(none) {
        return "<p><i>No evictions and no OOM kills under any policy.</i></p>\n".to_string();
    }
    draw(|root| {
        let data: Vec<_> = runs
            .iter()
            .map(|r| {
                (
                    per_hour(&r.result.steps, |s| s.evictions),
                    per_hour(&r.result.steps, |s| s.oom_kills),
                )
            })
            .collect();
        let top = data.iter().flat_map(|(e, o)| e.iter().chain(o)).map(|p| p.1).fold(1.0, f64::max)
            * 1.15;
        let mut chart = time_chart(
            &root,
            "BE pods evicted (agent) and OOM-killed (kernel), per hour",
            (hours(runs).ceil(), top),
            ("simulated time (h, end of each hour)", "pods per hour"),
        )?;
        for (i, (r, (ev, oom))) in runs.iter().zip(data).enumerate() {
            let c = colour(i + 1);
            let summary = &r.result.summary;
            chart
                .draw_series(LineSeries::new(ev.clone(), c.stroke_width(2)))?
                .label(format!("{}: evicted ({} total)", summary.policy, summary.be_pods_evicted))
                .legend(line_key(c, 2, 20));
            chart.draw_series(ev.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
            chart
                .draw_series(DashedLineSeries::new(oom, 6, 4, c.stroke_width(2)))?
                .label(format!(
                    "{}: OOM-killed ({} total)",
                    summary.policy, summary.be_pods_oom_killed
                ))
                .legend(line_key(c, 2, 8));
        }
        finish(&root, &mut chart, SeriesLabelPosition::UpperRight)
    })
}

/// Utilization colour: white (0%) → yellow → red → dark red (100%).
fn heat_colour(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    let stops = [
        (0.0, (255.0, 255.0, 255.0)),
        (0.35, (255.0, 230.0, 120.0)),
        (0.7, (230.0, 60.0, 40.0)),
        (1.0, (90.0, 0.0, 20.0)),
    ];
    for w in stops.windows(2) {
        let ((a, ca), (b, cb)) = (w[0], w[1]);
        if v <= b {
            let f = (v - a) / (b - a);
            let mixc = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
            return RGBColor(mixc(ca.0, cb.0), mixc(ca.1, cb.1), mixc(ca.2, cb.2));
        }
    }
    RGBColor(90, 0, 20)
}

/// Per-node CPU utilization over time (rows: nodes, sampled evenly when
/// there are many), with a colour scale.
pub fn heatmap(policy: &str, heat: &HeatMap) -> String {
    draw(|root| {
        root.fill(&WHITE)?;
        let (plot, legend) = root.split_horizontally(SIZE.0 - 110);
        let n = heat.rows.len();
        let stride = n.div_ceil(MAX_ROWS).max(1);
        let rows: Vec<(usize, &Vec<f32>)> = heat.rows.iter().enumerate().step_by(stride).collect();
        let buckets = heat.rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let max_h = buckets as f64 * heat.bucket_hours;
        let caption = if stride > 1 {
            format!("{policy}: CPU utilization per node (1 in {stride} of {n} nodes)")
        } else {
            format!("{policy}: CPU utilization per node ({n} nodes)")
        };
        let mut chart = ChartBuilder::on(&plot)
            .caption(caption, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..max_h, 0f64..rows.len() as f64)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("simulated time (h)")
            .y_desc("node (row)")
            .y_label_formatter(&|y| {
                // Only rows that exist get a label (the axis ends one past
                // the last row).
                rows.get(*y as usize).map_or(String::new(), |(node, _)| format!("#{node}"))
            })
            .draw()?;
        let bucket = heat.bucket_hours;
        chart.draw_series(rows.iter().enumerate().flat_map(|(r, (_, row))| {
            row.iter().enumerate().map(move |(b, v)| {
                let x = b as f64 * bucket;
                Rectangle::new(
                    [(x, r as f64), (x + bucket, r as f64 + 1.0)],
                    heat_colour(f64::from(*v)).filled(),
                )
            })
        }))?;
        // The colour scale.
        let mut scale = ChartBuilder::on(&legend)
            .margin_top(48)
            .margin_bottom(56)
            .margin_right(10)
            .y_label_area_size(50)
            .caption("CPU %", ("sans-serif", 16))
            .build_cartesian_2d(0f64..1f64, 0f64..100f64)?;
        scale
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(6)
            .y_label_style(("sans-serif", 14))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        scale.draw_series((0..100).map(|p| {
            Rectangle::new(
                [(0.0, p as f64), (1.0, p as f64 + 1.0)],
                heat_colour(p as f64 / 100.0).filled(),
            )
        }))?;
        root.present()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_downsamples_to_the_limit() {
        let steps: Vec<StepRecord> = (1..=8640)
            .map(|k| StepRecord {
                hour: k as f64 / 360.0,
                cpu_utilization: 0.5,
                ..StepRecord::default()
            })
            .collect();
        let s = series(&steps, |s| s.cpu_utilization);
        assert!(s.len() <= MAX_POINTS);
        assert!(s.iter().all(|p| (p.1 - 0.5).abs() < 1e-12));
        assert!((s.last().unwrap().0 - 24.0).abs() < 1e-9);
    }

    #[test]
    fn hours_tick_at_round_steps() {
        assert_eq!(hour_ticks(24.0), [0.0, 6.0, 12.0, 18.0, 24.0]);
        assert_eq!(hour_ticks(3.0), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(hour_ticks(12.0), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        assert_eq!(hour_ticks(168.0).len(), 8, "a week: daily");
        assert!(hour_ticks(10_000.0).len() <= 9);
    }

    #[test]
    fn heat_colour_ends() {
        assert_eq!(heat_colour(0.0), RGBColor(255, 255, 255));
        assert_eq!(heat_colour(1.0), RGBColor(90, 0, 20));
        assert_eq!(heat_colour(2.0), RGBColor(90, 0, 20));
    }
}
