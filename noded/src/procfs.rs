//! Small readers of Linux `/proc`: which process is a job's supervisor, a process's
//! children and owner, what it read and wrote and its peak resident set, the boot time
//! and the memory size of the host.

use std::fs;
use std::path::Path;

/// The uid a process runs as (its `/proc` entry's owner), or `None` when it is gone.
pub fn owner(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid())
}

/// What a process read and wrote (`rchar`, `wchar` of `/proc/PID/io`), those of the
/// children it reaped included; a zombie's still reads. `None` when it is gone.
pub fn disk_io(pid: u32) -> Option<model::DiskIo> {
    parse_io(&fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

/// The highest resident set a live process has had, in bytes (`VmHWM` of
/// `/proc/PID/status`); `None` when it is gone or a zombie (whose memory is freed).
pub fn peak_rss(pid: u32) -> Option<u64> {
    parse_peak_rss(&fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// `VmHWM` from the text of `/proc/<pid>/status`, in bytes.
pub fn parse_peak_rss(text: &str) -> Option<u64> {
    Some(field(text, "VmHWM:")? * 1024)
}

/// The reads and writes from the text of `/proc/<pid>/io`.
pub fn parse_io(text: &str) -> Option<model::DiskIo> {
    Some(model::DiskIo {
        read_bytes: field(text, "rchar:")?,
        write_bytes: field(text, "wchar:")?,
    })
}

/// The number after `key` on its line of a `/proc` text of `key value [kB]` lines
/// (`/proc/meminfo`, `/proc/PID/status`, `/proc/PID/io`).
fn field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A process's command line, or `None` when it is gone (or a zombie).
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None;
    }
    let args = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Some(args)
}

/// True when `pid` is a live `drover-noded supervise <dir>` process.
pub fn is_supervisor_of(pid: u32, dir: &Path) -> bool {
    cmdline(pid)
        .is_some_and(|args| args.len() >= 3 && args[1] == "supervise" && Path::new(&args[2]) == dir)
}

fn pids() -> impl Iterator<Item = u32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The supervisor of the job in `dir`, found by its command line.
pub fn find_supervisor(dir: &Path) -> Option<u32> {
    pids().find(|pid| is_supervisor_of(*pid, dir))
}

/// The parent pid from the text of `/proc/<pid>/stat`.
pub fn parse_stat_ppid(stat: &str) -> Option<u32> {
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The state letter (`R`, `S`, `Z`, ...) from the text of `/proc/<pid>/stat`.
pub fn parse_stat_state(stat: &str) -> Option<char> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// The process group from the text of `/proc/<pid>/stat`.
pub fn parse_stat_pgrp(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// The processes of process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    pids()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat_pgrp(&s))
                == Some(pgid)
        })
        .collect()
}

/// Sends `signal` to the job's steps, as Slurm does without `--batch`/`--full`: every
/// process of the job's group except the batch shell itself (`pgid` is the shell's pid).
pub fn signal_steps(pgid: u32, signal: nix::sys::signal::Signal) {
    for pid in group_members(pgid).into_iter().filter(|p| *p != pgid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal);
    }
}

/// Of a step's processes, its tasks: those started from outside the step (by the node
/// daemon), not what they forked. Slurm's proctrack/cgroup signals only these, but
/// for SIGKILL.
pub fn tasks_among(procs: &[u32]) -> Vec<u32> {
    let all: std::collections::BTreeSet<u32> = procs.iter().copied().collect();
    procs
        .iter()
        .copied()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat_ppid(&s))
                .is_none_or(|parent| !all.contains(&parent))
        })
        .collect()
}

/// The processes whose parent is `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    pids()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat_ppid(&s))
                == Some(parent)
        })
        .collect()
}

/// When the host booted, in unix seconds.
pub fn boot_time() -> Option<i64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
}

/// `MemTotal` of a `/proc/meminfo` text, in MB.
pub fn parse_meminfo_mb(text: &str) -> Option<u64> {
    meminfo_field_mb(text, "MemTotal:")
}

fn meminfo_field_mb(text: &str, key: &str) -> Option<u64> {
    Some(field(text, key)? / 1024)
}

/// The 5-minute load average of a `/proc/loadavg` text, in hundredths (Slurm's
/// cpu_load, from the same average).
pub fn parse_loadavg_centi(text: &str) -> Option<u32> {
    let five: f64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((five * 100.0).round() as u32)
}

/// The host's free memory (`MemFree`, as Slurm's FreeMem) and load now.
pub fn load() -> Option<model::node::NodeLoad> {
    let meminfo = fs::read_to_string("/proc/meminfo").ok()?;
    Some(model::node::NodeLoad {
        free_mem_mb: meminfo_field_mb(&meminfo, "MemFree:")?,
        cpu_load_centi: parse_loadavg_centi(&fs::read_to_string("/proc/loadavg").ok()?)?,
    })
}

/// The host's memory in MB.
pub fn memory_mb() -> Option<u64> {
    parse_meminfo_mb(&fs::read_to_string("/proc/meminfo").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_from_io() {
        let text = "rchar: 10486560\nwchar: 10485760\nsyscr: 2621452\nsyscw: 2621440\n\
                    read_bytes: 0\nwrite_bytes: 10485760\ncancelled_write_bytes: 0\n";
        let io = parse_io(text).unwrap();
        assert_eq!((io.read_bytes, io.write_bytes), (10_486_560, 10_485_760));
        assert_eq!(parse_io("read_bytes: 4\nwrite_bytes: 5\n"), None);
        // This process has read something (its own executable's libraries, at least).
        assert!(disk_io(std::process::id()).is_some());
        assert_eq!(disk_io(u32::MAX), None);
    }

    #[test]
    fn peak_resident_set_from_status() {
        let text = "Name:\tprog\nVmPeak:\t  106000 kB\nVmHWM:\t  102908 kB\nVmRSS:\t    1200 kB\n";
        assert_eq!(parse_peak_rss(text), Some(102_908 * 1024));
        // A zombie's status has no memory lines.
        assert_eq!(parse_peak_rss("Name:\tprog\nState:\tZ (zombie)\n"), None);
        assert!(peak_rss(std::process::id()).is_some_and(|b| b > 0));
    }

    #[test]
    fn parses_group_from_stat() {
        assert_eq!(parse_stat_pgrp("12 (a b) S 1 40 40 0"), Some(40));
    }

    #[test]
    fn parses_proc_texts() {
        assert_eq!(parse_stat_ppid("123 (a b) c)) S 77 123 123 0"), Some(77));
        assert_eq!(parse_stat_ppid("garbage"), None);
        let meminfo = "MemTotal:       24683748 kB\nMemFree:        23934496 kB\n";
        assert_eq!(parse_meminfo_mb(meminfo), Some(24105));
        assert_eq!(parse_meminfo_mb("nothing"), None);
        assert_eq!(meminfo_field_mb(meminfo, "MemFree:"), Some(23373));
        assert_eq!(
            parse_loadavg_centi("0.52 1.25 0.98 2/311 4242\n"),
            Some(125)
        );
        assert_eq!(parse_loadavg_centi("garbage"), None);
    }

    #[test]
    fn finds_own_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        assert!(children_of(me).contains(&child.id()));
        // Right after the spawn the child may still be inside `exec`, with no command
        // line to read yet.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let args = loop {
            match cmdline(child.id()) {
                Some(args) => break args,
                None if std::time::Instant::now() < deadline => std::thread::yield_now(),
                None => panic!("no command line for the child"),
            }
        };
        assert!(args[0].ends_with("sleep"), "{args:?}");
        assert!(!is_supervisor_of(child.id(), Path::new("/")));
        // Of this process and its child, only this one was started from outside.
        assert_eq!(tasks_among(&[child.id(), me]), [me]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(boot_time().unwrap() > 0);
        assert!(memory_mb().unwrap() > 0);
    }
}
