//! `sbcast SOURCE DEST`: copies a file to every node of a running job, as Slurm
//! 22.05's sbcast does, for a job to read from a node-local disk. The controller says
//! where the job runs; each of its node daemons receives the file in chunks
//! (`NodeAgent.BroadcastFile`) and writes it with the rights of the job's user.
//!
//! The job is `-j/--jobid` or the allocation's (`SLURM_JOB_ID`); DEST, when not
//! absolute, is in sbcast's working directory. The file gets SOURCE's permission bits;
//! `-p/--preserve` also keeps its access and modification times, and `-f/--force`
//! replaces a DEST that exists (without it, that node answers `File exists`). The
//! compression, fanout, block size and timeout options are accepted and change nothing.
//!
//! ```text
//! sbcast -f ./model.bin /tmp/model.bin   →  (nothing; exit 0)
//! sbcast ./model.bin /tmp/model.bin      →  sbcast: error: REQUEST_FILE_BCAST(tn1): File exists
//! ```

use crate::args;
use crate::client;
use crate::exit::Exit;
use crate::jobs;
use crate::opts::{OptSpec, flag, optional, value};
use model::job_id::JobIdSpec;
use proto::v1::{FileChunk, FileHeader};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const PROG: &str = "sbcast";

const SPECS: &[OptSpec] = &[
    optional("compress", Some('C')),
    flag("force", Some('f')),
    value("fanout", Some('F')),
    flag("help", Some('h')),
    value("jobid", Some('j')),
    flag("preserve", Some('p')),
    value("size", Some('s')),
    value("timeout", Some('t')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

const USAGE: &str = "Usage: sbcast [-CfFjpstvV] SOURCE DEST\n";

const HELP: &str = "\
Usage: sbcast [OPTIONS] SOURCE DEST
  -C, --compress[=lib]  compress the file being transmitted (accepted)
  -f, --force           replace destination file as required
  -F, --fanout=num      specify message fanout (accepted)
  -j, --jobid=#[.#]     specify job ID and optional step ID
  -p, --preserve        preserve modes and times of source file
  -s, --size=num        block size in bytes (accepted)
  -t, --timeout=secs    specify message timeout (accepted)
  -v, --verbose         provide detailed event logging
  -V, --version         print version information and exit

Help options:
  --help                show this help message
  --usage               display brief usage message
";

/// What to send where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub job: JobIdSpec,
    pub source: PathBuf,
    /// Absolute.
    pub dest: String,
    pub force: bool,
    pub preserve: bool,
    /// `-v`, as many times as given: the options and the file are told first.
    pub verbose: usize,
}

/// The options, with `SBCAST_FORCE`/`SBCAST_PRESERVE` from `env` and the job from
/// `SLURM_JOB_ID` (or `SLURM_JOBID`) when `-j` is not given; `cwd` makes DEST absolute.
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Result<Options, Exit> {
    let p = args::parse_command_line(PROG, args, SPECS, &[], HELP, USAGE)?;
    let [source, dest] = p.positional.as_slice() else {
        return Err(Exit::usage(PROG, "Need two file names, have a nice day"));
    };
    let job_text = p
        .get("jobid")
        .map(String::from)
        .or_else(|| env("SLURM_JOB_ID"))
        .or_else(|| env("SLURM_JOBID"))
        .ok_or_else(|| Exit::error(PROG, "Need a job id, use --jobid or run in an allocation"))?;
    let job = JobIdSpec::parse(&job_text).map_err(|e| Exit::error(PROG, e.to_string()))?;
    let on = |flag: &str, var: &str| p.has(flag) || env(var).is_some();
    let dest = Path::new(dest);
    let dest = if dest.is_absolute() {
        dest.to_path_buf()
    } else {
        cwd.join(dest)
    };
    Ok(Options {
        job,
        source: PathBuf::from(source),
        dest: dest.display().to_string(),
        force: on("force", "SBCAST_FORCE"),
        preserve: on("preserve", "SBCAST_PRESERVE"),
        verbose: p.all("verbose").len(),
    })
}

/// The chunk size the file travels in.
const CHUNK: usize = 1 << 20;

pub fn run(args: &[String]) -> ExitCode {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let opts = match parse_args(args, &args::env_var, &cwd) {
        Ok(o) => o,
        Err(early) => return early.finish(),
    };
    match std::fs::metadata(&opts.source) {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return Exit::error(
                PROG,
                format!("{}: not a regular file", opts.source.display()),
            )
            .finish();
        }
        Err(e) => {
            return Exit::error(PROG, format!("Can't open `{}`: {e}", opts.source.display()))
                .finish();
        }
    };
    if opts.verbose > 0
        && let Ok(meta) = std::fs::metadata(&opts.source)
    {
        crate::say_raw!("{}", verbose_report(&opts, &meta));
    }
    let rt = client::runtime_with_io();
    match rt.block_on(broadcast(&opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => Exit::error(PROG, e).finish(),
    }
}

/// What `sbcast -v` tells first, as Slurm's: its options, then the file's modes, owner,
/// times and size.
fn verbose_report(opts: &Options, meta: &std::fs::Metadata) -> String {
    let time = |t: i64| crate::times::ctime_line(t);
    let rows = [
        ("block_size", CHUNK.to_string()),
        ("compress", "0".into()),
        ("force", opts.force.to_string()),
        ("fanout", "0".into()),
        ("preserve", opts.preserve.to_string()),
        ("timeout", "0".into()),
        ("verbose", opts.verbose.to_string()),
        ("source", opts.source.display().to_string()),
        ("dest", opts.dest.clone()),
    ];
    let file = [
        ("modes", format!("{:o}", meta.mode())),
        ("uid", meta.uid().to_string()),
        ("gid", meta.gid().to_string()),
        ("atime", time(meta.atime())),
        ("mtime", time(meta.mtime())),
        ("ctime", time(meta.ctime())),
        ("size", meta.len().to_string()),
    ];
    let mut out = format!("{PROG}: -----------------------------\n");
    for (k, v) in rows {
        out.push_str(&format!("{PROG}: {k:<10} = {v}\n"));
    }
    out.push_str(&format!("{PROG}: -----------------------------\n"));
    for (k, v) in file {
        out.push_str(&format!("{PROG}: {k:<8} = {v}\n"));
    }
    out.push_str(&format!("{PROG}: jobid      = {}\n", opts.job.job_id()));
    out
}

/// Sends the file to every node of the running job, one node after another.
async fn broadcast(opts: &Options) -> Result<(), String> {
    let (listing, agents) = crate::calls::jobs_and_agents(&[opts.job.without_step()]).await?;
    let job = listing
        .jobs
        .iter()
        .find(|j| jobs::select(&opts.job.without_step(), j).is_some())
        .ok_or_else(|| format!("Invalid job id {}", opts.job.job_id()))?;
    if jobs::job_state(job) != model::JobState::Running {
        return Err(format!("Job {} is not running", opts.job.job_id()));
    }
    let nodes = model::hostlist::expand(&job.nodes).map_err(|e| e.to_string())?;
    let mut targets = Vec::with_capacity(nodes.len());
    for node in nodes {
        let addr = agents
            .get(&node)
            .ok_or_else(|| format!("node {node} is not known"))?
            .clone();
        targets.push((node, addr));
    }
    send_file(
        job,
        &targets,
        &opts.source,
        |_| opts.dest.clone(),
        opts.force,
        opts.preserve,
    )
    .await
}

/// Sends `source` to each of `nodes` (name, agent address), one after another, where
/// `dest` names it on that node (absolute), with the rights of `job`'s user. The file
/// gets `source`'s permission bits; `preserve` also keeps its times, and `force`
/// replaces a file that exists. Used by sbcast and by `srun --bcast`.
pub async fn send_file(
    job: &proto::v1::JobInfo,
    nodes: &[(String, String)],
    source: &Path,
    dest: impl Fn(&str) -> String,
    force: bool,
    preserve: bool,
) -> Result<(), String> {
    let meta =
        std::fs::metadata(source).map_err(|e| format!("Can't open `{}`: {e}", source.display()))?;
    let spec = job.spec.clone().unwrap_or_default();
    // Read once, sent to each node in turn.
    let data = file_chunks(source)?;
    for (node, addr) in nodes {
        let header = FileHeader {
            job_id: job.job_id,
            uid: spec.uid,
            gid: spec.gid,
            path: dest(node),
            mode: meta.mode() & 0o7777,
            force,
            preserve,
            atime: meta.atime(),
            atime_nsec: meta.atime_nsec() as u32,
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec() as u32,
        };
        let chunks = std::iter::once(FileChunk {
            header: Some(header),
            data: Vec::new(),
        })
        .chain(data.iter().map(|d| FileChunk {
            header: None,
            data: d.clone(),
        }));
        let mut agent = crate::calls::node_agent(node, addr).await?;
        agent
            .broadcast_file(tokio_stream::iter(chunks.collect::<Vec<_>>()))
            .await
            .map_err(|s| {
                format!(
                    "REQUEST_FILE_BCAST({node}): {}",
                    crate::calls::status_text(&s)
                )
            })?;
    }
    Ok(())
}

/// The file's bytes, in the chunks a node's stream carries after its header.
fn file_chunks(source: &Path) -> Result<Vec<Vec<u8>>, String> {
    let mut file = std::fs::File::open(source)
        .map_err(|e| format!("Can't open `{}`: {e}", source.display()))?;
    let mut chunks = Vec::new();
    loop {
        let mut data = vec![0u8; CHUNK];
        let n = file
            .read(&mut data)
            .map_err(|e| format!("Can't read `{}`: {e}", source.display()))?;
        if n == 0 {
            return Ok(chunks);
        }
        data.truncate(n);
        chunks.push(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Options, Exit> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let env = |k: &str| {
            env.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        };
        parse_args(&args, &env, Path::new("/work"))
    }

    #[test]
    fn the_job_comes_from_the_allocation_and_dest_is_made_absolute() {
        let o = parse(&["-f", "data.bin", "copy.bin"], &[("SLURM_JOB_ID", "12")]).unwrap();
        assert_eq!(o.job.job_id(), 12);
        assert_eq!(o.dest, "/work/copy.bin");
        assert!(o.force && !o.preserve);
        let o = parse(
            &["-j", "14.0", "-C", "-F", "8", "a", "/tmp/a"],
            &[("SLURM_JOB_ID", "12"), ("SBCAST_PRESERVE", "1")],
        )
        .unwrap();
        assert_eq!((o.job.job_id(), o.dest.as_str()), (14, "/tmp/a"));
        assert!(o.preserve && !o.force);
    }

    #[test]
    fn verbose_tells_the_options_and_the_file() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), b"12345").unwrap();
        let src = file.path().to_str().unwrap();
        let o = parse(&["-vv", "-f", src, "/tmp/x"], &[("SLURM_JOB_ID", "12")]).unwrap();
        assert_eq!(o.verbose, 2);
        let text = verbose_report(&o, &std::fs::metadata(src).unwrap());
        for line in [
            "sbcast: force      = true\n",
            "sbcast: preserve   = false\n",
            "sbcast: verbose    = 2\n",
            "sbcast: dest       = /tmp/x\n",
            "sbcast: size     = 5\n",
            "sbcast: jobid      = 12\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(text.contains("sbcast: modes    = 100"), "{text}");
    }

    #[test]
    fn bad_command_lines_are_one_line_errors() {
        let e = parse(&["only-one"], &[("SLURM_JOB_ID", "1")]).unwrap_err();
        assert!(e.stderr.starts_with("sbcast: "), "{}", e.stderr);
        let e = parse(&["a", "b"], &[]).unwrap_err();
        assert_eq!(
            e.stderr,
            "sbcast: error: Need a job id, use --jobid or run in an allocation\n"
        );
        assert!(parse(&["-j", "x", "a", "b"], &[]).is_err());
        assert!(parse(&["--bogus", "a", "b"], &[("SLURM_JOB_ID", "1")]).is_err());
    }
}
