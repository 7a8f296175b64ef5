//! Request templates: `{{rand_int 1 10000}}`, `{{seq}}` and `{{csv column}}` inside a path,
//! a header value or a body, so each request can carry a realistic key.
//!
//! A template is parsed once, when the plan is checked (errors name the field and the
//! placeholder), and rendered per request into a reused buffer. Text without `{{` is a plain
//! literal and costs nothing per request.

use std::fmt::Write as _;

use crate::text::PlanError;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Literal(String),
    /// A uniformly random integer in `lo..=hi`.
    RandInt {
        lo: i64,
        hi: i64,
    },
    /// A uniformly random number in `lo..=hi`, written with six decimals (a coordinate).
    RandF {
        lo: f64,
        hi: f64,
    },
    /// The request's number in the whole run, from 0 (open loop: its place on the global
    /// schedule; closed loop: unique per worker and segment, not a prefix).
    Seq,
    /// The index of the segment sending it (`--segment`; 0 for a run on one machine).
    Segment,
    /// A column of the current data-file row (rows advance per request, wrapping).
    Csv {
        column: usize,
    },
    /// A scenario variable (issue 17): the value an earlier step extracted, by index.
    Var(usize),
}

const VAR_FORM: &str = "a variable extracted by an earlier step (its name in {{NAME}}), or \
placeholders {{rand_int LO HI}}, {{rand_f LO HI}}, {{seq}}, {{segment}} or {{csv COLUMN}}";

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

/// What rendering needs from the request being built.
pub struct RenderContext<'a> {
    /// xorshift state, advanced by every random placeholder.
    pub rng: &'a mut u64,
    pub seq: u64,
    pub row: &'a [String],
    /// The segment (machine share) sending the request.
    pub segment: u32,
}

const FORM: &str =
    "placeholders {{rand_int LO HI}}, {{rand_f LO HI}}, {{seq}}, {{segment}} or {{csv COLUMN}}";

impl Template {
    /// Parses `text`; `columns` names the data file's columns (for `{{csv name}}`).
    pub fn parse(
        text: &str,
        field: &'static str,
        columns: &[String],
    ) -> Result<Template, PlanError> {
        Template::parse_with_vars(text, field, columns, &[])
    }

    /// Parses `text` where `{{NAME}}` may also name one of `vars` (a scenario's variables
    /// extracted by earlier steps).
    pub fn parse_with_vars(
        text: &str,
        field: &'static str,
        columns: &[String],
        vars: &[String],
    ) -> Result<Template, PlanError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                pieces.push(Piece::Literal(rest[..start].to_string()));
            }
            let end = rest[start..]
                .find("}}")
                .ok_or_else(|| PlanError::invalid(field, text, FORM))?;
            let inner = rest[start + 2..start + end].trim();
            let words: Vec<&str> = inner.split_whitespace().collect();
            let bad = || PlanError::invalid(field, format!("{{{{{inner}}}}}"), FORM);
            pieces.push(match words.as_slice() {
                ["rand_int", lo, hi] => {
                    let (lo, hi): (i64, i64) = (
                        lo.parse().map_err(|_| bad())?,
                        hi.parse().map_err(|_| bad())?,
                    );
                    if lo > hi {
                        return Err(bad());
                    }
                    Piece::RandInt { lo, hi }
                }
                ["rand_f", lo, hi] => {
                    let (lo, hi): (f64, f64) = (
                        lo.parse().map_err(|_| bad())?,
                        hi.parse().map_err(|_| bad())?,
                    );
                    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                        return Err(bad());
                    }
                    Piece::RandF { lo, hi }
                }
                [name] if vars.iter().any(|v| v == name) => {
                    Piece::Var(vars.iter().position(|v| v == name).expect("found"))
                }
                [name] if !vars.is_empty() && !matches!(*name, "seq" | "segment") => {
                    return Err(PlanError::invalid(
                        field,
                        format!("{{{{{inner}}}}}"),
                        VAR_FORM,
                    ))
                }
                ["seq"] => Piece::Seq,
                ["segment"] => Piece::Segment,
                ["csv", name] => {
                    let column = columns
                        .iter()
                        .position(|c| c == name)
                        .or_else(|| name.parse::<usize>().ok().filter(|&i| i < columns.len()))
                        .ok_or_else(|| {
                            PlanError::invalid(
                                field,
                                format!("{{{{{inner}}}}}"),
                                "a column of the data file (by name or index)",
                            )
                        })?;
                    Piece::Csv { column }
                }
                _ => return Err(bad()),
            });
            rest = &rest[start + end + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Literal(rest.to_string()));
        }
        Ok(Template { pieces })
    }

    /// True when the template is plain text (rendering is a copy).
    pub fn is_literal(&self) -> bool {
        self.pieces.iter().all(|p| matches!(p, Piece::Literal(_)))
    }

    /// Appends the rendered text to `out`.
    pub fn render(&self, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) {
        self.render_with_vars(ctx, &[], out);
    }

    /// Appends the rendered text to `out`, `{{NAME}}` of a scenario variable taken from `vars`.
    pub fn render_with_vars(
        &self,
        ctx: &mut RenderContext<'_>,
        vars: &[String],
        out: &mut Vec<u8>,
    ) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(s) => out.extend_from_slice(s.as_bytes()),
                Piece::RandInt { lo, hi } => {
                    let span = (hi - lo) as u64 + 1;
                    let v = lo + (next_random(ctx.rng) % span) as i64;
                    let mut s = String::new();
                    let _ = write!(s, "{v}");
                    out.extend_from_slice(s.as_bytes());
                }
                Piece::RandF { lo, hi } => {
                    // 53 random bits: every double in the range is reachable.
                    let unit = (next_random(ctx.rng) >> 11) as f64 / (1u64 << 53) as f64;
                    let mut s = String::new();
                    let _ = write!(s, "{:.6}", lo + (hi - lo) * unit);
                    out.extend_from_slice(s.as_bytes());
                }
                Piece::Seq => {
                    let mut s = String::new();
                    let _ = write!(s, "{}", ctx.seq);
                    out.extend_from_slice(s.as_bytes());
                }
                Piece::Segment => {
                    let mut s = String::new();
                    let _ = write!(s, "{}", ctx.segment);
                    out.extend_from_slice(s.as_bytes());
                }
                Piece::Csv { column } => {
                    if let Some(v) = ctx.row.get(*column) {
                        out.extend_from_slice(v.as_bytes());
                    }
                }
                Piece::Var(i) => {
                    if let Some(v) = vars.get(*i) {
                        out.extend_from_slice(v.as_bytes());
                    }
                }
            }
        }
    }
}

/// xorshift64*: fast, good enough to spread keys, and seeded per worker.
pub fn next_random(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Reads a CSV data file: the first line names the columns; fields are split on commas
/// (quoted fields with commas are not supported; say so in the error).
pub fn parse_csv(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), PlanError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| {
        PlanError::invalid(
            "data",
            "(empty file)",
            "a CSV file whose first line names the columns",
        )
    })?;
    let columns: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (number, line) in lines {
        let row: Vec<String> = line.split(',').map(|c| c.trim().to_string()).collect();
        // A short or long row would render some column as empty, or silently drop one.
        if row.len() != columns.len() {
            return Err(PlanError::invalid(
                "data",
                format!(
                    "line {}: {line:?} has {} field(s), the header {}",
                    number + 1,
                    row.len(),
                    columns.len()
                ),
                "as many comma-separated fields as the first line names",
            ));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(PlanError::invalid(
            "data",
            header,
            "at least one data row after the header",
        ));
    }
    if text.contains('"') {
        return Err(PlanError::invalid(
            "data",
            "\"",
            "plain comma-separated values without quotes",
        ));
    }
    Ok((columns, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &Template, seq: u64, row: &[String]) -> String {
        let mut rng = 42u64;
        let mut out = Vec::new();
        t.render(
            &mut RenderContext {
                rng: &mut rng,
                seq,
                segment: 0,
                row,
            },
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn placeholders_render() {
        let cols = vec!["user".to_string(), "region".to_string()];
        let t = Template::parse(
            "/api/features/a:key:{{rand_int 1 10000}}?n={{seq}}&u={{csv user}}",
            "request.path",
            &cols,
        )
        .unwrap();
        assert!(!t.is_literal());
        let row = vec!["alice".to_string(), "eu".to_string()];
        let text = render(&t, 7, &row);
        assert!(
            text.starts_with("/api/features/a:key:") && text.ends_with("?n=7&u=alice"),
            "{text}"
        );
        let key: i64 = text["/api/features/a:key:".len()..text.find('?').unwrap()]
            .parse()
            .unwrap();
        assert!((1..=10000).contains(&key));
        assert!(Template::parse("/plain", "p", &[]).unwrap().is_literal());
    }

    /// Renders `t` with the random state `rng`, carried from call to call.
    fn render_random(t: &Template, rng: &mut u64) -> String {
        let mut out = Vec::new();
        t.render(
            &mut RenderContext {
                rng,
                seq: 0,
                segment: 0,
                row: &[],
            },
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn random_values_cover_the_range() {
        let t = Template::parse("{{rand_int 1 3}}", "p", &[]).unwrap();
        let mut rng = 1u64;
        let mut seen = [false; 4];
        for _ in 0..100 {
            seen[render_random(&t, &mut rng).parse::<usize>().unwrap()] = true;
        }
        assert_eq!(seen, [false, true, true, true]);
    }

    #[test]
    fn random_floats_stay_in_range_with_six_decimals() {
        let t = Template::parse("{{rand_f 30 45}}", "--message", &[]).unwrap();
        let mut rng = 7u64;
        let (mut lo, mut hi) = (f64::MAX, f64::MIN);
        for _ in 0..1000 {
            let text = render_random(&t, &mut rng);
            assert_eq!(text.len() - text.find('.').unwrap() - 1, 6, "{text}");
            let v: f64 = text.parse().unwrap();
            (lo, hi) = (lo.min(v), hi.max(v));
        }
        assert!(
            (30.0..31.0).contains(&lo) && (44.0..=45.0).contains(&hi),
            "{lo} {hi}"
        );
    }

    #[test]
    fn bad_placeholders_name_the_field() {
        for bad in [
            "{{rand_f 2 1}}",
            "{{rand_f x 1}}",
            "{{rand_int 5 1}}",
            "{{nope}}",
            "{{rand_int a b}}",
            "{{seq",
            "{{csv missing}}",
        ] {
            let e = Template::parse(bad, "request.path", &["user".to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("request.path"), "{bad}: {e}");
        }
    }

    #[test]
    fn csv_files() {
        let (cols, rows) = parse_csv("user,region\nalice,eu\nbob,us\n").unwrap();
        assert_eq!(cols, vec!["user", "region"]);
        assert_eq!(rows[1], vec!["bob", "us"]);
        assert!(parse_csv("").is_err());
        assert!(parse_csv("a,b\n").is_err());
        let e = parse_csv("user,region\nalice,eu\n\nbob\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 4: ") && e.contains("has 1 field(s), the header 2"),
            "{e}"
        );
    }
}
