//! Slurm's log levels (`quiet` .. `debug5`, or their numbers 0 .. 9), as `srun
//! --slurmd-debug` and the daemons' debug settings name them.
//!
//! `srun --slurmd-debug=LEVEL` raises what the node's step daemon writes to the step's
//! stderr from `error` by LEVEL's number: `error` (2) gives `verbose`, `info` gives
//! `debug`, `verbose` gives `debug2` ([`LogLevel::step_stderr`]).

/// One of Slurm's log levels, in order of verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Quiet,
    Fatal,
    Error,
    Info,
    Verbose,
    Debug,
    Debug2,
    Debug3,
    Debug4,
    Debug5,
}

impl LogLevel {
    /// Every level, by number.
    pub const ALL: [LogLevel; 10] = [
        LogLevel::Quiet,
        LogLevel::Fatal,
        LogLevel::Error,
        LogLevel::Info,
        LogLevel::Verbose,
        LogLevel::Debug,
        LogLevel::Debug2,
        LogLevel::Debug3,
        LogLevel::Debug4,
        LogLevel::Debug5,
    ];

    /// Slurm's name of it.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Quiet => "quiet",
            LogLevel::Fatal => "fatal",
            LogLevel::Error => "error",
            LogLevel::Info => "info",
            LogLevel::Verbose => "verbose",
            LogLevel::Debug => "debug",
            LogLevel::Debug2 => "debug2",
            LogLevel::Debug3 => "debug3",
            LogLevel::Debug4 => "debug4",
            LogLevel::Debug5 => "debug5",
        }
    }

    /// Its number (`quiet` 0 .. `debug5` 9).
    pub fn number(self) -> u32 {
        self as u32
    }

    /// The level of a number, the highest for a larger one.
    pub fn from_number(n: u32) -> LogLevel {
        Self::ALL[n.min(9) as usize]
    }

    /// A name (any case) or a number, as Slurm's `log_string2num` reads it.
    pub fn parse(text: &str) -> Result<LogLevel, String> {
        let t = text.trim();
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
            return digits
                .parse::<u32>()
                .map(LogLevel::from_number)
                .map_err(|_| format!("Invalid log level: {text}"));
        }
        Self::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("Invalid log level: {text}"))
    }

    /// What a step daemon writes to the step's stderr for `srun --slurmd-debug=self`:
    /// `error` raised by this level's number, at most `debug3`.
    pub fn step_stderr(self) -> LogLevel {
        LogLevel::from_number((LogLevel::Error.number() + self.number()).min(7))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_the_step_daemons_level() {
        assert_eq!(LogLevel::parse("ERROR"), Ok(LogLevel::Error));
        assert_eq!(LogLevel::parse("6"), Ok(LogLevel::Debug2));
        assert!(LogLevel::parse("loud").is_err());
        assert_eq!(LogLevel::Error.step_stderr(), LogLevel::Verbose);
        assert_eq!(LogLevel::Info.step_stderr(), LogLevel::Debug);
        assert_eq!(LogLevel::Verbose.step_stderr(), LogLevel::Debug2);
        assert_eq!(LogLevel::Debug5.step_stderr(), LogLevel::Debug3);
        assert_eq!(LogLevel::from_number(42), LogLevel::Debug5);
    }
}
