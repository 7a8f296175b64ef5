//! `loadmark k8s`: the Indexed Job that runs one step of a plan file split over N pods
//! (the manifests themselves are `loadmark_cluster::k8s`'s).

use std::path::PathBuf;

use loadmark_cluster::k8s::{valid_name, JobSpec};
use loadmark_plan::{LoadedPlan, Step};

use crate::segment::{parse_start, SegmentError};

/// What `loadmark k8s` is asked.
#[derive(Debug, Clone)]
pub struct JobRequest {
    pub plan: PathBuf,
    pub workers: u32,
    pub image: String,
    pub name: String,
    /// RFC 3339, or +DURATION from now.
    pub start_at: String,
    /// Which step (from 1), when the plan has more than one.
    pub step: Option<usize>,
    /// The CPUs a plan's `auto` values resolve to.
    pub cores: usize,
}

/// Why the Job cannot be made. All but [`K8sError::Json`] are the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum K8sError {
    #[error("--workers: expected at least 1 pod")]
    NoWorkers,
    #[error("--name {0}: expected at most 52 lowercase letters, digits and '-', not starting or ending with '-'")]
    BadName(String),
    /// The plan file does not load (the message says where).
    #[error("{0}")]
    Plan(String),
    /// The plan has several steps and none was picked: `--step N`.
    #[error("{}: the plan has {steps} steps; a Job runs one: pick it with --step 1..{steps}", plan.display())]
    WhichStep { plan: PathBuf, steps: usize },
    /// `--step` beyond the plan's steps.
    #[error("--step {step}: the plan has steps 1..{steps}")]
    NoSuchStep { step: usize, steps: usize },
    #[error(transparent)]
    Start(#[from] SegmentError),
    /// The step's plan could not be written as JSON (a bug).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl K8sError {
    pub fn is_usage(&self) -> bool {
        !matches!(self, K8sError::Json(_))
    }
}

/// The Job of the step asked for.
pub fn job(request: &JobRequest) -> Result<JobSpec, K8sError> {
    if request.workers == 0 {
        return Err(K8sError::NoWorkers);
    }
    if !valid_name(&request.name) {
        return Err(K8sError::BadName(request.name.clone()));
    }
    let loaded = loadmark_plan::load_plan_file(&request.plan, request.cores)
        .map_err(|e| K8sError::Plan(e.to_string()))?;
    let step = pick_step(&loaded, &request.plan, request.step)?;
    let (_, start_at) = parse_start(&request.start_at)?;
    Ok(JobSpec {
        name: request.name.clone(),
        image: request.image.clone(),
        workers: request.workers,
        plan_json: serde_json::to_string(&step.plan)?,
        start_at,
    })
}

/// The plan's one step, or step `asked` (from 1).
fn pick_step<'a>(
    loaded: &'a LoadedPlan,
    path: &std::path::Path,
    asked: Option<usize>,
) -> Result<&'a Step, K8sError> {
    let steps = loaded.steps.len();
    match (asked, steps) {
        (None, 1) => Ok(&loaded.steps[0]),
        (None, steps) => Err(K8sError::WhichStep {
            plan: path.to_path_buf(),
            steps,
        }),
        (Some(step), steps) => loaded
            .steps
            .get(step.wrapping_sub(1))
            .ok_or(K8sError::NoSuchStep { step, steps }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(plan: PathBuf) -> JobRequest {
        JobRequest {
            plan,
            workers: 2,
            image: "loadmark:dev".into(),
            name: "lm".into(),
            start_at: "2026-12-01T10:00:00Z".into(),
            step: None,
            cores: 2,
        }
    }

    fn plan_file(text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("loadmark-workflow-k8s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.yaml", text.len()));
        std::fs::write(&path, text).unwrap();
        path
    }

    const TWO_STEPS: &str = "targets:\n  t: {url: 'http://127.0.0.1:1/'}\nload: {duration: 1s}\nsweep: {connections: [1, 2]}\n";

    #[test]
    fn flags_are_checked_before_the_plan_is_read() {
        let mut r = request("/nonexistent/plan.yaml".into());
        r.workers = 0;
        assert!(matches!(job(&r).unwrap_err(), K8sError::NoWorkers));
        r.workers = 1;
        r.name = "Not_A_Name".into();
        let e = job(&r).unwrap_err();
        assert!(e.to_string().starts_with("--name Not_A_Name: "));
        assert!(crate::is_usage(&e));
    }

    #[test]
    fn a_plan_of_several_steps_needs_one_picked() {
        let path = plan_file(TWO_STEPS);
        let mut r = request(path.clone());
        let e = job(&r).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: the plan has 2 steps; a Job runs one: pick it with --step 1..2",
                path.display()
            )
        );
        r.step = Some(3);
        assert_eq!(
            job(&r).unwrap_err().to_string(),
            "--step 3: the plan has steps 1..2"
        );
        r.step = Some(0);
        assert!(matches!(job(&r).unwrap_err(), K8sError::NoSuchStep { .. }));
        r.step = Some(2);
        let spec = job(&r).unwrap();
        assert_eq!(spec.workers, 2);
        assert_eq!(spec.start_at, "2026-12-01T10:00:00Z");
        let loaded = loadmark_plan::load_plan_file(&path, 2).unwrap();
        assert_eq!(
            spec.plan_json,
            serde_json::to_string(&loaded.steps[1].plan).unwrap()
        );
    }
}
