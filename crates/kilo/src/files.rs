//! Workspace files for the Kilo engine, read by the bridge itself: listing, snippets,
//! artifacts and prompt attachments. Every path goes through `bb-normalize`'s `PathGuard`
//! with the real filesystem as resolver (symlinks resolved, `..` applied after them); a
//! refusal is counted (`out_of_scope_path_attempt_count`). All file IO runs on the blocking
//! pool.
//!
//! Limits: a listing holds at most [`MAX_ENTRIES`] entries (more is `too_many_entries`, list a
//! subdirectory); a snippet returns at most `maxBytes` (default [`DEFAULT_SNIPPET_BYTES`],
//! at most [`MAX_SNIPPET_BYTES`]) with `truncated` and `totalBytes` saying what is left; an
//! attachment is at most [`MAX_ATTACHMENT_BYTES`].

use std::fs::{File, Metadata};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bb_normalize::{PathFlavor, PathGuard, Verdict};
use bb_protocol::v1::{
    DownloadArtifactResult, FileEntry, FileKind, FileSnippetResult, ListFilesResult,
    ReadFileSnippetParams,
};
use serde_json::{Value, json};

use crate::KiloAdapter;
use crate::shared::Shared;
use bb_service::engine::EngineError;

/// Most entries one listing returns.
pub const MAX_ENTRIES: usize = 5000;
/// Snippet size without `maxBytes`.
pub const DEFAULT_SNIPPET_BYTES: u64 = 64 * 1024;
/// Largest snippet.
pub const MAX_SNIPPET_BYTES: u64 = 1024 * 1024;
/// Largest attachment.
pub const MAX_ATTACHMENT_BYTES: u64 = 10 * 1024 * 1024;

fn io_error(path: &str, err: &std::io::Error) -> EngineError {
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            EngineError::refused("file_not_found", format!("{path} does not exist"))
        }
        _ => EngineError::refused("file_unreadable", format!("{path} cannot be read: {err}")),
    }
}

/// The real path of `path` (relative to `root`, or absolute) when it is inside the root.
fn contained(shared: &Shared, root: &Path, path: &str) -> Result<PathBuf, EngineError> {
    let mut guard = PathGuard::new(PathFlavor::Posix, &root.display().to_string());
    let checked = guard.check_resolved(path, &bb_service::fs::real_path);
    match (checked.verdict, checked.normalized) {
        (Verdict::Inside, Some(real)) => Ok(PathBuf::from(real)),
        (Verdict::Outside, _) => {
            let n = shared.out_of_scope.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(
                out_of_scope_path_attempt_count = n,
                "a path outside the workspace was refused"
            );
            Err(EngineError::refused(
                "path_outside_workspace",
                format!("{path} is outside the workspace; only files inside it can be read"),
            ))
        }
        _ => {
            shared.out_of_scope.fetch_add(1, Ordering::Relaxed);
            let why = checked.error.map(|e| e.to_string()).unwrap_or_default();
            Err(EngineError::refused("invalid_path", format!("{path} is not a usable path: {why}")))
        }
    }
}

/// Runs file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| EngineError::Engine(format!("file work failed: {e}")))?
}

fn relative(root: &Path, real_root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(real_root).or_else(|_| path.strip_prefix(root)).unwrap_or(path);
    let s = rel.display().to_string();
    if s.is_empty() { ".".to_owned() } else { s }
}

fn kind(meta: &Metadata) -> FileKind {
    let t = meta.file_type();
    if t.is_symlink() {
        FileKind::Symlink
    } else if t.is_dir() {
        FileKind::Dir
    } else if t.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

/// [`list`] for tests: a listing of `params.path` under `root`.
#[cfg(test)]
pub(crate) async fn list_in(
    adapter: &KiloAdapter,
    root: PathBuf,
    params: bb_protocol::v1::ListFilesParams,
) -> Result<ListFilesResult, EngineError> {
    list(adapter, root, params.path).await
}

/// [`snippet`] for tests.
#[cfg(test)]
pub(crate) async fn snippet_in(
    adapter: &KiloAdapter,
    root: PathBuf,
    params: ReadFileSnippetParams,
) -> Result<FileSnippetResult, EngineError> {
    snippet(adapter, root, params).await
}

pub(super) async fn list(
    adapter: &KiloAdapter,
    root: PathBuf,
    path: String,
) -> Result<ListFilesResult, EngineError> {
    let shared = adapter.shared.clone();
    blocking(move || {
        let dir = contained(&shared, &root, &path)?;
        let real_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        let reader = std::fs::read_dir(&dir).map_err(|e| io_error(&path, &e))?;
        let mut entries = Vec::new();
        for entry in reader {
            let entry = entry.map_err(|e| io_error(&path, &e))?;
            if entries.len() == MAX_ENTRIES {
                return Err(EngineError::refused(
                    "too_many_entries",
                    format!("{path} holds more than {MAX_ENTRIES} entries; list a subdirectory"),
                ));
            }
            let Ok(meta) = entry.metadata() else { continue };
            let kind = kind(&meta);
            entries.push(FileEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                path: relative(&root, &real_root, &dir.join(entry.file_name())),
                size: (kind == FileKind::File).then_some(meta.len()),
                kind,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ListFilesResult { path: relative(&root, &real_root, &dir), entries })
    })
    .await
}

/// Valid UTF-8 of `bytes`, dropping a character cut at either end.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .trim_start_matches('\u{FFFD}')
        .trim_end_matches('\u{FFFD}')
        .to_owned()
}

fn read_range(file: &mut File, from: u64, len: u64) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::new();
    file.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The snippet of a file of `size` bytes.
fn cut(
    file: &mut File,
    size: u64,
    params: &ReadFileSnippetParams,
) -> std::io::Result<(String, bool)> {
    let max = params.max_bytes.unwrap_or(DEFAULT_SNIPPET_BYTES).min(MAX_SNIPPET_BYTES);
    let window = size.min(max);
    let head = |file: &mut File| read_range(file, 0, window);
    let tail = |file: &mut File| read_range(file, size - window, window);
    let content = match (params.head_lines, params.tail_lines) {
        (None, None) => text(&head(file)?),
        (Some(h), None) => first_lines(&text(&head(file)?), h),
        (None, Some(t)) => last_lines(&text(&tail(file)?), t),
        (Some(h), Some(t)) => {
            let first = first_lines(&text(&head(file)?), h);
            let last = last_lines(&text(&tail(file)?), t);
            if window == size && lines(&first) + lines(&last) >= lines(&text(&head(file)?)) {
                text(&head(file)?)
            } else {
                format!("{first}{last}")
            }
        }
    };
    let mut content = content;
    if content.len() as u64 > max {
        let mut end = usize::try_from(max).unwrap_or(usize::MAX);
        while !content.is_char_boundary(end) {
            end -= 1;
        }
        content.truncate(end);
    }
    let truncated = (content.len() as u64) < size;
    Ok((content, truncated))
}

fn lines(s: &str) -> usize {
    s.split_inclusive('\n').count()
}

fn first_lines(s: &str, n: u64) -> String {
    s.split_inclusive('\n').take(usize::try_from(n).unwrap_or(usize::MAX)).collect()
}

fn last_lines(s: &str, n: u64) -> String {
    let all: Vec<&str> = s.split_inclusive('\n').collect();
    let n = usize::try_from(n).unwrap_or(usize::MAX).min(all.len());
    all[all.len() - n..].concat()
}

pub(super) async fn snippet(
    adapter: &KiloAdapter,
    root: PathBuf,
    params: ReadFileSnippetParams,
) -> Result<FileSnippetResult, EngineError> {
    let shared = adapter.shared.clone();
    blocking(move || {
        let real = contained(&shared, &root, &params.path)?;
        let mut file = File::open(&real).map_err(|e| io_error(&params.path, &e))?;
        let meta = file.metadata().map_err(|e| io_error(&params.path, &e))?;
        if !meta.is_file() {
            return Err(EngineError::refused(
                "not_a_file",
                format!("{} is not a file", params.path),
            ));
        }
        let size = meta.len();
        let (content, truncated) =
            cut(&mut file, size, &params).map_err(|e| io_error(&params.path, &e))?;
        Ok(FileSnippetResult { path: params.path, content, truncated, total_bytes: Some(size) })
    })
    .await
}

pub(super) async fn download(
    adapter: &KiloAdapter,
    root: PathBuf,
    path: String,
) -> Result<DownloadArtifactResult, EngineError> {
    let shared = adapter.shared.clone();
    blocking(move || {
        let real = contained(&shared, &root, &path)?;
        let meta = std::fs::metadata(&real).map_err(|e| io_error(&path, &e))?;
        if !meta.is_file() {
            return Err(EngineError::refused("not_a_file", format!("{path} is not a file")));
        }
        Ok(DownloadArtifactResult {
            artifact_path: path,
            saved_path: Some(real.display().to_string()),
        })
    })
    .await
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("json") => "application/json",
        _ => "text/plain",
    }
}

/// A `file://` URL of an absolute path, every byte outside the unreserved set escaped.
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.display().to_string().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// A prompt file part for a workspace file.
pub(super) async fn attachment(
    adapter: &KiloAdapter,
    root: PathBuf,
    path: String,
) -> Result<Value, EngineError> {
    let shared: Arc<Shared> = adapter.shared.clone();
    blocking(move || {
        let real = contained(&shared, &root, &path)?;
        let meta = std::fs::metadata(&real).map_err(|e| io_error(&path, &e))?;
        if !meta.is_file() {
            return Err(EngineError::refused("not_a_file", format!("{path} is not a file")));
        }
        if meta.len() > MAX_ATTACHMENT_BYTES {
            return Err(EngineError::refused(
                "attachment_too_large",
                format!("{path} is {} bytes; attachments are at most {MAX_ATTACHMENT_BYTES}", meta.len()),
            ));
        }
        let filename = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(json!({ "type": "file", "mime": mime(&real), "filename": filename, "url": file_url(&real) }))
    })
    .await
}
