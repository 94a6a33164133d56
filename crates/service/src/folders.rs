//! Several workspace folders behind one bridge: [`Folders`] is an [`EngineAdapter`] that
//! routes each session to the engine instance of its folder.
//!
//! Each folder gets its own adapter (built by a [`FolderFactory`]: for Kilo one adapter per
//! project `directory` on the one shared server, for an engine that serves one workspace an
//! instance of its own), started on the first session created in that folder (the first
//! folder, the default, at once). A session is the folder's it was created in (or that listed,
//! selected or streamed it); calls naming a session go to its folder's adapter, so its files,
//! paths and diffs are contained in that folder. The instances' inputs reach the host on one
//! channel, each session summary marked with its folder; an instance's own session listing
//! becomes upserts (the host must not drop the other folders' sessions), and a listed session
//! that names its folder (`SessionSummary::folder`, as Kilo's directory-scoped listing does) is
//! that folder's, whichever instance listed it.
//!
//! Choices: `bb.init` is the default folder's engine; `bb.listSessions` lists every started
//! folder (a folder with no session created or selected since the bridge started is not
//! asked); a session id no folder has claimed goes to the first started folder that knows it
//! (`bb.selectSession`), else to the default folder; counters add up across folders,
//! diagnostics are the default folder's. Each started folder's input channel has its own event
//! budget and the forwarder draws on this adapter's as it passes an input on, so `k` started
//! folders may hold up to `k + 1` budgets of events queued (sharing one would need every
//! engine crate's constructor to take it).

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bb_host::{Input, Prompt, Verdict};
use bb_protocol::v1::{
    CommandParams, CommandResult, CreateSessionParams, DownloadArtifactParams,
    DownloadArtifactResult, EngineKind, FileSnippetResult, InitResult, ListFilesParams,
    ListFilesResult, ListSessionsResult, OpenDiffParams, ReadFileSnippetParams, SendMessageParams,
    SendMessageResult, SessionAck, SessionParams, SessionSummary,
};
use futures_util::future::BoxFuture;
use tokio::sync::OnceCell;

use crate::Endpoint;
use crate::engine::{
    EngineAdapter, EngineError, InputReceiver, InputSender, PromptAnswer, input_channel,
};

/// One folder's engine: its adapter, its inputs, and whatever must live as long as it (an
/// in-process engine, a temporary directory).
pub struct FolderEngine {
    /// The folder's adapter.
    pub adapter: Arc<dyn EngineAdapter>,
    /// Its inputs.
    pub updates: InputReceiver,
    /// Kept alive with the adapter.
    pub keep: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for FolderEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FolderEngine").field("adapter", &self.adapter).finish_non_exhaustive()
    }
}

/// Builds the engine of one folder (its index in the folder list, and its path).
pub type FolderFactory = Arc<
    dyn Fn(usize, PathBuf) -> BoxFuture<'static, Result<FolderEngine, EngineError>> + Send + Sync,
>;

struct Instance {
    adapter: Arc<dyn EngineAdapter>,
    _keep: Option<Box<dyn Any + Send + Sync>>,
    forward: tokio::task::JoinHandle<()>,
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

/// The sessions each folder holds (session id → folder index).
type Owners = Arc<Mutex<HashMap<String, usize>>>;

/// An adapter over one engine instance per workspace folder; see the module doc.
pub struct Folders {
    name: &'static str,
    kind: EngineKind,
    folders: Vec<PathBuf>,
    labels: Arc<[String]>,
    slots: Vec<OnceCell<Instance>>,
    factory: FolderFactory,
    owners: Owners,
    updates: InputSender,
    /// The engine endpoint last given to `reconnect`, for folders started later.
    endpoint: Mutex<Option<Endpoint>>,
    trusted: Mutex<Option<bool>>,
}

impl fmt::Debug for Folders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Folders").field("name", &self.name).field("folders", &self.folders).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Folders {
    /// The adapter over `folders` (canonical paths, the default first; at least one), and
    /// the receiver of every folder's inputs. The default folder's engine is started now.
    pub async fn start(
        folders: Vec<PathBuf>,
        factory: FolderFactory,
    ) -> Result<(Arc<Self>, InputReceiver), EngineError> {
        let Some(first) = folders.first().cloned() else {
            return Err(EngineError::InvalidRequest("no workspace folder was given".into()));
        };
        let (updates, rx) = input_channel();
        let probe = factory(0, first).await?;
        let name = probe.adapter.name();
        let kind = probe.adapter.kind();
        let labels = folders.iter().map(|f| f.display().to_string()).collect();
        let this = Arc::new(Self {
            name,
            kind,
            slots: folders.iter().map(|_| OnceCell::new()).collect(),
            folders,
            labels,
            factory,
            owners: Arc::default(),
            updates,
            endpoint: Mutex::new(None),
            trusted: Mutex::new(None),
        });
        let first = this.instance_from(0, probe);
        let _ = this.slots[0].set(first);
        Ok((this, rx))
    }

    /// The folders, the default first.
    pub fn folders(&self) -> &[PathBuf] {
        &self.folders
    }

    fn instance_from(&self, index: usize, engine: FolderEngine) -> Instance {
        let FolderEngine { adapter, mut updates, keep } = engine;
        let out = self.updates.clone();
        let owners = self.owners.clone();
        let labels = self.labels.clone();
        let forward = tokio::spawn(async move {
            while let Some(input) = updates.recv().await {
                for input in mark(input, index, &labels, &owners) {
                    if out.send(input).await.is_err() {
                        return;
                    }
                }
            }
        });
        Instance { adapter, _keep: keep, forward }
    }

    /// The folder's instance, started (and pointed at the engine) when it is not yet.
    async fn instance(&self, index: usize) -> Result<&Arc<dyn EngineAdapter>, EngineError> {
        let instance = self.slots[index]
            .get_or_try_init(|| async {
                let engine = (self.factory)(index, self.folders[index].clone()).await?;
                let endpoint = lock(&self.endpoint).clone();
                if let Some(endpoint) = endpoint {
                    engine.adapter.reconnect(endpoint).await?;
                }
                if let Some(trusted) = *lock(&self.trusted) {
                    engine.adapter.trust_changed(trusted);
                }
                tracing::info!(folder = %self.labels[index], "engine for workspace folder started");
                Ok::<_, EngineError>(self.instance_from(index, engine))
            })
            .await?;
        Ok(&instance.adapter)
    }

    fn started(&self) -> impl Iterator<Item = (usize, &Arc<dyn EngineAdapter>)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.get().map(|inst| (i, &inst.adapter)))
    }

    fn owner(&self, session_id: &str) -> usize {
        lock(&self.owners).get(session_id).copied().unwrap_or(0)
    }

    fn own(&self, session_id: &str, index: usize) {
        lock(&self.owners).insert(session_id.to_owned(), index);
    }

    /// The adapter of the session's folder.
    async fn of(&self, session_id: &str) -> Result<&Arc<dyn EngineAdapter>, EngineError> {
        self.instance(self.owner(session_id)).await
    }

    /// The folder `bb.createSession` names (absent: the default).
    fn folder_index(&self, folder: Option<&str>) -> Result<usize, EngineError> {
        folder.map_or(Ok(0), |asked| folder_index(asked, &self.labels))
    }

    fn summary(&self, mut s: SessionSummary, index: usize) -> SessionSummary {
        s.folder = Some(self.labels[index].clone());
        s
    }
}

/// Which of `folders` (canonical paths, as `bb.init` lists them) `asked` names: one of them
/// as listed, or a path that resolves to one; else `folder_not_in_workspace`.
pub fn folder_index(asked: &str, folders: &[String]) -> Result<usize, EngineError> {
    folders
        .iter()
        .position(|l| l == asked)
        .or_else(|| {
            let canonical = std::fs::canonicalize(asked).ok()?;
            folders.iter().position(|f| std::path::Path::new(f) == canonical)
        })
        .ok_or_else(|| folder_not_in_workspace(asked, folders))
}

/// The folder a summary names as its own (an engine that knows each session's directory says
/// so), when it is one of `labels`.
fn named_folder(s: &SessionSummary, labels: &[String]) -> Option<usize> {
    let folder = s.folder.as_deref()?;
    labels.iter().position(|l| l == folder)
}

/// `folder_not_in_workspace`, naming the folders there are.
pub fn folder_not_in_workspace(asked: &str, folders: &[String]) -> EngineError {
    EngineError::refused(
        "folder_not_in_workspace",
        format!(
            "{asked} is not a folder of this workspace; create the session in one of: {}",
            folders.join(", ")
        ),
    )
}

/// What an instance's input says, for the host: session summaries marked with the folder,
/// the folder's own listing as upserts (it never lists the other folders' sessions), and
/// every session it names recorded as the folder's.
fn mark(input: Input, index: usize, labels: &[String], owners: &Owners) -> Vec<Input> {
    let marked = |mut s: SessionSummary| {
        s.folder = Some(labels[index].clone());
        s
    };
    match input {
        Input::SessionUpserted(s) => {
            lock(owners).insert(s.session_id.clone(), index);
            vec![Input::SessionUpserted(Box::new(marked(*s)))]
        }
        Input::SessionsListed(list) => {
            // An engine shared by the folders may list the others' sessions too: each stays
            // its owner's.
            let mut owned = lock(owners);
            list.into_iter()
                .map(|mut s| {
                    let owner = match named_folder(&s, labels) {
                        Some(named) => {
                            owned.insert(s.session_id.clone(), named);
                            named
                        }
                        None => *owned.entry(s.session_id.clone()).or_insert(index),
                    };
                    s.folder = Some(labels[owner].clone());
                    Input::SessionUpserted(Box::new(s))
                })
                .collect()
        }
        Input::Events { ref session_id, .. } => {
            let mut owners = lock(owners);
            if !owners.contains_key(&**session_id) {
                owners.insert(session_id.to_string(), index);
            }
            vec![input]
        }
        other => vec![other],
    }
}

#[async_trait]
impl EngineAdapter for Folders {
    fn name(&self) -> &'static str {
        self.name
    }

    fn kind(&self) -> EngineKind {
        self.kind
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        self.instance(0).await?.init().await
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        let index = self.folder_index(params.folder.as_deref())?;
        let summary = self.instance(index).await?.create_session(params).await?;
        self.own(&summary.session_id, index);
        Ok(self.summary(summary, index))
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let mut sessions: Vec<SessionSummary> = Vec::new();
        for (index, adapter) in self.started() {
            for s in adapter.list_sessions().await?.sessions {
                // An engine shared by the folders may list the others' sessions too.
                if sessions.iter().any(|known| known.session_id == s.session_id) {
                    continue;
                }
                let owner = match named_folder(&s, &self.labels) {
                    Some(named) => {
                        self.own(&s.session_id, named);
                        named
                    }
                    None => *lock(&self.owners).entry(s.session_id.clone()).or_insert(index),
                };
                sessions.push(self.summary(s, owner));
            }
        }
        sessions
            .sort_by(|a, b| b.updated_at.unwrap_or(0.0).total_cmp(&a.updated_at.unwrap_or(0.0)));
        Ok(ListSessionsResult { sessions })
    }

    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let owner = lock(&self.owners).get(&params.session_id).copied();
        if let Some(index) = owner {
            return self.instance(index).await?.select_session(params).await;
        }
        let mut last = EngineError::SessionNotFound(params.session_id.clone());
        for (index, adapter) in self.started() {
            match adapter.select_session(params.clone()).await {
                Ok(ack) => {
                    self.own(&ack.session_id, index);
                    return Ok(ack);
                }
                Err(err) => last = err,
            }
        }
        Err(last)
    }

    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = params.session_id.clone();
        let ack = self.of(&id).await?.delete_session(params).await?;
        lock(&self.owners).remove(&id);
        Ok(ack)
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        self.of(&params.session_id).await?.send_message(params).await
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        self.of(&params.session_id).await?.stop(params).await
    }

    async fn command(&self, params: CommandParams) -> Result<CommandResult, EngineError> {
        self.of(&params.session_id).await?.command(params).await
    }

    async fn forgotten(&self, prompts: Vec<Prompt>) -> Vec<Prompt> {
        let mut by_folder: BTreeMap<usize, Vec<Prompt>> = BTreeMap::new();
        for prompt in prompts {
            by_folder.entry(self.owner(&prompt.session_id)).or_default().push(prompt);
        }
        let mut forgotten = Vec::new();
        for (index, prompts) in by_folder {
            if let Ok(adapter) = self.instance(index).await {
                forgotten.extend(adapter.forgotten(prompts).await);
            }
        }
        forgotten
    }

    async fn answer(&self, answer: PromptAnswer) -> Result<(), EngineError> {
        self.of(&answer.prompt.session_id).await?.answer(answer).await
    }

    fn answers_prompt(&self, params: &CommandParams) -> Option<(String, Verdict)> {
        let index = self.owner(&params.session_id);
        self.slots[index].get().and_then(|i| i.adapter.answers_prompt(params))
    }

    fn closes_sessions(&self) -> bool {
        // Every folder's adapter is the same engine's (the default folder's is started first).
        self.slots.iter().find_map(|s| s.get()).is_some_and(|i| i.adapter.closes_sessions())
    }

    async fn list_files(&self, params: ListFilesParams) -> Result<ListFilesResult, EngineError> {
        self.of(&params.session_id).await?.list_files(params).await
    }

    async fn read_file_snippet(
        &self,
        params: ReadFileSnippetParams,
    ) -> Result<FileSnippetResult, EngineError> {
        self.of(&params.session_id).await?.read_file_snippet(params).await
    }

    async fn open_diff(&self, params: OpenDiffParams) -> Result<SessionAck, EngineError> {
        self.of(&params.session_id).await?.open_diff(params).await
    }

    async fn download_artifact(
        &self,
        params: DownloadArtifactParams,
    ) -> Result<DownloadArtifactResult, EngineError> {
        self.of(&params.session_id).await?.download_artifact(params).await
    }

    async fn reconnect(&self, endpoint: Endpoint) -> Result<(), EngineError> {
        *lock(&self.endpoint) = Some(endpoint.clone());
        for (_, adapter) in self.started() {
            adapter.reconnect(endpoint.clone()).await?;
        }
        Ok(())
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut sums: Vec<(&'static str, u64)> = Vec::new();
        for (_, adapter) in self.started() {
            for (name, value) in adapter.counters() {
                match sums.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, sum)) => *sum += value,
                    None => sums.push((name, value)),
                }
            }
        }
        sums
    }

    fn diagnostics(&self) -> Vec<String> {
        self.slots[0].get().map(|i| i.adapter.diagnostics()).unwrap_or_default()
    }

    fn trust_changed(&self, trusted: bool) {
        *lock(&self.trusted) = Some(trusted);
        for (_, adapter) in self.started() {
            adapter.trust_changed(trusted);
        }
    }

    async fn shutdown(&self) {
        for (_, adapter) in self.started() {
            adapter.shutdown().await;
        }
    }

    fn delivered(&self, session_id: &str, event_id: &str) {
        let index = self.owner(session_id);
        if let Some(instance) = self.slots[index].get() {
            instance.adapter.delivered(session_id, event_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str) -> SessionSummary {
        SessionSummary { session_id: id.into(), ..SessionSummary::default() }
    }

    fn labels() -> Vec<String> {
        vec!["/w/a".into(), "/w/b".into()]
    }

    #[test]
    fn a_listing_becomes_upserts_and_a_session_stays_its_owners() {
        let owners: Owners = Arc::default();
        lock(&owners).insert("in-a".into(), 0);
        let out = mark(
            Input::SessionsListed(vec![summary("in-a"), summary("new")]),
            1,
            &labels(),
            &owners,
        );
        let folders: Vec<(String, Option<String>)> = out
            .into_iter()
            .map(|i| match i {
                Input::SessionUpserted(s) => (s.session_id, s.folder),
                other => panic!("an upsert, not {other:?}"),
            })
            .collect();
        assert_eq!(
            folders,
            vec![("in-a".into(), Some("/w/a".into())), ("new".into(), Some("/w/b".into()))]
        );
        assert_eq!(lock(&owners).get("new"), Some(&1));
    }

    #[test]
    fn a_listed_session_that_names_its_folder_is_that_folders() {
        let owners: Owners = Arc::default();
        let mut named = summary("s");
        named.folder = Some("/w/b".into());
        let out = mark(Input::SessionsListed(vec![named]), 0, &labels(), &owners);
        assert!(
            matches!(&out[..], [Input::SessionUpserted(s)] if s.folder.as_deref() == Some("/w/b"))
        );
        assert_eq!(lock(&owners).get("s"), Some(&1));
    }

    #[test]
    fn an_upsert_is_marked_and_claims_its_session() {
        let owners: Owners = Arc::default();
        let out = mark(Input::SessionUpserted(Box::new(summary("s"))), 1, &labels(), &owners);
        assert!(
            matches!(&out[..], [Input::SessionUpserted(s)] if s.folder.as_deref() == Some("/w/b"))
        );
        assert_eq!(lock(&owners).get("s"), Some(&1));
    }

    #[test]
    fn a_folder_is_named_as_listed_or_by_a_path_resolving_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap().display().to_string();
        let folders = vec!["/nowhere/a".to_owned(), real.clone()];
        assert_eq!(folder_index("/nowhere/a", &folders).ok(), Some(0));
        assert_eq!(folder_index(&format!("{real}/."), &folders).ok(), Some(1));
        let err = folder_index("/nowhere/b", &folders).unwrap_err();
        assert_eq!(err.code(), "folder_not_in_workspace");
        assert!(err.to_string().contains("/nowhere/a") && err.to_string().contains(&real));
    }
}
