//! `loadmark k8s`: a Kubernetes Indexed Job that runs one plan split over N pods.
//!
//! Pod `i` (its `JOB_COMPLETION_INDEX`) runs segment `i` of N from a plan mounted from a
//! ConfigMap, starting at one absolute time chosen when the manifest is printed; every pod
//! prints its framed result on standard output, so `kubectl logs` collects it and
//! `loadmark merge` reads the logs as they are. `completions = parallelism = N`,
//! `backoffLimit: 0` and `restartPolicy: Never`: a pod that fails is a missing segment
//! named at merge, never a second run of the same segment.
//!
//! The YAML is written by hand, in a fixed order, so the manifests are golden-testable.

/// What the manifests need.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Names the Job, its ConfigMap (`NAME-plan`) and the run (`--run-id`).
    pub name: String,
    pub image: String,
    pub workers: u32,
    /// The plan as JSON (one line).
    pub plan_json: String,
    /// The agreed start, RFC 3339.
    pub start_at: String,
}

/// The ConfigMap and the Job, as one YAML stream with the collection commands on top.
pub fn manifests(spec: &JobSpec) -> String {
    let JobSpec {
        name,
        image,
        workers,
        plan_json,
        start_at,
    } = spec;
    let last = workers.saturating_sub(1);
    format!(
        r#"# loadmark: {workers} pods, each one segment of the plan, starting together at {start_at}.
# Apply before that time (pods that start late report their skew):
#   kubectl apply -f job.yaml
#   kubectl wait --for=condition=complete job/{name} --timeout=1h
# Collect every pod's result from its log and merge them (a missing segment is named):
#   for i in $(seq 0 {last}); do
#     kubectl logs -l job-name={name},batch.kubernetes.io/job-completion-index=$i > {name}-$i.log
#   done
#   loadmark merge {name}-*.log -o {name}.json --threshold 'p99<100ms'
#   kubectl delete -f job.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-plan
  labels:
    app.kubernetes.io/name: loadmark
    loadmark.dev/run: {name}
data:
  plan.json: {plan}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    app.kubernetes.io/name: loadmark
    loadmark.dev/run: {name}
spec:
  completionMode: Indexed
  completions: {workers}
  parallelism: {workers}
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: loadmark
        loadmark.dev/run: {name}
    spec:
      restartPolicy: Never
      containers:
        - name: loadmark
          image: {image}
          args:
            - worker
            - --plan-file
            - /etc/loadmark/plan.json
            - --segment
            - env/{workers}
            - --start-at
            - "{start_at}"
            - --run-id
            - {name}
          volumeMounts:
            - name: plan
              mountPath: /etc/loadmark
              readOnly: true
      volumes:
        - name: plan
          configMap:
            name: {name}-plan
"#,
        plan = yaml_string(plan_json),
    )
}

/// A YAML double-quoted scalar: JSON string escaping is valid YAML.
fn yaml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Checks a Kubernetes object name (RFC 1123 label: what a Job's pods and labels need).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 52 // the Job controller appends -INDEX-XXXXX to pod names
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_rfc_1123_labels() {
        assert!(valid_name("loadmark-run-1"));
        for bad in ["", "Load", "a_b", "-a", "a-", &"a".repeat(53)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn plan_json_is_quoted_for_yaml() {
        assert_eq!(yaml_string(r#"{"a":"b\c"}"#), r#""{\"a\":\"b\\c\"}""#);
    }
}
