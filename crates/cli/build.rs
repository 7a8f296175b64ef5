//! Records which build this is, for `loadmark --version` and every JSON result: the git commit
//! (from `git`, or `LOADMARK_COMMIT` when building from an export without `.git`; "unknown" when
//! neither is there), the cargo features that are on, and the target triple.

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

fn main() {
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
