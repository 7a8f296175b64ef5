//! `loadmark k8s`: prints the Indexed Job and ConfigMap that run one step of a plan file
//! split over N pods (see `loadmark_cluster::k8s`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use loadmark_cluster::k8s::manifests;
use loadmark_workflow::k8s::JobRequest;

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
    let job = loadmark_workflow::k8s::job(&JobRequest {
        plan: args.plan.clone(),
        workers: args.workers,
        image: args.image.clone(),
        name: args.name.clone(),
        start_at: args.start_at.clone(),
        step: args.step,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
    })?;
    crate::output::print_out(manifests(&job))?;
    Ok(ExitCode::SUCCESS)
}
