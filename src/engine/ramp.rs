//! Rating ramps: the logistic curves by which the error models (`humane`, `stumble`) switch a
//! behaviour on or off as a player's rating rises, smoothly, so that calibration moving a level
//! by a fraction of a level moves its errors by a fraction too.

/// The logistic function, 1 / (1 + e^−x).
pub fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// How far on a ramp centred at `mid` a player rated `rating` is: ½ at `mid`, rising by one
/// e-fold of the odds every `width` rating points.
pub fn ramp(rating: f64, mid: f64, width: f64) -> f64 {
    logistic((rating - mid) / width)
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
