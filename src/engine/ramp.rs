//! Rating curves: the logistic ramps by which the error models (`humane`, `stumble`, `aim`)
//! switch a behaviour on or off as a player's rating rises, smoothly, so that calibration moving
//! a level by a fraction of a level moves its errors by a fraction too; and the piecewise-linear
//! curves through measured points (people's figures by rating, a ladder's ratings by level).

/// The logistic function, 1 / (1 + e^−x).
pub fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// How far on a ramp centred at `mid` a player rated `rating` is: ½ at `mid`, rising by one
/// e-fold of the odds every `width` rating points.
pub fn ramp(rating: f64, mid: f64, width: f64) -> f64 {
    logistic((rating - mid) / width)
}

/// The value at `x` of the piecewise-linear curve through `points` (x, value), in order of x,
/// constant beyond its ends; a segment that does not rise in x is passed over. `None` without
/// points (or where only such segments span `x`).
pub fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    if x <= first.0 {
        return Some(first.1);
    }
    if x >= last.0 {
        return Some(last.1);
    }
    points.windows(2).find_map(|w| {
        let ((x0, v0), (x1, v1)) = (w[0], w[1]);
        (x >= x0 && x <= x1 && x1 > x0).then(|| v0 + (v1 - v0) * (x - x0) / (x1 - x0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_is_half_on_at_its_middle_and_rises_with_rating() {
        assert_eq!(ramp(1600.0, 1600.0, 60.0), 0.5);
        assert!(ramp(1500.0, 1600.0, 60.0) < 0.2);
        assert!(ramp(1700.0, 1600.0, 60.0) > 0.8);
        assert!((ramp(1660.0, 1600.0, 60.0) - logistic(1.0)).abs() < 1e-15);
        assert!((logistic(1.0) + logistic(-1.0) - 1.0).abs() < 1e-15);
    }
}
