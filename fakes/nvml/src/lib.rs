//! A fake NVIDIA Management Library for tests on machines without GPUs: a
//! `libnvidia-ml.so.1` that exports the NVML calls the node daemon makes (through
//! `nvml-wrapper`) and answers them from one declared topology, a DGX-like 8-GPU node:
//!
//! - GPUs 0-7 are "NVIDIA H100 80GB HBM3" with 80 GiB each, minor numbers 0-7 (the
//!   device files `/dev/nvidia0`-`7`), GPUs 0-3 on NUMA node 0 and 4-7 on NUMA node 1;
//! - NVLink joins the pairs 0-1, 2-3, 4-5 and 6-7 (link 0 of each GPU, to its partner);
//! - GPU 7 is in MIG mode with seven `1g.10gb` instances.
//!
//! `FAKE_NVML_GPUS=N` serves only the first N GPUs (a node that lost some).
//! `FAKE_NVML_UTILIZATION=DIR` makes GPUs busy: the file `DIR/<index>` holds
//! `PERCENT [USED_MIB]`, GPU `<index>`'s utilization and memory in use, read at every
//! call (a job's script may write it); without it a GPU is idle with nothing in use.
//! A MIG instance has no utilization (NOT_SUPPORTED, as real NVML answers). Every
//! other NVML call is missing, which `nvml-wrapper` reports as a symbol it cannot load.
//!
//! A device handle is a number, not a pointer: `(gpu + 1) << 8` for a GPU, with
//! `mig + 1` in the low byte for one of its MIG instances.

#![allow(clippy::missing_safety_doc)] // C ABI: the callers are NVML's, with NVML's contracts.

use std::ffi::{c_char, c_uint, c_ulonglong, c_void};

const SUCCESS: c_uint = 0;
const INVALID_ARGUMENT: c_uint = 2;
const NOT_SUPPORTED: c_uint = 3;
const INSUFFICIENT_SIZE: c_uint = 7;

const GPUS: u32 = 8;
const MIG_GPU: u32 = 7;
const MIG_INSTANCES: u32 = 7;
const NVLINK_MAX_LINKS: u32 = 18;
const GIB: u64 = 1 << 30;

type Handle = *mut c_void;

#[repr(C)]
pub struct Memory2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[repr(C)]
pub struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

fn gpu_count() -> u32 {
    std::env::var("FAKE_NVML_GPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(GPUS, |n: u32| n.min(GPUS))
}

/// The GPU and MIG instance a handle names, if it names one that exists.
fn decode(handle: Handle) -> Option<(u32, Option<u32>)> {
    let raw = handle as usize;
    let gpu = (raw >> 8).checked_sub(1)? as u32;
    let mig = (raw & 0xff).checked_sub(1).map(|m| m as u32);
    let exists = gpu < gpu_count() && mig.is_none_or(|m| gpu == MIG_GPU && m < MIG_INSTANCES);
    exists.then_some((gpu, mig))
}

/// GPU `gpu`'s utilization (percent) and memory in use (bytes), as
/// `FAKE_NVML_UTILIZATION` says.
fn activity(gpu: u32) -> (u32, u64) {
    let Some(dir) = std::env::var_os("FAKE_NVML_UTILIZATION") else {
        return (0, 0);
    };
    let text = std::fs::read_to_string(std::path::Path::new(&dir).join(gpu.to_string()))
        .unwrap_or_default();
    let mut words = text
        .split_whitespace()
        .map(|w| w.parse::<u64>().unwrap_or(0));
    let percent = words.next().unwrap_or(0).min(100) as u32;
    let used_mib = words.next().unwrap_or(0);
    (percent, used_mib << 20)
}

fn uuid(gpu: u32, mig: Option<u32>) -> String {
    match mig {
        None => format!("GPU-fa4e0000-0000-0000-0000-{gpu:012}"),
        Some(m) => format!("MIG-fa4e0000-0000-0000-{gpu:04}-{m:012}"),
    }
}

fn encode(gpu: u32, mig: Option<u32>) -> Handle {
    (((gpu as usize + 1) << 8) | mig.map_or(0, |m| m as usize + 1)) as Handle
}

/// Copies `text` and a NUL into the caller's buffer of `len` bytes.
unsafe fn put_str(text: &str, buf: *mut c_char, len: c_uint) -> c_uint {
    if buf.is_null() {
        return INVALID_ARGUMENT;
    }
    if text.len() + 1 > len as usize {
        return INSUFFICIENT_SIZE;
    }
    // SAFETY: the caller gave `len` writable bytes; text and its NUL fit.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, text.len());
        *buf.add(text.len()) = 0;
    }
    SUCCESS
}

/// Writes `value` through `out`.
unsafe fn put<T>(out: *mut T, value: T) -> c_uint {
    if out.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: the caller gave a valid pointer to a T.
    unsafe { out.write(value) };
    SUCCESS
}

fn bus_id(gpu: u32) -> String {
    format!("00000000:{:02X}:00.0", 0x18 + gpu * 0x10)
}

fn pci_info(gpu: u32) -> PciInfo {
    let mut info = PciInfo {
        bus_id_legacy: [0; 16],
        domain: 0,
        bus: 0x18 + gpu * 0x10,
        device: 0,
        pci_device_id: 0x2330_10de,
        pci_sub_system_id: 0x16c1_10de,
        bus_id: [0; 32],
    };
    for (slot, byte) in info.bus_id.iter_mut().zip(bus_id(gpu).bytes()) {
        *slot = byte as c_char;
    }
    for (slot, byte) in info.bus_id_legacy.iter_mut().zip(bus_id(gpu)[4..].bytes()) {
        *slot = byte as c_char;
    }
    info
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> c_uint {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> c_uint {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> c_uint {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(_result: c_uint) -> *const c_char {
    c"fake NVML error".as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(buf: *mut c_char, len: c_uint) -> c_uint {
    // SAFETY: NVML's contract: `len` writable bytes at `buf`.
    unsafe { put_str("550.00-fake", buf, len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> c_uint {
    // SAFETY: NVML's contract: a valid out pointer.
    unsafe { put(count, gpu_count()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(index: c_uint, out: *mut Handle) -> c_uint {
    if index >= gpu_count() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: NVML's contract: a valid out pointer.
    unsafe { put(out, encode(index, None)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(dev: Handle, buf: *mut c_char, len: c_uint) -> c_uint {
    let Some((_, mig)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    let name = match mig {
        None => "NVIDIA H100 80GB HBM3".to_string(),
        Some(_) => "NVIDIA H100 80GB HBM3 MIG 1g.10gb".to_string(),
    };
    // SAFETY: NVML's contract: `len` writable bytes at `buf`.
    unsafe { put_str(&name, buf, len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(dev: Handle, buf: *mut c_char, len: c_uint) -> c_uint {
    let Some((gpu, mig)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    // SAFETY: NVML's contract: `len` writable bytes at `buf`.
    unsafe { put_str(&uuid(gpu, mig), buf, len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid_c: *const c_char,
    out: *mut Handle,
) -> c_uint {
    if uuid_c.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: NVML's contract: a NUL-terminated string.
    let wanted = unsafe { std::ffi::CStr::from_ptr(uuid_c) }.to_string_lossy();
    let found = (0..gpu_count()).find_map(|gpu| {
        let migs = if gpu == MIG_GPU { MIG_INSTANCES } else { 0 };
        std::iter::once(None)
            .chain((0..migs).map(Some))
            .find(|mig| uuid(gpu, *mig) == wanted)
            .map(|mig| encode(gpu, mig))
    });
    match found {
        // SAFETY: NVML's contract: a valid out pointer.
        Some(handle) => unsafe { put(out, handle) },
        None => 13, // NVML_ERROR_NOT_FOUND
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    dev: Handle,
    out: *mut Utilization,
) -> c_uint {
    match decode(dev) {
        Some((gpu, None)) => {
            let (percent, _) = activity(gpu);
            let rates = Utilization {
                gpu: percent,
                memory: percent,
            };
            // SAFETY: NVML's contract: a valid out pointer.
            unsafe { put(out, rates) }
        }
        Some(_) => NOT_SUPPORTED,
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(dev: Handle, out: *mut c_uint) -> c_uint {
    match decode(dev) {
        // SAFETY: NVML's contract: a valid out pointer.
        Some((gpu, None)) => unsafe { put(out, gpu) },
        Some(_) => NOT_SUPPORTED,
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetIndex(dev: Handle, out: *mut c_uint) -> c_uint {
    match decode(dev) {
        // SAFETY: NVML's contract: a valid out pointer.
        Some((gpu, _)) => unsafe { put(out, gpu) },
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(dev: Handle, out: *mut Memory2) -> c_uint {
    let Some((gpu, mig)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    let total = if mig.is_some() { 10 * GIB } else { 80 * GIB };
    let used = if mig.is_some() {
        0
    } else {
        activity(gpu).1.min(total)
    };
    let memory = Memory2 {
        version: 0,
        total,
        reserved: 0,
        free: total - used,
        used,
    };
    // SAFETY: NVML's contract: a valid out pointer.
    unsafe { put(out, memory) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(dev: Handle, out: *mut PciInfo) -> c_uint {
    match decode(dev) {
        // SAFETY: NVML's contract: a valid out pointer.
        Some((gpu, _)) => unsafe { put(out, pci_info(gpu)) },
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNumaNodeId(dev: Handle, out: *mut c_uint) -> c_uint {
    match decode(dev) {
        // SAFETY: NVML's contract: a valid out pointer.
        Some((gpu, _)) => unsafe { put(out, u32::from(gpu >= GPUS / 2)) },
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    dev: Handle,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> c_uint {
    let Some((gpu, None)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    let mode = c_uint::from(gpu == MIG_GPU);
    // SAFETY: NVML's contract: valid out pointers.
    unsafe {
        put(current, mode);
        put(pending, mode)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(dev: Handle, out: *mut c_uint) -> c_uint {
    let Some((gpu, None)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    let count = if gpu == MIG_GPU { MIG_INSTANCES } else { 0 };
    // SAFETY: NVML's contract: a valid out pointer.
    unsafe { put(out, count) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    dev: Handle,
    index: c_uint,
    out: *mut Handle,
) -> c_uint {
    match decode(dev) {
        Some((MIG_GPU, None)) if index < MIG_INSTANCES => {
            // SAFETY: NVML's contract: a valid out pointer.
            unsafe { put(out, encode(MIG_GPU, Some(index))) }
        }
        Some(_) => INVALID_ARGUMENT,
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(dev: Handle, out: *mut c_uint) -> c_uint {
    match decode(dev) {
        // SAFETY: NVML's contract: a valid out pointer.
        Some((_, mig)) => unsafe { put(out, c_uint::from(mig.is_some())) },
        None => INVALID_ARGUMENT,
    }
}

/// The GPU at the other end of `link`, if that link is up: link 0 of each GPU of a pair.
fn nvlink_peer(gpu: u32, link: u32) -> Option<u32> {
    let peer = gpu ^ 1;
    (link == 0 && peer < gpu_count()).then_some(peer)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    dev: Handle,
    link: c_uint,
    out: *mut c_uint,
) -> c_uint {
    let Some((gpu, None)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    if link >= NVLINK_MAX_LINKS {
        return INVALID_ARGUMENT;
    }
    // SAFETY: NVML's contract: a valid out pointer.
    unsafe { put(out, c_uint::from(nvlink_peer(gpu, link).is_some())) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemotePciInfo_v2(
    dev: Handle,
    link: c_uint,
    out: *mut PciInfo,
) -> c_uint {
    let Some((gpu, None)) = decode(dev) else {
        return INVALID_ARGUMENT;
    };
    match nvlink_peer(gpu, link) {
        // SAFETY: NVML's contract: a valid out pointer.
        Some(peer) => unsafe { put(out, pci_info(peer)) },
        None => NOT_SUPPORTED,
    }
}
