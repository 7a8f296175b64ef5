//! A literal `{{` in what was recorded or documented (a HAR body, a Postman raw body, curl
//! data, an OpenAPI example): a plan reads `{{` as the start of a placeholder and has no
//! escape for a literal one, so a request holding one cannot be written into a plan that
//! loads. Importers find it in the text as recorded (before they add placeholders of their
//! own) and leave the request out, said; `import curl`, whose plan is that one request,
//! refuses it and points at `loadmark run --curl`, which sends a body as it is.

/// Why such a request cannot be in a plan, for messages.
pub const WHY: &str =
    "a plan reads `{{` as the start of a placeholder and has no escape for a literal one";

/// The first field (name, text) holding `{{`, by its name.
pub fn holding<'a, I>(fields: I) -> Option<String>
where
    I: IntoIterator<Item = (String, &'a str)>,
{
    fields
        .into_iter()
        .find(|(_, text)| text.contains("{{"))
        .map(|(name, _)| name)
}

/// The warning for a request left out: `"POST /x": left out: its body holds ...`.
pub fn left_out(place: &str, field: &str) -> String {
    format!(
        "{place:?}: left out: its {field} holds a literal `{{{{`, and {WHY}; write this step by hand without it (or send the request with `loadmark run --curl`, which sends it as it is)"
    )
}
