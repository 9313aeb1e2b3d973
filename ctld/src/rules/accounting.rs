//! `sacctmgr add|modify|delete`: operators and administrators change the accounts,
//! users and QOS, and an account's coordinators what lies in their accounts (as
//! Slurm's do: users' associations there, sub-accounts, the accounts' limits; never
//! AdminLevels, QOS or coordinators). The change (`model::assoc_change::apply`, pure)
//! is refused when it would take away an association or QOS that live jobs use.
//!
//! For example, `sacctmgr -i delete account ml` while alice's job in `ml` is pending
//! is refused with Slurm's "Job(s) active, cancel job(s) before remove"; once the job
//! ended, the account goes, and the change is durable with the turn that made it.

use super::Turn;
use crate::command::{ChangeAccounting, Rejection};
use model::assoc::{Associations, ROOT};
use model::assoc_change::{self, Action, AssocChange, Changed, Context, Entity};
use std::sync::Arc;

/// Applies the change (or, for a dry run, only says what it would do).
pub fn change(turn: &mut Turn, cmd: ChangeAccounting) -> Result<Changed, Rejection> {
    let current = turn
        .assocs
        .clone()
        .unwrap_or_else(|| turn.sched.assocs.clone());
    let who = &cmd.requester;
    if !who.is_operator() && !coordinator_may(&current, &who.user, &cmd.change) {
        return Err(Rejection::PermissionDenied);
    }
    let state = &*turn.state;
    let live = || state.pending_jobs().chain(state.running_jobs());
    let busy_assoc = |account: &str, user: &str| {
        live().any(|j| j.spec.account == account && (user.is_empty() || j.spec.user == user))
    };
    let busy_qos = |qos: &str| live().any(|j| current.qos_of(&j.spec) == qos);
    let ctx = Context {
        cluster: &turn.config.cluster_name,
        busy_assoc: &busy_assoc,
        busy_qos: &busy_qos,
    };
    let (next, changed) =
        assoc_change::apply(&current, &cmd.change, &ctx).map_err(Rejection::Invalid)?;
    if !cmd.dry_run && !changed.is_empty() {
        tracing::info!(
            by = %cmd.requester.user,
            action = ?cmd.change.action,
            entity = ?cmd.change.entity,
            names = ?changed.names,
            "accounting changed"
        );
        turn.assocs = Some(Arc::new(next));
    }
    Ok(changed)
}

/// May `user`, as a coordinator, make this change? Only within accounts they
/// coordinate (or that lie below one they do).
///
/// Example: bob coordinates `ml`: `add user carol account=ml/vision` and `modify account
/// vision set GrpJobs=4` are his to make; `add account x parent=root`, `modify user
/// carol set MaxJobs=2` (every account of carol's) and `set adminlevel=` are not.
fn coordinator_may(assocs: &Associations, user: &str, change: &AssocChange) -> bool {
    let coordinates = |account: &str| assocs.coordinates(user, account);
    let all = |accounts: &[String]| !accounts.is_empty() && accounts.iter().all(|a| coordinates(a));
    let s = &change.settings;
    match change.entity {
        Entity::User => {
            s.admin_level.is_none()
                && all(&change.conditions.accounts)
                && s.default_account.as_deref().is_none_or(coordinates)
        }
        Entity::Account => match change.action {
            Action::Add => coordinates(s.parent.as_deref().unwrap_or(ROOT)),
            Action::Modify => {
                all(&change.conditions.names) && s.parent.as_deref().is_none_or(coordinates)
            }
            // Only accounts below one they coordinate, not their own.
            Action::Delete => {
                !change.conditions.names.is_empty()
                    && change.conditions.names.iter().all(|name| {
                        assocs
                            .accounts
                            .get(name)
                            .and_then(|a| a.parent.as_deref())
                            .is_some_and(coordinates)
                    })
            }
        },
        Entity::Qos | Entity::Coordinator | Entity::Cluster => false,
    }
}
