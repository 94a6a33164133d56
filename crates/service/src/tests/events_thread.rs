//! `EventsThread`: what is spawned on it runs on its thread.

use crate::EventsThread;

#[tokio::test]
async fn a_task_spawned_on_it_runs_on_its_thread() {
    let events = EventsThread::start().unwrap();
    let name = events.handle().spawn(async { std::thread::current().name().map(str::to_owned) });
    assert_eq!(name.await.unwrap().as_deref(), Some("bb-engine-events"));
}
