//! The gate: is the newest run of a series a significant regression against the runs before
//! it? The baseline is the series since its last change point (E-divisive), so an old level
//! does not dilute the current one; the newest run is judged against the baseline's own
//! noise by a one-sided Student's t prediction test, and must also be worse by more than the
//! user's `--max-regression`: significant and large enough, both.

use crate::detect::{e_divisive, mean, relative, stdev, Settings};

/// The fewest baseline runs the gate needs to know a series' noise.
pub const MIN_BASELINE: usize = 3;

/// What the gate decided, and the figures it decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub regression: bool,
    /// Baseline runs (since the last change point) and their mean and standard deviation.
    pub baseline_runs: usize,
    /// Index (in the history given) of the baseline's first run.
    pub baseline_start: usize,
    pub baseline_mean: f64,
    pub baseline_sd: f64,
    pub newest: f64,
    /// Relative change of the newest run against the baseline mean (0.1: 10% higher).
    pub change: f64,
    /// One-sided p-value that a run of the baseline's level and noise is this bad or worse.
    pub p_value: f64,
    /// Why, in words.
    pub reason: String,
}

/// Judges `newest` against `history` (oldest first, the newest excluded).
/// `max_regression` is a share (0.05 for 5%).
pub fn judge(
    history: &[f64],
    newest: f64,
    higher_is_worse: bool,
    max_regression: f64,
    settings: &Settings,
) -> Verdict {
    let start = e_divisive(history, settings)
        .last()
        .map_or(0, |cp| cp.index);
    let base = &history[start..];
    let (m, sd) = (mean(base), stdev(base));
    let change = relative(m, newest);
    let worse_by = if higher_is_worse { change } else { -change };
    let mut v = Verdict {
        regression: false,
        baseline_runs: base.len(),
        baseline_start: start,
        baseline_mean: m,
        baseline_sd: sd,
        newest,
        change,
        p_value: 1.0,
        reason: String::new(),
    };
    if base.len() < MIN_BASELINE {
        v.reason = format!(
            "only {} earlier run{} at this level: at least {MIN_BASELINE} are needed to know the noise; not judged",
            base.len(),
            if base.len() == 1 { "" } else { "s" }
        );
        return v;
    }
    let n = base.len() as f64;
    let diff = if higher_is_worse {
        newest - m
    } else {
        m - newest
    };
    v.p_value = if sd > 0.0 {
        let t = diff / (sd * (1.0 + 1.0 / n).sqrt());
        1.0 - student_t_cdf(t, n - 1.0)
    } else if diff > 0.0 {
        0.0
    } else {
        1.0
    };
    let significant = v.p_value <= settings.alpha;
    let large = worse_by > max_regression;
    v.regression = significant && large;
    let direction = if change >= 0.0 { "above" } else { "below" };
    let facts = format!(
        "{:.1}% {direction} the mean of the {} runs before it (sd {:.1}% of the mean), p = {:.4}",
        100.0 * change.abs(),
        base.len(),
        100.0 * sd / m.abs().max(f64::MIN_POSITIVE),
        v.p_value
    );
    v.reason = match (significant, large) {
        (true, true) => format!(
            "{facts} ≤ alpha {} and worse by more than {:.1}%: a regression",
            settings.alpha,
            100.0 * max_regression
        ),
        (true, false) => format!(
            "{facts}: significant, but not worse by more than {:.1}%",
            100.0 * max_regression
        ),
        (false, _) => format!(
            "{facts} > alpha {}: within the series' noise",
            settings.alpha
        ),
    };
    v
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, x);
    if t > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued fraction).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// ln Γ(x), Lanczos' approximation (g = 7), x > 0.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_matches_its_tables() {
        // t(0.975, 10) = 2.228, t(0.95, 4) = 2.132, t(0.99, 30) = 2.457.
        assert!((student_t_cdf(2.228, 10.0) - 0.975).abs() < 1e-3);
        assert!((student_t_cdf(2.132, 4.0) - 0.95).abs() < 1e-3);
        assert!((student_t_cdf(2.457, 30.0) - 0.99).abs() < 1e-3);
        assert!((student_t_cdf(0.0, 5.0) - 0.5).abs() < 1e-12);
        assert!((student_t_cdf(-2.228, 10.0) - 0.025).abs() < 1e-3);
    }

    const HISTORY: [f64; 10] = [
        100.0, 102.0, 99.0, 101.0, 98.0, 100.0, 103.0, 99.0, 101.0, 100.0,
    ];

    #[test]
    fn a_run_far_above_a_quiet_history_is_a_regression() {
        let v = judge(&HISTORY, 115.0, true, 0.05, &Settings::default());
        assert!(v.regression, "{v:?}");
        assert!(v.p_value < 0.001);
        assert!((v.change - 0.1485).abs() < 0.01, "{v:?}");
        assert!(v.reason.contains("a regression"), "{}", v.reason);
    }

    #[test]
    fn a_small_or_noisy_change_passes_and_says_why() {
        // Significant (the history is quiet) but under the allowed 20%.
        let v = judge(&HISTORY, 110.0, true, 0.20, &Settings::default());
        assert!(!v.regression && v.p_value < 0.05, "{v:?}");
        assert!(
            v.reason.contains("not worse by more than 20.0%"),
            "{}",
            v.reason
        );
        // Within the noise.
        let v = judge(&HISTORY, 102.5, true, 0.01, &Settings::default());
        assert!(!v.regression && v.p_value > 0.05, "{v:?}");
        assert!(
            v.reason.contains("within the series' noise"),
            "{}",
            v.reason
        );
        // Throughput: higher is better, so a rise is no regression.
        let v = judge(&HISTORY, 130.0, false, 0.05, &Settings::default());
        assert!(!v.regression, "{v:?}");
        assert!(judge(&HISTORY, 80.0, false, 0.05, &Settings::default()).regression);
    }

    #[test]
    fn the_baseline_starts_at_the_last_change_point() {
        let mut history = vec![50.0, 51.0, 49.0, 50.0, 52.0, 50.0, 49.0, 51.0];
        history.extend(HISTORY);
        let v = judge(&history, 101.0, true, 0.05, &Settings::default());
        assert_eq!(v.baseline_start, 8, "{v:?}");
        assert!(!v.regression, "{v:?}");
        let v = judge(&[100.0, 101.0], 200.0, true, 0.05, &Settings::default());
        assert!(!v.regression && v.reason.contains("not judged"), "{v:?}");
    }
}
