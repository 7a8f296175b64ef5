//! Process groups: the registry of launched groups, signals, and "is anyone still there?".

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// How many servers may run at once (a benchmark launches one or two).
pub(crate) const REGISTRY_SLOTS: usize = 64;

/// The process groups launched and not yet stopped: 0 = free, -1 = reserved (spawning),
/// otherwise a pgid. Atomics rather than a `Mutex<Vec>`: [`kill_all`] then takes no lock and
/// calls only `kill(2)`, so it is safe even from a real signal handler, and can never wait
/// for a thread that was interrupted while holding a lock.
static REGISTRY: [AtomicI32; REGISTRY_SLOTS] = [const { AtomicI32::new(0) }; REGISTRY_SLOTS];

/// Reserves a registry slot before spawning, so a full registry fails before a process exists.
pub(crate) fn reserve() -> Option<usize> {
    REGISTRY.iter().position(|slot| {
        slot.compare_exchange(0, -1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

pub(crate) fn register(slot: usize, pgid: i32) {
    REGISTRY[slot].store(pgid, Ordering::SeqCst);
}

/// Frees a slot. Called before the group leader is reaped: while the leader is an unreaped
/// zombie its pid (the pgid) cannot be reused, so `kill_all` never signals a stranger.
pub(crate) fn release(slot: usize) {
    REGISTRY[slot].store(0, Ordering::SeqCst);
}

pub(crate) fn kill_all() {
    for slot in &REGISTRY {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe and has no memory preconditions.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

/// Sends `signal` to every process of the group. A group that is already empty is not an
/// error.
pub(crate) fn signal_group(pgid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: as above.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(error)
    }
}

/// Whether the child `pid` has exited, *without reaping it* (`WNOWAIT`): the zombie keeps the
/// pgid reserved until we are done signalling the group.
pub(crate) fn has_exited(pid: i32) -> io::Result<bool> {
    loop {
        // SAFETY: siginfo_t is plain data; waitid writes into it and nothing else.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: a valid pointer to a siginfo_t we own.
        let result = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if result == 0 {
            // SAFETY: si_pid is valid for SIGCHLD-style info, and 0 (zeroed) when no child
            // has changed state, which is what WNOHANG documents.
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            // Not our child any more: already reaped, so certainly exited.
            Some(libc::ECHILD) => return Ok(true),
            _ => return Err(error),
        }
    }
}

/// The live (non-zombie) processes of group `pgid`, read from /proc.
///
/// Zombies are left out: an orphan's zombie waits for init to reap it, which in a container
/// whose init never reaps can be forever, yet it holds no memory, port or CPU.
pub(crate) fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|text| state_and_pgrp(&text))
                .is_some_and(|(state, pgrp)| pgrp == pgid && !matches!(state, 'Z' | 'X' | 'x'))
        })
        .collect()
}

/// Fields 3 (state) and 5 (pgrp) of `/proc/[pid]/stat`, read after the last ')' because the
/// command name may contain anything.
fn state_and_pgrp(text: &str) -> Option<(char, i32)> {
    let mut fields = text.get(text.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Waits until `done` returns true or `timeout` passes, checking every `step`; returns
/// whether it became true.
pub(crate) fn poll_until(
    timeout: Duration,
    step: Duration,
    mut done: impl FnMut() -> io::Result<bool>,
) -> io::Result<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        if done()? {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep(step.min(deadline - now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_state_and_group_after_the_command_name() {
        assert_eq!(
            state_and_pgrp("77 (a) b (c)) S 1 4242 4242 0"),
            Some(('S', 4242))
        );
        assert_eq!(state_and_pgrp("77 (x) Z 1"), None);
    }

    #[test]
    fn own_group_has_this_process() {
        // SAFETY: getpgrp has no preconditions.
        let pgid = unsafe { libc::getpgrp() };
        assert!(live_members(pgid).contains(&(std::process::id() as i32)));
    }
}
