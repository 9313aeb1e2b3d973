//! Everything a user types, fed arbitrary text: none of Slurm's syntaxes that `model`
//! reads panics, hangs or allocates without bound on any input, and those with a
//! formatter read back what it writes. Inputs are drawn twice: any Unicode text, and
//! text over each grammar's own characters, which reaches deeper into the parser.
//!
//! Example: `n[0-999999,0-999999,...]` (a hundred such ranges in one bracket) once
//! made a hundred million host names; it is now refused as too large before any is.

use model::timespec::{TimeSpec, Toward};
use proptest::prelude::*;

/// The number of inputs each property draws: CI runs them for a bounded time.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        ..ProptestConfig::default()
    }
}

/// Any text, or text of `alphabet`'s characters, up to 40 of them.
fn text(alphabet: &'static str) -> impl Strategy<Value = String> {
    let shaped = proptest::collection::vec(
        proptest::sample::select(alphabet.chars().collect::<Vec<_>>()),
        0..40,
    )
    .prop_map(|chars| chars.into_iter().collect::<String>());
    prop_oneof![any::<String>(), shaped]
}

const TIMES: &str = "0123456789:-+/TnowdayhoursminutesecondweekfoUNLIMITEDteamidnightnoonpmAM ";
const MEMORY: &str = "0123456789.KMGTPkmgtp-+ ";
const HOSTS: &str = "abn0123456789[],-";
const IDS: &str = "0123456789_[]-,%.+*abc ";
const BINDS: &str = "0123456789,:;quietverbosemap_cpumap_gpusinglenoneclosestcoresldomsrank ";
const WORDS: &str = "abcgpu0123456789&|*[]():,!=.-_ ";

proptest! {
    #![proptest_config(config())]

    #[test]
    fn time_limits_read_back_as_written(t in text(TIMES)) {
        if let Ok(minutes) = model::units::parse_time_limit(&t) {
            let again = model::units::parse_time_limit(&model::units::format_time_limit(minutes));
            prop_assert_eq!(again, Ok(minutes));
        }
        let _ = model::units::parse_duration_secs(&t);
    }

    #[test]
    fn memory_sizes_read_back_as_written(t in text(MEMORY)) {
        if let Ok(mb) = model::units::parse_memory_mb(&t) {
            prop_assert_eq!(
                model::units::parse_memory_mb(&model::units::format_memory_mb(mb)),
                Ok(mb)
            );
        }
    }

    #[test]
    fn begin_times_resolve_or_are_refused(t in text(TIMES)) {
        if let Ok(spec) = TimeSpec::parse(&t) {
            let _ = spec.resolve(1_700_000_000, Toward::Future, &jiff::tz::TimeZone::UTC);
        }
    }

    #[test]
    fn hostlists_expand_within_bounds_and_fold_back(t in text(HOSTS)) {
        if let Ok(hosts) = model::hostlist::expand(&t) {
            prop_assert!(hosts.len() <= 1 << 20);
            let folded = model::hostlist::fold(&hosts);
            let mut back = model::hostlist::expand(&folded).unwrap();
            let mut want = hosts.clone();
            back.sort();
            back.dedup();
            want.sort();
            want.dedup();
            prop_assert_eq!(back, want);
        }
    }

    #[test]
    fn job_ids_arrays_and_task_lists_never_panic(t in text(IDS)) {
        if let Ok(id) = model::job_id::JobIdSpec::parse(&t) {
            prop_assert_eq!(model::job_id::JobIdSpec::parse(&id.to_string()), Ok(id));
        }
        let _ = model::job_id::JobIdSpec::parse_list(&t);
        let _ = model::job_id::parse_task_list(&t);
        if let Ok(a) = model::job::parse_array(&t, 1001) {
            prop_assert!(a.task_ids.iter().all(|id| *id < 1001));
            prop_assert!(a.task_ids.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn binds_mail_mig_tres_and_constraints_never_panic(t in text(BINDS), w in text(WORDS)) {
        let _ = model::step::CpuBind::parse(&t);
        let _ = model::step::GpuBind::parse(&t);
        let _ = model::step::MpiType::parse(&t);
        let _ = model::mail::parse_mail_types(&w);
        let _ = model::node::parse_mig_layout(&w);
        let _ = model::tres::parse_counts(&w);
        let _ = model::tres::parse_weights(&w);
        let _ = model::constraint::Constraint::parse(&w);
    }

    #[test]
    fn job_updates_and_reservation_changes_never_panic(
        key in text("JobNameTimeLimitCommentNiceNumNodesStartTimeDependency"),
        value in text(TIMES),
        words in proptest::collection::vec(text("ReservationNameStartTimeDurationNodesUsersFlags=MAINT,0123456789:-"), 0..4),
    ) {
        let zone = jiff::tz::TimeZone::UTC;
        let _ = model::job_update::JobChange::parse(&key, &value, 1_700_000_000, &zone);
        let _ = model::reservation_change::ReservationChange::parse(&words, 1_700_000_000, &zone);
    }

    #[test]
    fn multi_prog_configurations_and_log_levels_never_panic(
        t in text("0123456789-,* \n\\'%tohelo#"),
        task in 0u32..100,
        ntasks in proptest::option::of(0u32..200),
    ) {
        let _ = model::multi_prog::task_argv(&t, task, &[]);
        if let Ok(checked) = model::multi_prog::check(&t, "f", ntasks) {
            prop_assert_eq!(checked.programs.len() as u32, checked.ntasks);
        }
        let _ = model::log_level::LogLevel::parse(&t);
    }

    #[test]
    fn any_config_text_parses_or_names_its_line(t in text("[]=\"\n abcdefghijklmnopqrstuvwxyz_0123456789.,#")) {
        if let Err(e) = model::Config::parse(&t, "drover.toml") {
            prop_assert!(e.to_string().starts_with("drover.toml:"), "{}", e);
        }
    }
}
