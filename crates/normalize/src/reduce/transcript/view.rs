//! What a tool did, in the form a person reads it: a command line, a listing, diffs, a file.
//! Read from the call and result payloads of the tools the bridge recognizes, per engine;
//! anything else has no view (the webview shows its input and output as text).

use bb_protocol::v1::{TextPreview, ToolDiff, ToolFile, ToolView};
use serde_json::Value;

use crate::json::{as_text, at, str_at};
use crate::truncate::{BodyStore, Limits, Preview};

/// Most listing entries a view carries (the rest are counted).
const MAX_ENTRIES: usize = 200;

/// What kind of tool a name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Shell,
    List,
    Change,
    Read,
}

/// The tools of each family, by name (any case, any namespace prefix).
const FAMILIES: [(Family, &[&str]); 4] = [
    (
        Family::Shell,
        &[
            "bash",
            "shell",
            "sh",
            "run_shell",
            "run_shell_command",
            "exec",
            "execute",
            "run_command",
            "run_terminal_cmd",
            "terminal",
            "command",
        ],
    ),
    (Family::List, &["list_dir", "list", "ls", "list_files", "list_directory"]),
    (
        Family::Change,
        &[
            "apply_unified_patch",
            "apply_patch",
            "patch",
            "edit",
            "multiedit",
            "str_replace",
            "write",
            "write_file",
            "create_file",
            "edit_file",
        ],
    ),
    (Family::Read, &["read", "read_file", "view", "cat"]),
];

fn family(tool: &str) -> Option<Family> {
    let name = tool.rsplit(['.', '/']).next().unwrap_or(tool);
    FAMILIES
        .iter()
        .find(|(_, names)| names.iter().any(|n| n.eq_ignore_ascii_case(name)))
        .map(|(f, _)| *f)
}

/// A preview as the wire carries it.
pub(crate) fn text_preview(p: Preview) -> TextPreview<'static> {
    TextPreview {
        text: p.text.into(),
        truncated: p.truncated,
        total_bytes: p.truncated.then_some(p.total_bytes as u64),
        body_ref: p.body_ref.map(Into::into),
    }
}

/// A unified diff cut into one diff per file (at `diff --git` lines, else one), each named
/// by its `+++` path (else `---`), previewed.
fn diffs(text: &str, path: Option<&str>, bodies: &mut BodyStore) -> Vec<ToolDiff<'static>> {
    let mut parts: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices("diff --git ") {
        if (i == 0 || text.as_bytes()[i - 1] == b'\n') && i > start {
            parts.push(&text[start..i]);
            start = i;
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let named = p
                .lines()
                .find_map(|l| l.strip_prefix("+++ ").filter(|n| *n != "/dev/null"))
                .or_else(|| p.lines().find_map(|l| l.strip_prefix("--- ")))
                .map(|n| n.strip_prefix("b/").or_else(|| n.strip_prefix("a/")).unwrap_or(n));
            ToolDiff {
                path: named.or(path).map(|n| n.trim().to_owned().into()),
                unified: text_preview(bodies.preview(p, Limits::default())),
            }
        })
        .collect()
}

/// A diff of a whole file's text before and after (ACP `diff` content): every old line
/// removed, every new line added.
fn whole_file_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let old_lines: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.lines().collect();
    let from = if old.is_some() { format!("a/{path}") } else { "/dev/null".to_owned() };
    let mut out = format!(
        "--- {from}\n+++ b/{path}\n@@ -{},{} +1,{} @@\n",
        usize::from(!old_lines.is_empty()),
        old_lines.len(),
        new_lines.len()
    );
    for l in old_lines {
        out.push('-');
        out.push_str(l);
        out.push('\n');
    }
    for l in new_lines {
        out.push('+');
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// A command given as a string or as argv.
fn command_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string) => {
            Some(a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
        }
        _ => None,
    }
}

/// A listing's entries: objects with a path (and a type) or plain strings.
fn listing(items: &[Value], path: Option<String>) -> ToolView<'static> {
    let entries: Vec<ToolFile<'static>> = items
        .iter()
        .take(MAX_ENTRIES)
        .filter_map(|e| match e {
            Value::String(s) => Some(ToolFile {
                path: s.trim_end_matches('/').to_owned().into(),
                dir: s.ends_with('/'),
            }),
            Value::Object(_) => {
                let p = str_at(e, &[&["path"], &["name"], &["file"]])?;
                let kind = str_at(e, &[&["type"], &["kind"]]).unwrap_or_default();
                let dir = matches!(kind, "dir" | "directory" | "folder")
                    || e.get("is_dir").and_then(Value::as_bool) == Some(true);
                Some(ToolFile { path: p.to_owned().into(), dir })
            }
            _ => None,
        })
        .collect();
    let more = (items.len() > MAX_ENTRIES).then(|| (items.len() - MAX_ENTRIES) as u64);
    ToolView::Files { path: path.map(Into::into), entries, more }
}

/// The arguments of a BreadBoard call (its JSON-text `arguments`, parsed).
fn breadboard_args(p: &Value) -> Option<Value> {
    let raw = at(p, &["call", "function", "arguments"])
        .or_else(|| at(p, &["call", "arguments"]))
        .or_else(|| at(p, &["tool", "args"]))?;
    match raw {
        Value::String(s) => serde_json::from_str(s).ok(),
        other => Some(other.clone()),
    }
}

/// A BreadBoard tool call or result.
pub(super) fn breadboard(
    p: &Value,
    tool: Option<&str>,
    bodies: &mut BodyStore,
) -> (Option<ToolView<'static>>, Option<i64>) {
    let Some(fam) = tool.and_then(family) else { return (None, None) };
    // The call's arguments are JSON text inside the event: parsed only when the event says
    // nothing more direct.
    let args = std::cell::OnceCell::new();
    let arg = |keys: &[&[&str]]| {
        args.get_or_init(|| breadboard_args(p))
            .as_ref()
            .and_then(|a| str_at(a, keys))
            .map(str::to_owned)
    };
    let path = || arg(&[&["path"], &["file_path"], &["filePath"], &["file"]]);
    let exit = p
        .get("exit_code")
        .or_else(|| at(p, &["result", "exit_code"]))
        .or_else(|| at(p, &["result", "exitCode"]))
        .and_then(Value::as_i64);
    let view = match fam {
        Family::Shell => {
            let command = command_of(p.get("command")).or_else(|| {
                let args = args.get_or_init(|| breadboard_args(p));
                command_of(args.as_ref().and_then(|a| a.get("command")))
            });
            command.map(|c| ToolView::Command { command: c.into(), exit_code: exit })
        }
        Family::List => {
            let result = p.get("result");
            let items = result
                .and_then(|r| r.get("entries").or_else(|| r.get("items")))
                .or(result.filter(|r| r.is_array()))
                .and_then(Value::as_array);
            let dir = result.and_then(|r| str_at(r, &[&["path"]])).map(str::to_owned);
            items.map(|items| listing(items, dir))
        }
        Family::Change => {
            let blocks: Vec<ToolDiff<'static>> = at(p, &["display", "diff_blocks"])
                .and_then(Value::as_array)
                .map(|blocks| {
                    blocks
                        .iter()
                        .filter_map(|b| {
                            let unified = str_at(b, &[&["unified"], &["diff"]])?;
                            let file = str_at(b, &[&["filePath"], &["file"], &["path"]]);
                            let mut d = diffs(unified, file, bodies);
                            if d.len() == 1 && file.is_some() {
                                d[0].path = file.map(|f| f.to_owned().into());
                            }
                            Some(d)
                        })
                        .flatten()
                        .collect()
                })
                .unwrap_or_default();
            let shown = || {
                str_at(p, &[&["diff_preview"]]).map(str::to_owned).or_else(|| {
                    let art = at(p, &["display", "detail_artifact", "preview"])?;
                    let mut text = as_text(art.get("lines")?)?;
                    if let Some(n) = art.get("omitted_lines").and_then(Value::as_u64) {
                        text.push_str(&format!("\n… {n} more lines in the artifact"));
                    }
                    Some(text)
                })
            };
            if !blocks.is_empty() {
                Some(ToolView::Diff { files: blocks })
            } else if let Some(text) = shown().or_else(|| arg(&[&["patch"], &["diff"]])) {
                Some(ToolView::Diff { files: diffs(&text, path().as_deref(), bodies) })
            } else {
                path().map(|p| ToolView::File { path: p.into() })
            }
        }
        Family::Read => path().map(|p| ToolView::File { path: p.into() }),
    };
    (view, exit)
}

/// A Kilo tool part: its tool, input and metadata.
pub(super) fn kilo(
    tool: Option<&str>,
    input: Option<&Value>,
    diff: Option<&str>,
    exit: Option<i64>,
    bodies: &mut BodyStore,
) -> (Option<ToolView<'static>>, Option<i64>) {
    let Some(fam) = tool.and_then(family) else { return (None, None) };
    let path = input.and_then(|i| str_at(i, &[&["filePath"], &["path"]])).map(str::to_owned);
    let view = match fam {
        Family::Shell => command_of(input.and_then(|i| i.get("command")))
            .map(|c| ToolView::Command { command: c.into(), exit_code: exit }),
        Family::Change => match diff.filter(|d| !d.trim().is_empty()) {
            Some(d) => Some(ToolView::Diff { files: diffs(d, path.as_deref(), bodies) }),
            None => path.map(|p| ToolView::File { path: p.into() }),
        },
        Family::Read => path.map(|p| ToolView::File { path: p.into() }),
        Family::List => None,
    };
    (view, exit)
}

/// An ACP tool call or update: `diff` content, an `execute` call's command, a located file.
pub(super) fn acp(p: &Value, bodies: &mut BodyStore) -> Option<ToolView<'static>> {
    let files: Vec<ToolDiff<'static>> = p
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|c| str_at(c, &[&["type"]]) == Some("diff"))
                .filter_map(|c| {
                    let path = str_at(c, &[&["path"]])?;
                    let new = c.get("newText").and_then(Value::as_str).unwrap_or_default();
                    let old = c.get("oldText").and_then(Value::as_str);
                    let text = whole_file_diff(path, old, new);
                    Some(ToolDiff {
                        path: Some(path.to_owned().into()),
                        unified: text_preview(bodies.preview(&text, Limits::default())),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if !files.is_empty() {
        return Some(ToolView::Diff { files });
    }
    let kind = str_at(p, &[&["kind"]]);
    if kind == Some("execute")
        && let Some(c) = command_of(at(p, &["rawInput", "command"]))
    {
        return Some(ToolView::Command { command: c.into(), exit_code: None });
    }
    let located = p
        .get("locations")
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .and_then(|l| str_at(l, &[&["path"]]));
    match (kind, located) {
        (Some("read" | "edit" | "delete" | "move"), Some(path)) => {
            Some(ToolView::File { path: path.to_owned().into() })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_file_patch_is_one_diff_per_file() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\
                     diff --git a/y b/y\nnew file mode 100644\n--- /dev/null\n+++ b/y\n@@ -0,0 +1 @@\n+c\n";
        let d = diffs(patch, None, &mut BodyStore::default());
        let paths: Vec<_> = d.iter().map(|f| f.path.as_deref()).collect();
        assert_eq!(paths, [Some("x"), Some("y")]);
        assert!(d[1].unified.text.starts_with("diff --git a/y b/y"));
    }

    #[test]
    fn a_whole_file_diff_removes_then_adds() {
        let d = whole_file_diff("f.txt", Some("a\nb\n"), "a\nc\n");
        assert_eq!(d, "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n-a\n-b\n+a\n+c\n");
        assert!(
            whole_file_diff("n", None, "x").starts_with("--- /dev/null\n+++ b/n\n@@ -0,0 +1,1 @@")
        );
    }

    #[test]
    fn tool_families_ignore_namespaces_and_case() {
        assert_eq!(family("functions.Bash"), Some(Family::Shell));
        assert_eq!(family("list_dir"), Some(Family::List));
        assert_eq!(family("apply_unified_patch"), Some(Family::Change));
        assert_eq!(family("web_search"), None);
    }
}
