//! Records which build this is, for `loadmark --version` and every JSON result: the git commit
//! (from `git`, or `LOADMARK_COMMIT` when building from an export without `.git`; "unknown" when
//! neither is there), the cargo features that are on, and the target triple. And in release
//! builds, hands the linker the order of the code a run executes ([`code_layout`]).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Release builds lay out the functions a run executes together, in the order
/// `symbol-order/TARGET.txt` names them (written by dist/symbol-order): the kernel maps code
/// 64 KiB around every page a run touches, and a run's ~1 MB of executed code spread over 9 MB
/// of text kept 4.2 MiB of it resident. The option is rust-lld's, the default linker of
/// x86_64-unknown-linux-gnu; the musl target links with GNU ld by default (no such option
/// before binutils 2.43), so its build is pointed at the same rust-lld, which links the
/// static binary as well. A build that names its own linker links as before.
fn code_layout() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    let order = Path::new(&dir)
        .join("symbol-order")
        .join(format!("{target}.txt"));
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = std::env::var_os("RUSTC_LINKER").is_some() || flags.contains("link");
    if !release || own_linker || !order.exists() {
        return;
    }
    match target.as_str() {
        "x86_64-unknown-linux-gnu" => {}
        "x86_64-unknown-linux-musl" => match rust_lld_dir() {
            Some(gcc_ld) => {
                println!("cargo:rustc-link-arg-bins=-fuse-ld=lld");
                println!("cargo:rustc-link-arg-bins=-B{}", gcc_ld.display());
            }
            None => return,
        },
        _ => return,
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    // The file may name functions a later change renamed or inlined: skipped, silently.
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// The directory of the `ld.lld` that runs rustup's rust-lld (what rustc itself hands to `cc`
/// with `-B` for x86_64-unknown-linux-gnu).
fn rust_lld_dir() -> Option<std::path::PathBuf> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8(out.stdout).ok()?;
    let host = std::env::var("HOST").ok()?;
    let dir = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host)
        .join("bin/gcc-ld");
    dir.join("ld.lld").exists().then_some(dir)
}

fn main() {
    code_layout();
    println!("cargo:rerun-if-env-changed=LOADMARK_COMMIT");
    let commit = match std::env::var("LOADMARK_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            let commit = git(&["rev-parse", "--short=12", "HEAD"]);
            if commit.is_some() {
                // Rebuild when HEAD moves: HEAD itself (a checkout), the branch it names (a
                // commit), and packed-refs (a gc). `--git-path` resolves them in a worktree too.
                let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
                if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    watched.push(branch);
                }
                for p in watched {
                    if let Some(path) = git(&["rev-parse", "--git-path", &p]) {
                        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
                        let full = Path::new(&dir).join(path);
                        if full.exists() {
                            println!("cargo:rerun-if-changed={}", full.display());
                        }
                    }
                }
            }
            commit.unwrap_or_else(|| "unknown".to_string())
        }
    };
    // Cargo sets CARGO_FEATURE_<NAME> for each feature that is on (upper case, '-' as '_');
    // this crate's feature names are lower case without '_', so the mapping back is exact.
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(str::to_string))
        .map(|f| f.to_lowercase().replace('_', "-"))
        .filter(|f| f != "default")
        .collect();
    features.sort();
    let target = std::env::var("TARGET").unwrap_or_default();
    let shown = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(",")
    };
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=LOADMARK_COMMIT={commit}");
    println!("cargo:rustc-env=LOADMARK_FEATURES={}", features.join(","));
    println!("cargo:rustc-env=LOADMARK_TARGET={target}");
    // The same line as `loadmark_report::Build`'s Display (a test holds them together).
    println!(
        "cargo:rustc-env=LOADMARK_VERSION_LINE={version} (commit {commit}, {target}, features: {shown})"
    );
}
