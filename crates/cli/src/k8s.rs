//! `loadmark k8s`: prints the Indexed Job and ConfigMap that run one step of a plan file
//! split over N pods (see `loadmark_cluster::k8s`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use loadmark_cluster::k8s::{manifests, valid_name, JobSpec};

use crate::UsageError;

#[derive(Args, Debug)]
pub struct K8sArgs {
    /// The plan file (YAML); its one step, or the one chosen with --step
    pub plan: PathBuf,
    /// How many pods (segments) run the step
    #[arg(long = "workers", value_name = "N")]
    pub workers: u32,
    /// The container image holding loadmark (its entrypoint must be the loadmark binary)
    #[arg(long = "image", value_name = "IMAGE")]
    pub image: String,
    /// Names the Job, its ConfigMap and the run (lowercase letters, digits, '-')
    #[arg(long = "name", default_value = "loadmark")]
    pub name: String,
    /// When every pod starts: RFC 3339, or +DURATION from now (leave time to apply the Job
    /// and pull the image)
    #[arg(long = "start-at", value_name = "TIME", default_value = "+2m")]
    pub start_at: String,
    /// Which step of the plan file (from 1), when it has more than one
    #[arg(long = "step", value_name = "N")]
    pub step: Option<usize>,
}

pub fn k8s(args: &K8sArgs) -> Result<ExitCode> {
    if args.workers == 0 {
        return Err(UsageError("--workers: expected at least 1 pod".into()).into());
    }
    if !valid_name(&args.name) {
        return Err(UsageError(format!(
            "--name {}: expected at most 52 lowercase letters, digits and '-', not starting or ending with '-'",
            args.name
        ))
        .into());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loaded =
        loadmark_plan::load_plan_file(&args.plan, cores).map_err(|e| UsageError(e.to_string()))?;
    let step = match (args.step, loaded.steps.len()) {
        (None, 1) => &loaded.steps[0],
        (None, n) => {
            return Err(UsageError(format!(
                "{}: the plan has {n} steps; a Job runs one: pick it with --step 1..{n}",
                args.plan.display()
            ))
            .into())
        }
        (Some(i), n) => loaded
            .steps
            .get(i.wrapping_sub(1))
            .ok_or_else(|| UsageError(format!("--step {i}: the plan has steps 1..{n}")))?,
    };
    let (_, start_at) = crate::split::parse_start(&args.start_at)?;
    crate::output::print_out(manifests(&JobSpec {
        name: args.name.clone(),
        image: args.image.clone(),
        workers: args.workers,
        plan_json: serde_json::to_string(&step.plan)?,
        start_at,
    }))?;
    Ok(ExitCode::SUCCESS)
}
