//! Detection quality on synthetic series (bench/history/README.md): series of 20-200 runs
//! with Gaussian noise of 1-10% and one step change of 1-20% at a random run (or none), and
//! the precision and recall of `e_divisive` on them.
//!
//! `cargo run -p loadmark-history --example synthetic [REPS] [SERIES_CSV] [ALPHA]`: REPS series per
//! cell (default 10); with SERIES_CSV, every series is also written there (one row per value:
//! `series,shift,noise,length,at,index,value`) for another detector (bench/history/otava_compare.py)
//! to read the very same series.

use loadmark_history::{e_divisive, Settings};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-300), self.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Counts of one cell: true changes found (within 2 runs), missed, and false ones.
#[derive(Default, Clone, Copy)]
struct Tally {
    found: u32,
    missed: u32,
    false_alarms: u32,
    series: u32,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.found += o.found;
        self.missed += o.missed;
        self.false_alarms += o.false_alarms;
        self.series += o.series;
    }
    fn recall(&self) -> f64 {
        self.found as f64 / (self.found + self.missed).max(1) as f64
    }
    fn precision(&self) -> f64 {
        self.found as f64 / (self.found + self.false_alarms).max(1) as f64
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let csv_path = args
        .next()
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from);
    let mut csv = String::from("series,shift,noise,length,at,index,value\n");
    let settings = Settings {
        alpha: args.next().and_then(|a| a.parse().ok()).unwrap_or(0.05),
        ..Settings::default()
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let shifts = [0.0, 0.01, 0.02, 0.03, 0.05, 0.10, 0.20];
    let noises = [0.01, 0.02, 0.05, 0.10];
    let lengths = [20usize, 50, 100, 200];
    println!("shift,noise,length,series,found,missed,false_alarms");
    let (mut big, mut null, mut all) = (Tally::default(), Tally::default(), Tally::default());
    let mut n_series = 0;
    for &shift in &shifts {
        for &noise in &noises {
            for &n in &lengths {
                let mut cell = Tally::default();
                for _ in 0..reps {
                    let at = 3 + (rng.next() * (n - 6) as f64) as usize;
                    let values: Vec<f64> = (0..n)
                        .map(|i| {
                            let level = if i >= at {
                                100.0 * (1.0 + shift)
                            } else {
                                100.0
                            };
                            level + 100.0 * noise * rng.normal()
                        })
                        .collect();
                    if csv_path.is_some() {
                        for (i, v) in values.iter().enumerate() {
                            csv.push_str(&format!("{n_series},{shift},{noise},{n},{at},{i},{v}\n"));
                        }
                    }
                    n_series += 1;
                    let found = e_divisive(&values, &settings);
                    let mut t = Tally {
                        series: 1,
                        ..Tally::default()
                    };
                    let hit = shift > 0.0 && found.iter().any(|c| c.index.abs_diff(at) <= 2);
                    if shift > 0.0 {
                        if hit {
                            t.found = 1;
                        } else {
                            t.missed = 1;
                        }
                    }
                    t.false_alarms = found.len() as u32 - u32::from(hit);
                    cell.add(t);
                }
                println!(
                    "{shift},{noise},{n},{},{},{},{}",
                    cell.series, cell.found, cell.missed, cell.false_alarms
                );
                if shift == 0.0 {
                    null.add(cell);
                } else {
                    all.add(cell);
                    if shift >= 3.0 * noise {
                        big.add(cell);
                    }
                }
            }
        }
    }
    if let Some(path) = &csv_path {
        std::fs::write(path, csv).unwrap();
    }
    eprintln!(
        "all shifts: recall {:.3}, precision {:.3} ({} series)",
        all.recall(),
        all.precision(),
        all.series
    );
    eprintln!(
        "shift >= 3 sd: recall {:.3}, precision {:.3} ({} series)",
        big.recall(),
        big.precision(),
        big.series
    );
    eprintln!(
        "no change: {} false change points in {} series ({:.3} per series)",
        null.false_alarms,
        null.series,
        null.false_alarms as f64 / null.series.max(1) as f64
    );
}
