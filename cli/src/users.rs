//! User and group names: looked up once by a command so rendering stays pure, a user
//! given by name or number, and whether a job belongs to one of some users.

use crate::jobs;
use proto::v1::JobInfo;
use std::collections::BTreeMap;

/// Resolved user and group names, looked up once by the command so rendering stays
/// pure. Missing entries print as the number.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub users: BTreeMap<u32, String>,
    pub groups: BTreeMap<u32, String>,
}

impl Names {
    pub fn user(&self, uid: u32) -> String {
        self.users
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }
    pub fn group(&self, gid: u32) -> String {
        self.groups
            .get(&gid)
            .cloned()
            .unwrap_or_else(|| gid.to_string())
    }

    /// Looks up the names of these ids on this machine.
    pub fn resolve(
        uids: impl IntoIterator<Item = u32>,
        gids: impl IntoIterator<Item = u32>,
    ) -> Names {
        let mut names = Names::default();
        for uid in uids {
            if let std::collections::btree_map::Entry::Vacant(e) = names.users.entry(uid)
                && let Some(name) = lookup_user(uid)
            {
                e.insert(name);
            }
        }
        for gid in gids {
            if let std::collections::btree_map::Entry::Vacant(e) = names.groups.entry(gid)
                && let Some(name) = lookup_group(gid)
            {
                e.insert(name);
            }
        }
        names
    }

    /// The job's user: the name it was submitted under, else its uid's.
    pub fn job_user(&self, job: &JobInfo) -> String {
        let s = jobs::spec(job);
        if s.user.is_empty() {
            self.user(s.uid)
        } else {
            s.user.clone()
        }
    }
}

/// The name of a user id on this machine.
pub fn lookup_user(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The name of a group id on this machine.
pub fn lookup_group(gid: u32) -> Option<String> {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(|g| g.name)
}

/// A user given by name or number, as both forms: `root` → `["root", "0"]`.
pub fn user_forms(user: &str) -> Vec<String> {
    let mut out = vec![user.to_string()];
    if let Ok(uid) = user.parse::<u32>() {
        if let Some(name) = lookup_user(uid) {
            out.push(name);
        }
    } else if let Ok(Some(u)) = nix::unistd::User::from_name(user) {
        out.push(u.uid.as_raw().to_string());
    }
    out
}

/// A group given by name or number, as its gid; `None` when no such group exists here.
pub fn group_id(group: &str) -> Option<u32> {
    match group.parse::<u32>() {
        Ok(gid) => Some(gid),
        Err(_) => nix::unistd::Group::from_name(group)
            .ok()
            .flatten()
            .map(|g| g.gid.as_raw()),
    }
}
