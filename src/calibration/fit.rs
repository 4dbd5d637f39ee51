//! The weighted linear fit of measured rating against the level exponent x = L + o(L).

/// R ≈ intercept + slope · x, fitted with weights 1/SE².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineFit {
    pub intercept: f64,
    pub slope: f64,
    /// Levels that entered the fit.
    pub points: usize,
}

impl LineFit {
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FitError {
    #[error("a fit needs at least two levels with distinct exponents, got {0}")]
    TooFewPoints(usize),
}

/// Weighted least squares of `y` on `x`; `points` are (x, y, weight) with weight > 0.
pub fn weighted_line(points: &[(f64, f64, f64)]) -> Result<LineFit, FitError> {
    let points: Vec<_> = points
        .iter()
        .copied()
        .filter(|(x, y, w)| x.is_finite() && y.is_finite() && w.is_finite() && *w > 0.0)
        .collect();
    let sw: f64 = points.iter().map(|p| p.2).sum();
    if points.len() < 2 || sw <= 0.0 {
        return Err(FitError::TooFewPoints(points.len()));
    }
    let mx = points.iter().map(|p| p.2 * p.0).sum::<f64>() / sw;
    let my = points.iter().map(|p| p.2 * p.1).sum::<f64>() / sw;
    let sxx: f64 = points.iter().map(|p| p.2 * (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| p.2 * (p.0 - mx) * (p.1 - my)).sum();
    // Exponents closer than a thousandth of a level are the same point for this purpose.
    if sxx <= 1e-6 * sw {
        return Err(FitError::TooFewPoints(1));
    }
    let slope = sxy / sxx;
    Ok(LineFit {
        intercept: my - slope * mx,
        slope,
        points: points.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered_and_weights_matter() {
        let pts: Vec<_> = (1..=5)
            .map(|x| (x as f64, 100.0 + 200.0 * x as f64, 1.0))
            .collect();
        let f = weighted_line(&pts).unwrap();
        assert!((f.slope - 200.0).abs() < 1e-9 && (f.intercept - 100.0).abs() < 1e-9);
        // An outlier with a tiny weight barely moves the line.
        let mut pts = pts;
        pts.push((3.0, 5000.0, 1e-6));
        let f = weighted_line(&pts).unwrap();
        assert!((f.at(3.0) - 700.0).abs() < 1.0, "{f:?}");
    }

    #[test]
    fn one_point_is_not_a_line() {
        assert_eq!(
            weighted_line(&[(1.0, 5.0, 1.0), (1.0, 6.0, 1.0)]),
            Err(FitError::TooFewPoints(1))
        );
        assert_eq!(weighted_line(&[]), Err(FitError::TooFewPoints(0)));
    }
}
