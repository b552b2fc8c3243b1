//! One follower per session transcript: [`Followers`] starts a task for the files a trigger
//! names (the session's transcript, and a subagent's), unless one is following that session's
//! transcript already, which then takes any new subagent file and is told to keep going. A
//! follower reads its files, the session's first (a subagent's records count under the turn
//! open in it), then looks at them every [`POLL`](super::POLL), reading what was added, and
//! stops once nothing was added for [`QUIET`](super::QUIET) since its last trigger or growth.
//! At most [`READERS`] files are read at once, whatever the number of followers.
//!
//! A follower leaves the map, under its lock, only after checking under that lock that no
//! trigger came in the meantime; a trigger pokes it under the same lock. So a trigger is never
//! lost between a follower's last look and its end. A follower that fails (or panics) leaves
//! the map too, so the next trigger starts another.

use super::{POLL, Position, QUIET, Target, read_new};
use crate::ingest::transcript::Keep;
use crate::store::Store;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The most transcripts read at once (each read holds up to 8 MiB).
pub const READERS: usize = 4;

static READING: Semaphore = Semaphore::const_new(READERS);

/// The followers at work, by the first file they follow (the session's transcript).
#[derive(Clone, Default)]
pub struct Followers {
    followed: Arc<Mutex<HashMap<PathBuf, Arc<Followed>>>>,
}

/// What a follower and the triggers share.
#[derive(Default)]
struct Followed {
    /// Its files: the session's transcript first, then subagents' as triggers name them.
    files: Mutex<Vec<Target>>,
    /// A trigger came since the follower last looked.
    poked: AtomicBool,
}

impl Followers {
    /// Follows `targets` (one trigger's files): starts a follower in `tasks`, or hands them
    /// to the one following the same session transcript.
    pub fn follow(
        &self,
        tasks: &mut JoinSet<()>,
        store: &Arc<Store>,
        targets: Vec<Target>,
        keep: Keep,
    ) {
        let Some(key) = targets.first().map(|t| t.path.clone()) else {
            return;
        };
        let mut followed = self.followed.lock().unwrap();
        if let Some(shared) = followed.get(&key) {
            let mut files = shared.files.lock().unwrap();
            for target in targets {
                if !files.iter().any(|f| f.path == target.path) {
                    files.push(target);
                }
            }
            shared.poked.store(true, Ordering::Release);
            return;
        }
        let shared = Arc::new(Followed {
            files: Mutex::new(targets),
            poked: AtomicBool::new(false),
        });
        followed.insert(key.clone(), shared.clone());
        drop(followed);
        let leave = Leave {
            followers: self.clone(),
            key,
            shared,
        };
        let store = store.clone();
        tasks.spawn(async move {
            if let Err(e) = leave.watch(&store, keep).await {
                tracing::debug!(path = %leave.key.display(), error = %e, "transcript not followed");
            }
        });
    }
}

/// A follower's place in the map, given up when it ends, however it ends.
struct Leave {
    followers: Followers,
    key: PathBuf,
    shared: Arc<Followed>,
}

impl Drop for Leave {
    fn drop(&mut self) {
        let mut followed = self.followers.followed.lock().unwrap();
        // Only its own entry: after a quiet end a new follower may hold the key already.
        if followed
            .get(&self.key)
            .is_some_and(|s| Arc::ptr_eq(s, &self.shared))
        {
            followed.remove(&self.key);
        }
    }
}

impl Leave {
    /// Reads the files until they have been quiet for [`QUIET`], then leaves the map.
    async fn watch(&self, store: &Arc<Store>, keep: Keep) -> anyhow::Result<()> {
        let mut at: HashMap<PathBuf, Position> = HashMap::new();
        let mut busy = Instant::now();
        loop {
            let files = self.shared.files.lock().unwrap().clone();
            let mut grew = false;
            for target in &files {
                if !at.contains_key(&target.path) {
                    let stored = Position::stored(store, target).await?;
                    at.insert(target.path.clone(), stored);
                }
                // A subagent's records count under the turn open in its parent's file, which
                // was read just before.
                let parent_turn = target
                    .parent
                    .as_ref()
                    .and_then(|p| at.get(p))
                    .map(|p| p.turn.clone());
                let position = at.get_mut(&target.path).expect("inserted above");
                if let Some(turn) = parent_turn {
                    position.turn = turn;
                }
                let _permit = READING.acquire().await?;
                grew |= read_new(store, target, position, keep).await?;
            }
            let poked = self.shared.poked.swap(false, Ordering::AcqRel);
            if grew || poked {
                busy = Instant::now();
            }
            if busy.elapsed() >= QUIET {
                let mut followed = self.followers.followed.lock().unwrap();
                if !self.shared.poked.load(Ordering::Acquire) {
                    followed.remove(&self.key);
                    return Ok(());
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
