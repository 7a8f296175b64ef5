//! Splits a command line into words as a POSIX shell (bash) would: '...', "...", backslash
//! escapes, line continuations, and bash's $'...' (ANSI-C quoting), which browsers' "Copy as
//! cURL" uses for anything with a quote or a control character in it. The shell-words
//! crates (shlex, shell-words) do not read $'...', so this small splitter does.

use crate::ImportError;

/// The words of `line`; an unclosed quote is an error naming its column.
pub fn split(line: &str) -> Result<Vec<String>, ImportError> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
                i += 1;
            }
            '\\' if matches!(chars.get(i + 1), Some('\n')) => i += 2,
            '\\' if matches!(chars.get(i + 1..i + 3), Some(['\r', '\n'])) => i += 3,
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    word.get_or_insert_with(String::new).push(next);
                }
                i += 2;
            }
            '\'' => {
                let end = closing(&chars, i + 1, '\'', i)?;
                word.get_or_insert_with(String::new)
                    .extend(&chars[i + 1..end]);
                i = end + 1;
            }
            '"' => i = double_quoted(&chars, i, word.get_or_insert_with(String::new))?,
            '$' if chars.get(i + 1) == Some(&'\'') => {
                i = ansi_c(&chars, i + 2, word.get_or_insert_with(String::new))?
            }
            _ => {
                word.get_or_insert_with(String::new).push(c);
                i += 1;
            }
        }
    }
    if let Some(w) = word {
        words.push(w);
    }
    Ok(words)
}

fn unclosed(quote: char, at: usize) -> ImportError {
    ImportError::Curl(format!(
        "the command line has an unclosed {quote} (opened at column {})",
        at + 1
    ))
}

fn closing(chars: &[char], from: usize, quote: char, open: usize) -> Result<usize, ImportError> {
    chars[from..]
        .iter()
        .position(|&c| c == quote)
        .map(|p| from + p)
        .ok_or_else(|| unclosed(quote, open))
}

/// "...": backslash escapes only $, `, ", \ and a newline; returns the index after it.
fn double_quoted(chars: &[char], open: usize, out: &mut String) -> Result<usize, ImportError> {
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok(i + 1),
            '\\' if matches!(chars.get(i + 1), Some('$' | '`' | '"' | '\\')) => {
                out.push(chars[i + 1]);
                i += 2;
            }
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err(unclosed('"', open))
}

/// $'...': C escapes (\n, \t, \r, \\, \', \", \xHH, \uHHHH, \NNN octal); returns the index
/// after the closing quote.
fn ansi_c(chars: &[char], from: usize, out: &mut String) -> Result<usize, ImportError> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\'' => return Ok(i + 1),
            '\\' => {
                let (c, used) = escape(&chars[i + 1..]).ok_or_else(|| unclosed('\'', from - 2))?;
                out.push(c);
                i += 1 + used;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err(unclosed('\'', from - 2))
}

/// One escape after a backslash: the character and how many characters it used.
fn escape(rest: &[char]) -> Option<(char, usize)> {
    let hex = |n: usize, from: usize| -> Option<(char, usize)> {
        let digits: String = rest[from..]
            .iter()
            .take(n)
            .take_while(|c| c.is_ascii_hexdigit())
            .collect();
        let v = u32::from_str_radix(&digits, 16).ok()?;
        Some((char::from_u32(v)?, from + digits.len()))
    };
    Some(match rest.first()? {
        'n' => ('\n', 1),
        't' => ('\t', 1),
        'r' => ('\r', 1),
        'a' => ('\x07', 1),
        'b' => ('\x08', 1),
        'e' | 'E' => ('\x1b', 1),
        'f' => ('\x0c', 1),
        'v' => ('\x0b', 1),
        'x' => hex(2, 1)?,
        'u' => hex(4, 1)?,
        'U' => hex(8, 1)?,
        '0'..='7' => {
            let digits: String = rest.iter().take(3).take_while(|c| c.is_digit(8)).collect();
            let v = u32::from_str_radix(&digits, 8).ok()?;
            (char::from_u32(v)?, digits.len())
        }
        c => (*c, 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_escapes_and_continuations_split_as_bash_does() {
        let w = split("curl 'http://h/a b' -H \"X: \\\"q\\\"\" \\\n  --data-raw $'{\"a\":\"it\\'s\\n\"}' x\\ y").unwrap();
        assert_eq!(
            w,
            [
                "curl",
                "http://h/a b",
                "-H",
                "X: \"q\"",
                "--data-raw",
                "{\"a\":\"it's\n\"}",
                "x y"
            ]
        );
        assert_eq!(split("a''b \"\"").unwrap(), ["ab", ""]);
        assert_eq!(
            split("$'\\x41\\u00e9\\101'").unwrap(),
            ["Aé A"].map(|s| s.replace(' ', ""))
        );
    }

    #[test]
    fn an_unclosed_quote_names_its_column() {
        let e = split("curl 'http://h").unwrap_err().to_string();
        assert!(e.contains("unclosed ' (opened at column 6)"), "{e}");
        let e = split("curl \"x").unwrap_err().to_string();
        assert!(e.contains("unclosed \" (opened at column 6)"), "{e}");
    }
}
