//! Secret redaction: sensitive keys (nested, headers, URL query strings) and values that look
//! like credentials. Pure and idempotent; the log-line form is one line capped in bytes.
//!
//! In free text a redacted value is one token (a quoted string, `key=token`, or for
//! `key: value` an optional auth scheme plus one token, continued through `; `-separated
//! cookie pairs): the words after it are kept, so a log line stays readable
//! (`Authorization: Bearer X now` → `Authorization: Bearer [REDACTED] now`). A value with
//! spaces in it after `key:` loses only its first word to the redaction; secrets are tokens.

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";
/// Cap of a log line made by [`redact_log_line`] / [`log_line_json`] by default.
pub const LOG_LINE_CAP: usize = 8 * 1024;
/// Shortest run of token characters that can be flagged as a high-entropy secret.
const ENTROPY_MIN_LEN: usize = 32;

/// Key fragments that make a key sensitive (compared lowercase with `-`, `_` and `.` removed).
const SENSITIVE_KEY_PARTS: &[&str] = &[
    "token",
    "apikey",
    "authorization",
    "cookie",
    "password",
    "passwd",
    "secret",
    "credential",
    "privatekey",
    "accesskey",
];

/// Whether a key names a secret: `token`, `apiKey`/`api_key`, `authorization`, `cookie`,
/// `password`, `secret` (and close relatives), case-insensitive, anywhere in the key.
pub fn is_sensitive_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    SENSITIVE_KEY_PARTS.iter().any(|p| k.contains(p))
}

/// Token-usage counters (`tokens`, `max_tokens`, `input_tokens`) are not secrets: a key
/// ending in `tokens` keeps numbers and objects of numbers.
fn is_usage_counter(key: &str, v: &Value) -> bool {
    fn numeric(v: &Value) -> bool {
        match v {
            Value::Number(_) | Value::Null => true,
            Value::Object(o) => o.values().all(numeric),
            _ => false,
        }
    }
    key.to_ascii_lowercase().ends_with("tokens") && numeric(v)
}

/// Keys that are sensitive only as URL query parameters.
fn is_sensitive_query_key(key: &str) -> bool {
    is_sensitive_key(key)
        || matches!(
            key.to_ascii_lowercase().as_str(),
            "key" | "sig" | "signature" | "code" | "auth" | "pwd" | "pass"
        )
}

/// Redacts a JSON value in place: values under sensitive keys, credential-looking strings
/// anywhere (including inside JSON-in-a-string), recursively.
pub fn redact_value(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_sensitive_key(k) && !is_usage_counter(k, val) {
                    if !matches!(val, Value::Null | Value::Bool(_)) {
                        *val = Value::String(REDACTED.to_owned());
                    }
                } else {
                    redact_value(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::String(s) => {
            let r = redact_text(s);
            if r != *s {
                *s = r;
            }
        }
        _ => {}
    }
}

/// A redacted copy of a JSON value.
pub fn redacted(v: &Value) -> Value {
    let mut out = v.clone();
    redact_value(&mut out);
    out
}

static BEARER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(bearer|basic|digest)(\s+)([A-Za-z0-9._~+/=-]{8,})"));
static KNOWN_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}",
        r"|\bsk_(?:live|test)_[A-Za-z0-9]{10,}",
        r"|\bgh[pousr]_[A-Za-z0-9]{20,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{20,}",
        r"|\bxox[abposr]-[A-Za-z0-9-]{10,}",
        r"|\bAKIA[0-9A-Z]{16}\b",
        r"|\bAIza[0-9A-Za-z_-]{30,}",
        r"|\bglpat-[A-Za-z0-9_-]{16,}",
        r"|\bey[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    ))
});
/// Sensitive key names inside free text.
const TEXT_KEY: &str = r#"(?P<k>[A-Za-z0-9_.-]*(?:token|api[_.-]?key|authorization|cookie|passw(?:or)?d|secret|credential|private[_.-]?key|access[_.-]?key)[A-Za-z0-9_.-]*)(?P<q1>"?)"#;
/// A quoted value (JSON inside text).
const QUOTED: &str = r#""(?:[^"\\\n]|\\.)*""#;
/// One unquoted value token of a `key: value` pair.
const TOKEN: &str = r#"[^\s",};]+"#;
/// `key: value` (headers, YAML, JSON in text): the value is a quoted string, or an optional
/// auth scheme (`Bearer`, `Basic`, …, kept) and one token, continued through `;`-separated
/// tokens (a cookie list). The words after it are kept: `Authorization: Bearer X now` keeps
/// `now`.
static KEY_COLON: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"(?i){TEXT_KEY}(?P<sep>[ \t]*:[ \t]*)(?P<v>\[REDACTED\]|{QUOTED}|(?P<scheme>(?:bearer|basic|digest|token|negotiate|ntlm)[ \t]+)?{TOKEN}(?:;[ \t]*{TOKEN})*)"#
    ))
});
/// `key=value` (env lines, query strings, cookies): the value is one token.
static KEY_EQ: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"(?i){TEXT_KEY}(?P<sep>[ \t]*=[ \t]*)(?P<v>\[REDACTED\]|{QUOTED}|[^\s,;&"'}}\]]+)"#
    ))
});
static QUERY: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?P<pre>[?&])(?P<k>[A-Za-z0-9_.-]+)=(?P<v>[^&#\s]*)"));
static TOKENISH: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9+/=_-]{32,}"));
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
});

#[allow(clippy::expect_used)] // the patterns are constants, checked by the unit tests
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid constant regex")
}

/// Redacts free text: credential-looking values, sensitive `key=value` / `key: value` pairs
/// (headers, env lines, JSON fragments) and sensitive URL query parameters.
pub fn redact_text(s: &str) -> String {
    if may_hold_secret(s) { redact_patterns(s) } else { s.to_owned() }
}

/// [`redact_text`] without its pre-check: every pattern run over `s`.
pub(crate) fn redact_patterns(s: &str) -> String {
    let out = KNOWN_PREFIX.replace_all(s, REDACTED);
    let out = BEARER.replace_all(&out, |c: &Captures<'_>| {
        // "Bearer" always introduces a credential; "Basic"/"Digest" only when what follows
        // looks encoded (so prose such as "basic functionality" stays).
        let t = &c[3];
        let encoded = t.bytes().any(|b| b.is_ascii_digit() || matches!(b, b'=' | b'+' | b'/'))
            || (t.bytes().any(|b| b.is_ascii_uppercase())
                && t.bytes().any(|b| b.is_ascii_lowercase()));
        if c[1].eq_ignore_ascii_case("bearer") || encoded {
            format!("{}{}{REDACTED}", &c[1], &c[2])
        } else {
            c[0].to_owned()
        }
    });
    let pair = |c: &Captures<'_>| {
        let k = &c["k"];
        let v = &c["v"];
        let bare = v.trim_matches('"');
        let keep = bare == REDACTED
            || bare.ends_with(REDACTED)
            || (k.to_ascii_lowercase().ends_with("tokens")
                && bare.chars().all(|ch| ch.is_ascii_digit()));
        let scheme = c.name("scheme").map_or("", |m| m.as_str());
        if keep {
            c[0].to_owned()
        } else if v.starts_with('"') {
            format!("{k}{}{}\"{REDACTED}\"", &c["q1"], &c["sep"])
        } else {
            format!("{k}{}{}{scheme}{REDACTED}", &c["q1"], &c["sep"])
        }
    };
    let out = KEY_COLON.replace_all(&out, pair);
    let out = KEY_EQ.replace_all(&out, pair);
    let out = QUERY.replace_all(&out, |c: &Captures<'_>| {
        if is_sensitive_query_key(&c["k"]) && !c["v"].is_empty() && &c["v"] != REDACTED {
            format!("{}{}={REDACTED}", &c["pre"], &c["k"])
        } else {
            c[0].to_owned()
        }
    });
    let out = TOKENISH.replace_all(&out, |c: &Captures<'_>| {
        let t = &c[0];
        if looks_random(t) { REDACTED.to_owned() } else { t.to_owned() }
    });
    out.into_owned()
}

/// Words one of which every pattern of [`redact_text`] needs (compared ASCII-lowercase): the
/// sensitive key words of `key: value` / `key=value` (`api_key`, `private-key` and
/// `access.key` hold `key`, `passwd` and `password` hold `passw`) and the auth schemes.
const KEY_WORDS: &[&str] = &[
    "token",
    "key",
    "authorization",
    "cookie",
    "passw",
    "secret",
    "credential",
    "bearer",
    "basic",
    "digest",
];
/// What every credential prefix pattern starts with (compared as written: those patterns are
/// case-sensitive). `gh` covers `ghp_`…`ghr_`, `ey` the JWTs.
const PREFIXES: &[&str] = &[
    "sk-",
    "pk-",
    "rk-",
    "sk_",
    "gh",
    "github_pat_",
    "xox",
    "AKIA",
    "AIza",
    "glpat-",
    "ey",
    "-----BEGIN",
];

/// Whether [`redact_text`] may change `s`: false only when no pattern can match, so the
/// patterns (and their compiled automata, ~0.5 MB of heap on first use) are skipped for the
/// usual log line. Every pattern needs one of [`PREFIXES`], one of [`KEY_WORDS`], a query pair
/// (`?` or `&` and `=`) or a run of 32 token characters. Text with a non-ASCII character
/// always goes through the patterns: under `(?i)` some fold to ASCII letters (KELVIN SIGN to
/// `k`, LONG S to `s`).
pub(crate) fn may_hold_secret(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    if !s.is_ascii() {
        return true;
    }
    if PREFIXES.iter().any(|p| s.contains(p)) {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if KEY_WORDS.iter().any(|w| lower.contains(w)) {
        return true;
    }
    if s.contains('=') && s.contains(['?', '&']) {
        return true;
    }
    let mut run = 0;
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-') {
            run += 1;
            if run >= ENTROPY_MIN_LEN {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// A long run of token characters that reads as random: mixed character classes, not a UUID
/// or a plain hex digest, and high Shannon entropy.
fn looks_random(t: &str) -> bool {
    if t.len() < ENTROPY_MIN_LEN || UUID.is_match(t) || t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let lower = t.bytes().any(|b| b.is_ascii_lowercase());
    let upper = t.bytes().any(|b| b.is_ascii_uppercase());
    let digit = t.bytes().any(|b| b.is_ascii_digit());
    if [lower, upper, digit].iter().filter(|&&x| x).count() < 2 {
        return false;
    }
    shannon_bits(t) >= 4.0
}

fn shannon_bits(t: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in t.bytes() {
        counts[usize::from(b)] += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = t.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Cuts `s` to at most `cap` bytes on a char boundary (never inside a redaction marker),
/// marking the cut.
fn cap_line(s: &str, cap: usize) -> String {
    if s.len() <= cap {
        return s.to_owned();
    }
    const MARK: &str = ", …[truncated]";
    let mut end = s.floor_char_boundary(cap.saturating_sub(MARK.len()));
    if let Some(start) = s[..end].rfind(REDACTED.as_bytes()[0] as char)
        && s[start..].starts_with(REDACTED)
        && start + REDACTED.len() > end
    {
        end = start;
    }
    format!("{}{MARK}", &s[..end])
}

fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// Re-redacts and re-caps until stable, so the log-line form is idempotent even when a cut
/// changes what a pattern sees.
fn settle(mut line: String, cap: usize) -> String {
    for _ in 0..4 {
        let next = cap_line(&one_line(&redact_text(&line)), cap);
        if next == line {
            break;
        }
        line = next;
    }
    line
}

/// The log-line form of free text: redacted, newlines (and other control characters)
/// replaced by spaces, capped at `cap` bytes.
pub fn redact_log_line(s: &str, cap: usize) -> String {
    let line = cap_line(&one_line(&redact_text(s)), cap);
    // Nothing redacted, replaced or cut: the line is `s`, which another round would only
    // give back (the usual case: most messages hold no secret).
    if line == s {
        return line;
    }
    settle(line, cap)
}

/// The log-line form of a JSON value: redacted, compact (one line: JSON escapes newlines),
/// capped at `cap` bytes.
pub fn log_line_json(v: &Value, cap: usize) -> String {
    let text = serde_json::to_string(&redacted(v)).unwrap_or_default();
    cap_line(&text, cap)
}

/// Redacts a document: a JSON document stays valid JSON (values redacted), JSON Lines stay
/// JSON Lines, anything else is redacted as text.
pub fn redact_document(input: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(input) {
        return serde_json::to_string(&redacted(&v)).unwrap_or_default();
    }
    let lines: Vec<&str> = input.lines().collect();
    let parsed: Option<Vec<Option<Value>>> = lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                Some(None)
            } else {
                serde_json::from_str::<Value>(l).ok().map(Some)
            }
        })
        .collect();
    match parsed {
        Some(docs) if docs.iter().any(Option::is_some) => {
            let mut out = String::with_capacity(input.len());
            for (doc, line) in docs.iter().zip(&lines) {
                match doc {
                    Some(v) => {
                        out.push_str(&serde_json::to_string(&redacted(v)).unwrap_or_default())
                    }
                    None => out.push_str(line),
                }
                out.push('\n');
            }
            out
        }
        _ => redact_text(input),
    }
}
