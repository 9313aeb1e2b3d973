//! sbcast's files on this node (`NodeAgent.BroadcastFile`): each written, on a thread
//! of its own, with the rights of the job's user (`RunAs::thread_access`), so that a
//! user cannot put a file where they could not write one themselves. Without `--force`
//! a file that exists is refused (`File exists`, as Slurm's slurmd says); the file gets
//! the source's permission bits, and with `--preserve` its access and modification
//! times.
//!
//! Worked example: `sbcast -p ./model.bin /tmp/model.bin` in job 7 of user 1000 sends,
//! to each node of the job, a header (job 7, uid 1000, `/tmp/model.bin`, mode 0644,
//! times) and the bytes in chunks; each node writes them to a new `/tmp/model.bin`
//! owned by user 1000 and answers with the byte count.

use crate::user::RunAs;
use nix::errno::Errno;
use proto::v1;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use tokio::sync::mpsc;

/// Writes the file `header` names from the chunks `data` brings, until it closes;
/// gives the bytes written, or the error in Slurm's words (strerror's).
pub fn write(header: &v1::FileHeader, mut data: mpsc::Receiver<Vec<u8>>) -> Result<u64, String> {
    let path = Path::new(&header.path);
    if !path.is_absolute() {
        return Err(format!("{}: not an absolute path", header.path));
    }
    let user = RunAs::for_job(header.uid, header.gid, &[]).map_err(|e| e.to_string())?;
    let _rights = user.thread_access().map_err(|e| e.to_string())?;
    let mut options = OpenOptions::new();
    options.write(true).mode(0o600);
    if header.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).map_err(|e| strerror(&e))?;
    let mut written = 0u64;
    while let Some(chunk) = data.blocking_recv() {
        file.write_all(&chunk).map_err(|e| strerror(&e))?;
        written += chunk.len() as u64;
    }
    let mode = nix::sys::stat::Mode::from_bits_truncate(header.mode & 0o7777);
    nix::sys::stat::fchmod(file.as_fd(), mode).map_err(|e| e.desc().to_string())?;
    if header.preserve {
        let time = |secs: i64, nsec: u32| {
            nix::sys::time::TimeSpec::new(secs, i64::from(nsec.min(999_999_999)))
        };
        nix::sys::stat::futimens(
            file.as_fd(),
            &time(header.atime, header.atime_nsec),
            &time(header.mtime, header.mtime_nsec),
        )
        .map_err(|e| e.desc().to_string())?;
    }
    file.sync_all().map_err(|e| strerror(&e))?;
    Ok(written)
}

/// An I/O error as strerror words it: `File exists`, `Permission denied`.
fn strerror(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(path: &Path, force: bool) -> v1::FileHeader {
        v1::FileHeader {
            job_id: 7,
            uid: nix::unistd::Uid::effective().as_raw(),
            gid: nix::unistd::Gid::effective().as_raw(),
            path: path.display().to_string(),
            mode: 0o751,
            force,
            preserve: true,
            atime: 1_000_000,
            atime_nsec: 5,
            mtime: 2_000_000,
            mtime_nsec: 0,
        }
    }

    fn send(chunks: &[&[u8]]) -> mpsc::Receiver<Vec<u8>> {
        let (tx, rx) = mpsc::channel(chunks.len().max(1));
        for c in chunks {
            tx.try_send(c.to_vec()).unwrap();
        }
        rx
    }

    #[test]
    fn a_file_gets_its_bytes_mode_and_times_and_is_not_replaced_without_force() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert_eq!(write(&header(&path, false), send(&[b"ab", b"cd"])), Ok(4));
        // (Before a read, which would set the access time.)
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o751);
        assert_eq!((meta.atime(), meta.mtime()), (1_000_000, 2_000_000));
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
        assert_eq!(
            write(&header(&path, false), send(&[b"x"])),
            Err("File exists".to_string())
        );
        assert_eq!(write(&header(&path, true), send(&[b"x"])), Ok(1));
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
        let relative = header(Path::new("f"), true);
        assert!(write(&relative, send(&[])).is_err());
    }
}
