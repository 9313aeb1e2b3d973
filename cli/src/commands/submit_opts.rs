//! The job options of `sbatch` and `srun`: one table of every option ([`OPTIONS`]: its
//! getopt spelling, its `SBATCH_*` input variable, the commands that take it, and what
//! it sets, or that it is accepted and ignored), `#SBATCH` directives, `--export`, and
//! the one function that turns the options into the `JobSpec` sent to the controller. Pure: the caller hands in the environment,
//! the working directory, the user, the host and the clock.
//!
//! Precedence is Slurm's: `#SBATCH` lines < input environment variables < command line,
//! by applying the three sources in that order (a later value replaces an earlier one).
//!
//! Where the wire has no word for something, the nearest one is sent: `--time=0` and
//! `--time=UNLIMITED` send 0 (the partition's default time, itself the partition's
//! maximum unless configured), `--mem=0` sends 0 (the partition's default), and unset
//! counts send 0 (unspecified; the model reads them as 1).

use crate::exit::Exit;
use crate::opts::{ArgKind, OptSpec, flag, optional, value};
use crate::signals::parse_signal;
use crate::words::split_words;
use model::timespec::{LocalZone, TimeSpec, Toward};
use model::units;
use proto::v1;
use std::sync::LazyLock;

/// Where an option came from; a later source wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Source {
    Script,
    Env,
    Cli,
}

/// The command an option is given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Sbatch,
    Srun,
    Salloc,
}

impl Command {
    /// The command's name, which starts its error lines.
    pub fn name(self) -> &'static str {
        match self {
            Command::Sbatch => "sbatch",
            Command::Srun => "srun",
            Command::Salloc => "salloc",
        }
    }
}

/// Which commands take an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takers {
    /// sbatch and srun; salloc takes them too.
    Both,
    Sbatch,
    Srun,
    Salloc,
}

impl Takers {
    fn include(self, command: Command) -> bool {
        matches!(
            (self, command),
            (Takers::Both, _)
                | (Takers::Sbatch, Command::Sbatch)
                | (Takers::Srun, Command::Srun)
                | (Takers::Salloc, Command::Salloc)
        )
    }
}

/// One option's value as it is applied: where it came from and what to say about a bad
/// one.
#[derive(Debug, Clone, Copy)]
pub struct Arg<'a> {
    pub prog: &'a str,
    pub name: &'static str,
    pub value: &'a str,
    pub source: Source,
}

impl Arg<'_> {
    /// Keeps the value as given.
    fn text(&self, slot: &mut Option<String>) -> Result<(), Exit> {
        *slot = Some(self.value.to_string());
        Ok(())
    }

    /// Slurm's words for a value it cannot read: `Invalid --NAME specification`.
    fn bad(&self) -> Exit {
        Exit::error(self.prog, format!("Invalid --{} specification", self.name)).with_code(255)
    }

    /// A value the model refused, with its words (each line as `PROG: error: ...`).
    fn refused(&self, words: &str) -> Exit {
        let lines: Vec<String> = words
            .lines()
            .map(|l| format!("{}: error: {l}", self.prog))
            .collect();
        Exit::raw(lines.join("\n"))
    }

    /// A count above 0.
    fn positive(&self) -> Result<u32, Exit> {
        positive(self.prog, &format!("--{}", self.name), self.value)
    }

    /// GPUs as `[type:]count`.
    fn gpus(&self) -> Result<Gpu, Exit> {
        parse_gpu_count(self.value).ok_or_else(|| gres_error(self.prog))
    }

    /// A memory size for one of the three memory options.
    fn memory(&self, o: &mut SubmitOpts, kind: MemKind) -> Result<(), Exit> {
        let mb = units::parse_memory_mb(self.value).map_err(|_| self.bad())?;
        o.mem.push((kind, mb, self.source));
        Ok(())
    }
}

/// Applies an option's value to the options.
pub type Setter = fn(&mut SubmitOpts, &Arg<'_>) -> Result<(), Exit>;

/// What an option does.
#[derive(Clone, Copy)]
pub enum Set {
    To(Setter),
    /// Accepted and ignored, as a cluster without the feature would (`--help` lists
    /// these).
    Ignored,
}

/// One option of `sbatch` or `srun`: its getopt spelling, the `SBATCH_*` input
/// variable that also sets it, the commands that take it, and what it sets. A new
/// option is one entry of [`OPTIONS`].
#[derive(Clone, Copy)]
pub struct OptDef {
    pub spec: OptSpec,
    /// sbatch's input environment variable for it.
    pub env: Option<&'static str>,
    pub takers: Takers,
    pub set: Set,
}

impl OptDef {
    const fn both(spec: OptSpec, set: Setter) -> OptDef {
        OptDef {
            spec,
            env: None,
            takers: Takers::Both,
            set: Set::To(set),
        }
    }

    const fn only(takers: Takers, spec: OptSpec, set: Setter) -> OptDef {
        OptDef {
            spec,
            env: None,
            takers,
            set: Set::To(set),
        }
    }

    const fn ignored(takers: Takers, spec: OptSpec) -> OptDef {
        OptDef {
            spec,
            env: None,
            takers,
            set: Set::Ignored,
        }
    }

    const fn env(self, var: &'static str) -> OptDef {
        OptDef {
            env: Some(var),
            ..self
        }
    }

    /// True for an option accepted without effect.
    pub fn ignored_here(&self) -> bool {
        matches!(self.set, Set::Ignored)
    }
}

use Takers::{Both, Salloc as SallocOnly, Sbatch as SbatchOnly, Srun as SrunOnly};

/// Every option of `sbatch` and `srun`, by name.
pub const OPTIONS: &[OptDef] = &[
    OptDef::both(value("account", Some('A')), |o, a| a.text(&mut o.account)).env("SBATCH_ACCOUNT"),
    OptDef::ignored(Both, value("acctg-freq", None)),
    OptDef::ignored(SrunOnly, value("accel-bind", None)),
    OptDef::only(SbatchOnly, value("array", Some('a')), |o, a| {
        a.text(&mut o.array)
    })
    .env("SBATCH_ARRAY_INX"),
    OptDef::ignored(SbatchOnly, value("batch", None)),
    OptDef::ignored(Both, value("bb", None)),
    // sbatch splices the file into the script (`sbatch::add_burst_buffer_file`).
    OptDef::only(SbatchOnly, value("bbf", None), |o, a| {
        a.text(&mut o.burst_buffer_file)
    }),
    OptDef::ignored(SrunOnly, value("bbf", None)),
    OptDef::only(SrunOnly, optional("bcast", None), |o, a| {
        o.bcast = Some(a.value.to_string());
        Ok(())
    }),
    OptDef::only(SallocOnly, flag("bell", None), |o, _| {
        o.bell = Some(true);
        Ok(())
    })
    .env("SALLOC_BELL"),
    OptDef::both(value("begin", Some('b')), |o, a| {
        TimeSpec::parse(a.value).map_err(|_| a.bad())?;
        a.text(&mut o.begin)
    }),
    OptDef::both(value("chdir", Some('D')), |o, a| a.text(&mut o.chdir)),
    OptDef::ignored(Both, value("cluster-constraint", None)),
    OptDef::both(value("clusters", Some('M')), |o, a| a.text(&mut o.clusters))
        .env("SBATCH_CLUSTERS"),
    OptDef::both(value("cluster", None), |o, a| a.text(&mut o.clusters)),
    OptDef::both(value("comment", None), |o, a| a.text(&mut o.comment)),
    OptDef::ignored(SrunOnly, optional("compress", None)),
    OptDef::both(value("constraint", Some('C')), |o, a| {
        a.text(&mut o.constraint)
    })
    .env("SBATCH_CONSTRAINT"),
    OptDef::ignored(Both, value("container", None)),
    OptDef::both(flag("contiguous", None), |o, _| {
        o.contiguous = true;
        Ok(())
    }),
    // Core and thread specialization are not modelled: taken and ignored, but not
    // together (`check_specialization`).
    OptDef::both(value("core-spec", Some('S')), |o, a| {
        o.core_spec_from = Some(a.source);
        Ok(())
    })
    .env("SBATCH_CORE_SPEC"),
    OptDef::ignored(Both, value("cores-per-socket", None)),
    OptDef::only(SrunOnly, value("cpu-bind", None), |o, a| {
        model::step::CpuBind::parse(a.value).map_err(|e| Exit::error(a.prog, e))?;
        a.text(&mut o.cpu_bind)
    }),
    OptDef::ignored(Both, value("cpu-freq", None)),
    OptDef::both(value("cpus-per-gpu", None), |o, a| {
        o.cpus_per_gpu = Some(a.positive()?);
        Ok(())
    })
    .env("SBATCH_CPUS_PER_GPU"),
    OptDef::both(value("cpus-per-task", Some('c')), |o, a| {
        o.cpus_per_task = Some(a.positive()?);
        Ok(())
    }),
    OptDef::both(value("deadline", None), |o, a| {
        TimeSpec::parse(a.value).map_err(|_| a.bad())?;
        a.text(&mut o.deadline)
    })
    .env("SBATCH_DEADLINE"),
    OptDef::only(SrunOnly, flag("debugger-test", None), |o, _| {
        o.debugger_test = true;
        Ok(())
    }),
    OptDef::ignored(Both, value("delay-boot", None)),
    OptDef::both(value("dependency", Some('d')), |o, a| {
        a.text(&mut o.dependency)
    }),
    OptDef::only(SrunOnly, flag("disable-status", Some('X')), |o, _| {
        o.disable_status = true;
        Ok(())
    }),
    OptDef::both(value("distribution", Some('m')), |o, a| {
        let d = model::distribution::Distribution::parse(a.value)
            .map_err(|m| Exit::error(a.prog, m))?;
        o.distribution = Some(d);
        Ok(())
    })
    .env("SBATCH_DISTRIBUTION"),
    OptDef::ignored(SrunOnly, value("epilog", None)),
    OptDef::both(value("error", Some('e')), |o, a| a.text(&mut o.error)).env("SBATCH_ERROR"),
    OptDef::ignored(SrunOnly, flag("exact", None)),
    OptDef::both(value("exclude", Some('x')), |o, a| a.text(&mut o.exclude)),
    OptDef::both(optional("exclusive", None), |o, _| {
        o.exclusive = true;
        Ok(())
    })
    .env("SBATCH_EXCLUSIVE"),
    OptDef::both(value("export", None), |o, a| a.text(&mut o.export)).env("SBATCH_EXPORT"),
    OptDef::ignored(SbatchOnly, value("export-file", None)),
    OptDef::ignored(Both, value("extra-node-info", Some('B'))),
    OptDef::ignored(Both, optional("get-user-env", None)),
    OptDef::both(value("gpu-bind", None), |o, a| {
        model::step::GpuBind::parse(a.value).map_err(|e| a.refused(&e))?;
        o.gpu_bind = Some(a.value.to_string());
        Ok(())
    }),
    OptDef::both(value("gpu-freq", None), |o, a| {
        model::step::check_gpu_freq(a.value).map_err(|e| a.refused(&e))?;
        a.text(&mut o.gpu_freq)
    }),
    OptDef::both(value("gpus", Some('G')), |o, a| {
        o.gpus = Some(a.gpus()?);
        Ok(())
    })
    .env("SBATCH_GPUS"),
    OptDef::both(value("gpus-per-node", None), |o, a| {
        o.gpus_per_node = Some(a.gpus()?);
        Ok(())
    })
    .env("SBATCH_GPUS_PER_NODE"),
    OptDef::both(value("gpus-per-socket", None), |o, a| {
        o.gpus_per_socket = Some(a.gpus()?);
        Ok(())
    }),
    OptDef::both(value("gpus-per-task", None), |o, a| {
        o.gpus_per_task = Some(a.gpus()?);
        Ok(())
    })
    .env("SBATCH_GPUS_PER_TASK"),
    OptDef::both(value("gres", None), |o, a| {
        o.gres = Some(parse_gres(a.value).ok_or_else(|| gres_error(a.prog))?);
        Ok(())
    })
    .env("SBATCH_GRES"),
    OptDef::ignored(Both, value("gres-flags", None)),
    OptDef::both(flag("help", Some('h')), |o, _| {
        o.help = true;
        Ok(())
    }),
    // The components of a heterogeneous allocation the step runs in: `1`, `0-2`, `0,2`.
    OptDef::only(SrunOnly, value("het-group", None), |o, a| {
        let (groups, throttle) = model::job_id::parse_task_list(a.value)
            .filter(|(g, _)| !g.is_empty())
            .ok_or_else(|| {
                Exit::error(a.prog, format!("Invalid --het-group value: {}", a.value))
            })?;
        if throttle > 0 {
            return Err(Exit::error(
                a.prog,
                format!("Invalid --het-group value: {}", a.value),
            ));
        }
        o.het_group = Some(groups);
        Ok(())
    }),
    OptDef::ignored(Both, value("hint", None)),
    OptDef::both(flag("hold", Some('H')), |o, _| {
        o.hold = true;
        Ok(())
    }),
    OptDef::only(SbatchOnly, flag("ignore-pbs", None), |o, _| {
        o.ignore_pbs = true;
        Ok(())
    }),
    // Slurm reads a bare --immediate as 1 second, and 0 as no limit.
    OptDef::both(optional("immediate", Some('I')), |o, a| {
        o.immediate = if a.value.is_empty() {
            Some(1)
        } else {
            Some(a.value.trim().parse::<u32>().map_err(|_| a.bad())?).filter(|s| *s > 0)
        };
        Ok(())
    }),
    OptDef::both(value("input", Some('i')), |o, a| a.text(&mut o.input)).env("SBATCH_INPUT"),
    OptDef::both(value("job-name", Some('J')), |o, a| a.text(&mut o.job_name))
        .env("SBATCH_JOB_NAME"),
    OptDef::only(SrunOnly, value("jobid", None), |o, a| a.text(&mut o.jobid)),
    OptDef::only(SallocOnly, optional("kill-command", Some('K')), |o, a| {
        o.kill_command = Some(if a.value.is_empty() {
            libc::SIGTERM
        } else {
            parse_signal(a.value).ok_or_else(|| a.bad())?
        });
        Ok(())
    })
    .env("SALLOC_KILL_CMD"),
    OptDef::only(SrunOnly, optional("kill-on-bad-exit", Some('K')), |o, a| {
        o.kill_on_bad_exit = a.value != "0";
        Ok(())
    }),
    OptDef::both(value("kill-on-invalid-dep", None), |o, a| {
        o.kill_on_invalid_dep = Some(match a.value.to_ascii_lowercase().as_str() {
            "yes" | "y" | "1" => true,
            "no" | "n" | "0" => false,
            _ => return Err(a.bad()),
        });
        Ok(())
    }),
    OptDef::only(SrunOnly, flag("label", Some('l')), |o, _| {
        o.label = true;
        Ok(())
    }),
    OptDef::both(value("licenses", Some('L')), |o, a| a.text(&mut o.licenses)),
    OptDef::both(value("mail-type", None), |o, a| {
        let types = model::mail::parse_mail_types(a.value).map_err(|m| Exit::error(a.prog, m))?;
        o.mail_types = Some(types);
        Ok(())
    }),
    OptDef::both(value("mail-user", None), |o, a| a.text(&mut o.mail_user)),
    OptDef::ignored(Both, value("mcs-label", None)),
    OptDef::both(value("mem", None), |o, a| a.memory(o, MemKind::Node)).env("SBATCH_MEM_PER_NODE"),
    OptDef::ignored(Both, value("mem-bind", None)),
    OptDef::both(value("mem-per-cpu", None), |o, a| a.memory(o, MemKind::Cpu))
        .env("SBATCH_MEM_PER_CPU"),
    OptDef::both(value("mem-per-gpu", None), |o, a| a.memory(o, MemKind::Gpu))
        .env("SBATCH_MEM_PER_GPU"),
    OptDef::both(value("mincpus", None), |o, a| {
        o.min_cpus = Some(a.positive()?);
        Ok(())
    }),
    OptDef::only(SrunOnly, value("mpi", None), |o, a| {
        if a.value.eq_ignore_ascii_case("list") {
            let types: String = model::step::MpiType::ALL
                .iter()
                .map(|t| format!("\t{}\n", t.name()))
                .collect();
            return Err(Exit::info(format!("MPI plugin types are...\n{types}")));
        }
        o.mpi = Some(model::step::MpiType::parse(a.value).map_err(|m| Exit::error(a.prog, m))?);
        Ok(())
    }),
    OptDef::only(SrunOnly, flag("multi-prog", None), |o, _| {
        o.multi_prog = true;
        Ok(())
    }),
    OptDef::ignored(Both, value("network", None)),
    // Slurm reads a bare --nice as 100 and a non-number as 0.
    OptDef::both(optional("nice", None), |o, a| {
        o.nice = Some(if a.value.is_empty() {
            100
        } else {
            a.value.trim().parse().unwrap_or(0)
        });
        Ok(())
    }),
    OptDef::ignored(SrunOnly, flag("no-allocate", Some('Z'))),
    OptDef::only(SallocOnly, flag("no-bell", None), |o, _| {
        o.bell = Some(false);
        Ok(())
    })
    .env("SALLOC_NO_BELL"),
    OptDef::ignored(Both, optional("no-kill", Some('k'))),
    OptDef::both(flag("no-requeue", None), |o, _| {
        o.requeue = Some(false);
        Ok(())
    })
    .env("SBATCH_NO_REQUEUE"),
    OptDef::ignored(Both, value("nodefile", Some('F'))),
    OptDef::both(value("nodelist", Some('w')), |o, a| a.text(&mut o.nodelist)),
    OptDef::only(SallocOnly, flag("no-shell", None), |o, _| {
        o.no_shell = true;
        Ok(())
    }),
    OptDef::both(value("nodes", Some('N')), |o, a| {
        let (least, most) = parse_node_count(a.prog, a.value)?;
        o.nodes = Some(least);
        o.max_nodes = most;
        Ok(())
    }),
    OptDef::both(value("ntasks", Some('n')), |o, a| {
        o.ntasks = Some(a.positive()?);
        Ok(())
    }),
    OptDef::ignored(Both, value("ntasks-per-core", None)),
    OptDef::both(value("ntasks-per-gpu", None), |o, a| {
        o.ntasks_per_gpu = Some(a.positive()?);
        Ok(())
    })
    .env("SBATCH_NTASKS_PER_GPU"),
    OptDef::both(value("ntasks-per-node", None), |o, a| {
        o.ntasks_per_node = Some(a.positive()?);
        Ok(())
    }),
    OptDef::ignored(Both, value("ntasks-per-socket", None)),
    // Slurm's one TRES per task is the GPU: `--ntasks-per-gpu` by its other name.
    OptDef::both(value("ntasks-per-tres", None), |o, a| {
        o.ntasks_per_tres = Some(a.positive()?);
        Ok(())
    }),
    OptDef::both(value("open-mode", None), |o, a| {
        o.open_mode_append = Some(match a.value.chars().next() {
            Some('a' | 'A') => true,
            Some('t' | 'T') => false,
            _ => return Err(a.bad()),
        });
        Ok(())
    })
    .env("SBATCH_OPEN_MODE"),
    OptDef::both(value("output", Some('o')), |o, a| a.text(&mut o.output)).env("SBATCH_OUTPUT"),
    OptDef::both(flag("overcommit", Some('O')), |o, _| {
        o.overcommit = true;
        Ok(())
    })
    .env("SBATCH_OVERCOMMIT"),
    OptDef::ignored(SrunOnly, flag("overlap", None)),
    OptDef::both(flag("oversubscribe", Some('s')), |o, _| {
        o.oversubscribe = true;
        Ok(())
    }),
    OptDef::only(SbatchOnly, flag("parsable", None), |o, _| {
        o.parsable = true;
        Ok(())
    }),
    OptDef::both(value("partition", Some('p')), |o, a| {
        a.text(&mut o.partition)
    })
    .env("SBATCH_PARTITION"),
    OptDef::ignored(Both, optional("power", None)),
    OptDef::ignored(Both, value("prefer", None)),
    OptDef::only(SrunOnly, flag("preserve-env", Some('E')), |o, _| {
        o.preserve_env = true;
        Ok(())
    }),
    // A number below Slurm's NO_VAL, or TOP (NO_VAL - 1, the highest); only an
    // operator's job may have one (the controller checks).
    OptDef::both(value("priority", None), |o, a| {
        let v = a.value.trim();
        o.priority = Some(if v.eq_ignore_ascii_case("TOP") {
            model::job::TOP_PRIORITY
        } else {
            match v.parse::<i64>() {
                Ok(n) if n < 0 => return Err(Exit::error(a.prog, "Priority must be >= 0")),
                Ok(n) if n > i64::from(model::job::TOP_PRIORITY) => {
                    let most = model::job::TOP_PRIORITY + 1;
                    return Err(Exit::error(a.prog, format!("Priority must be < {most}")));
                }
                Ok(n) => n as u32,
                Err(_) => {
                    return Err(Exit::error(a.prog, format!("Invalid priority: {v}")));
                }
            }
        });
        Ok(())
    }),
    OptDef::ignored(Both, value("profile", None)),
    OptDef::ignored(SrunOnly, value("prolog", None)),
    OptDef::ignored(Both, optional("propagate", None)),
    OptDef::only(SrunOnly, flag("pty", None), |o, _| {
        o.pty = true;
        Ok(())
    }),
    OptDef::both(value("qos", Some('q')), |o, a| a.text(&mut o.qos)).env("SBATCH_QOS"),
    OptDef::both(flag("quiet", Some('Q')), |o, _| {
        o.quiet = true;
        Ok(())
    }),
    OptDef::only(SrunOnly, flag("quit-on-interrupt", None), |o, _| {
        o.quit_on_interrupt = true;
        Ok(())
    }),
    OptDef::ignored(Both, flag("reboot", None)),
    OptDef::only(SrunOnly, value("relative", Some('r')), |o, a| {
        o.relative = Some(a.value.trim().parse().map_err(|_| a.bad())?);
        Ok(())
    }),
    OptDef::both(flag("requeue", None), |o, _| {
        o.requeue = Some(true);
        Ok(())
    })
    .env("SBATCH_REQUEUE"),
    OptDef::both(value("reservation", None), |o, a| {
        a.text(&mut o.reservation)
    })
    .env("SBATCH_RESERVATION"),
    OptDef::ignored(SrunOnly, optional("send-libs", None)),
    OptDef::both(value("signal", None), |o, a| {
        o.signal = Some(parse_signal_spec(a.value).ok_or_else(|| a.bad())?);
        Ok(())
    })
    .env("SBATCH_SIGNAL"),
    OptDef::only(SrunOnly, value("slurmd-debug", None), |o, a| {
        o.slurmd_debug = Some(model::log_level::LogLevel::parse(a.value).map_err(|_| a.bad())?);
        Ok(())
    }),
    OptDef::both(value("sockets-per-node", None), |o, a| {
        o.sockets_per_node = Some(a.positive()?);
        Ok(())
    }),
    OptDef::both(flag("spread-job", None), |o, _| {
        o.spread_job = true;
        Ok(())
    }),
    OptDef::ignored(Both, value("switches", None)),
    OptDef::only(SrunOnly, value("task-epilog", None), |o, a| {
        a.text(&mut o.task_epilog)
    }),
    OptDef::only(SrunOnly, value("task-prolog", None), |o, a| {
        a.text(&mut o.task_prolog)
    }),
    OptDef::both(flag("test-only", None), |o, _| {
        o.test_only = true;
        Ok(())
    }),
    OptDef::both(value("thread-spec", None), |o, a| {
        o.thread_spec_from = Some(a.source);
        Ok(())
    })
    .env("SBATCH_THREAD_SPEC"),
    OptDef::ignored(SrunOnly, value("threads", Some('T'))),
    OptDef::ignored(Both, value("threads-per-core", None)),
    OptDef::both(value("time", Some('t')), |o, a| {
        let t = units::parse_time_limit(a.value).map_err(|_| a.bad())?;
        // Slurm reads a limit of 0 as no limit.
        o.time_limit = Some(t.filter(|m| *m > 0));
        Ok(())
    })
    .env("SBATCH_TIMELIMIT"),
    OptDef::both(value("time-min", None), |o, a| {
        let t = units::parse_time_limit(a.value).map_err(|_| a.bad())?;
        o.time_min = t.filter(|m| *m > 0);
        Ok(())
    }),
    OptDef::both(value("tmp", None), |o, a| {
        o.tmp_mb = Some(units::parse_memory_mb(a.value).map_err(|_| a.bad())?);
        Ok(())
    }),
    OptDef::ignored(Both, value("tres-per-task", None)),
    OptDef::only(SrunOnly, flag("unbuffered", Some('u')), |o, _| {
        o.unbuffered = true;
        Ok(())
    }),
    OptDef::both(flag("usage", None), |o, _| {
        o.usage = true;
        Ok(())
    }),
    OptDef::both(flag("use-min-nodes", None), |o, _| {
        o.use_min_nodes = true;
        Ok(())
    }),
    // A flag on the command line (each one more); from `SBATCH_DEBUG`, the level itself.
    OptDef::both(flag("verbose", Some('v')), |o, a| {
        if a.value.is_empty() {
            o.verbose += 1;
        } else {
            o.verbose = positive(a.prog, "--verbose", a.value)?;
        }
        Ok(())
    })
    .env("SBATCH_DEBUG"),
    OptDef::both(flag("version", Some('V')), |o, _| {
        o.version = true;
        Ok(())
    }),
    // sbatch's --wait is a flag; srun's takes seconds, which mean nothing here.
    OptDef::only(SbatchOnly, flag("wait", Some('W')), |o, _| {
        o.wait = true;
        Ok(())
    })
    .env("SBATCH_WAIT"),
    OptDef::only(SrunOnly, value("wait", Some('W')), |o, a| {
        o.max_wait = a.value.trim().parse().map_err(|_| a.bad())?;
        Ok(())
    }),
    OptDef::ignored(Both, value("wait-all-nodes", None)),
    OptDef::both(value("wckey", None), |o, a| a.text(&mut o.wckey)).env("SBATCH_WCKEY"),
    OptDef::only(SbatchOnly, value("wrap", None), |o, a| a.text(&mut o.wrap)),
];

/// The options `command` takes.
pub fn defs(command: Command) -> impl Iterator<Item = &'static OptDef> {
    OPTIONS.iter().filter(move |d| d.takers.include(command))
}

/// The getopt table of `command`.
pub fn specs(command: Command) -> &'static [OptSpec] {
    static SBATCH: LazyLock<Vec<OptSpec>> =
        LazyLock::new(|| defs(Command::Sbatch).map(|d| d.spec).collect());
    static SRUN: LazyLock<Vec<OptSpec>> =
        LazyLock::new(|| defs(Command::Srun).map(|d| d.spec).collect());
    static SALLOC: LazyLock<Vec<OptSpec>> =
        LazyLock::new(|| defs(Command::Salloc).map(|d| d.spec).collect());
    match command {
        Command::Sbatch => &SBATCH,
        Command::Srun => &SRUN,
        Command::Salloc => &SALLOC,
    }
}

/// The `--help` paragraph that names the options `command` accepts and ignores.
pub fn ignored_help(command: Command) -> String {
    let mut out = String::from("\nAccepted and ignored (no effect on this cluster):\n ");
    let mut width = 1;
    for d in defs(command).filter(|d| d.ignored_here()) {
        let word = format!(" --{}", d.spec.long);
        if width + word.len() > 80 {
            out.push_str("\n ");
            width = 1;
        }
        width += word.len();
        out.push_str(&word);
    }
    out.push('\n');
    out
}

/// The options sbatch's input environment variables set, in the variables' order. A
/// flag option is set by its variable being present.
pub fn env_options(env: &[(String, String)]) -> Vec<(&'static str, String)> {
    input_env_options(Command::Sbatch, env)
}

/// Slurm 22.05 salloc's input variables that stand for an sbatch one (`SALLOC_X` for
/// `SBATCH_X`).
const SALLOC_COUNTERPARTS: &[&str] = &[
    "SALLOC_ACCOUNT",
    "SALLOC_CLUSTERS",
    "SALLOC_CONSTRAINT",
    "SALLOC_CPUS_PER_GPU",
    "SALLOC_EXCLUSIVE",
    "SALLOC_GPUS",
    "SALLOC_GPUS_PER_NODE",
    "SALLOC_GPUS_PER_TASK",
    "SALLOC_GRES",
    "SALLOC_MEM_PER_CPU",
    "SALLOC_MEM_PER_GPU",
    "SALLOC_MEM_PER_NODE",
    "SALLOC_PARTITION",
    "SALLOC_QOS",
    "SALLOC_RESERVATION",
    "SALLOC_SIGNAL",
    "SALLOC_TIMELIMIT",
    "SALLOC_WCKEY",
];

/// The input variable of an option for `command`: sbatch's `SBATCH_X` is salloc's
/// `SALLOC_X` where salloc has one; srun reads none of them.
fn input_var(def: &OptDef, command: Command) -> Option<String> {
    let var = def.env?;
    match (command, var.strip_prefix("SBATCH_")) {
        (Command::Salloc, Some(rest)) => {
            let salloc = format!("SALLOC_{rest}");
            SALLOC_COUNTERPARTS
                .contains(&salloc.as_str())
                .then_some(salloc)
        }
        _ => Some(var.to_string()),
    }
}

/// The options `command`'s input environment variables set (`SBATCH_*` for sbatch,
/// `SALLOC_*` for salloc), in the variables' order. A flag option is set by its
/// variable being present.
pub fn input_env_options(
    command: Command,
    env: &[(String, String)],
) -> Vec<(&'static str, String)> {
    let mut set: Vec<(String, &'static str, String)> = defs(command)
        .filter_map(|d| {
            let var = input_var(d, command)?;
            let (_, v) = env.iter().find(|(k, _)| *k == var)?;
            // A flag's variable only sets it, but for `SBATCH_DEBUG`, which is the
            // verbosity level (Slurm's arg_set_verbose).
            let v = if d.spec.arg == ArgKind::None && d.spec.long != "verbose" {
                String::new()
            } else {
                v.clone()
            };
            Some((var, d.spec.long, v))
        })
        .collect();
    set.sort_by(|a, b| a.0.cmp(&b.0));
    set.into_iter().map(|(_, long, v)| (long, v)).collect()
}

/// GPUs asked for: `[type:]count`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Gpu {
    pub gpu_type: String,
    pub count: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemKind {
    Node,
    Cpu,
    Gpu,
}

/// The options as typed values, after every source has been applied.
#[derive(Debug, Clone, Default)]
pub struct SubmitOpts {
    /// `--ignore-pbs`: the script's `#PBS` lines are not read.
    pub ignore_pbs: bool,
    pub job_name: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub input: Option<String>,
    pub chdir: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// `Some(None)`: UNLIMITED.
    pub time_limit: Option<Option<u32>>,
    pub cpus_per_task: Option<u32>,
    pub ntasks: Option<u32>,
    pub nodes: Option<u32>,
    /// The most nodes of `-N min-max`, when above the least.
    pub max_nodes: Option<u32>,
    /// `--use-min-nodes`: of a node range, the least count.
    pub use_min_nodes: bool,
    pub mail_types: Option<Vec<model::mail::MailType>>,
    pub mail_user: Option<String>,
    pub ntasks_per_node: Option<u32>,
    mem: Vec<(MemKind, u64, Source)>,
    pub gpus: Option<Gpu>,
    pub gpus_per_node: Option<Gpu>,
    pub gpus_per_task: Option<Gpu>,
    /// `Some(None)`: `--gres=none`.
    pub gres: Option<Option<Gpu>>,
    pub cpus_per_gpu: Option<u32>,
    /// `--gpus-per-socket`, checked against the other GPU options (`check_gpu_counts`).
    pub gpus_per_socket: Option<Gpu>,
    /// `--mincpus`, `--tmp` (MB), `--oversubscribe`, `--contiguous`, `--gpu-freq`: kept
    /// as given (`model::job::RequestDetails`).
    pub min_cpus: Option<u32>,
    pub tmp_mb: Option<u64>,
    pub oversubscribe: bool,
    pub contiguous: bool,
    pub gpu_freq: Option<String>,
    /// `--bbf`: the burst buffer specification file's path.
    pub burst_buffer_file: Option<String>,
    pub sockets_per_node: Option<u32>,
    pub array: Option<String>,
    pub dependency: Option<String>,
    pub hold: bool,
    pub export: Option<String>,
    pub open_mode_append: Option<bool>,
    pub signal: Option<v1::SignalSpec>,
    pub requeue: Option<bool>,
    pub comment: Option<String>,
    pub wckey: Option<String>,
    /// `-L/--licenses`: Drover has no licenses (Slurm's `Licenses=`), so a job that
    /// asks for one is refused, as Slurm refuses a license it does not know.
    pub licenses: Option<String>,
    pub begin: Option<String>,
    /// `--deadline`, as given (checked at submit: `deadline_limit`).
    pub deadline: Option<String>,
    /// `--time-min`, minutes.
    pub time_min: Option<u32>,
    pub constraint: Option<String>,
    pub nodelist: Option<String>,
    pub exclude: Option<String>,
    pub reservation: Option<String>,
    pub exclusive: bool,
    /// Where `-S/--core-spec` and `--thread-spec` came from, if given.
    pub core_spec_from: Option<Source>,
    pub thread_spec_from: Option<Source>,
    /// srun's `-r/--relative`: the step's nodes start at this one of the job's (from 0).
    pub relative: Option<u32>,
    /// srun's `-E/--preserve-env`: the tasks keep the environment's SLURM_NNODES and
    /// SLURM_NTASKS instead of the step's.
    pub preserve_env: bool,
    /// `-m/--distribution`: how a step's tasks go over its nodes.
    pub distribution: Option<model::distribution::Distribution>,
    pub nice: Option<i32>,
    /// `--priority`: a fixed priority (an operator's).
    pub priority: Option<u32>,
    pub kill_on_invalid_dep: Option<bool>,
    pub quiet: bool,
    pub verbose: u32,
    pub clusters: Option<String>,
    pub help: bool,
    pub usage: bool,
    pub version: bool,
    // sbatch
    pub parsable: bool,
    pub wait: bool,
    pub test_only: bool,
    pub wrap: Option<String>,
    // srun
    pub unbuffered: bool,
    pub label: bool,
    /// `--pty`: task 0 runs in a pseudo-terminal.
    pub pty: bool,
    /// `-K`: kill the step when one of its tasks fails.
    pub kill_on_bad_exit: bool,
    /// `--mpi`; unset: `SLURM_MPI_TYPE`, else none.
    pub mpi: Option<model::step::MpiType>,
    /// `--gpu-bind`, checked (`model::step::GpuBind`).
    pub gpu_bind: Option<String>,
    pub jobid: Option<String>,
    /// srun's `--het-group`: the components of a heterogeneous allocation (sorted).
    pub het_group: Option<Vec<u32>>,
    pub cpu_bind: Option<String>,
    /// `-O`: an allocation of one CPU per node, and steps whose tasks may outnumber
    /// their CPUs.
    pub overcommit: bool,
    /// `--task-prolog`: run by the node daemon before each task; its `export`,
    /// `unset` and `print` lines shape the task.
    pub task_prolog: Option<String>,
    /// `--task-epilog`: run by the node daemon after each task.
    pub task_epilog: Option<String>,
    /// `-I, --immediate[=secs]`: give up unless the job starts within that many seconds.
    pub immediate: Option<u32>,
    // salloc
    /// `--bell` (true), `--no-bell` (false); unset: ring after a wait.
    pub bell: Option<bool>,
    /// `--kill-command[=signal]`: the signal the command gets when the job ends first.
    pub kill_command: Option<i32>,
    /// `--no-shell`: take the allocation and exit.
    pub no_shell: bool,
    /// `-W`: seconds the other tasks have once the first has ended (0: no limit).
    pub max_wait: u32,
    /// `--quit-on-interrupt`: one ^C ends the step.
    pub quit_on_interrupt: bool,
    /// `-X`: ^C goes to the tasks at once, without the step's status.
    pub disable_status: bool,
    /// `--multi-prog`: the command is a configuration of each task's program.
    pub multi_prog: bool,
    /// `--ntasks-per-gpu` (`with_ntasks_per_gpu`) and `--ntasks-per-tres`, its other name.
    pub ntasks_per_gpu: Option<u32>,
    pub ntasks_per_tres: Option<u32>,
    /// `--spread-job`: as many nodes as free, up to one per task (`most_nodes`).
    pub spread_job: bool,
    /// `--bcast[=DEST]`: the executable is copied to the step's nodes first (empty:
    /// to Slurm's default name, `step::bcast_path`).
    pub bcast: Option<String>,
    /// `--debugger-test`: the step's task table is printed instead of run.
    pub debugger_test: bool,
    /// `--slurmd-debug`: how much the nodes write of the step to its stderr.
    pub slurmd_debug: Option<model::log_level::LogLevel>,
    /// The options given, by name, each with its last value
    /// (`-v`'s option dump).
    defined: Vec<(&'static str, String)>,
}

fn positive(prog: &str, name: &str, val: &str) -> Result<u32, Exit> {
    match val.trim().parse::<i64>() {
        Ok(n) if n > 0 && n <= i64::from(u32::MAX) => Ok(n as u32),
        _ => Err(Exit::error(
            prog,
            format!("Invalid numeric value \"{val}\" for {name}."),
        )),
    }
}

fn gres_error(prog: &str) -> Exit {
    Exit::error(prog, "Invalid generic resource (gres) specification")
}

impl SubmitOpts {
    /// The most nodes of `-N min-max` sent to the controller (0: just the least);
    /// `--use-min-nodes` keeps the least.
    pub fn most_nodes(&self) -> u32 {
        if self.use_min_nodes {
            return 0;
        }
        // `--spread-job` without `-N`: `-N 1-TASKS`, as many as are free.
        let spread = self
            .ntasks
            .filter(|_| self.spread_job && self.nodes.is_none());
        self.max_nodes.or(spread).unwrap_or(0)
    }

    /// Applies options in order from one source.
    pub fn apply_all(
        &mut self,
        command: Command,
        opts: &[(&'static str, String)],
        source: Source,
    ) -> Result<(), Exit> {
        for (k, v) in opts {
            self.apply(command, k, v, source)?;
        }
        Ok(())
    }

    /// Applies one option as its table entry says; a bad value is Slurm's error line.
    /// A name the command does not take is refused (getopt, reading the same table,
    /// never hands one over).
    pub fn apply(
        &mut self,
        command: Command,
        name: &str,
        value: &str,
        source: Source,
    ) -> Result<(), Exit> {
        let prog = command.name();
        let def = defs(command)
            .find(|d| d.spec.long == name)
            .ok_or_else(|| Exit::error(prog, format!("unrecognized option '--{name}'")))?;
        match def.set {
            Set::To(set) => set(
                self,
                &Arg {
                    prog,
                    name: def.spec.long,
                    value,
                    source,
                },
            )?,
            Set::Ignored => {}
        }
        let shown = match def.spec.long {
            "verbose" => self.verbose.to_string(),
            // Slurm shows the limit in force, as `mins2time_str` writes it.
            "time" => match self.time_limit {
                Some(Some(m)) => units::format_elapsed(u64::from(m) * 60),
                _ => "UNLIMITED".to_string(),
            },
            _ if value.is_empty() => "set".to_string(),
            _ => value.to_string(),
        };
        match self.defined.iter_mut().find(|(n, _)| *n == def.spec.long) {
            Some(slot) => slot.1 = shown,
            None => self.defined.push((def.spec.long, shown)),
        }
        Ok(())
    }

    /// What `-v` prints first, as Slurm 22.05's sbatch and srun do (`_opt_list`): each
    /// option given, with its value, between two rules, in the order of the option
    /// table (Slurm's walks its own, which is by name too).
    pub fn defined_options(&self, prog: &str) -> String {
        let rule = format!("{prog}: {:-<20} {:-<20}\n", "", "");
        let mut out = format!("{prog}: defined options\n{rule}");
        let place = |name: &str| OPTIONS.iter().position(|d| d.spec.long == name);
        let mut defined: Vec<&(&str, String)> = self.defined.iter().collect();
        defined.sort_by_key(|(name, _)| place(name));
        for (name, value) in defined {
            out.push_str(&format!("{prog}: {name:<20}: {value}\n"));
        }
        out.push_str(&rule);
        out.push_str(&format!("{prog}: end of defined options\n"));
        out.push_str(&self.hint_note(prog));
        out
    }

    /// What `-v` adds when `--hint` meets an option it excludes, as Slurm 22.05's
    /// option check says it (the hint is ignored; Drover ignores hints anyway): empty
    /// when there is no such meeting.
    fn hint_note(&self, prog: &str) -> String {
        let given = |name: &str| {
            self.defined
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let excluded = ["ntasks-per-core", "threads-per-core", "extra-node-info"]
            .into_iter()
            .any(|n| given(n).is_some())
            || given("cpu-bind").is_some_and(|v| v != "verbose");
        if given("hint").is_some() && excluded {
            format!(
                "{prog}: Following options are mutually exclusive with --hint: \
                 --ntasks-per-core, --threads-per-core, -B and --cpu-bind (other then \
                 --cpu-bind=verbose). Ignoring --hint.\n"
            )
        } else {
            String::new()
        }
    }

    /// The memory request in force: the one from the strongest source; two kinds on the
    /// command line are an error, as in Slurm.
    fn memory(&self, prog: &str) -> Result<Option<(MemKind, u64)>, Exit> {
        let cli_kinds: Vec<MemKind> = self
            .mem
            .iter()
            .filter(|m| m.2 == Source::Cli)
            .map(|m| m.0)
            .collect();
        if cli_kinds.iter().any(|k| *k != cli_kinds[0]) {
            return Err(Exit::raw(format!(
                "{prog}: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
            )));
        }
        let best = self
            .mem
            .iter()
            .enumerate()
            .max_by_key(|(i, m)| (m.2, *i))
            .map(|(_, m)| (m.0, m.1));
        Ok(best)
    }
}

/// `-N`: a count, or `min-max`; the least, and the most when above it. Counts may
/// end in `k` or `m` (`-N 2k`: 2048 nodes), as Slurm's.
fn parse_node_count(prog: &str, val: &str) -> Result<(u32, Option<u32>), Exit> {
    let min = val.split_once('-').map_or(val, |(lo, _)| lo).trim();
    let invalid =
        || Exit::error(prog, format!("\"{val}\" is not a valid node count")).with_code(255);
    // A count with Slurm's suffixes: `k` times 1024, `m` times 1048576.
    let count = |text: &str| -> Option<u32> {
        let (digits, times) = match text.chars().last()? {
            'k' | 'K' => (&text[..text.len() - 1], 1 << 10),
            'm' | 'M' => (&text[..text.len() - 1], 1 << 20),
            _ => (text, 1),
        };
        digits.parse::<u32>().ok()?.checked_mul(times)
    };
    // Slurm reads a range without its least ("-3") as from 1.
    let n: u32 = if min.is_empty() && val.contains('-') {
        1
    } else {
        count(min).ok_or_else(invalid)?
    };
    let mut most = None;
    if let Some((_, hi)) = val.split_once('-') {
        let hi: u32 = count(hi.trim()).ok_or_else(invalid)?;
        if hi < n {
            return Err(invalid());
        }
        most = (hi > n).then_some(hi);
    }
    if n == 0 {
        return Err(submission_failed(prog, "Node count specification invalid"));
    }
    Ok((n, most))
}

/// `--gpus`-style counts: `2`, `a100:2`.
pub fn parse_gpu_count(text: &str) -> Option<Gpu> {
    let parts: Vec<&str> = text.trim().split(':').collect();
    let (ty, n) = match parts.as_slice() {
        [n] => ("", *n),
        [ty, n] if !ty.is_empty() => (*ty, *n),
        _ => return None,
    };
    let count = n.parse::<u32>().ok()?;
    Some(Gpu {
        gpu_type: ty.to_string(),
        count,
    })
}

/// `--gres`: `gpu`, `gpu:2`, `gpu:a100:1`, `shard:4` or `mps:50` (shares of shared
/// GPUs, a GPU request of type `shard` or `mps`), with an optional `gres:`/`gres/`
/// prefix, or `none`. Only GPUs and their shares exist here; any other resource is an
/// error, unless none of it is asked for (`craynetwork:0`), which Slurm takes.
/// `shard:0` and `mps:0` stay refused.
pub fn parse_gres(text: &str) -> Option<Option<Gpu>> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Some(None);
    }
    let mut found: Option<Gpu> = None;
    let mut none_asked = false;
    for item in text.split(',') {
        let item = item.trim();
        let item = item
            .strip_prefix("gres:")
            .or_else(|| item.strip_prefix("gres/"))
            .unwrap_or(item);
        let parts: Vec<&str> = item.split(':').collect();
        if let [name, .., "0"] = parts.as_slice()
            && !name.is_empty()
            && !matches!(*name, "gpu" | "shard" | "mps")
        {
            none_asked = true;
            continue;
        }
        let gpu = match parts.as_slice() {
            ["gpu"] => Gpu {
                gpu_type: String::new(),
                count: 1,
            },
            ["gpu", n] if n.parse::<u32>().is_ok() => Gpu {
                gpu_type: String::new(),
                count: n.parse().ok()?,
            },
            ["gpu", ty] if !ty.is_empty() => Gpu {
                gpu_type: ty.to_string(),
                count: 1,
            },
            ["gpu", ty, n] if !ty.is_empty() => Gpu {
                gpu_type: ty.to_string(),
                count: n.parse().ok()?,
            },
            [kind @ ("shard" | "mps"), n] => Gpu {
                gpu_type: kind.to_string(),
                count: n.parse().ok().filter(|n| *n > 0)?,
            },
            _ => return None,
        };
        if found.replace(gpu).is_some() {
            return None;
        }
    }
    match found {
        Some(gpu) => Some(Some(gpu)),
        None if none_asked => Some(None),
        None => None,
    }
}

/// `--signal=[{R|B}:]sig[@seconds]`; the time defaults to 60 s.
pub fn parse_signal_spec(text: &str) -> Option<v1::SignalSpec> {
    let (flags, rest) = match text.split_once(':') {
        Some((f, r)) if !f.is_empty() && f.chars().all(|c| matches!(c, 'R' | 'B' | 'r' | 'b')) => {
            (f, r)
        }
        Some(_) => return None,
        None => ("", text),
    };
    let (sig, secs) = match rest.split_once('@') {
        Some((s, t)) => (s, t.trim().parse::<u32>().ok().filter(|t| *t <= 0xffff)?),
        None => (rest, 60),
    };
    Some(v1::SignalSpec {
        signal: parse_signal(sig)?,
        seconds_before_end: secs,
        batch_only: flags.contains(['B', 'b']),
    })
}

/// Sets `name` to `value` in `env`, in place when it is there, else at the end.
pub fn set_env(env: &mut Vec<(String, String)>, name: &str, value: String) {
    match env.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => env.push((name.to_string(), value)),
    }
}

/// The environment a job gets under `--export`: `ALL` (the default) is everything;
/// `NONE` only `SLURM_*` variables; `ALL,A=1,B` everything plus the listed settings;
/// `A,B=x` only `SLURM_*` plus the listed names (taken from here) and settings.
pub fn export_env(spec: Option<&str>, env: &[(String, String)]) -> Vec<(String, String)> {
    let slurm_only = || {
        env.iter()
            .filter(|(k, _)| k.starts_with("SLURM_"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
        return env.to_vec();
    };
    let mut tokens: Vec<&str> = spec.split(',').filter(|t| !t.is_empty()).collect();
    let mut out = match tokens.first().map(|t| t.to_ascii_uppercase()) {
        Some(t) if t == "ALL" => {
            tokens.remove(0);
            env.to_vec()
        }
        Some(t) if t == "NONE" || t == "NIL" => {
            tokens.remove(0);
            slurm_only()
        }
        _ => slurm_only(),
    };
    for tok in tokens {
        let (name, val) = match tok.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (tok.to_string(), None),
        };
        let val = match val {
            Some(v) => v,
            None => match env.iter().find(|(k, _)| *k == name) {
                Some((_, v)) => v.clone(),
                None => continue,
            },
        };
        match out.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = val,
            None => out.push((name, val)),
        }
    }
    out
}

/// The `#SBATCH` words of a script: from lines that start with `#SBATCH` before the first
/// line that is neither blank nor a comment. Words split at blanks; double or single
/// quotes group, a backslash escapes, and an unquoted `#` starts a comment.
pub fn directive_words(script: &str) -> Vec<String> {
    magic_words(script, "#SBATCH")
}

/// The words of a script's lines that start with `magic`, before its first command.
fn magic_words(script: &str, magic: &str) -> Vec<String> {
    let mut words = Vec::new();
    for line in script.lines() {
        if let Some(rest) = line.strip_prefix(magic) {
            words.extend(split_words(rest, true));
            continue;
        }
        let t = line.trim_start();
        if !t.is_empty() && !t.starts_with('#') {
            break;
        }
    }
    words
}

/// The value of a foreign directive's option `-X`: what follows its letter in the same
/// word (`-W10`), else the next word (`-W 10`).
fn directive_value<'a>(
    attached: &str,
    rest: &mut impl Iterator<Item = &'a String>,
    letter: char,
) -> Result<String, String> {
    match attached {
        "" => rest
            .next()
            .cloned()
            .ok_or_else(|| format!("option requires an argument -- '{letter}'")),
        v => Ok(v.to_string()),
    }
}

/// A script's `#BSUB` lines (LSF's directives) as the sbatch options Slurm's sbatch
/// reads them as: `-J name`, `-o`/`-e` files, `-q` partition, `-m "hosts"` (a node
/// list), `-n` tasks, `-W` minutes, `-M` memory per CPU in KB, `-x` exclusive. A value
/// may follow its letter or be the next word. Any other option is refused.
///
/// Example: `#BSUB -J x -W10 -M4096 -m"n1 n2" -x` is `--job-name=x --time=10
/// --mem-per-cpu=4 --nodelist=n1,n2 --exclusive`.
pub fn lsf_directive_words(script: &str) -> Result<Vec<String>, String> {
    let words = magic_words(script, "#BSUB");
    let mut out = Vec::new();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        let letter = word
            .strip_prefix('-')
            .and_then(|w| w.chars().next())
            .ok_or_else(|| format!("Invalid directive found in batch script: {word}"))?;
        if letter == 'x' && word.len() == 2 {
            out.push("--exclusive".to_string());
            continue;
        }
        let option = match letter {
            'J' => "job-name",
            'o' => "output",
            'e' => "error",
            'q' => "partition",
            'm' => "nodelist",
            'n' => "ntasks",
            'W' => "time",
            'M' => "mem-per-cpu",
            _ => return Err(format!("Unrecognized command line parameter {word}")),
        };
        let value = directive_value(&word[2..], &mut rest, letter)?;
        let value = match letter {
            'm' => value.split_whitespace().collect::<Vec<_>>().join(","),
            'M' => {
                let kb: u64 = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("Invalid memory limit: {value}"))?;
                if kb < 1024 {
                    continue;
                }
                (kb / 1024).to_string()
            }
            _ => value,
        };
        out.push(format!("--{option}={value}"));
    }
    Ok(out)
}

/// A script's `#PBS` lines (PBS and Torque directives) as the sbatch options Slurm's
/// sbatch reads them as: `-N` name, `-o`/`-e` files, `-A` account, `-q` partition,
/// `-a` begin, `-h` hold, `-J`/`-t` array, `-m` mail events, `-M` mail user, `-p`
/// nice, `-v` export, `-W depend=`, and `-l` resources (below). The options Slurm
/// ignores (`-c -C -I -j -k -r -S -u -V -z`, other `-W` attributes) are ignored; any
/// other is refused. A value may follow its letter or be the next word.
///
/// `-l` takes `nodes=N[:ppn=M][+...]` (nodes, and M tasks on each), `walltime=`,
/// `cput=`, `pcput=` (time), `mem=` and `file=` (memory and tmp, a trailing `b`
/// dropped), `ncpus=`, `mpiprocs=`, `select=` (PBS Pro), `naccelerators=`,
/// `accelerator=true` (GPUs), `nice=` and `proc=` (a feature); others are ignored,
/// as Slurm does.
///
/// Example: `#PBS -N x -l nodes=3:ppn=2,mem=1024mb,walltime=1:00:00` is
/// `--job-name=x --nodes=3 --ntasks=6 --mem=1024m --time=1:00:00`.
pub fn pbs_directive_words(script: &str) -> Result<Vec<String>, String> {
    let words = magic_words(script, "#PBS");
    let mut out = Vec::new();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) else {
            return Err(format!("Invalid argument: {word}"));
        };
        let letter = letters.chars().next().unwrap_or_default();
        if matches!(letter, 'h' | 'I' | 'V' | 'z') {
            if letter == 'h' {
                out.push("--hold".to_string());
            }
            continue;
        }
        if !"aAcCejJklmMNopqrStuvW".contains(letter) {
            return Err(format!("Unrecognized command line parameter -{letter}"));
        }
        let value = directive_value(&letters[letter.len_utf8()..], &mut rest, letter)?;
        let option = match letter {
            'a' => "begin",
            'A' => "account",
            'e' => "error",
            'o' => "output",
            'J' | 't' => "array",
            'M' => "mail-user",
            'N' => "job-name",
            'p' => "nice",
            'q' => "partition",
            'v' => "export",
            'l' => {
                out.extend(pbs_resources(&value));
                continue;
            }
            'm' => match pbs_mail_types(&value) {
                Some(types) => {
                    out.push(format!("--mail-type={types}"));
                    continue;
                }
                None => continue,
            },
            'W' => match value.split_once('=') {
                Some((key, deps)) if key.eq_ignore_ascii_case("depend") => {
                    out.push(format!("--dependency={deps}"));
                    continue;
                }
                _ => continue,
            },
            // Checkpoints, directories, joins, keeps, reruns, shells and users.
            _ => continue,
        };
        out.push(format!("--{option}={value}"));
    }
    Ok(out)
}

/// `#PBS -m`'s letters as `--mail-type` events: `b` BEGIN, `e` END, `a` FAIL, `n`
/// none; `None` when it names none.
fn pbs_mail_types(letters: &str) -> Option<String> {
    let has = |c: char| letters.contains(c) || letters.contains(c.to_ascii_uppercase());
    if has('n') {
        return Some("NONE".into());
    }
    let types: Vec<&str> = [('b', "BEGIN"), ('e', "END"), ('a', "FAIL")]
        .into_iter()
        .filter(|(c, _)| has(*c))
        .map(|(_, t)| t)
        .collect();
    (!types.is_empty()).then(|| types.join(","))
}

/// `#PBS -l`'s resource list as sbatch options (`pbs_directive_words`).
fn pbs_resources(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut gpus = 0;
    // PBS Pro's `select=N:ncpus=C:mpiprocs=T`: C CPUs for T tasks on each node.
    let (mut ncpus, mut mpiprocs, mut select) = (None, None, false);
    let strip_b = |v: &str| {
        v.strip_suffix(['b', 'B'])
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string())
    };
    for item in list.split(',') {
        // PBS Pro's chunks (`select=`, `ncpus=`, `mpiprocs=`) end at a colon too; the
        // others at the next comma only (`walltime=1:00:00`, `nodes=2:ppn=4`).
        let chunk = ["select=", "ncpus=", "mpiprocs="].iter().any(|k| {
            item.get(..k.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(k))
        });
        let parts: Vec<&str> = if chunk {
            item.split(':').collect()
        } else {
            vec![item]
        };
        for part in parts {
            let Some((key, value)) = part.split_once('=') else {
                continue;
            };
            match key.to_ascii_lowercase().as_str() {
                "accelerator" if value.eq_ignore_ascii_case("true") => gpus = gpus.max(1),
                "cput" | "pcput" | "walltime" => out.push(format!("--time={value}")),
                "file" => out.push(format!("--tmp={}", strip_b(value))),
                "mem" => out.push(format!("--mem={}", strip_b(value))),
                "mpiprocs" => {
                    mpiprocs = value.parse::<u32>().ok();
                    out.push(format!("--ntasks-per-node={value}"));
                }
                "naccelerators" => out.push(format!("--gpus={value}")),
                "ncpus" => {
                    ncpus = value.parse::<u32>().ok();
                    out.push(format!("--mincpus={value}"));
                }
                "nice" => out.push(format!("--nice={value}")),
                "nodes" => out.extend(pbs_nodes(value)),
                "proc" => out.push(format!("--constraint={value}")),
                "select" => {
                    select = true;
                    out.push(format!("--nodes={value}"));
                }
                _ => {}
            }
        }
    }
    if let (true, Some(cpus), Some(tasks)) = (select, ncpus, mpiprocs)
        && tasks > 0
        && cpus > tasks
    {
        out.push(format!("--cpus-per-task={}", cpus / tasks));
    }
    if gpus > 0 {
        out.push(format!("--gres=gpu:{gpus}"));
    }
    out
}

/// `nodes=`'s value: node counts and names joined by `+` or `:`, and `ppn=M` tasks
/// on each node (`3:ppn=2` is 3 nodes and 6 tasks; `n1+n2` two named nodes).
fn pbs_nodes(value: &str) -> Vec<String> {
    let (mut count, mut ppn, mut names) = (0u32, 0u32, Vec::new());
    for part in value.split(['+', ':']) {
        let number = |t: &str| {
            let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().unwrap_or(0)
        };
        if let Some(tasks) = part.strip_prefix("ppn=") {
            ppn += number(tasks);
        } else if part.starts_with(|c: char| c.is_ascii_digit()) {
            count += number(part);
        } else if part.starts_with(|c: char| c.is_ascii_alphabetic()) {
            names.push(part);
        }
    }
    let mut out = Vec::new();
    if count > 0 {
        out.push(format!("--nodes={count}"));
    }
    if ppn > 0 {
        out.push(format!("--ntasks={}", ppn * count.max(1)));
    }
    if !names.is_empty() {
        out.push(format!("--nodelist={}", model::hostlist::fold(&names)));
    }
    out
}

/// This machine's host name.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

/// The last path component.
pub fn basename(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// What the request is built from besides the options.
pub struct SubmitCtx<'a> {
    pub env: &'a [(String, String)],
    pub cwd: &'a str,
    pub user: &'a str,
    pub uid: u32,
    pub gid: u32,
    pub host: &'a str,
    pub now: i64,
    pub max_array_size: u32,
    /// `[controller] job_requeue`: whether a job that says nothing of requeueing is
    /// requeued when its node fails.
    pub job_requeue: bool,
    /// The local calendar `--begin` is read in.
    pub zone: &'a dyn LocalZone,
}

/// `none` is /dev/null, as in Slurm.
fn io_path(p: &Option<String>) -> String {
    match p.as_deref() {
        Some(p) if p.eq_ignore_ascii_case("none") => "/dev/null".into(),
        Some(p) => p.to_string(),
        None => String::new(),
    }
}

/// The GPU options against each other, as Slurm checks a job's GPU request
/// (`gres_job_state_validate`): `--gpus` >= `--gres=gpu`/`--gpus-per-node` >=
/// `--gpus-per-socket`, counts that divide, and the node, socket and task counts they
/// imply against those asked for.
/// `--ntasks-per-gpu=N` (or `--ntasks-per-tres=N`) as Slurm 22.05 reads it: N tasks for
/// each of the job's GPUs (without `-n`), as many GPUs as `-n` needs (without a GPU
/// option), each task bound to one GPU (`--gpu-bind=single:N` unless one is given).
/// It cannot join `--gpus-per-task`, `--gpus-per-socket` or `--ntasks-per-node`.
///
/// Example: `--gpus=2 --ntasks-per-gpu=2` runs 4 tasks, 0-1 on the first GPU; `-n4
/// --ntasks-per-gpu=2` asks for 2 GPUs.
fn with_ntasks_per_gpu(mut o: SubmitOpts, prog: &str) -> Result<SubmitOpts, Exit> {
    let per_gpu = match (o.ntasks_per_gpu, o.ntasks_per_tres) {
        (None, None) => return Ok(o),
        (Some(_), Some(_)) => {
            // Slurm's words for the two together.
            return Err(Exit::raw(format!(
                "{prog}: error: gres_job_state_validate: --ntasks-per-tres needs either a \
                 GRES GPU specification or a node/ntask specification\n\
                 {prog}: error: Invalid generic resource (gres) specification"
            )));
        }
        (Some(n), None) | (None, Some(n)) => n,
    };
    for (given, name) in [
        (o.gpus_per_task.is_some(), "--gpus-per-task"),
        (o.gpus_per_socket.is_some(), "--gpus-per-socket"),
        (o.ntasks_per_node.is_some(), "--ntasks-per-node"),
    ] {
        if given {
            return Err(Exit::raw(format!(
                "{prog}: fatal: {name} is mutually exclusive with --ntasks-per-gpu and \
                 SLURM_NTASKS_PER_GPU"
            )));
        }
    }
    let total_gpus = match &o.gpus {
        Some(g) => g.count,
        None => gpus_per_node(&o) * o.nodes.unwrap_or(1),
    };
    if total_gpus == 0 {
        if let Some(tasks) = o.ntasks {
            o.gpus = Some(Gpu {
                gpu_type: String::new(),
                count: tasks.div_ceil(per_gpu),
            });
        }
    } else if o.ntasks.is_none() {
        o.ntasks = Some(total_gpus * per_gpu);
    }
    if o.gpu_bind.is_none() {
        o.gpu_bind = Some(format!("single:{per_gpu}"));
    }
    o.ntasks_per_gpu = Some(per_gpu);
    o.ntasks_per_tres = None;
    Ok(o)
}

fn check_gpu_counts(o: &SubmitOpts, prog: &str) -> Result<(), Exit> {
    let count = |g: &Option<Gpu>| g.as_ref().map(|g| g.count);
    let per_job = count(&o.gpus);
    let per_node = [count(&o.gpus_per_node), count(&o.gres.clone().flatten())]
        .into_iter()
        .flatten()
        .max();
    let per_socket = count(&o.gpus_per_socket);
    let per_task = count(&o.gpus_per_task);
    let fail = |msg: &str| Err(Exit::error(prog, msg));
    const ORDER: &str =
        "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket";
    if let Some(job) = per_job
        && [per_node, per_task, per_socket]
            .into_iter()
            .flatten()
            .any(|n| n > job)
    {
        return fail(ORDER);
    }
    if let Some(node) = per_node
        && [per_task, per_socket]
            .into_iter()
            .flatten()
            .any(|n| n > node)
    {
        return fail(ORDER);
    }
    if per_socket.is_some() && o.sockets_per_node.is_none() {
        return fail("--gpus-per-socket option requires --sockets-per-node specification");
    }
    if o.cpus_per_gpu.is_some() && o.cpus_per_task.is_some() {
        return fail("--cpus-per-gpu is mutually exclusive with --cpus-per-task");
    }
    if let (Some(job), Some(node)) = (per_job, per_node) {
        if job % node != 0 {
            return fail(
                "Failed to validate job spec, --gpus is not multiple of --gres=gpu/--gpus-per-node",
            );
        }
        let nodes = job / node;
        let least = o.nodes.unwrap_or(1);
        let most = o.max_nodes.or(o.nodes);
        if nodes < least || most.is_some_and(|m| nodes > m) {
            let most = most.map_or("N/A".to_string(), |m| m.to_string());
            return fail(&format!(
                "Failed to validate job spec. Based on --gpu and --gres=gpu/--gpus-per-node \
                 required nodes ({nodes}) doesn't fall between min_nodes ({least}) and \
                 max_nodes ({most}) boundaries."
            ));
        }
    }
    if let (Some(node), Some(socket)) = (per_node, per_socket) {
        if node % socket != 0 {
            return fail(
                "Failed to validate job spec, --gres=gpu/--gpus-per-node not multiple of \
                 --gpus-per-socket.",
            );
        }
        if o.sockets_per_node.is_some_and(|s| s != node / socket) {
            return fail(
                "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and \
                 --gpus-per-socket required number of sockets differ from --sockets-per-node.",
            );
        }
    }
    if let Some(task) = per_task {
        if let Some(job) = per_job {
            if job % task != 0 {
                return fail("Failed to validate job spec, --gpus not multiple of --gpus-per-task");
            }
            if o.ntasks.is_some_and(|n| n != job / task) {
                return fail(
                    "Failed to validate job spec. Based on --gpus and --gpus-per-task number \
                     of requested tasks differ from -n/--ntasks.",
                );
            }
        }
        if let Some(node) = per_node {
            if node % task != 0 {
                return fail(
                    "Failed to validate job spec, --gres=gpu/--gpus-per-node not multiple of \
                     --gpus-per-task",
                );
            }
            if o.ntasks_per_node.is_some_and(|n| n != node / task) {
                return fail(
                    "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and \
                     --gpus-per-task requested number of tasks per node differ from \
                     --ntasks-per-node.",
                );
            }
        }
    }
    if let (Some(job), Some(nodes)) = (per_job, o.nodes)
        && job < nodes
    {
        return fail("Failed to validate job spec, --gpus < -N");
    }
    Ok(())
}

/// The text Slurm prints for a time limit the job cannot have.
const INVALID_TIME_LIMIT: &str = "Requested time limit is invalid (missing or exceeds some limit)";

/// The text Slurm prints for a `--time-min` the job cannot have.
const INVALID_TIME_MIN: &str =
    "Invalid time-min specification (exceeds job's time or other limits)";

/// `--deadline` as a time (0: none), checked: it must follow `--begin` and leave the
/// job `--time-min` (else one minute) from now. The controller cuts the job's limit
/// to it when the job starts.
fn checked_deadline(
    o: &SubmitOpts,
    prog: &str,
    ctx: &SubmitCtx,
    begin_time: i64,
) -> Result<i64, Exit> {
    let Some(text) = o.deadline.as_deref() else {
        return Ok(0);
    };
    let deadline = TimeSpec::parse(text)
        .map_err(|_| Exit::error(prog, "Invalid --deadline specification").with_code(255))?
        .resolve(ctx.now, Toward::Future, ctx.zone);
    if begin_time > 0 && deadline < begin_time {
        return Err(Exit::error(
            prog,
            "Incompatible begin and deadline time specification",
        ));
    }
    let start = begin_time.max(ctx.now);
    let left_min = u32::try_from((deadline - start).max(0) / 60).unwrap_or(u32::MAX);
    if left_min == 0 {
        return Err(submission_failed(prog, INVALID_TIME_LIMIT));
    }
    if o.time_min.is_some_and(|m| m > left_min) {
        return Err(submission_failed(prog, INVALID_TIME_MIN));
    }
    Ok(deadline)
}

/// `-S/--core-spec` and `--thread-spec` together are refused, in Slurm 22.05's words
/// (its misspelling included), from the command line or from the environment.
fn check_specialization(o: &SubmitOpts, prog: &str) -> Result<(), Exit> {
    let fatal = |m: &str| Err(Exit::raw(format!("{prog}: fatal: {m}")));
    match (o.core_spec_from, o.thread_spec_from) {
        (Some(Source::Cli), Some(Source::Cli)) => {
            fatal("-S/--core-spec and --thred-spec options are mutually exclusive")
        }
        (Some(Source::Env), Some(Source::Env)) => fatal(
            "Both --core-spec and --thread-spec set using environment variables. Those \
             options are mutually exclusive.",
        ),
        _ => Ok(()),
    }
}

/// How each command says its submission was refused, before the reason: sbatch's
/// "Batch job submission failed", salloc's "Job submit/allocate failed", srun's
/// "Unable to allocate resources".
pub fn submit_failure(prog: &str) -> &'static str {
    match prog {
        "salloc" => "Job submit/allocate failed",
        "srun" => "Unable to allocate resources",
        _ => "Batch job submission failed",
    }
}

/// A refused submission in `prog`'s words (`sbatch: error: Batch job submission
/// failed: WHY`).
pub fn submission_failed(prog: &str, why: &str) -> Exit {
    Exit::error(prog, format!("{}: {why}", submit_failure(prog)))
}

/// What sbatch adds to the job's environment from its options (sbatch(1), "OUTPUT
/// ENVIRONMENT VARIABLES"): `SLURM_EXPORT_ENV`, `SLURM_OPEN_MODE`,
/// `SLURM_JOB_DEPENDENCY` and `SLURM_OVERCOMMIT`.
fn sbatch_job_env(o: &SubmitOpts) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if let Some(export) = &o.export {
        env.push(("SLURM_EXPORT_ENV".into(), export.clone()));
    }
    if let Some(append) = o.open_mode_append {
        let mode = if append { "a" } else { "t" };
        env.push(("SLURM_OPEN_MODE".into(), mode.into()));
    }
    if let Some(dep) = o.dependency.as_ref().filter(|d| !d.is_empty()) {
        env.push(("SLURM_JOB_DEPENDENCY".into(), dep.clone()));
    }
    if o.overcommit {
        env.push(("SLURM_OVERCOMMIT".into(), "1".into()));
    }
    env.extend(distribution_env(o));
    env
}

/// `SLURM_DISTRIBUTION` (and `SLURM_DIST_PLANESIZE` for `plane=N`) of a `-m` given, as
/// sbatch puts them in the job's environment and srun in its tasks'.
pub fn distribution_env(o: &SubmitOpts) -> Vec<(String, String)> {
    let Some(d) = o.distribution else {
        return Vec::new();
    };
    let mut env = vec![("SLURM_DISTRIBUTION".to_string(), d.to_string())];
    if let Some(size) = d.plane_size() {
        env.push(("SLURM_DIST_PLANESIZE".into(), size.to_string()));
    }
    env
}

/// Builds the job description from the applied options.
pub fn build_spec(
    o: &SubmitOpts,
    prog: &str,
    ctx: &SubmitCtx,
    script: String,
    script_args: Vec<String>,
    default_name: &str,
) -> Result<v1::JobSpec, Exit> {
    let o = &with_ntasks_per_gpu(o.clone(), prog)?;
    let work_dir = match o.chdir.as_deref() {
        Some(d) if d.starts_with('/') => d.to_string(),
        Some(d) => format!("{}/{}", ctx.cwd.trim_end_matches('/'), d),
        None => ctx.cwd.to_string(),
    };
    let array = match o.array.as_deref() {
        Some(a) => Some(
            model::job::parse_array(a, ctx.max_array_size)
                .map_err(|_| submission_failed(prog, "Invalid job array specification"))?,
        ),
        None => None,
    };
    let begin_time = match o.begin.as_deref() {
        Some(b) => {
            let b = TimeSpec::parse(b)
                .map_err(|_| Exit::error(prog, "Invalid --begin specification").with_code(255))?;
            b.resolve(ctx.now, Toward::Future, ctx.zone)
        }
        None => 0,
    };
    let deadline = checked_deadline(o, prog, ctx, begin_time)?;
    check_specialization(o, prog)?;
    if o.licenses.as_deref().is_some_and(|l| !l.trim().is_empty()) {
        return Err(submission_failed(prog, "Invalid license specification"));
    }
    check_gpu_counts(o, prog)?;
    let gpus_per_node = gpus_per_node(o);
    // GPUs per node and per task make the tasks per node, as in Slurm.
    let ntasks_per_node = o.ntasks_per_node.or_else(|| match &o.gpus_per_task {
        Some(t) if gpus_per_node > 0 && t.count > 0 => Some(gpus_per_node / t.count),
        _ => None,
    });
    let num_nodes = o
        .nodes
        .unwrap_or_else(|| match (o.ntasks, ntasks_per_node) {
            (Some(n), Some(per)) => n.div_ceil(per),
            _ => 0,
        });
    let num_tasks = o
        .ntasks
        .or_else(|| ntasks_per_node.map(|p| p * num_nodes.max(1)))
        .or(o.nodes)
        .unwrap_or(0);
    let gpu_type = gpu_type(o);
    let gpus = match (&o.gpus, &o.gpus_per_task) {
        (Some(g), _) => g.count,
        (None, Some(g)) => g.count * num_tasks.max(1),
        _ => 0,
    };
    let gpus_each_node = if gpus_per_node > 0 {
        gpus_per_node
    } else {
        gpus.div_ceil(num_nodes.max(1))
    };
    let total_gpus = gpus.max(gpus_per_node * num_nodes.max(1));
    let cpus_per_task = match (o.cpus_per_task, o.cpus_per_gpu) {
        (Some(c), _) => c,
        (None, Some(per_gpu)) if total_gpus > 0 => {
            (per_gpu * total_gpus).div_ceil(num_tasks.max(1))
        }
        _ => 0,
    };
    let memory = o.memory(prog)?;
    // sbatch(1): "A memory size specification of zero ... grants the job access to
    // all of the memory on each node."
    let mem_whole_node = matches!(memory, Some((MemKind::Node, 0)));
    let (mem_per_node_mb, mem_per_cpu_mb) = match memory {
        Some((MemKind::Node, mb)) => (mb, 0),
        Some((MemKind::Cpu, mb)) => (0, mb),
        Some((MemKind::Gpu, mb)) => (mb * u64::from(gpus_each_node.max(1)), 0),
        None => (0, 0),
    };
    let mut env = export_env(o.export.as_deref(), ctx.env);
    // Where sbatch ran, whatever `--chdir` says (sbatch(1): SLURM_SUBMIT_DIR).
    env.retain(|(name, _)| {
        !matches!(
            name.as_str(),
            "SLURM_SUBMIT_DIR" | "SLURM_CPUS_PER_TASK" | "SLURM_NTASKS" | "SLURM_NPROCS"
        )
    });
    env.push(("SLURM_SUBMIT_DIR".into(), ctx.cwd.to_string()));
    // sbatch(1): with --export=NONE "Slurm will then implicitly attempt to load the
    // user's environment on the node", as with --get-user-env: the node does it.
    let export_none = o.export.as_deref().is_some_and(|e| {
        let first = e
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_uppercase();
        first == "NONE" || first == "NIL"
    });
    env.retain(|(name, _)| name != "SLURM_GET_USER_ENV");
    if export_none && prog == "sbatch" {
        env.push(("SLURM_GET_USER_ENV".into(), "1".into()));
    }
    // Set in the job only when -c is given, as sbatch's; not a parent job's.
    if let Some(c) = o.cpus_per_task {
        env.push(("SLURM_CPUS_PER_TASK".into(), c.to_string()));
    }
    // So is the task count, only with -n or --ntasks-per-node (`sbatch -N2` has none).
    if o.ntasks.is_some() || ntasks_per_node.is_some() {
        env.push(("SLURM_NTASKS".into(), num_tasks.to_string()));
    }
    if let Some(n) = o.ntasks_per_gpu {
        env.retain(|(name, _)| name != "SLURM_NTASKS_PER_GPU");
        env.push(("SLURM_NTASKS_PER_GPU".into(), n.to_string()));
    }
    if prog == "sbatch" {
        let added = sbatch_job_env(o);
        env.retain(|(name, _)| added.iter().all(|(a, _)| a != name));
        env.extend(added);
    }
    let env = env
        .into_iter()
        .map(|(name, value)| v1::EnvVar { name, value })
        .collect();
    Ok(v1::JobSpec {
        name: o
            .job_name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        uid: ctx.uid,
        gid: ctx.gid,
        user: ctx.user.to_string(),
        account: o.account.clone().unwrap_or_default(),
        // `-p a,b` as given: the controller reads the list.
        partition: o.partition.clone().unwrap_or_default(),
        more_partitions: Vec::new(),
        qos: o.qos.clone().unwrap_or_default(),
        script,
        script_args,
        work_dir,
        env,
        stdout_pattern: io_path(&o.output),
        stderr_pattern: io_path(&o.error),
        stdin_path: io_path(&o.input),
        open_mode_append: o.open_mode_append.unwrap_or(false),
        num_nodes,
        max_nodes: o.most_nodes(),
        num_tasks,
        cpus_per_task,
        ntasks_per_node: ntasks_per_node.unwrap_or(0),
        mem_per_node_mb,
        mem_per_cpu_mb,
        mem_whole_node,
        gpus,
        gpus_per_node,
        gpu_type,
        time_limit_min: o.time_limit.flatten().unwrap_or(0),
        signal: o.signal,
        requeue: o.requeue.unwrap_or(ctx.job_requeue),
        comment: o.comment.clone().unwrap_or_default(),
        wckey: o.wckey.clone().unwrap_or_default(),
        begin_time,
        hold: o.hold,
        dependency: o.dependency.clone().unwrap_or_default(),
        array: array.map(|a| v1::ArraySpec {
            task_ids: a.task_ids,
            max_running: a.max_running,
        }),
        submit_host: ctx.host.to_string(),
        reservation: o.reservation.clone().unwrap_or_default(),
        constraint: o.constraint.clone().unwrap_or_default(),
        nodelist: o.nodelist.clone().unwrap_or_default(),
        exclude: o.exclude.clone().unwrap_or_default(),
        exclusive: o.exclusive,
        nice: o.nice.unwrap_or(0),
        priority: o.priority,
        site_factor: 0,
        interactive: false,
        kill_on_invalid_dep: o.kill_on_invalid_dep.unwrap_or(false),
        command: String::new(),
        mail_types: o
            .mail_types
            .iter()
            .flatten()
            .map(|&t| proto::convert::mail_type_to_wire(t) as i32)
            .collect(),
        mail_user: o.mail_user.clone().unwrap_or_default(),
        details: Some(v1::RequestDetails {
            deadline,
            ..request_details(o, &memory)
        }),
    })
}

/// GPUs asked of every node: the largest of `--gpus-per-node`, `--gres=gpu` and
/// `--gpus-per-socket` times `--sockets-per-node` (which it needs).
fn gpus_per_node(o: &SubmitOpts) -> u32 {
    let per_socket = o
        .gpus_per_socket
        .as_ref()
        .map(|g| g.count * o.sockets_per_node.unwrap_or(1));
    [&o.gpus_per_node, &o.gres.clone().flatten()]
        .into_iter()
        .flatten()
        .map(|g| g.count)
        .chain(per_socket)
        .max()
        .unwrap_or(0)
}

/// The GPU type of the first GPU option that names one; empty: any.
fn gpu_type(o: &SubmitOpts) -> String {
    let gres = o.gres.clone().flatten();
    [
        &o.gpus,
        &o.gpus_per_node,
        &o.gpus_per_task,
        &o.gpus_per_socket,
        &gres,
    ]
    .into_iter()
    .flatten()
    .map(|g| g.gpu_type.clone())
    .find(|t| !t.is_empty())
    .unwrap_or_default()
}

/// What a step (srun) asks of GPUs, as it was given: `scontrol show step`'s TRES
/// fields. `--mem-per-gpu` counts only where no other memory option overrides it.
pub fn step_gpu_request(o: &SubmitOpts, prog: &str) -> v1::StepGpuRequest {
    let count = |g: &Option<Gpu>| g.as_ref().map_or(0, |g| g.count);
    v1::StepGpuRequest {
        gpu_type: gpu_type(o),
        gpus: count(&o.gpus),
        gpus_per_node: gpus_per_node(o),
        gpus_per_socket: count(&o.gpus_per_socket),
        gpus_per_task: count(&o.gpus_per_task),
        cpus_per_gpu: o.cpus_per_gpu.unwrap_or(0),
        mem_per_gpu_mb: match o.memory(prog) {
            Ok(Some((MemKind::Gpu, mb))) => mb,
            _ => 0,
        },
        gpu_bind: o.gpu_bind.clone().unwrap_or_default(),
        gpu_freq: o.gpu_freq.clone().unwrap_or_default(),
    }
}

/// The options `scontrol show job` shows as given.
fn request_details(o: &SubmitOpts, memory: &Option<(MemKind, u64)>) -> v1::RequestDetails {
    let count = |g: &Option<Gpu>| g.as_ref().map_or(0, |g| g.count);
    v1::RequestDetails {
        min_cpus_node: o.min_cpus.unwrap_or(0),
        tmp_disk_mb: o.tmp_mb.unwrap_or(0),
        oversubscribe: o.oversubscribe,
        contiguous: o.contiguous,
        gpus_per_job: count(&o.gpus),
        gpus_per_task: count(&o.gpus_per_task),
        gpus_per_socket: count(&o.gpus_per_socket),
        cpus_per_gpu: o.cpus_per_gpu.unwrap_or(0),
        mem_per_gpu_mb: match memory {
            Some((MemKind::Gpu, mb)) => *mb,
            _ => 0,
        },
        gpu_bind: o.gpu_bind.clone().unwrap_or_default(),
        gpu_freq: o.gpu_freq.clone().unwrap_or_default(),
        deadline: 0,
        time_min: o.time_min.unwrap_or(0),
        overcommit: o.overcommit,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // 2026-11-30T04:50:16Z
    pub const NOW: i64 = 1_796_014_216;

    fn begin(text: &str) -> i64 {
        TimeSpec::parse(text)
            .unwrap()
            .resolve(NOW, Toward::Future, &jiff::tz::TimeZone::UTC)
    }

    fn at(y: i16, mo: i8, d: i8, h: i8, mi: i8, s: i8) -> i64 {
        jiff::tz::TimeZone::UTC.unix(jiff::civil::date(y, mo, d).at(h, mi, s, 0))
    }

    #[test]
    fn the_option_table_names_each_option_letter_and_variable_once_per_command() {
        for command in [Command::Sbatch, Command::Srun, Command::Salloc] {
            let defs: Vec<&OptDef> = defs(command).collect();
            let mut longs: Vec<&str> = defs.iter().map(|d| d.spec.long).collect();
            longs.sort_unstable();
            let n = longs.len();
            longs.dedup();
            assert_eq!(longs.len(), n, "{command:?}");
            let mut shorts: Vec<char> = defs.iter().filter_map(|d| d.spec.short).collect();
            let n = shorts.len();
            shorts.sort_unstable();
            shorts.dedup();
            assert_eq!(shorts.len(), n, "{command:?}");
            assert_eq!(specs(command).len(), defs.len());
        }
        let mut vars: Vec<&str> = OPTIONS.iter().filter_map(|d| d.env).collect();
        let n = vars.len();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), n);
        assert!(
            vars.iter()
                .all(|v| v.starts_with("SBATCH_") || v.starts_with("SALLOC_"))
        );
        // Each of salloc's counterparts stands for one of sbatch's.
        for v in SALLOC_COUNTERPARTS {
            let sbatch = v.replace("SALLOC_", "SBATCH_");
            assert!(vars.contains(&sbatch.as_str()), "{v}");
        }
        // salloc's own variables are those of its own options.
        for d in OPTIONS
            .iter()
            .filter(|d| d.env.is_some_and(|v| v.starts_with("SALLOC_")))
        {
            assert_eq!(d.takers, Takers::Salloc, "{}", d.spec.long);
        }
    }

    #[test]
    fn verbose_dumps_the_options_given_as_slurm_does() {
        let mut o = SubmitOpts::default();
        for (name, value) in [
            ("verbose", ""),
            ("ntasks", "2"),
            ("verbose", ""),
            ("ntasks", "4"),
        ] {
            o.apply(Command::Srun, name, value, Source::Cli).unwrap();
        }
        o.apply(Command::Srun, "label", "", Source::Cli).unwrap();
        assert_eq!(
            o.defined_options("srun"),
            "srun: defined options\n\
             srun: -------------------- --------------------\n\
             srun: label               : set\n\
             srun: ntasks              : 4\n\
             srun: verbose             : 2\n\
             srun: -------------------- --------------------\n\
             srun: end of defined options\n"
        );
        // SBATCH_DEBUG is the level; the limit is shown as Slurm writes it.
        let vars = [
            ("SBATCH_DEBUG".to_string(), "4".to_string()),
            ("SBATCH_TIMELIMIT".to_string(), "3".to_string()),
        ];
        let mut o = SubmitOpts::default();
        o.apply_all(Command::Sbatch, &env_options(&vars), Source::Env)
            .unwrap();
        assert_eq!(o.verbose, 4);
        let dump = o.defined_options("sbatch");
        assert!(
            dump.contains("sbatch: time                : 00:03:00\n"),
            "{dump}"
        );
        assert!(dump.contains("sbatch: verbose             : 4\n"), "{dump}");
        // --hint with an option it excludes: Slurm's note, once.
        let note = "Ignoring --hint.\n";
        for (other, noted) in [
            ("threads-per-core", "1"),
            ("extra-node-info", "1"),
            ("cpu-bind", "threads,verbose"),
            ("cpu-bind", "verbose"),
        ] {
            let mut o = SubmitOpts::default();
            o.apply(Command::Srun, "hint", "nomultithread", Source::Cli)
                .unwrap();
            o.apply(Command::Srun, other, noted, Source::Cli).unwrap();
            let dump = o.defined_options("srun");
            let want = usize::from(noted != "verbose");
            assert_eq!(dump.matches(note).count(), want, "{other}={noted}: {dump}");
        }
    }

    #[test]
    fn ignored_options_are_accepted_said_so_and_change_nothing() {
        let mut o = SubmitOpts::default();
        o.apply(Command::Sbatch, "mail-type", "END", Source::Cli)
            .unwrap();
        o.apply(
            Command::Sbatch,
            "mail-type",
            "begin,TIME_LIMIT_90",
            Source::Cli,
        )
        .unwrap();
        assert_eq!(
            o.mail_types,
            Some(vec![
                model::mail::MailType::Begin,
                model::mail::MailType::TimeLimit90
            ])
        );
        let bad = o
            .apply(Command::Sbatch, "mail-type", "BOGUS", Source::Cli)
            .unwrap_err();
        assert_eq!(
            bad.lines(),
            ["sbatch: error: Invalid --mail-type specification"]
        );
        o.apply(Command::Srun, "wait", "30", Source::Cli).unwrap();
        assert!(!o.wait);
        let help = ignored_help(Command::Sbatch);
        assert!(
            help.contains(" --mcs-label") && !help.contains(" --ignore-pbs"),
            "{help}"
        );
        assert!(
            !help.contains(" --pty") && !help.contains(" --time "),
            "{help}"
        );
        assert!(help.lines().all(|l| l.len() <= 80), "{help}");
        // A name outside the table is refused, not dropped.
        let e = o
            .apply(Command::Srun, "array", "1-3", Source::Cli)
            .unwrap_err();
        assert_eq!(e.lines(), ["srun: error: unrecognized option '--array'"]);
        // sbatch's --wait is its flag.
        o.apply(Command::Sbatch, "wait", "", Source::Cli).unwrap();
        assert!(o.wait);
    }

    #[test]
    fn input_variables_set_their_options() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let set = env_options(&env(&[
            ("SBATCH_TIMELIMIT", "10"),
            ("SBATCH_REQUEUE", "whatever"),
            ("SBATCH_ACCOUNT", "ml"),
            ("SBATCH_OUTPUT", "out.%j"),
            ("SBATCH_ERROR", "err.%j"),
            ("HOME", "/root"),
        ]));
        assert_eq!(
            set,
            [
                ("account", "ml".to_string()),
                ("error", "err.%j".to_string()),
                ("output", "out.%j".to_string()),
                ("requeue", String::new()),
                ("time", "10".to_string())
            ]
        );
    }

    #[test]
    fn basenames() {
        assert_eq!(basename("/a/b/run.sh"), "run.sh");
        assert_eq!(basename("run.sh"), "run.sh");
    }

    #[test]
    fn refusals_in_each_commands_words() {
        assert_eq!(
            submission_failed("srun", "Node count specification invalid").lines(),
            ["srun: error: Unable to allocate resources: Node count specification invalid"]
        );
        assert_eq!(
            submission_failed("salloc", INVALID_TIME_MIN).lines(),
            [
                "salloc: error: Job submit/allocate failed: Invalid time-min specification (exceeds job's time or other limits)"
            ]
        );
        assert_eq!(
            submission_failed("sbatch", INVALID_TIME_LIMIT).lines(),
            [
                "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)"
            ]
        );
    }

    #[test]
    fn begin_forms() {
        assert_eq!(begin("now"), NOW);
        assert_eq!(begin("now+60"), NOW + 60);
        assert_eq!(begin("now+1hour"), NOW + 3600);
        assert_eq!(begin("now+10minutes"), NOW + 600);
        assert_eq!(begin("now+2days"), NOW + 2 * 86400);
        assert_eq!(begin("now+1week"), NOW + 7 * 86400);
        assert_eq!(begin("16:00"), at(2026, 11, 30, 16, 0, 0));
        // Already past today: tomorrow.
        assert_eq!(begin("04:00"), at(2026, 12, 1, 4, 0, 0));
        assert_eq!(begin("4:30PM"), at(2026, 11, 30, 16, 30, 0));
        assert_eq!(begin("2026-12-01"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("2026-12-01T10:00"), at(2026, 12, 1, 10, 0, 0));
        assert_eq!(begin("2026-12-01T10:00:05"), at(2026, 12, 1, 10, 0, 5));
        assert_eq!(begin("tomorrow"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("midnight"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("teatime"), at(2026, 11, 30, 16, 0, 0));
        assert_eq!(begin("noon"), at(2026, 11, 30, 12, 0, 0));
        assert_eq!(begin("12/01"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("1201"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("12/24/27"), at(2027, 12, 24, 0, 0, 0));
        for bad in [
            "garbage",
            "now+",
            "now+5parsecs",
            "25:00",
            "2026-13-01",
            "2026-12-01Tx",
            "",
        ] {
            assert!(TimeSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn signal_specs() {
        let s = parse_signal_spec("USR2@90").unwrap();
        assert_eq!(
            (s.signal, s.seconds_before_end, s.batch_only),
            (libc::SIGUSR2, 90, false)
        );
        let s = parse_signal_spec("B:SIGTERM").unwrap();
        assert_eq!(
            (s.signal, s.seconds_before_end, s.batch_only),
            (libc::SIGTERM, 60, true)
        );
        let s = parse_signal_spec("R:10@5").unwrap();
        assert_eq!(
            (s.signal, s.seconds_before_end, s.batch_only),
            (10, 5, false)
        );
        for bad in ["FOO", "USR2@x", "X:USR2", "USR2@70000", "", "@5"] {
            assert!(parse_signal_spec(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn gpu_forms() {
        assert_eq!(
            parse_gpu_count("2"),
            Some(Gpu {
                gpu_type: "".into(),
                count: 2
            })
        );
        assert_eq!(
            parse_gpu_count("a100:4"),
            Some(Gpu {
                gpu_type: "a100".into(),
                count: 4
            })
        );
        assert_eq!(parse_gpu_count("x:y:z"), None);
        assert_eq!(parse_gpu_count("two"), None);
        assert_eq!(
            parse_gres("gpu:2"),
            Some(Some(Gpu {
                gpu_type: "".into(),
                count: 2
            }))
        );
        assert_eq!(
            parse_gres("shard:3"),
            Some(Some(Gpu {
                gpu_type: "shard".into(),
                count: 3
            }))
        );
        assert_eq!(parse_gres("shard:0"), None);
        assert_eq!(
            parse_gres("gres/mps:50").map(|g| g.map(|g| (g.gpu_type, g.count))),
            Some(Some(("mps".to_string(), 50)))
        );
        assert_eq!(
            parse_gres("gpu:a100:1"),
            Some(Some(Gpu {
                gpu_type: "a100".into(),
                count: 1
            }))
        );
        assert_eq!(
            parse_gres("gpu"),
            Some(Some(Gpu {
                gpu_type: "".into(),
                count: 1
            }))
        );
        assert_eq!(
            parse_gres("gres:gpu:3"),
            Some(Some(Gpu {
                gpu_type: "".into(),
                count: 3
            }))
        );
        assert_eq!(parse_gres("none"), Some(None));
        // An empty type or count is no specification, as Slurm refuses it.
        for bad in [
            "gpu:",
            "gpu::",
            "gpu:tesla:",
            "gpu:tesla:x",
            "gpu:t:",
            "gpu:t:x",
        ] {
            assert_eq!(parse_gres(bad), None, "{bad}");
        }
        assert_eq!(parse_gres("foo:1"), None);
        assert_eq!(parse_gres("gpu:a100:x"), None);
        assert_eq!(parse_gres("gpu:1,gpu:2"), None);
    }

    #[test]
    fn export_forms() {
        let env: Vec<(String, String)> = [("HOME", "/h"), ("PATH", "/bin"), ("SLURM_X", "1")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let names = |v: Vec<(String, String)>| {
            v.into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(export_env(None, &env)),
            ["HOME=/h", "PATH=/bin", "SLURM_X=1"]
        );
        assert_eq!(
            names(export_env(Some("ALL"), &env)),
            ["HOME=/h", "PATH=/bin", "SLURM_X=1"]
        );
        assert_eq!(names(export_env(Some("NONE"), &env)), ["SLURM_X=1"]);
        assert_eq!(
            names(export_env(Some("ALL,HOME=/x,NEW=1"), &env)),
            ["HOME=/x", "PATH=/bin", "SLURM_X=1", "NEW=1"]
        );
        assert_eq!(
            names(export_env(Some("PATH,FOO=bar,MISSING"), &env)),
            ["SLURM_X=1", "PATH=/bin", "FOO=bar"]
        );
    }

    #[test]
    fn constraint_directives_keep_slurm_operators() {
        let script = "#!/bin/sh\n#SBATCH -C \"(a100|h100)&ib\" # GPU nodes\n#SBATCH --constraint=x,y\ntrue\n";
        assert_eq!(
            directive_words(script),
            ["-C", "(a100|h100)&ib", "--constraint=x,y"]
        );
    }

    #[test]
    fn directive_words_stop_at_the_first_command() {
        let script = "#!/bin/bash\n#SBATCH -J dask-worker\n#SBATCH --mem=954M # a comment\n\n# plain comment\n#SBATCH --comment=\"two words\" -t 00:10:00\necho hi\n#SBATCH --late\n";
        assert_eq!(
            directive_words(script),
            [
                "-J",
                "dask-worker",
                "--mem=954M",
                "--comment=two words",
                "-t",
                "00:10:00"
            ]
        );
        assert_eq!(
            directive_words("#!/bin/sh\n  #SBATCH -p x\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn pbs_directives_are_read_as_slurms_sbatch_reads_them() {
        let script = "#!/bin/sh\n#PBS -N job -o/tmp/out -q debug\n\
                      #PBS -l nodes=3+ppn=2,mem=1024mb,walltime=1:00:00,vmem=9gb\n\
                      #PBS -m ae -M me@x -h -j oe -W depend=afterok:5 -W umask=022\n\
                      #PBS -l select=2:ncpus=8:mpiprocs=4 -l naccelerators=2\n\
                      sleep 1\n#PBS -N late\n";
        assert_eq!(
            pbs_directive_words(script).unwrap(),
            [
                "--job-name=job",
                "--output=/tmp/out",
                "--partition=debug",
                "--nodes=3",
                "--ntasks=6",
                "--mem=1024m",
                "--time=1:00:00",
                "--mail-type=END,FAIL",
                "--mail-user=me@x",
                "--hold",
                "--dependency=afterok:5",
                "--nodes=2",
                "--mincpus=8",
                "--ntasks-per-node=4",
                "--cpus-per-task=2",
                "--gpus=2",
            ]
        );
        assert_eq!(
            pbs_directive_words("#PBS -l nodes=n1+n2:ppn=2 -m n\n").unwrap(),
            ["--ntasks=2", "--nodelist=n[1-2]", "--mail-type=NONE"]
        );
        for (bad, says) in [
            ("#PBS -Z 3\n", "Unrecognized command line parameter -Z"),
            ("#PBS -N\n", "option requires an argument -- 'N'"),
            ("#PBS job\n", "Invalid argument: job"),
        ] {
            assert_eq!(pbs_directive_words(bad).unwrap_err(), says);
        }
    }

    #[test]
    fn lsf_directives_are_read_as_slurms_sbatch_reads_them() {
        let script = "#!/bin/sh\n#BSUB -o/dev/null -e /tmp/err\n#BSUB -m\"n1 n2\"\n\
                      #BSUB -J job -M4096\n#BSUB -W1 -x -qdebug -n 2\nsleep 1\n#BSUB -J late\n";
        assert_eq!(
            lsf_directive_words(script).unwrap(),
            [
                "--output=/dev/null",
                "--error=/tmp/err",
                "--nodelist=n1,n2",
                "--job-name=job",
                "--mem-per-cpu=4",
                "--time=1",
                "--exclusive",
                "--partition=debug",
                "--ntasks=2",
            ]
        );
        for (bad, says) in [
            ("#BSUB -Z 3\n", "Unrecognized command line parameter -Z"),
            ("#BSUB -J\n", "option requires an argument -- 'J'"),
            ("#BSUB -Mlots\n", "Invalid memory limit: lots"),
            (
                "#BSUB job\n",
                "Invalid directive found in batch script: job",
            ),
        ] {
            assert_eq!(lsf_directive_words(bad).unwrap_err(), says);
        }
    }

    #[test]
    fn gpus_asked_of_each_node() {
        let mut o = SubmitOpts::default();
        for (k, v) in [("gpus-per-socket", "1"), ("sockets-per-node", "2")] {
            o.apply(Command::Sbatch, k, v, Source::Cli).unwrap();
        }
        assert_eq!(gpus_per_node(&o), 2);
        // The largest of what is asked of every node.
        o.apply(Command::Sbatch, "gpus-per-node", "3", Source::Cli)
            .unwrap();
        assert_eq!(gpus_per_node(&o), 3);
    }

    #[test]
    fn option_values_and_errors() {
        let mut o = SubmitOpts::default();
        let e = |o: &mut SubmitOpts, k: &str, v: &str| {
            o.apply(Command::Sbatch, k, v, Source::Cli)
                .unwrap_err()
                .lines()
        };
        assert_eq!(
            e(&mut o, "time", "abc"),
            ["sbatch: error: Invalid --time specification"]
        );
        assert_eq!(
            e(&mut o, "mem", "1X"),
            ["sbatch: error: Invalid --mem specification"]
        );
        assert_eq!(
            e(&mut o, "mem-per-cpu", "x"),
            ["sbatch: error: Invalid --mem-per-cpu specification"]
        );
        assert_eq!(
            e(&mut o, "ntasks", "0"),
            ["sbatch: error: Invalid numeric value \"0\" for --ntasks."]
        );
        assert_eq!(
            e(&mut o, "ntasks", "-1"),
            ["sbatch: error: Invalid numeric value \"-1\" for --ntasks."]
        );
        assert_eq!(
            e(&mut o, "cpus-per-task", "x"),
            ["sbatch: error: Invalid numeric value \"x\" for --cpus-per-task."]
        );
        assert_eq!(
            e(&mut o, "nodes", "x"),
            ["sbatch: error: \"x\" is not a valid node count"]
        );
        assert_eq!(
            e(&mut o, "nodes", "9999999m"),
            ["sbatch: error: \"9999999m\" is not a valid node count"]
        );
        let counts = |v: &str| parse_node_count("sbatch", v).ok();
        assert_eq!(counts("2k"), Some((2048, None)));
        assert_eq!(counts("1-1M"), Some((1, Some(1 << 20))));
        assert_eq!(counts("3x"), None);
        assert_eq!(
            e(&mut o, "gpus", "x:y:z"),
            ["sbatch: error: Invalid generic resource (gres) specification"]
        );
        assert_eq!(
            e(&mut o, "gres", "foo:1"),
            ["sbatch: error: Invalid generic resource (gres) specification"]
        );
        // None of another resource is nothing; a GPU count of 0 stays a request.
        assert_eq!(parse_gres("craynetwork:0"), Some(None));
        assert_eq!(
            parse_gres("gpu:1,craynetwork:0"),
            Some(Some(Gpu {
                gpu_type: String::new(),
                count: 1
            }))
        );
        assert_eq!(
            e(&mut o, "signal", "FOO"),
            ["sbatch: error: Invalid --signal specification"]
        );
        assert_eq!(
            e(&mut o, "begin", "garbage"),
            ["sbatch: error: Invalid --begin specification"]
        );
        assert_eq!(
            e(&mut o, "open-mode", "x"),
            ["sbatch: error: Invalid --open-mode specification"]
        );
        assert_eq!(
            e(&mut o, "kill-on-invalid-dep", "maybe"),
            ["sbatch: error: Invalid --kill-on-invalid-dep specification"]
        );
        assert_eq!(
            o.apply(Command::Sbatch, "time", "abc", Source::Cli)
                .unwrap_err()
                .code,
            255
        );
        assert_eq!(
            o.apply(Command::Sbatch, "ntasks", "x", Source::Cli)
                .unwrap_err()
                .code,
            1
        );
        o.apply(Command::Sbatch, "time", "5", Source::Cli).unwrap();
        assert_eq!(o.time_limit, Some(Some(5)));
        o.apply(Command::Sbatch, "time", "0", Source::Cli).unwrap();
        assert_eq!(o.time_limit, Some(None));
        o.apply(Command::Sbatch, "nodes", "2-4", Source::Cli)
            .unwrap();
        assert_eq!((o.nodes, o.max_nodes), (Some(2), Some(4)));
        o.apply(Command::Sbatch, "nodes", "3-3", Source::Cli)
            .unwrap();
        assert_eq!((o.nodes, o.max_nodes), (Some(3), None));
        let mut o = SubmitOpts::default();
        o.apply(Command::Salloc, "nodes", "1-2", Source::Cli)
            .unwrap();
        o.apply(Command::Salloc, "use-min-nodes", "", Source::Cli)
            .unwrap();
        assert_eq!((o.nodes, o.most_nodes()), (Some(1), 0));
        assert!(
            o.apply(Command::Sbatch, "nodes", "4-2", Source::Cli)
                .is_err()
        );
        o.apply(Command::Sbatch, "nice", "", Source::Cli).unwrap();
        assert_eq!(o.nice, Some(100));
        // --ntasks-per-gpu, as Slurm 22.05 reads it.
        let per_gpu = |args: &[(&str, &str)]| {
            let mut o = SubmitOpts::default();
            for (k, v) in args {
                o.apply(Command::Srun, k, v, Source::Cli).unwrap();
            }
            with_ntasks_per_gpu(o, "srun").map(|o| {
                (
                    o.ntasks,
                    o.gpus.map(|g| g.count),
                    o.gpu_bind.unwrap_or_default(),
                )
            })
        };
        let single = || "single:2".to_string();
        assert_eq!(
            per_gpu(&[("gpus", "2"), ("ntasks-per-gpu", "2")]).unwrap(),
            (Some(4), Some(2), single())
        );
        assert_eq!(
            per_gpu(&[("nodes", "2"), ("gres", "gpu:1"), ("ntasks-per-tres", "2")]).unwrap(),
            (Some(4), None, single())
        );
        assert_eq!(
            per_gpu(&[("ntasks", "4"), ("ntasks-per-gpu", "2")]).unwrap(),
            (Some(4), Some(2), single())
        );
        for bad in [
            [("ntasks-per-gpu", "2"), ("gpus-per-task", "2")],
            [("ntasks-per-gpu", "2"), ("ntasks-per-node", "2")],
            [("ntasks-per-gpu", "2"), ("ntasks-per-tres", "2")],
        ] {
            let e = per_gpu(&bad).unwrap_err();
            assert!(e.stderr.starts_with("srun: "), "{}", e.stderr);
        }
        assert_eq!(
            per_gpu(&[("ntasks-per-gpu", "2"), ("ntasks-per-node", "2")])
                .unwrap_err()
                .stderr,
            "srun: fatal: --ntasks-per-node is mutually exclusive with --ntasks-per-gpu and \
             SLURM_NTASKS_PER_GPU\n"
        );
        // --spread-job: up to a node per task, unless -N says how many.
        let spread = |args: &[(&str, &str)]| {
            let mut o = SubmitOpts::default();
            for (k, v) in args {
                o.apply(Command::Sbatch, k, v, Source::Cli).unwrap();
            }
            o.most_nodes()
        };
        assert_eq!(spread(&[("ntasks", "4"), ("spread-job", "")]), 4);
        assert_eq!(
            spread(&[("spread-job", ""), ("ntasks", "4"), ("nodes", "2")]),
            0
        );
        assert_eq!(spread(&[("ntasks", "4")]), 0);
    }

    #[test]
    fn memory_precedence() {
        let mut o = SubmitOpts::default();
        o.apply(Command::Sbatch, "mem-per-cpu", "100", Source::Script)
            .unwrap();
        o.apply(Command::Sbatch, "mem", "1G", Source::Cli).unwrap();
        assert_eq!(o.memory("sbatch").unwrap(), Some((MemKind::Node, 1024)));
        o.apply(Command::Sbatch, "mem-per-cpu", "1G", Source::Cli)
            .unwrap();
        assert_eq!(
            o.memory("sbatch").unwrap_err().lines(),
            ["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."]
        );
    }
}
