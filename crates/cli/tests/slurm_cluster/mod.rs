//! A real Slurm cluster on loopback for tests: munged, slurmctld and three slurmd (one
//! host, three node names on distinct ports), from Debian's packages, configured in a
//! temporary directory, each daemon a child of the test stopped by its PID on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NODES: usize = 3;

/// The running daemons; dropping it stops them (SIGTERM, then SIGKILL after 5 s).
pub struct SlurmCluster {
    pub dir: PathBuf,
    pub conf: PathBuf,
    daemons: Vec<(String, Child)>,
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        // Nodes first, controller, then munge: each by the PID we started.
        for (_, child) in self.daemons.iter_mut().rev() {
            stop(child);
        }
    }
}

fn stop(child: &mut Child) {
    // SAFETY: kill(2) on our own child, not yet reaped, so the PID is still ours.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Ports that could be bound just now, from a per-process stretch of the unprivileged
/// range (so parallel suites rarely collide). Another process may still take one before a
/// daemon binds it: [`SlurmCluster::start`] notices a daemon that could not start and
/// tries again with other ports.
fn bindable_ports(n: usize, attempt: u32) -> Vec<u16> {
    let base = 20_000 + (std::process::id() * 37 + attempt * 101) % 30_000;
    let mut out = Vec::new();
    let mut port = base;
    while out.len() < n {
        port = if port >= 60_000 { 20_000 } else { port + 1 };
        if TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            out.push(port as u16);
        }
    }
    out
}

fn need(program: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(dir).join(program);
        if p.exists() {
            return p;
        }
    }
    panic!("{program} is not installed: install Debian's slurm-wlm and munge (.ci/run does)");
}

impl SlurmCluster {
    /// Starts the cluster and waits until its nodes are idle; panics with the daemons' logs
    /// when it cannot start in three attempts.
    pub fn start(dir: &Path) -> SlurmCluster {
        let mut last = String::new();
        for attempt in 0..3 {
            match Self::try_start(dir, attempt) {
                Ok(c) => return c,
                Err(why) => last = why,
            }
        }
        panic!("the Slurm cluster did not start: {last}");
    }

    fn try_start(dir: &Path, attempt: u32) -> Result<SlurmCluster, String> {
        let dir = dir.join(format!("slurm-{attempt}"));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["munge", "run", "state", "log", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        for i in 0..NODES {
            std::fs::create_dir_all(dir.join(format!("spool/node{i}"))).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        // munged wants its key private and its socket's directory searchable by everyone.
        std::fs::set_permissions(dir.join("munge"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        // Every directory above the socket too: the test's temporary directory is private.
        for d in [
            dir.parent().unwrap().to_path_buf(),
            dir.clone(),
            dir.join("run"),
        ] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let key: Vec<u8> = (0..1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ std::process::id() as u8)
            .collect();
        let key_path = dir.join("munge/munge.key");
        std::fs::write(&key_path, key).unwrap();
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o400)).unwrap();
        let ports = bindable_ports(NODES + 1, attempt);
        let d = dir.display();
        let mut conf = format!(
            "ClusterName=loadmarktest\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={}\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n\
             AuthInfo=socket={d}/run/munge.socket\nStateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool/%n\nSlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd-%n.pid\nSlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd-%n.log\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\nSwitchType=switch/none\n\
             MpiDefault=none\nReturnToService=2\nSchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nInactiveLimit=0\n\
             KillWait=10\nSlurmdTimeout=30\nSlurmctldTimeout=30\n",
            ports[0]
        );
        for i in 0..NODES {
            conf.push_str(&format!(
                "NodeName=node{i} NodeHostname=node{i} NodeAddr=127.0.0.1 Port={} CPUs=2 RealMemory=500 State=UNKNOWN\n",
                ports[i + 1]
            ));
        }
        conf.push_str(&format!(
            "PartitionName=test Nodes=node[0-{}] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
            NODES - 1
        ));
        let conf_path = dir.join("slurm.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut cluster = SlurmCluster {
            dir: dir.clone(),
            conf: conf_path.clone(),
            daemons: Vec::new(),
        };
        let log = |name: &str| std::fs::File::create(dir.join(format!("log/{name}.out"))).unwrap();
        let spawn = |cluster: &mut SlurmCluster, name: &str, cmd: &mut Command| {
            let child = cmd
                .env("SLURM_CONF", &conf_path)
                .stdin(Stdio::null())
                .stdout(log(name))
                .stderr(log(name))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
            cluster.daemons.push((name.to_string(), child));
        };
        spawn(
            &mut cluster,
            "munged",
            Command::new(need("munged"))
                .arg("-F")
                .arg(format!("--key-file={}", key_path.display()))
                .arg(format!("--socket={d}/run/munge.socket"))
                .arg(format!("--pid-file={d}/munge/munged.pid"))
                .arg(format!("--log-file={d}/munge/munged.log"))
                .arg(format!("--seed-file={d}/munge/seed")),
        );
        cluster.wait_for("munge's socket", || dir.join("run/munge.socket").exists())?;
        spawn(
            &mut cluster,
            "slurmctld",
            Command::new(need("slurmctld")).args(["-D", "-i"]),
        );
        let conf = conf_path.clone();
        cluster.wait_for("slurmctld to answer", || {
            Command::new(need("scontrol"))
                .arg("ping")
                .env("SLURM_CONF", &conf)
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("is UP"))
        })?;
        for i in 0..NODES {
            spawn(
                &mut cluster,
                &format!("slurmd-node{i}"),
                Command::new(need("slurmd")).args(["-D", "-N", &format!("node{i}")]),
            );
        }
        cluster.wait_for("three idle nodes", || {
            Command::new(need("sinfo"))
                .args(["-h", "-N", "-o", "%T"])
                .env("SLURM_CONF", &conf)
                .output()
                .is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .filter(|l| l.trim() == "idle")
                        .count()
                        == NODES
                })
        })?;
        Ok(cluster)
    }

    /// Polls `ready` every 50 ms for up to 30 s (a busy 2-core machine starts slurmctld in
    /// about a second); fails early when a daemon has exited (a port taken, a bad config).
    fn wait_for(&mut self, what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if ready() {
                return Ok(());
            }
            for (name, child) in &mut self.daemons {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "{name} exited ({status}) while waiting for {what}; logs in {}",
                        self.dir.display()
                    ));
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "no {what} after 30 s; logs in {}",
            self.dir.display()
        ))
    }
}
