//! Workspace routes: files list, file content (cat and snippet), download and attachments,
//! with the engine's path rules (workspace-relative, no escape, 400/404 details).

use std::collections::HashMap;
use std::path::{Component, Path as FsPath, PathBuf};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::engine::EngineState;
use crate::error::ApiError;
use crate::util::random_hex;

type Params = Query<HashMap<String, String>>;

/// Resolves a workspace-relative path lexically; `None` when it escapes the workspace.
pub fn contain(workspace: &FsPath, relative: &str) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in FsPath::new(relative).components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    let mut path = workspace.to_path_buf();
    path.extend(parts);
    Some(path)
}

/// Rejects paths whose real location (symlinks resolved) leaves the workspace.
fn stays_inside(workspace: &FsPath, path: &FsPath) -> bool {
    match (workspace.canonicalize(), path.canonicalize()) {
        (Ok(root), Ok(real)) => real.starts_with(root),
        _ => true,
    }
}

fn session_workspace(state: &EngineState, id: &str) -> Result<PathBuf, ApiError> {
    let session = state.session(id).ok_or_else(ApiError::session_not_found)?;
    session.workspace.clone().ok_or_else(ApiError::workspace_not_ready)
}

fn resolve(workspace: &FsPath, raw: &str) -> Result<PathBuf, ApiError> {
    if FsPath::new(raw).is_absolute() {
        return Err(ApiError::bad_request("file paths must be workspace-relative"));
    }
    let path = contain(workspace, raw).ok_or_else(|| ApiError::bad_request("invalid path"))?;
    if !stays_inside(workspace, &path) {
        return Err(ApiError::bad_request("invalid path"));
    }
    Ok(path)
}

fn relative_name(workspace: &FsPath, path: &FsPath) -> String {
    path.strip_prefix(workspace)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn entry(workspace: &FsPath, path: &FsPath, meta: &std::fs::Metadata) -> (bool, String, Value) {
    let name = relative_name(workspace, path);
    let dir = meta.is_dir();
    let value = json!({
        "path": name,
        "type": if dir { "directory" } else { "file" },
        "size": if dir { Value::Null } else { json!(meta.len()) },
        "updated_at": null,
    });
    (dir, name.to_lowercase(), value)
}

pub(crate) async fn list(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<Json<Value>, ApiError> {
    let workspace = session_workspace(&state, &id)?;
    let raw = q.get("path").map_or(".", String::as_str);
    let path = resolve(&workspace, raw)?;
    let meta = std::fs::metadata(&path).map_err(|_| ApiError::not_found("path not found"))?;
    if !meta.is_dir() {
        let (_, _, value) = entry(&workspace, &path, &meta);
        return Ok(Json(json!([value])));
    }
    let reader = std::fs::read_dir(&path).map_err(|_| ApiError::not_found("path not found"))?;
    let mut entries: Vec<(bool, String, Value)> = reader
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some(entry(&workspace, &e.path(), &meta))
        })
        .collect();
    entries.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(Json(Value::Array(entries.into_iter().map(|e| e.2).collect())))
}

/// The marker the engine puts between head and tail.
pub(crate) const TRUNCATION_MARKER: &str = "\n\u{2026} (truncated) \u{2026}\n";

/// The engine's `files/content` rules over a text, byte for byte (README §11.1). Lines are the
/// text split on `\n` (a trailing newline makes a last, empty line).
/// - snippet: a text within `max_bytes` (default 80000) is returned whole, head and tail
///   ignored; otherwise the first `head` lines (default 200) cut to `max_bytes / 2` bytes,
///   the marker on a line of its own, then the last `tail` lines (default 80) cut to their
///   last `max_bytes / 2` bytes;
/// - cat: the whole text (`head` ignored); with `tail`, the last `tail` lines; then, over
///   `max_bytes`, its last `max_bytes` bytes.
pub fn snippet(
    text: &str,
    mode_snippet: bool,
    head: Option<usize>,
    tail: Option<usize>,
    max_bytes: Option<usize>,
) -> (String, bool) {
    let lines: Vec<&str> = text.split('\n').collect();
    let last_lines = |n: usize| lines[lines.len().saturating_sub(n)..].join("\n");
    if mode_snippet {
        let max = max_bytes.unwrap_or(80_000);
        if text.len() <= max {
            return (text.to_owned(), false);
        }
        let budget = max / 2;
        let head_text = lines[..head.unwrap_or(200).min(lines.len())].join("\n");
        let tail_text = last_lines(tail.unwrap_or(80));
        let head_text = &head_text[..head_text.floor_char_boundary(budget)];
        let tail_start = tail_text.ceil_char_boundary(tail_text.len().saturating_sub(budget));
        let content = format!("{head_text}\n{TRUNCATION_MARKER}\n{}", &tail_text[tail_start..]);
        return (content, true);
    }
    let mut content = match tail {
        Some(n) => last_lines(n),
        None => text.to_owned(),
    };
    if let Some(max) = max_bytes
        && content.len() > max
    {
        let start = content.ceil_char_boundary(content.len() - max);
        content = content[start..].to_owned();
    }
    let truncated = content.len() < text.len();
    (content, truncated)
}

fn number(q: &HashMap<String, String>, key: &str) -> Result<Option<usize>, ApiError> {
    q.get(key)
        .map(|v| v.parse::<usize>().map_err(|_| ApiError::bad_request(format!("invalid {key}"))))
        .transpose()
}

pub(crate) async fn content(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<Json<Value>, ApiError> {
    let workspace = session_workspace(&state, &id)?;
    let raw = q.get("path").map_or(".", String::as_str);
    let path = resolve(&workspace, raw)?;
    if path == workspace {
        return Err(ApiError::bad_request("file path required"));
    }
    let bytes = std::fs::read(&path).map_err(|_| ApiError::not_found("file not found"))?;
    let text = String::from_utf8_lossy(&bytes);
    // An unknown mode is read as the default (cat), like the engine.
    let mode_snippet = q.get("mode").is_some_and(|m| m == "snippet");
    let (content, truncated) = snippet(
        &text,
        mode_snippet,
        number(&q, "head_lines")?,
        number(&q, "tail_lines")?,
        number(&q, "max_bytes")?,
    );
    Ok(Json(
        json!({"path": relative_name(&workspace, &path), "content": content, "truncated": truncated, "total_bytes": bytes.len()}),
    ))
}

fn mime_of(path: &FsPath) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or_default() {
        "md" => "text/markdown; charset=utf-8",
        "txt" | "log" | "rs" | "py" | "diff" | "patch" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "html" => "text/html; charset=utf-8",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

pub(crate) async fn download(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<Response, ApiError> {
    let workspace = session_workspace(&state, &id)?;
    let raw = q.get("artifact").ok_or_else(|| ApiError::missing_query("artifact"))?;
    let path = if FsPath::new(raw).is_absolute() {
        let p = PathBuf::from(raw);
        if !p.starts_with(&workspace) {
            return Err(ApiError::bad_request("artifact path outside workspace"));
        }
        p
    } else {
        contain(&workspace, raw)
            .ok_or_else(|| ApiError::bad_request("artifact path outside workspace"))?
    };
    if !stays_inside(&workspace, &path) {
        return Err(ApiError::bad_request("artifact path outside workspace"));
    }
    if !path.is_file() {
        return Err(ApiError::not_found("artifact not found"));
    }
    let bytes = std::fs::read(&path).map_err(|_| ApiError::not_found("artifact not found"))?;
    Ok(([(header::CONTENT_TYPE, mime_of(&path))], bytes).into_response())
}

fn safe_file_name(name: &str) -> String {
    let base = FsPath::new(name).file_name().and_then(|n| n.to_str()).unwrap_or("upload");
    if base.is_empty() || base == "." || base == ".." {
        "upload".to_owned()
    } else {
        base.to_owned()
    }
}

pub(crate) async fn attachments(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    mut form: Multipart,
) -> Result<Json<Value>, ApiError> {
    let workspace = session_workspace(&state, &id)?;
    let mut files = Vec::new();
    while let Some(field) =
        form.next_field().await.map_err(|e| ApiError::bad_request(e.body_text()))?
    {
        match field.name() {
            Some("metadata") => {
                let text = field.text().await.map_err(|e| ApiError::bad_request(e.body_text()))?;
                serde_json::from_str::<Value>(&text).map_err(|e| {
                    ApiError::bad_request(format!("metadata must be valid JSON: {e}"))
                })?;
            }
            Some("files") => {
                let filename = safe_file_name(field.file_name().unwrap_or("upload"));
                let mime = field.content_type().unwrap_or("application/octet-stream").to_owned();
                let data = field.bytes().await.map_err(|e| ApiError::bad_request(e.body_text()))?;
                files.push((filename, mime, data));
            }
            _ => {}
        }
    }
    if files.is_empty() {
        return Err(ApiError::bad_request("no files uploaded"));
    }
    let mut out = Vec::new();
    for (filename, mime, data) in files {
        let att_id = format!("att-{}", random_hex(10));
        let dir = workspace.join(".breadboard").join("attachments").join(&att_id);
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join(&filename), &data))
            .map_err(|e| {
                ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    e.to_string(),
                )
            })?;
        out.push(
            json!({"id": att_id, "filename": filename, "mime": mime, "size_bytes": data.len()}),
        );
    }
    Ok(Json(json!({"attachments": out})))
}
