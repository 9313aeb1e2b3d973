//! Running a job as the user who submitted it: who that uid is on this node (name, home,
//! shell, groups), opening the job's files with that user's rights, and the switch to
//! the user in the forked child before exec.
//!
//! A daemon running as root runs every job as its user: uid, the job's primary gid, the
//! user's supplementary groups, and `SLURM_UMASK` from the submit environment as the
//! umask. A daemon that is not root can only run jobs of its own uid, unswitched; the
//! jobs of others are refused, since they would run with the daemon's rights.

use nix::errno::Errno;
use nix::unistd::{Gid, Uid, User};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserError {
    #[error("user id {0} does not exist on this node")]
    Unknown(u32),
    #[error("cannot look up user id {uid}: {errno}")]
    Lookup { uid: u32, errno: Errno },
    #[error(
        "cannot run a job of user id {job_uid} here: the node daemon runs as user id \
         {daemon_uid}, not as root"
    )]
    NotRoot { job_uid: u32, daemon_uid: u32 },
    #[error("cannot take the rights of user id {uid}: {errno}")]
    Switch { uid: u32, errno: Errno },
}

/// The user a job runs as, resolved before the fork.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    pub home: String,
    pub shell: String,
    /// Supplementary groups, the primary gid included.
    groups: Vec<libc::gid_t>,
    /// The file mode creation mask; `None`: the supervisor's.
    umask: Option<libc::mode_t>,
    /// False when the daemon is not root and the job is its own: nothing to switch.
    switch: bool,
}

impl RunAs {
    /// The user of a job of `uid`/`gid` with the submit environment `env`.
    pub fn for_job(uid: u32, gid: u32, env: &[(String, String)]) -> Result<RunAs, UserError> {
        let me = Uid::effective();
        if !me.is_root() && me.as_raw() != uid {
            return Err(UserError::NotRoot {
                job_uid: uid,
                daemon_uid: me.as_raw(),
            });
        }
        let user = User::from_uid(Uid::from_raw(uid))
            .map_err(|errno| UserError::Lookup { uid, errno })?
            .ok_or(UserError::Unknown(uid))?;
        let name_c =
            std::ffi::CString::new(user.name.as_str()).map_err(|_| UserError::Unknown(uid))?;
        let mut groups: Vec<libc::gid_t> = nix::unistd::getgrouplist(&name_c, Gid::from_raw(gid))
            .map(|g| g.into_iter().map(Gid::as_raw).collect())
            .unwrap_or_else(|_| vec![gid]);
        if !groups.contains(&gid) {
            groups.push(gid);
        }
        let umask = env
            .iter()
            .find(|(k, _)| k == "SLURM_UMASK")
            .and_then(|(_, v)| libc::mode_t::from_str_radix(v, 8).ok())
            .filter(|m| *m <= 0o777);
        Ok(RunAs {
            uid,
            gid,
            name: user.name,
            home: user.dir.display().to_string(),
            shell: user.shell.display().to_string(),
            groups,
            umask,
            switch: me.is_root(),
        })
    }

    /// Takes the user's rights for file access until the guard drops: files opened
    /// meanwhile are opened as the user would open them. For a single-threaded caller.
    pub fn access(&self) -> Result<AccessGuard<'_>, UserError> {
        if !self.switch {
            return Ok(AccessGuard {
                saved: None,
                _user: std::marker::PhantomData,
            });
        }
        let saved: Vec<libc::gid_t> = nix::unistd::getgroups()
            .map(|g| g.into_iter().map(Gid::as_raw).collect())
            .unwrap_or_default();
        let fail = |errno| UserError::Switch {
            uid: self.uid,
            errno,
        };
        // SAFETY: plain id calls with a valid group array.
        unsafe {
            if libc::setgroups(self.groups.len(), self.groups.as_ptr()) != 0
                || libc::setegid(self.gid) != 0
            {
                let errno = Errno::last();
                restore_root(&saved);
                return Err(fail(errno));
            }
            if libc::seteuid(self.uid) != 0 {
                let errno = Errno::last();
                restore_root(&saved);
                return Err(fail(errno));
            }
        }
        Ok(AccessGuard {
            saved: Some(saved),
            _user: std::marker::PhantomData,
        })
    }

    /// Takes the user's rights for file access on the calling thread only, until the
    /// guard drops: Linux's per-thread filesystem ids and supplementary groups, set
    /// with raw system calls (glibc's wrappers would switch every thread of the daemon
    /// alike). For a thread the caller started for this work alone.
    pub fn thread_access(&self) -> Result<ThreadAccess, UserError> {
        if !self.switch {
            return Ok(ThreadAccess { saved: None });
        }
        let saved: Vec<libc::gid_t> = nix::unistd::getgroups()
            .map(|g| g.into_iter().map(Gid::as_raw).collect())
            .unwrap_or_default();
        // SAFETY: raw id system calls of this thread, with a valid group array.
        let switched = unsafe {
            libc::syscall(libc::SYS_setgroups, self.groups.len(), self.groups.as_ptr()) == 0 && {
                libc::syscall(libc::SYS_setfsgid, self.gid);
                libc::syscall(libc::SYS_setfsuid, self.uid);
                // Each returns the id before the call: asking to keep it reads it.
                libc::syscall(libc::SYS_setfsuid, u32::MAX) == i64::from(self.uid)
                    && libc::syscall(libc::SYS_setfsgid, u32::MAX) == i64::from(self.gid)
            }
        };
        let guard = ThreadAccess { saved: Some(saved) };
        if !switched {
            return Err(UserError::Switch {
                uid: self.uid,
                errno: Errno::EPERM,
            });
        }
        Ok(guard)
    }

    /// In the forked child, before exec: become the user for good. Only
    /// async-signal-safe calls.
    pub fn enter(&self) -> Result<(), Errno> {
        // SAFETY: plain libc calls on memory allocated before the fork.
        unsafe {
            if let Some(mask) = self.umask {
                libc::umask(mask);
            }
            if !self.switch {
                return Ok(());
            }
            if libc::setgroups(self.groups.len(), self.groups.as_ptr()) != 0
                || libc::setresgid(self.gid, self.gid, self.gid) != 0
                || libc::setresuid(self.uid, self.uid, self.uid) != 0
            {
                return Err(Errno::last());
            }
        }
        Ok(())
    }

    /// The user's login environment, as Slurm's `--get-user-env` loads it
    /// (`env_array_user_default`): what a login shell of the user sets, read from
    /// `su - USER -c 'env -0'` as root (the user's own login shell, `SHELL -l`, when the
    /// daemon runs as the user), given up after `timeout`.
    pub fn login_environment(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Vec<(String, String)>, String> {
        use std::process::{Command, Stdio};
        let mut command = if self.switch {
            let mut c = Command::new("su");
            c.args(["-", &self.name, "-c", "env -0"]);
            c
        } else {
            let mut c = Command::new(&self.shell);
            c.args(["-l", "-c", "env -0"]);
            c
        };
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start a login shell: {e}"))?;
        let mut stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let read = std::io::Read::read_to_end(&mut stdout, &mut out);
            let _ = tx.send(read.map(|_| out));
        });
        let out = match rx.recv_timeout(timeout) {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return Err(format!("cannot read the login shell's output: {e}")),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the login shell gave no environment within {} s",
                    timeout.as_secs()
                ));
            }
        };
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("the login shell failed ({status})"));
        }
        Ok(parse_env0(&out))
    }

    /// The login variables a job of this user has when the submit environment lacks
    /// them (`--export=NONE`): HOME, USER, LOGNAME, SHELL.
    pub fn login_env(&self) -> [(&'static str, String); 4] {
        [
            ("HOME", self.home.clone()),
            ("USER", self.name.clone()),
            ("LOGNAME", self.name.clone()),
            ("SHELL", self.shell.clone()),
        ]
    }
}

/// `NAME=VALUE` entries separated by NUL bytes (`env -0`); entries without `=` or with
/// an empty name are skipped.
fn parse_env0(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (name, value) = text.split_once('=')?;
            (!name.is_empty()).then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// While alive, file access is checked as the job's user (see `RunAs::access`).
pub struct AccessGuard<'a> {
    /// The supervisor's own groups, when the rights were switched.
    saved: Option<Vec<libc::gid_t>>,
    _user: std::marker::PhantomData<&'a RunAs>,
}

impl Drop for AccessGuard<'_> {
    fn drop(&mut self) {
        if let Some(groups) = &self.saved {
            restore_root(groups);
        }
    }
}

/// While alive, this thread's file access is checked as the job's user (see
/// `RunAs::thread_access`).
pub struct ThreadAccess {
    /// The thread's own groups, when the rights were switched.
    saved: Option<Vec<libc::gid_t>>,
}

impl Drop for ThreadAccess {
    fn drop(&mut self) {
        if let Some(groups) = &self.saved {
            // SAFETY: raw id system calls of this thread, with a valid group array.
            unsafe {
                libc::syscall(libc::SYS_setfsuid, 0);
                libc::syscall(libc::SYS_setfsgid, 0);
                libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr());
            }
        }
    }
}

/// Back to root's rights (the saved set-user-id is still 0) and its own groups.
fn restore_root(groups: &[libc::gid_t]) {
    // SAFETY: plain id calls with a valid group array.
    unsafe {
        let _ = libc::seteuid(0);
        let _ = libc::setegid(0);
        let _ = libc::setgroups(groups.len(), groups.as_ptr());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_environment_is_read_from_env_0() {
        let out = b"HOME=/home/a\0PATH=/usr/bin:/bin\0MULTI=line one\nline two\0=x\0junk\0";
        assert_eq!(
            parse_env0(out),
            [
                ("HOME".to_string(), "/home/a".to_string()),
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("MULTI".into(), "line one\nline two".into()),
            ]
        );
    }

    #[test]
    fn the_daemons_own_user_resolves_with_its_umask() {
        let me = Uid::effective().as_raw();
        let gid = Gid::effective().as_raw();
        let env = vec![("SLURM_UMASK".to_string(), "0027".to_string())];
        let user = RunAs::for_job(me, gid, &env).unwrap();
        assert_eq!(user.uid, me);
        assert!(user.groups.contains(&gid));
        assert_eq!(user.umask, Some(0o027));
        assert!(!user.home.is_empty());
        let bad = vec![("SLURM_UMASK".to_string(), "9".to_string())];
        assert_eq!(RunAs::for_job(me, gid, &bad).unwrap().umask, None);
    }

    #[test]
    fn an_unknown_uid_is_refused() {
        let err = RunAs::for_job(3_999_999_999, 0, &[]).unwrap_err();
        // As root the lookup fails; as another user the switch would.
        assert!(
            matches!(err, UserError::Unknown(_) | UserError::NotRoot { .. }),
            "{err}"
        );
    }
}
