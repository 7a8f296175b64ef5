//! A search as a plan or the flags give it ([`FindSpec`]): its options, with each objective
//! parsed where it was written, and the `loadmark find` command that repeats it.

use loadmark_plan::{format_duration, FindSpec, Plan};
use loadmark_report::reproduce_find_command;

use super::{parse_objective, FindOptions, ObjectiveError, SearchConfig};

/// The search's options; a bad objective names where it was written (`--slo #2`,
/// `plan.yaml:7:12`) and the character in it.
pub fn options_of(spec: &FindSpec) -> Result<FindOptions, ObjectiveError> {
    let objectives = spec
        .slo
        .iter()
        .map(|o| parse_objective(&o.text, &o.at))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FindOptions {
        objectives,
        search: SearchConfig {
            from: spec.from,
            to: spec.to,
            factor: spec.factor,
            precision: spec.precision,
            repeats: spec.repeats,
            max_steps: spec.max_steps.max(1),
        },
        hold: spec.hold,
        warmup: spec.warmup,
        cooldown: spec.cooldown,
    })
}

/// The `loadmark find` command that runs this search of `plan` (a `find:` plan's step):
/// its request and pool flags, then every search flag, written out.
pub fn command_of(plan: &Plan, spec: &FindSpec, show_secrets: bool) -> String {
    // Six decimals at most: 0.07 × 100 is 7.000000000000001.
    let number = |v: f64| ((v * 1e6).round() / 1e6).to_string();
    let mut search: Vec<(&str, String)> =
        spec.slo.iter().map(|o| ("--slo", o.text.clone())).collect();
    search.extend([
        ("--from", number(spec.from)),
        ("--to", number(spec.to)),
        ("--factor", number(spec.factor)),
        ("--precision", number(spec.precision * 100.0)),
        ("--hold", format_duration(spec.hold)),
        ("--step-warmup", format_duration(spec.warmup)),
        ("--cooldown", format_duration(spec.cooldown)),
        ("--repeats", spec.repeats.to_string()),
        ("--max-steps", spec.max_steps.to_string()),
    ]);
    if show_secrets {
        reproduce_find_command(plan, &search)
    } else {
        reproduce_find_command(&plan.redacted(), &search)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "targets:\n  api: {url: 'http://127.0.0.1:9/status'}\nload: {threads: 1, max_connections: 64}\nfind:\n  slo: ['p99 < 5ms', 'failed < 1%']\n  from: 500\n  to: 5000\n  precision: 7\n";

    #[test]
    fn a_plans_search_has_its_options_and_the_command_that_repeats_it() {
        let plan = loadmark_plan::load_plan_text(PLAN, "plan.yaml", 2).unwrap();
        let spec = plan.find.as_ref().unwrap();
        let opts = options_of(spec).unwrap();
        assert_eq!(opts.objectives.len(), 2);
        assert_eq!((opts.search.from, opts.search.to), (500.0, 5000.0));
        assert_eq!(
            command_of(&plan.steps[0].plan, spec, false),
            "loadmark find http://127.0.0.1:9/status --max-connections 64 -t 1 --timeout 10s \
             --slo 'p99 < 5ms' --slo 'failed < 1%' --from 500 --to 5000 --factor 2 \
             --precision 7 --hold 5s --step-warmup 1s --cooldown 1s --repeats 2 --max-steps 40"
        );
    }

    #[test]
    fn a_bad_objective_in_a_plan_is_located_in_the_file_and_in_the_objective() {
        let text = PLAN.replace("'failed < 1%'", "'failed < 1 %%'");
        let plan = loadmark_plan::load_plan_text(&text, "plan.yaml", 2).unwrap();
        let e = options_of(plan.find.as_ref().unwrap()).unwrap_err();
        assert_eq!(e.origin, "plan.yaml:5:23");
        assert_eq!(e.column, 10, "{e}");
        assert!(
            e.to_string()
                .starts_with("plan.yaml:5:23: objective \"failed < 1 %%\", at character 10"),
            "{e}"
        );
    }
}
