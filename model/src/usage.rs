//! Usage history per association, decayed with a half-life, as fair share and
//! GrpTRESMins need it.
//!
//! A record holds billing-seconds and TRES-seconds *as of* a time `at`; reading it at
//! a later time multiplies by `2^(-(now - at) / half_life)`. A job that held a rate `r`
//! (billing units per second) from `s` to `e` adds, decayed continuously to `e`,
//! `r · h/ln2 · (1 − 2^(−(e − s)/h))` — the exact integral of `r · 2^(−(e − t)/h)` over
//! its run, which is `r · (e − s)` when decay is off (`h = 0`).
//!
//! Example: with a 7-day half-life, 1,000 billing-seconds recorded at day 0 read as
//! 500 at day 7 and 250 at day 14; a 1-CPU job of one hour adds ≈ 3,592.6 (its early seconds already decayed a little).

use crate::job::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An association's key in usage maps: (account, user).
pub type AssocKey = (String, String);

/// Decayed usage of one association.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssocUsage {
    /// TRES-seconds weighted by the billing weights (Slurm's RawUsage).
    pub billing: f64,
    /// TRES-seconds per TRES name (`cpu`, `mem` in MB-seconds, `gres/gpu`, ...).
    pub tres: BTreeMap<String, f64>,
    /// Wall-clock seconds the association's jobs ran, each job once whatever it held
    /// (Slurm's `grp_used_wall`, for GrpWall).
    pub wall: f64,
    /// The time the values are decayed to.
    pub at: Time,
}

/// The factor usage keeps over `dt` seconds with this half-life (0: no decay).
pub fn decay(dt: Time, half_life_s: u64) -> f64 {
    if half_life_s == 0 || dt <= 0 {
        1.0
    } else {
        (-(dt as f64) / half_life_s as f64).exp2()
    }
}

/// Usage of a constant `rate` held from `from` to `to`, decayed to `to`.
pub fn decayed_integral(rate: f64, from: Time, to: Time, half_life_s: u64) -> f64 {
    if to <= from || rate == 0.0 {
        return 0.0;
    }
    let dt = (to - from) as f64;
    if half_life_s == 0 {
        return rate * dt;
    }
    let h = half_life_s as f64;
    rate * h / std::f64::consts::LN_2 * (1.0 - (-dt / h).exp2())
}

impl AssocUsage {
    /// The record read at `now` (never earlier than it was written).
    pub fn decayed(&self, now: Time, half_life_s: u64) -> AssocUsage {
        let f = decay(now - self.at, half_life_s);
        AssocUsage {
            billing: self.billing * f,
            tres: self.tres.iter().map(|(k, v)| (k.clone(), v * f)).collect(),
            wall: self.wall * f,
            at: now.max(self.at),
        }
    }

    /// Adds usage decayed to the same time.
    pub fn add(&mut self, other: &AssocUsage) {
        self.billing += other.billing;
        for (k, v) in &other.tres {
            *self.tres.entry(k.clone()).or_default() += v;
        }
        self.wall += other.wall;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_every_half_life() {
        let week = 7 * 86400;
        let u = AssocUsage {
            billing: 1000.0,
            tres: BTreeMap::from([("cpu".into(), 1000.0)]),
            wall: 100.0,
            at: 0,
        };
        assert!((u.decayed(week as Time, week).billing - 500.0).abs() < 1e-9);
        assert!((u.decayed(2 * week as Time, week).tres["cpu"] - 250.0).abs() < 1e-9);
        assert!((u.decayed(week as Time, week).wall - 50.0).abs() < 1e-9);
        assert_eq!(u.decayed(5, 0).billing, 1000.0);
        let hour = decayed_integral(1.0, 0, 3600, week);
        assert!((hour - 3592.58).abs() < 0.01, "{hour}");
        assert_eq!(decayed_integral(2.0, 10, 20, 0), 20.0);
        assert_eq!(decayed_integral(2.0, 20, 10, week), 0.0);
    }
}
