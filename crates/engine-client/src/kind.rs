//! Event types held without an allocation: each engine crate lists the types it knows, and an
//! event of one carries its type as a static string on its way to the webview.

/// Expands to a `match` on `$kind` (a `&str`) that gives each listed type as the static string
/// it is (`Cow::Borrowed`), and anything else as an owned copy: the open set of types an
/// engine may add is forwarded as is, at one allocation.
///
/// ```
/// use std::borrow::Cow;
///
/// fn event_type(kind: &str) -> Cow<'static, str> {
///     bb_engine_client::known_types!(kind, ["turn.start", "turn.end"])
/// }
/// assert!(matches!(event_type("turn.end"), Cow::Borrowed("turn.end")));
/// assert!(matches!(event_type("new.kind"), Cow::Owned(_)));
/// ```
#[macro_export]
macro_rules! known_types {
    ($kind:expr, [$($known:literal),* $(,)?]) => {
        match $kind {
            $($known => ::std::borrow::Cow::Borrowed($known),)*
            other => ::std::borrow::Cow::Owned(other.to_owned()),
        }
    };
}
