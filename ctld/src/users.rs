//! User names and groups by uid, as this host's name service knows them: the
//! controller names a job's user from the uid its credential proved, never from what
//! the request says, and checks partitions' AllowGroups against the groups it finds.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Names looked up so far (a user's name does not change while the controller runs;
/// a uid the name service does not know yet may be a user added later, so it is
/// asked again).
#[derive(Debug, Default)]
pub struct UserNames {
    known: Mutex<BTreeMap<u32, String>>,
}

impl UserNames {
    /// The name of `uid`; a uid the name service does not know is named by its number,
    /// as Slurm shows it.
    pub fn name(&self, uid: u32) -> String {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(name) = known.get(&uid) {
            return name.clone();
        }
        match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
            Ok(Some(user)) => known.entry(uid).or_insert(user.name).clone(),
            _ => uid.to_string(),
        }
    }

    /// The names of the Unix groups `uid` is a member of: its primary group `gid` and
    /// the others that list it (asked every time: memberships change). Empty when the
    /// name service does not know the user.
    pub fn groups(&self, uid: u32, gid: u32) -> Vec<String> {
        use nix::unistd::{Gid, Group, User};
        let Ok(Some(user)) = User::from_uid(nix::unistd::Uid::from_raw(uid)) else {
            return Vec::new();
        };
        let Ok(name) = std::ffi::CString::new(user.name) else {
            return Vec::new();
        };
        let mut gids = nix::unistd::getgrouplist(&name, Gid::from_raw(gid)).unwrap_or_default();
        if !gids.contains(&Gid::from_raw(gid)) {
            gids.push(Gid::from_raw(gid));
        }
        gids.into_iter()
            .filter_map(|g| Group::from_gid(g).ok().flatten())
            .map(|g| g.name)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_named_and_an_unknown_uid_is_its_number() {
        let names = UserNames::default();
        assert_eq!(names.name(0), "root");
        assert_eq!(names.name(3_999_999_999), "3999999999");
        // Not kept: a user added later gets their name.
        assert!(!names.known.lock().unwrap().contains_key(&3_999_999_999));
    }

    #[test]
    fn roots_groups_include_its_primary_group_and_an_unknown_user_has_none() {
        let names = UserNames::default();
        assert!(names.groups(0, 0).contains(&"root".to_string()));
        assert!(names.groups(3_999_999_999, 0).is_empty());
    }
}
