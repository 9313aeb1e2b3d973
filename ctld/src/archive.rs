//! ArchiveJobs: the records a purge drops, written to a file of their own before the
//! purge is committed (Slurm's ArchiveJobs and ArchiveDir of slurmdbd.conf). A file
//! holds one `JobArchive` message (protobuf, the records as `sacct` reads them, steps
//! included, without scripts and environments); `drover export csv|jsonl --archive
//! FILE` turns it into CSV or JSON lines. Files are the controller's owner's alone
//! (0600 in a 0700 directory), written whole and synced before the purge.
//!
//! Example: with `purge_job_after = "12months"` and `archive_jobs = true`, the tick of
//! 2026-12-01 00:00:30 UTC that purges jobs 17 to 2301 of cluster `gpu` first writes
//! `<archive_dir>/gpu_job_table_archive_2026-12-01T00:00:30_17-2301`.

use model::{Job, Time};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Writes `jobs` (in id order, at least one) to a new archive file in `dir`, made if
/// missing; returns its path once it is on disk.
pub fn write(dir: &Path, cluster: &str, now: Time, jobs: &[Job]) -> std::io::Result<PathBuf> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let (first, last) = (
        jobs.iter().map(|j| j.id).min().unwrap_or(0),
        jobs.iter().map(|j| j.id).max().unwrap_or(0),
    );
    // Slurm's archive names carry times as its timestamps (here in UTC).
    let when = model::timespec::timestamp(now, &jiff::tz::TimeZone::UTC);
    let path = dir.join(format!("{cluster}_job_table_archive_{when}_{first}-{last}"));
    let archive = proto::v1::JobArchive {
        cluster_name: cluster.to_string(),
        archived_at: now,
        jobs: jobs
            .iter()
            .map(|j| proto::convert::job_to_wire(j, None, now))
            .collect(),
    };
    // Written aside, synced, then named: a crash leaves no half archive under the name.
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(&proto::encode(&archive))?;
    file.sync_all()?;
    std::fs::rename(&partial, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn an_archive_holds_the_records_whole_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("archive");
        let mut jobs: Vec<Job> = [17, 2301]
            .map(|id| Job::new(id, model::JobSpec::default(), 5, None))
            .to_vec();
        jobs[0].spec.name = "train".into();
        let path = write(&at, "gpu", 1_796_083_230, &jobs).unwrap();
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            "gpu_job_table_archive_2026-12-01T00:00:30_17-2301"
        );
        let back: proto::v1::JobArchive = proto::decode(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            (back.cluster_name.as_str(), back.archived_at),
            ("gpu", 1_796_083_230)
        );
        let ids: Vec<u32> = back.jobs.iter().map(|j| j.job_id).collect();
        assert_eq!(ids, [17, 2301]);
        assert_eq!(back.jobs[0].spec.as_ref().unwrap().name, "train");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&path), mode(&at)), (0o600, 0o700));
        // Only the named file is left.
        assert_eq!(std::fs::read_dir(&at).unwrap().count(), 1);
    }
}
