//! GPU device confinement under cgroup v2: a `BPF_PROG_TYPE_CGROUP_DEVICE` program,
//! attached to the job's cgroup, that refuses the character devices the job was not
//! given and allows every other device, as Slurm's cgroup/v2 plugin does. (v1 has
//! `devices.deny` files instead; see `cgroup`.)
//!
//! The kernel runs the program on every open or mknod of a device node by a process of
//! the cgroup, with a context of three 32-bit words: `access_type` (the access in the
//! high half, the device kind in the low half: 1 block, 2 character), `major` and
//! `minor`. The program answers 1 (allow) or 0 (refuse: the open fails with EPERM).
//!
//! Worked example: a job given GPU 1 of a node whose GPUs are 195:0, 195:1 and 195:2 is
//! refused 195:0 and 195:2, and the program is
//!
//! ```text
//! 0  ldxw r2, [r1+0]     the access type
//! 1  and32 r2, 0xffff    its device kind
//! 2  ldxw r3, [r1+4]     major
//! 3  ldxw r4, [r1+8]     minor
//! 4  jne r2, 2, +6       not a character device: allow
//! 5  jne r3, 195, +2     not 195:0: next
//! 6  jne r4, 0, +1
//! 7  ja +5               195:0: refuse
//! 8  jne r3, 195, +2     not 195:2: next
//! 9  jne r4, 2, +1
//! 10 ja +2               195:2: refuse
//! 11 mov32 r0, 1         allow
//! 12 exit
//! 13 mov32 r0, 0         refuse
//! 14 exit
//! ```
//!
//! The instructions are encoded by `rbpf`'s assembler; the program is loaded and
//! attached with the `bpf(2)` system call (`BPF_PROG_LOAD`, `BPF_PROG_ATTACH`). The
//! attachment lasts as long as the cgroup, so the program's descriptor is closed after
//! it; attaching again (a later step of the job) replaces the program.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// `BPF_DEVCG_DEV_CHAR`: the device kind of a character device.
const CHARACTER_DEVICE: u32 = 2;

/// The program refusing the character devices `deny` (major, minor), in `rbpf`
/// assembly: see the module's example.
pub fn assembly(deny: &[(u64, u64)]) -> String {
    let checks = 3 * deny.len();
    let mut lines = vec![
        "ldxw r2, [r1+0]".to_string(),
        "and32 r2, 0xffff".to_string(),
        "ldxw r3, [r1+4]".to_string(),
        "ldxw r4, [r1+8]".to_string(),
        format!("jne r2, {CHARACTER_DEVICE}, +{checks}"),
    ];
    for (i, (major, minor)) in deny.iter().enumerate() {
        lines.push(format!("jne r3, {major}, +2"));
        lines.push(format!("jne r4, {minor}, +1"));
        lines.push(format!("ja +{}", checks - 3 * i - 1));
    }
    lines.extend(["mov32 r0, 1", "exit", "mov32 r0, 0", "exit"].map(String::from));
    lines.join("\n")
}

/// The encoded instructions of the program refusing `deny`.
pub fn program(deny: &[(u64, u64)]) -> Vec<u8> {
    rbpf::assembler::assemble(&assembly(deny))
        .unwrap_or_else(|e| panic!("the device program does not assemble: {e}"))
}

/// Loads the program refusing `deny` and attaches it to the cgroup directory `cgroup`,
/// replacing the program an earlier call attached there.
pub fn attach(cgroup: &Path, deny: &[(u64, u64)]) -> io::Result<()> {
    let program = load(&program(deny))?;
    let dir = std::fs::File::open(cgroup)?;
    let attr = ProgAttach {
        target_fd: dir.as_raw_fd() as u32,
        attach_bpf_fd: program.as_raw_fd() as u32,
        attach_type: BPF_CGROUP_DEVICE,
        attach_flags: 0,
        replace_bpf_fd: 0,
    };
    bpf(BPF_PROG_ATTACH, &attr).map(|_| ())
}

const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_PROG_ATTACH: libc::c_int = 8;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;

/// The head of `union bpf_attr` for `BPF_PROG_LOAD` (linux/bpf.h); the kernel takes
/// the fields after it as zero.
#[repr(C)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// `union bpf_attr` for `BPF_PROG_ATTACH`.
#[repr(C)]
struct ProgAttach {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

/// Loads `insns` as a cgroup device program; a refusal carries the verifier's log.
fn load(insns: &[u8]) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"drover_dev");
    let attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_CGROUP_DEVICE,
        insn_cnt: (insns.len() / 8) as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        kern_version: 0,
        prog_flags: 0,
        prog_name: name,
        prog_ifindex: 0,
        expected_attach_type: BPF_CGROUP_DEVICE,
    };
    match bpf(BPF_PROG_LOAD, &attr) {
        // SAFETY: a successful BPF_PROG_LOAD returns a new descriptor that nothing else owns.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        Err(e) => {
            let text = String::from_utf8_lossy(&log);
            let text = text.trim_end_matches('\0').trim();
            if text.is_empty() {
                Err(e)
            } else {
                Err(io::Error::new(e.kind(), format!("{e}: {text}")))
            }
        }
    }
}

/// `bpf(cmd, attr, sizeof attr)`.
fn bpf<T>(cmd: libc::c_int, attr: &T) -> io::Result<i32> {
    // SAFETY: `attr` is a live `union bpf_attr` prefix of the size passed, whose
    // pointers (instructions, license, log) outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *const T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the program answers for a character (kind 2) or block (kind 1) device,
    /// run in `rbpf`'s interpreter on the kernel's context layout.
    fn verdict(deny: &[(u64, u64)], kind: u32, major: u32, minor: u32) -> u64 {
        let code = program(deny);
        let vm = rbpf::EbpfVmRaw::new(Some(&code)).unwrap();
        let access_rw = (2 | 4) << 16;
        let mut ctx: Vec<u8> = [access_rw | kind, major, minor]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        vm.execute_program(&mut ctx).unwrap()
    }

    #[test]
    fn the_denied_gpus_are_refused_and_everything_else_allowed() {
        let deny = [(195, 0), (195, 2)];
        assert_eq!(verdict(&deny, 2, 195, 0), 0);
        assert_eq!(verdict(&deny, 2, 195, 2), 0);
        assert_eq!(verdict(&deny, 2, 195, 1), 1, "the job's own GPU");
        assert_eq!(verdict(&deny, 2, 195, 255), 1, "nvidiactl");
        assert_eq!(verdict(&deny, 2, 1, 3), 1, "/dev/null");
        assert_eq!(verdict(&deny, 1, 195, 0), 1, "a block device 195:0");
        assert_eq!(verdict(&deny, 2, 0, 2), 1, "minor alone does not match");
    }

    #[test]
    fn with_nothing_denied_everything_is_allowed() {
        assert_eq!(verdict(&[], 2, 195, 0), 1);
        assert_eq!(verdict(&[], 1, 8, 0), 1);
    }

    #[test]
    fn the_program_is_the_documented_one() {
        let text = assembly(&[(195, 0), (195, 2)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 15);
        assert_eq!(lines[4], "jne r2, 2, +6");
        assert_eq!(lines[7], "ja +5");
        assert_eq!(lines[10], "ja +2");
        assert_eq!(program(&[(195, 0)]).len(), 12 * 8);
    }
}
