//! What `sprio` and `sshare` show: a job's priority factors and the fair-share state of
//! an association. Computed by the scheduler (`sched::priority`, `sched::fairshare`),
//! carried over the wire by `proto::convert`.
//!
//! Example: a job whose age factor is 0.5 under `weight_age = 1000` shows AGE 500 in
//! `sprio` and 0.5000000 in `sprio -n`.

use crate::job::JobId;
use crate::tres::TresCounts;

/// A job's priority and the factors it is made of (what `sprio` shows). Factors are
/// normalized to [0, 1]; the weighted value of a factor is it times its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Factors {
    pub job_id: JobId,
    pub partition: String,
    pub user: String,
    pub uid: u32,
    pub account: String,
    pub qos: String,
    pub age: f64,
    pub fairshare: f64,
    pub job_size: f64,
    pub partition_factor: f64,
    pub qos_factor: f64,
    pub assoc: f64,
    /// Per weighted TRES: (name, factor).
    pub tres: Vec<(String, f64)>,
    pub nice: i64,
    pub site: i64,
    pub tier: u32,
    /// The resulting priority (0 when held).
    pub priority: u32,
}

/// One line of `sshare`: an account, or a user in an account.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareRow {
    pub account: String,
    /// `None` for an account's own row.
    pub user: Option<String>,
    /// The parent account (for a user: its account); `None` for root.
    pub parent: Option<String>,
    /// Root 0, its children 1, ...; a user is one deeper than its account.
    pub depth: u32,
    /// `None` for root.
    pub raw_shares: Option<u32>,
    /// Fair Tree: shares among siblings; classic: the product down the tree.
    pub norm_shares: f64,
    /// Decayed billing-seconds.
    pub raw_usage: f64,
    /// Usage over the whole cluster's.
    pub norm_usage: f64,
    /// Fair Tree: usage over the parent's; classic: the effective usage.
    pub effective_usage: f64,
    /// Fair Tree's level fair share (∞ when unused); `None` for root.
    pub level_fs: Option<f64>,
    /// The fair-share factor (users under Fair Tree; every row under classic).
    pub fairshare: Option<f64>,
    /// The account's GrpTRESMins limit.
    pub grp_tres_mins: TresCounts,
    /// TRES-minutes the running jobs below still hold by their time limits.
    pub tres_run_mins: TresCounts,
}
