//! The geometry of the activity chart: two series of per-minute counts drawn
//! as paired bars, with a y axis rounded up to a readable maximum. Pure
//! arithmetic, so it is tested natively; `pages::activity` turns it into SVG.

/// The drawing area of one chart, in SVG user units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// Total width.
    pub width: f64,
    /// Total height.
    pub height: f64,
    /// Room left of the plot for the y labels.
    pub left: f64,
    /// Room below the plot for the x labels.
    pub bottom: f64,
    /// Room above the plot.
    pub top: f64,
    /// Room right of the plot.
    pub right: f64,
}

impl Frame {
    /// The frame the console draws its charts in.
    pub const STANDARD: Frame = Frame {
        width: 720.0,
        height: 200.0,
        left: 44.0,
        bottom: 28.0,
        top: 10.0,
        right: 10.0,
    };

    /// Width of the plot area.
    pub fn plot_width(&self) -> f64 {
        self.width - self.left - self.right
    }

    /// Height of the plot area.
    pub fn plot_height(&self) -> f64 {
        self.height - self.top - self.bottom
    }

    /// The y coordinate of the x axis.
    pub fn baseline(&self) -> f64 {
        self.height - self.bottom
    }
}

/// One bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Which minute (0 = the oldest).
    pub slot: usize,
    /// 0 for the first series, 1 for the second.
    pub series: usize,
    /// Its count.
    pub value: i64,
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height (0 for a zero count).
    pub height: f64,
}

/// The smallest "round" number (1, 2 or 5 times a power of ten) at or above
/// `max`, and at least 1, so an idle hour still has an axis.
pub fn axis_max(max: i64) -> i64 {
    let mut step = 1_i64;
    loop {
        for factor in [1, 2, 5] {
            let candidate = step.saturating_mul(factor);
            if candidate >= max {
                return candidate;
            }
        }
        step = step.saturating_mul(10);
    }
}

/// The bars of two series over the same minutes, side by side in each minute's slot.
pub fn bars(first: &[i64], second: &[i64], frame: &Frame) -> (Vec<Bar>, i64) {
    let slots = first.len().max(second.len()).max(1);
    let top = axis_max(first.iter().chain(second).copied().max().unwrap_or(0));
    let slot_width = frame.plot_width() / slots as f64;
    let bar_width = (slot_width * 0.42).max(0.5);
    let mut out = Vec::with_capacity(first.len() + second.len());
    for (series, values) in [first, second].into_iter().enumerate() {
        for (slot, &value) in values.iter().enumerate() {
            let value = value.max(0);
            let height = frame.plot_height() * value as f64 / top as f64;
            out.push(Bar {
                slot,
                series,
                value,
                x: frame.left
                    + slot as f64 * slot_width
                    + slot_width * 0.08
                    + series as f64 * bar_width,
                y: frame.baseline() - height,
                width: bar_width,
                height,
            });
        }
    }
    (out, top)
}

/// The x coordinate of the middle of a minute's slot.
pub fn slot_centre(slot: usize, slots: usize, frame: &Frame) -> f64 {
    let slot_width = frame.plot_width() / slots.max(1) as f64;
    frame.left + (slot as f64 + 0.5) * slot_width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_rounds_up_to_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(axis_max(0), 1);
        assert_eq!(axis_max(1), 1);
        assert_eq!(axis_max(3), 5);
        assert_eq!(axis_max(7), 10);
        assert_eq!(axis_max(11), 20);
        assert_eq!(axis_max(200), 200);
        assert_eq!(axis_max(201), 500);
    }

    #[test]
    fn the_largest_count_reaches_the_top_and_zero_draws_nothing() {
        let frame = Frame::STANDARD;
        let (bars, top) = bars(&[0, 10, 5], &[2, 0, 0], &frame);
        assert_eq!(top, 10);
        assert_eq!(bars.len(), 6);
        let tallest = bars.iter().find(|b| b.value == 10).expect("a bar of 10");
        assert!((tallest.height - frame.plot_height()).abs() < 1e-9);
        assert!((tallest.y - frame.top).abs() < 1e-9);
        let zero = &bars[0];
        assert_eq!(zero.height, 0.0);
        assert_eq!(zero.y, frame.baseline());
    }

    #[test]
    fn bars_stay_inside_the_plot_and_pairs_do_not_overlap() {
        let frame = Frame::STANDARD;
        let first: Vec<i64> = (0..60).collect();
        let second: Vec<i64> = (0..60).rev().collect();
        let (bars, _) = bars(&first, &second, &frame);
        for bar in &bars {
            assert!(bar.x >= frame.left, "{bar:?}");
            assert!(
                bar.x + bar.width <= frame.width - frame.right + 1e-9,
                "{bar:?}"
            );
            assert!(bar.y >= frame.top - 1e-9, "{bar:?}");
        }
        let a = bars
            .iter()
            .find(|b| b.slot == 30 && b.series == 0)
            .expect("a");
        let b = bars
            .iter()
            .find(|b| b.slot == 30 && b.series == 1)
            .expect("b");
        assert!(a.x + a.width <= b.x + 1e-9);
        let next = bars
            .iter()
            .find(|b| b.slot == 31 && b.series == 0)
            .expect("next");
        assert!(b.x + b.width <= next.x);
    }
}
